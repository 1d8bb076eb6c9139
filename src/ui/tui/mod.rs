//! The terminal UI (ratatui + crossterm): the loop screen that `watch` opens
//! and the run driver opens on `start`, and the selection and preview
//! screens of a bare `git ralph`, as widgets fed by plain data. The terminal is always given back:
//! on return, on error, on panic (a hook restores it before the message
//! prints), and on Ctrl-C (raw mode turns it into a key, handled like q).
//!
//! The producer of events is never slowed: events arrive on an unbounded
//! channel the driver sends to without waiting, and the screen drains all
//! that is pending before drawing at most one frame per [`FRAME`]. Frames
//! may be dropped; events are not.

mod app;
mod driven;
mod home;
mod new_change;
mod select;
mod terminal;
mod view;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event as TermEvent, KeyEventKind};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, error::TryRecvError};

pub use app::{
    Action, App, AttemptDetails, AttemptItem, LIVE_DIFF_EVERY, Mode, NoDetails, OUTPUT_CAP_BYTES,
    Output, Search, StoryItem, StoryState, Tab,
};
pub use driven::{LoopScreenView, RunScreen};
pub use home::{Home, HomeChoice, HomeSource, Problem};
pub use new_change::{NewChange, NewChangeAction, draw_new_change, name_from};
pub use select::{
    ChangeEntry, PREVIEW_KEYS, PreviewAction, PreviewData, PreviewScreen, PreviewStory,
    SELECTION_KEYS, SelectionAction, SelectionData, SelectionScreen, draw_preview, draw_selection,
};
pub use terminal::TerminalGuard;
pub use view::{KEYS, Theme, draw};

use crate::events::{Record, now_ms};

/// The shortest time between two frames: output floods are coalesced.
pub const FRAME: Duration = Duration::from_millis(50);
/// The most events taken in before a frame is considered.
const EVENTS_PER_FRAME: usize = 50_000;

/// What the loop screen asks of whoever drives the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiRequest {
    /// Stop gracefully: the first q (or Ctrl-C).
    Stop,
    /// The third q within three seconds: quit now. The terminal is already
    /// restored when this is sent.
    ForceQuit,
    /// `watch`: ask the running loop (another process) to stop.
    StopRun,
}

/// How the loop screen ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiExit {
    /// The user left (q after the run ended, or in watch).
    Left,
    /// The user force-quit.
    ForceQuit,
}

/// The loop screen.
pub struct LoopScreen;

impl LoopScreen {
    /// Show `app` and keep it up to date from `events` until the user
    /// leaves. Blocking: run it on a thread of its own (e.g. through
    /// `tokio::task::spawn_blocking`). Key presses that concern the run go
    /// to `requests`. When `events` closes, the header says how the run
    /// ended and q leaves; with `leave_when_closed`, the screen leaves by
    /// itself as soon as it has drawn the last state.
    pub fn run(
        app: App,
        events: UnboundedReceiver<Record>,
        requests: UnboundedSender<UiRequest>,
        details: Box<dyn AttemptDetails>,
        leave_when_closed: &AtomicBool,
    ) -> std::io::Result<UiExit> {
        let mut guard = TerminalGuard::enter()?;
        let exit = event_loop(
            &mut guard,
            app,
            events,
            &requests,
            &*details,
            leave_when_closed,
        );
        guard.restore();
        if exit.as_ref().is_ok_and(|exit| *exit == UiExit::ForceQuit) {
            let _ = requests.send(UiRequest::ForceQuit);
        }
        exit
    }
}

fn event_loop(
    guard: &mut TerminalGuard,
    mut app: App,
    mut events: UnboundedReceiver<Record>,
    requests: &UnboundedSender<UiRequest>,
    details: &dyn AttemptDetails,
    leave_when_closed: &AtomicBool,
) -> std::io::Result<UiExit> {
    let theme = Theme::from_env();
    let mut last_frame: Option<Instant> = None;
    loop {
        // Take in everything pending, up to a bound so keys stay live.
        for _ in 0..EVENTS_PER_FRAME {
            match events.try_recv() {
                Ok(record) => app.apply(&record),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if !app.feed_closed {
                        app.close_feed();
                    }
                    break;
                }
            }
        }
        let now = Instant::now();
        app.tick(now_ms(), now);
        app.load_details(details, now);
        let due = last_frame.is_none_or(|at| now.duration_since(at) >= FRAME);
        if app.dirty && due {
            guard.terminal.draw(|frame| draw(frame, &mut app, theme))?;
            last_frame = Some(now);
            if app.leaves_when_closed(leave_when_closed.load(Ordering::Relaxed)) {
                return Ok(UiExit::Left);
            }
        }
        let wait = if app.dirty { FRAME / 2 } else { FRAME };
        if !event::poll(wait)? {
            continue;
        }
        // Handle every input already queued before the next frame.
        loop {
            match event::read()? {
                TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
                    match app.on_key(key, Instant::now()) {
                        Action::None => {}
                        Action::Stop => {
                            let _ = requests.send(UiRequest::Stop);
                        }
                        Action::StopRun => {
                            let _ = requests.send(UiRequest::StopRun);
                        }
                        Action::ForceQuit => return Ok(UiExit::ForceQuit),
                        Action::Leave => return Ok(UiExit::Left),
                    }
                }
                TermEvent::Resize(..) => {
                    guard.terminal.autoresize()?;
                    app.dirty = true;
                }
                _ => {}
            }
            if !event::poll(Duration::ZERO)? {
                break;
            }
        }
    }
}
#[cfg(test)]
mod tests;
