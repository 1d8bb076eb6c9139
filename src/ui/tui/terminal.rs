//! Taking the terminal and always giving it back: raw mode and the
//! alternate screen are undone when the guard is dropped or restored, and a
//! panic hook undoes them before the panic message prints.

use std::io::{Stdout, stdout};
use std::sync::Once;

use crossterm::cursor::Show;
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

static PANIC_HOOK: Once = Once::new();

/// Undo raw mode and the alternate screen; harmless when not in them.
fn give_back() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), LeaveAlternateScreen, Show);
}

/// The terminal, held in raw mode on the alternate screen.
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
    restored: bool,
}

impl TerminalGuard {
    pub fn enter() -> std::io::Result<TerminalGuard> {
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                give_back();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        if let Err(err) = execute!(stdout(), EnterAlternateScreen) {
            give_back();
            return Err(err);
        }
        let terminal = match Terminal::new(CrosstermBackend::new(stdout())) {
            Ok(terminal) => terminal,
            Err(err) => {
                give_back();
                return Err(err);
            }
        };
        let mut guard = TerminalGuard {
            terminal,
            restored: false,
        };
        guard.terminal.hide_cursor()?;
        guard.terminal.clear()?;
        Ok(guard)
    }

    /// Give the terminal back now (also done on drop).
    pub fn restore(&mut self) {
        if !self.restored {
            self.restored = true;
            give_back();
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        self.restore();
    }
}
