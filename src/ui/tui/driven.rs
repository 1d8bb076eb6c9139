//! The loop screen on `git ralph start`: the run driver's [`View`], with
//! the screen on a thread of its own. Events reach it without the loop ever
//! waiting; its q presses go back to the driver as [`Control`]s.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use tokio::sync::mpsc::{self, UnboundedSender};

use super::{App, LoopScreen, Mode, NoDetails, UiExit, UiRequest};
use crate::events::Record;
use crate::run::{Control, View};
use crate::state::{RunDir, RunState};

/// The driver's side: every event goes to the screen.
pub struct LoopScreenView {
    events: UnboundedSender<Record>,
    /// `--notify`: ring the bell when the run ends or waits.
    bell: bool,
}

impl View for LoopScreenView {
    /// Every event is handed over without waiting; the screen drops
    /// frames, never events.
    fn lossless(&self) -> bool {
        true
    }

    fn render(&mut self, record: &Record) {
        let _ = self.events.send(record.clone());
        if self.bell
            && matches!(
                record.event,
                crate::events::Event::Complete { .. }
                    | crate::events::Event::Error { .. }
                    | crate::events::Event::Paused { .. }
                    | crate::events::Event::Question { .. }
            )
        {
            crate::ui::ring_bell();
        }
    }

    /// The screen shows stopping and force-quit hints itself.
    fn note(&mut self, _text: &str) {}
}

/// The screen, running until the user leaves it.
pub struct RunScreen {
    thread: JoinHandle<std::io::Result<UiExit>>,
    /// Held so that the feed closes only when [`RunScreen::finish`] says.
    events: UnboundedSender<Record>,
    leave: Arc<AtomicBool>,
}

impl RunScreen {
    /// Open the loop screen for the run in `run_dir`, seeded with `state`,
    /// with `note` on its notice line (where the run is served, say).
    /// Returns the view to drive the loop with.
    pub fn open(
        state: &RunState,
        workdir: PathBuf,
        run_dir: RunDir,
        controls: UnboundedSender<Control>,
        note: Option<String>,
    ) -> (LoopScreenView, RunScreen) {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (requests_tx, mut requests_rx) = mpsc::unbounded_channel::<UiRequest>();
        let mut app = App::new(Mode::Loop, state.change());
        app.apply_state(state);
        app.notice = note;
        app.run_dir = Some(run_dir.clone());
        let leave = Arc::new(AtomicBool::new(false));
        let leave_flag = leave.clone();
        let thread = std::thread::spawn(move || {
            // The screen reads attempts' prompts, diffs and checks itself.
            let details: Box<dyn super::AttemptDetails> =
                match crate::git::Repo::open_for_recovery(&workdir) {
                    Ok(repo) => Box::new(crate::audit::RunDetails::new(repo, run_dir)),
                    Err(_) => Box::new(NoDetails),
                };
            LoopScreen::run(app, events_rx, requests_tx, details, &leave_flag)
        });
        std::thread::spawn(move || {
            while let Some(request) = requests_rx.blocking_recv() {
                let control = match request {
                    UiRequest::Stop => Control::Stop,
                    UiRequest::ForceQuit => Control::ForceQuit,
                    UiRequest::StopRun => continue,
                };
                if controls.send(control).is_err() {
                    break;
                }
            }
        });
        (
            LoopScreenView {
                events: events_tx.clone(),
                bell: state.settings().notify,
            },
            RunScreen {
                thread,
                events: events_tx,
                leave,
            },
        )
    }

    /// The run is over: the screen says how it ended. With `stay`, it
    /// waits for the user to leave (q), so the last state can be browsed;
    /// otherwise it leaves at once. Returns once the terminal is restored.
    pub fn finish(self, stay: bool) -> std::io::Result<UiExit> {
        self.leave.store(!stay, Ordering::Relaxed);
        drop(self.events);
        match self.thread.join() {
            Ok(exit) => exit,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}
