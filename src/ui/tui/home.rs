//! A bare `git ralph` on a terminal: the selection screen (the changes and
//! every run) and the preview of a run, in one stay on the alternate
//! screen. What they show comes from a [`HomeSource`]; what the user picked
//! goes back as a [`HomeChoice`], and the caller starts or opens the run
//! once the terminal is given back. [`Home`] remembers the selection and a
//! message between visits, so that after a run the user lands where they
//! left, told how it ended.

use std::time::{Duration, Instant};

use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};

use super::new_change::{NewChange, NewChangeAction, draw_new_change};
use super::select::{
    PreviewAction, PreviewData, PreviewScreen, SelectionAction, SelectionData, SelectionScreen,
    draw_preview, draw_selection,
};
use super::terminal::TerminalGuard;
use super::view::Theme;

/// How often the list is read again while it is shown: runs move on.
const REFRESH: Duration = Duration::from_secs(2);

/// Where the screens' data comes from.
pub trait HomeSource {
    /// The changes and the runs, as they are now.
    fn selection(&mut self) -> SelectionData;
    /// What a run of `change` would do.
    fn preview(&mut self, change: &str) -> Result<PreviewData, Problem>;
}

/// Why a preview cannot be shown, and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub message: String,
    pub hint: Option<String>,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

/// What the user picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeChoice {
    /// Start (or resume) a run of this change: R on its preview.
    Start(String),
    /// Open this run (its label) in the loop screen.
    Open(String),
    /// Plan the change `change` from `brief`: `n`.
    Plan {
        change: String,
        brief: String,
    },
    Quit,
}

enum Screen {
    Selection,
    Preview(PreviewScreen),
    NewChange(NewChange),
}

/// The selection and a message, kept between visits.
#[derive(Debug, Default)]
pub struct Home {
    selected: usize,
    message: Option<String>,
    /// The change whose preview opens on the next visit.
    preview: Option<String>,
}

impl Home {
    /// Say this on the selection screen the next time it shows.
    pub fn tell(&mut self, message: impl Into<String>) {
        self.message = Some(message.into());
    }

    /// Open the preview of `change` the next time the screens show: a
    /// change just planned.
    pub fn preview_next(&mut self, change: impl Into<String>) {
        self.preview = Some(change.into());
    }

    /// Show the screens until the user picks something. Blocking.
    pub fn show(&mut self, source: &mut dyn HomeSource) -> std::io::Result<HomeChoice> {
        let mut guard = TerminalGuard::enter()?;
        let choice = self.event_loop(&mut guard, source);
        guard.restore();
        choice
    }

    /// `n` ended in a change to plan: the selection is kept for the
    /// return.
    fn plan(&mut self, selection: &SelectionScreen, change: String, brief: String) -> HomeChoice {
        self.selected = selection.selected;
        HomeChoice::Plan { change, brief }
    }

    /// The preview of a change just planned, or the selection.
    fn first_screen(
        &mut self,
        source: &mut dyn HomeSource,
        selection: &mut SelectionScreen,
    ) -> Screen {
        let Some(change) = self.preview.take() else {
            return Screen::Selection;
        };
        match source.preview(&change) {
            Ok(data) => Screen::Preview(PreviewScreen::new(data)),
            Err(problem) => {
                selection.message = Some(format!("{change}: {problem}"));
                Screen::Selection
            }
        }
    }

    fn event_loop(
        &mut self,
        guard: &mut TerminalGuard,
        source: &mut dyn HomeSource,
    ) -> std::io::Result<HomeChoice> {
        let theme = Theme::from_env();
        let mut selection = SelectionScreen::new(SelectionData::default());
        selection.selected = self.selected;
        selection.refresh(source.selection());
        selection.message = self.message.take();
        let mut screen = self.first_screen(source, &mut selection);
        let mut read_at = Instant::now();
        loop {
            guard.terminal.draw(|frame| match &screen {
                Screen::Selection => draw_selection(frame, &selection, theme),
                Screen::Preview(preview) => draw_preview(frame, preview, theme),
                Screen::NewChange(form) => draw_new_change(frame, form, theme),
            })?;
            if !event::poll(REFRESH)? {
                if matches!(screen, Screen::Selection) && read_at.elapsed() >= REFRESH {
                    selection.refresh(source.selection());
                    read_at = Instant::now();
                }
                continue;
            }
            let key = match event::read()? {
                TermEvent::Key(key) if key.kind != KeyEventKind::Release => key,
                TermEvent::Resize(..) => {
                    guard.terminal.autoresize()?;
                    continue;
                }
                _ => continue,
            };
            if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
                return Ok(HomeChoice::Quit);
            }
            if let Screen::NewChange(form) = &mut screen {
                match form.on_key(key) {
                    NewChangeAction::None => {}
                    NewChangeAction::Cancel => screen = Screen::Selection,
                    NewChangeAction::Plan { change, brief } => {
                        return Ok(self.plan(&selection, change, brief));
                    }
                }
                continue;
            }
            match &mut screen {
                Screen::Selection => match selection.on_key(key) {
                    SelectionAction::None => {}
                    SelectionAction::Quit => return Ok(HomeChoice::Quit),
                    SelectionAction::OpenRun(label) => {
                        self.selected = selection.selected;
                        return Ok(HomeChoice::Open(label));
                    }
                    SelectionAction::NewChange => screen = Screen::NewChange(NewChange::new()),
                    SelectionAction::OpenChange(change) => match source.preview(&change) {
                        Ok(data) => screen = Screen::Preview(PreviewScreen::new(data)),
                        Err(problem) => {
                            selection.message = Some(format!("{change}: {problem}"));
                        }
                    },
                },
                Screen::NewChange(_) => {}
                Screen::Preview(preview) => match preview.on_key(key) {
                    PreviewAction::None => {}
                    PreviewAction::Back => {
                        screen = Screen::Selection;
                        selection.refresh(source.selection());
                        read_at = Instant::now();
                    }
                    PreviewAction::Start => {
                        self.selected = selection.selected;
                        return Ok(HomeChoice::Start(preview.data.change.clone()));
                    }
                },
            }
        }
    }
}
