//! What runs around a loop while it works: the async runtime, Ctrl-C and
//! SIGTERM, the stop key, the force-quit rule (three stop requests within
//! three seconds), and the delivery of events to a [`View`].
//!
//! The loop runs on its own task, so a view never holds it up: a lossless
//! view (JSON for programs) gets every event on the loop's task, and a
//! slow reader slows the loop rather than filling memory; any other view
//! gets milestones through an unbounded queue (they are few) and agent
//! output through a bounded one that drops what the view cannot keep up
//! with, since `events.jsonl` has it all.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use super::error::RunError;
use super::session::Session;
use super::story_loop::{EventSink, LoopEnd, StoryLoop};
use crate::events::{Event, Record};
use crate::git::Repo;
use crate::state::RunDir;

/// Agent output events a view may fall behind on before some are dropped.
const AGENT_OUTPUT_BACKLOG: usize = 256;
/// Stop requests within this window force a quit once there are three.
const FORCE_QUIT_WINDOW: Duration = Duration::from_secs(3);
const FORCE_QUIT_PRESSES: usize = 3;
/// How long a stop may take before the view suggests forcing it.
const STOP_HINT_AFTER: Duration = Duration::from_secs(5);

/// Where a running loop is shown.
pub trait View: Send {
    /// A lossless view receives every event, on the loop's own task.
    fn lossless(&self) -> bool {
        false
    }
    fn render(&mut self, record: &Record);
    /// Called about once a second.
    fn tick(&mut self) {}
    /// Make room before something else is printed.
    fn clear(&mut self) {}
    /// A word from the driver itself: stopping, force-quit hints.
    fn note(&mut self, text: &str);
}

/// A request from whoever watches the loop: the `q` key of the line view,
/// the terminal UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// One stop request; three within three seconds force a quit.
    Stop,
    /// Quit now (the terminal UI counted the presses itself).
    ForceQuit,
}

/// How the driven loop ended.
pub enum Ending {
    Finished(LoopEnd),
    /// SIGTERM (from `git ralph abort`): stopped gracefully, no finish menu.
    Terminated(LoopEnd),
    /// Three stop requests within three seconds.
    ForceQuit,
}

/// Run the session's loop to its end on a fresh runtime. `controls`
/// delivers the stop requests of the view's keys.
pub fn drive(
    repo: Repo,
    run_dir: RunDir,
    session: Session,
    view: Box<dyn View>,
    controls: Option<mpsc::UnboundedReceiver<Control>>,
) -> Result<Ending, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| RunError::io("start the async runtime", err))?;
    runtime.block_on(drive_async(repo, run_dir, session, view, controls))
}

type SharedView = Arc<Mutex<Box<dyn View>>>;

fn lock(view: &SharedView) -> std::sync::MutexGuard<'_, Box<dyn View>> {
    view.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The sink the loop calls, and the queues behind it for a lossy view.
fn event_sink(
    view: &SharedView,
) -> (
    EventSink,
    mpsc::UnboundedReceiver<Record>,
    mpsc::Receiver<Record>,
) {
    let (milestones_tx, milestones) = mpsc::unbounded_channel();
    let (output_tx, agent_output) = mpsc::channel(AGENT_OUTPUT_BACKLOG);
    let sink: EventSink = if lock(view).lossless() {
        let view = view.clone();
        Arc::new(move |record: Record| lock(&view).render(&record))
    } else {
        Arc::new(move |record: Record| {
            if matches!(record.event, Event::StoryEvent { .. }) {
                let _ = output_tx.try_send(record);
            } else {
                let _ = milestones_tx.send(record);
            }
        })
    };
    (sink, milestones, agent_output)
}

async fn drive_async(
    repo: Repo,
    run_dir: RunDir,
    session: Session,
    view: Box<dyn View>,
    mut controls: Option<mpsc::UnboundedReceiver<Control>>,
) -> Result<Ending, RunError> {
    use tokio::signal::unix::{SignalKind, signal};

    let view: SharedView = Arc::new(Mutex::new(view));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (sink, mut milestones, mut agent_output) = event_sink(&view);
    let story_loop = StoryLoop::new(
        repo,
        session.source,
        run_dir,
        session.state,
        session.settings,
        sink,
        stop_rx,
    )
    .map_err(|err| RunError::io("open the event log", err))?;
    let mut run = tokio::spawn(story_loop.run(session.resumed));

    let signal_error = |err| RunError::io("listen for signals", err);
    let mut interrupt = signal(SignalKind::interrupt()).map_err(signal_error)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(signal_error)?;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let mut presses: Vec<Instant> = Vec::new();
    let mut stopping_since: Option<Instant> = None;
    let mut hinted = false;
    let mut terminated = false;

    let end = loop {
        let pressed = tokio::select! {
            end = &mut run => break end.map_err(|err| match err.try_into_panic() {
                Ok(payload) => RunError::Bug(crate::bug::caught(payload.as_ref())),
                Err(err) => RunError::io("run the loop", std::io::Error::other(err)),
            })?,
            Some(record) = milestones.recv() => {
                let mut view = lock(&view);
                // Agent output that arrived before this milestone first.
                while let Ok(output) = agent_output.try_recv() {
                    view.render(&output);
                }
                view.render(&record);
                false
            }
            Some(record) = agent_output.recv() => {
                lock(&view).render(&record);
                false
            }
            _ = interrupt.recv() => true,
            Some(control) = async { controls.as_mut()?.recv().await }, if controls.is_some() => {
                if control == Control::ForceQuit {
                    run.abort();
                    let _ = run.await;
                    return Ok(Ending::ForceQuit);
                }
                true
            }
            _ = terminate.recv() => {
                terminated = true;
                let _ = stop_tx.send(true);
                stopping_since.get_or_insert_with(Instant::now);
                false
            }
            _ = ticker.tick() => {
                let mut view = lock(&view);
                view.tick();
                if let Some(since) = stopping_since
                    && !hinted
                    && since.elapsed() >= STOP_HINT_AFTER
                {
                    hinted = true;
                    view.clear();
                    view.note("still stopping… press Ctrl-C twice more to force quit");
                }
                false
            }
        };
        if pressed {
            let now = Instant::now();
            presses.retain(|at| now.duration_since(*at) < FORCE_QUIT_WINDOW);
            presses.push(now);
            if presses.len() >= FORCE_QUIT_PRESSES {
                lock(&view).clear();
                // Dropping the loop's future kills the agent's process group.
                run.abort();
                let _ = run.await;
                return Ok(Ending::ForceQuit);
            }
            if stopping_since.is_none() {
                stopping_since = Some(now);
                let _ = stop_tx.send(true);
                let mut view = lock(&view);
                view.clear();
                view.note("stopping: the agent is being stopped, completed work is kept…");
            }
        }
    };
    let mut view = lock(&view);
    while let Ok(record) = agent_output.try_recv() {
        view.render(&record);
    }
    while let Ok(record) = milestones.try_recv() {
        view.render(&record);
    }
    view.clear();
    Ok(if terminated {
        Ending::Terminated(end)
    } else {
        Ending::Finished(end)
    })
}
