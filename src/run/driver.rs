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

use super::context::EventSink;
use super::context::Run;
use super::error::{Hints, RunError};
use super::lifecycle::LoopEnd;
use super::parallel::Coordinator;
use super::session::Session;
use super::story_loop::StoryLoop;
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
/// delivers the stop requests of the view's keys; `hints` says what to do
/// about an error that ends the run.
pub fn drive(
    repo: Repo,
    run_dir: RunDir,
    session: Session,
    view: Box<dyn View>,
    controls: Option<mpsc::UnboundedReceiver<Control>>,
    hints: Hints,
) -> Result<Ending, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| RunError::io("start the async runtime", err))?;
    runtime.block_on(drive_async(repo, run_dir, session, view, controls, hints))
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
    hints: Hints,
) -> Result<Ending, RunError> {
    use tokio::signal::unix::{SignalKind, signal};

    let view: SharedView = Arc::new(Mutex::new(view));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (sink, mut milestones, mut agent_output) = event_sink(&view);
    let resumed = session.resumed;
    let width = session.settings.parallel();
    let context = Run::new(
        repo,
        session.source,
        run_dir,
        session.state,
        session.settings,
        sink,
        stop_rx,
    )
    .map_err(|err| RunError::io("open the event log", err))?
    .with_hints(hints);
    // A run whose stories run at once has a loop of its own kind.
    let mut run = match width {
        Some(width) => tokio::spawn(Coordinator::new(context, width).run(resumed)),
        None => tokio::spawn(StoryLoop::new(context).run(resumed)),
    };

    let signal_error = |err| RunError::io("listen for signals", err);
    let mut interrupt = signal(SignalKind::interrupt()).map_err(signal_error)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(signal_error)?;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let mut stops = Stops::new(view.clone(), stop_tx);

    let end = loop {
        let pressed = tokio::select! {
            end = &mut run => break joined(end)?,
            Some(record) = milestones.recv() => {
                show_milestone(&view, &mut agent_output, &record);
                false
            }
            Some(record) = agent_output.recv() => {
                lock(&view).render(&record);
                false
            }
            _ = interrupt.recv() => true,
            Some(control) = async { controls.as_mut()?.recv().await }, if controls.is_some() => {
                if control == Control::ForceQuit {
                    return Ok(force_quit(run).await);
                }
                true
            }
            _ = terminate.recv() => {
                stops.terminate();
                false
            }
            _ = ticker.tick() => {
                stops.tick();
                false
            }
        };
        if pressed && stops.press(Instant::now()) {
            lock(&view).clear();
            return Ok(force_quit(run).await);
        }
    };
    show_the_rest(&view, &mut milestones, &mut agent_output);
    Ok(if stops.terminated {
        Ending::Terminated(end)
    } else {
        Ending::Finished(end)
    })
}

/// A milestone, after the agent output that arrived before it.
fn show_milestone(view: &SharedView, agent_output: &mut mpsc::Receiver<Record>, record: &Record) {
    let mut view = lock(view);
    while let Ok(output) = agent_output.try_recv() {
        view.render(&output);
    }
    view.render(record);
}

/// What the loop said last, then room for whatever is printed next.
fn show_the_rest(
    view: &SharedView,
    milestones: &mut mpsc::UnboundedReceiver<Record>,
    agent_output: &mut mpsc::Receiver<Record>,
) {
    let mut view = lock(view);
    while let Ok(record) = agent_output.try_recv() {
        view.render(&record);
    }
    while let Ok(record) = milestones.try_recv() {
        view.render(&record);
    }
    view.clear();
}

/// The loop's task, joined: its end, or the panic that cut it short.
fn joined(end: Result<LoopEnd, tokio::task::JoinError>) -> Result<LoopEnd, RunError> {
    end.map_err(|err| match err.try_into_panic() {
        Ok(payload) => RunError::Bug(crate::bug::caught(payload.as_ref())),
        Err(err) => RunError::io("run the loop", std::io::Error::other(err)),
    })
}

/// Quit now: dropping the loop's future kills the agent's process group.
async fn force_quit(run: tokio::task::JoinHandle<LoopEnd>) -> Ending {
    run.abort();
    let _ = run.await;
    Ending::ForceQuit
}

/// The stop requests while the loop runs: the first asks the loop to stop,
/// the third within [`FORCE_QUIT_WINDOW`] forces a quit, and a stop that
/// takes long gets a hint.
struct Stops {
    view: SharedView,
    stop_tx: watch::Sender<bool>,
    presses: Vec<Instant>,
    since: Option<Instant>,
    hinted: bool,
    /// SIGTERM asked for the stop (`git ralph abort`).
    terminated: bool,
}

impl Stops {
    fn new(view: SharedView, stop_tx: watch::Sender<bool>) -> Stops {
        Stops {
            view,
            stop_tx,
            presses: Vec::new(),
            since: None,
            hinted: false,
            terminated: false,
        }
    }

    /// One stop request (Ctrl-C, the stop key); whether it forces a quit.
    fn press(&mut self, now: Instant) -> bool {
        self.presses
            .retain(|at| now.duration_since(*at) < FORCE_QUIT_WINDOW);
        self.presses.push(now);
        if self.presses.len() >= FORCE_QUIT_PRESSES {
            return true;
        }
        if self.since.is_none() {
            self.since = Some(now);
            let _ = self.stop_tx.send(true);
            let mut view = lock(&self.view);
            view.clear();
            view.note("stopping: the agent is being stopped, completed work is kept…");
        }
        false
    }

    /// SIGTERM: stop gracefully, quietly, and without the finish menu.
    fn terminate(&mut self) {
        self.terminated = true;
        let _ = self.stop_tx.send(true);
        self.since.get_or_insert_with(Instant::now);
    }

    /// Once a second: the view's clock, and the hint for a slow stop.
    fn tick(&mut self) {
        let mut view = lock(&self.view);
        view.tick();
        if let Some(since) = self.since
            && !self.hinted
            && since.elapsed() >= STOP_HINT_AFTER
        {
            self.hinted = true;
            view.clear();
            view.note("still stopping… press Ctrl-C twice more to force quit");
        }
    }
}
