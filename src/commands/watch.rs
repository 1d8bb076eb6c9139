//! `git ralph watch [<change>]`: the loop screen from any terminal. It
//! follows `events.jsonl` live without disturbing the loop, across a stop
//! and a resume, and browses what was recorded; a run in history is only
//! browsed. q leaves; s asks a running loop to stop (SIGTERM, as `abort`
//! does).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::audit::{Follower, RunDetails};
use crate::events::{Event, Record};
use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::state::{ask_to_stop, lock_holder};
use crate::ui::tui::{App, LoopScreen, Mode, UiRequest};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to watch (or `history/<dir>`); may be omitted
    /// when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
}

/// How often the events log is looked at for new lines.
const POLL: Duration = Duration::from_millis(100);
/// How often while no loop drives the run: it may be resumed.
const IDLE_POLL: Duration = Duration::from_millis(500);

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(CommandError::usage("watch needs a terminal")
            .hint("read the run with 'git ralph log' or 'git ralph show <story>'"));
    }
    let repo = super::open_repo()?;
    watch(repo, args.change.as_deref())?;
    Ok(Exit::Success.code())
}

/// The loop screen on the run `named` (a change, `history/<dir>`, or the
/// only run), until the user leaves it. A live run is followed across a
/// stop and a resume: the events log of a run that is not in history is
/// read for as long as the screen is up.
pub fn watch(repo: Repo, named: Option<&str>) -> Result<(), CommandError> {
    let (found, state) = super::recorded_run(&repo, named)?;
    let lock_path = super::lock_path(&repo);
    let change = state.change().clone();
    let holder = {
        let (lock_path, change) = (lock_path.clone(), change.clone());
        move || lock_holder(&lock_path).filter(|(_, running)| *running == change)
    };
    let alive = holder.clone();
    let live = !found.history && holder().is_some();
    // A run in history names its refs where the history keeps them.
    let history_id = found.dir.history_id().map(str::to_owned);
    let seen = move |record: Record| match &history_id {
        Some(id) => crate::audit::event_in_history(record, id),
        None => record,
    };

    let opened = Follower::open(&found.dir.events_path())?;
    let mut follower = opened.follower;
    let records: Vec<Record> = opened.records.into_iter().map(&seen).collect();
    let mut app = App::new(Mode::Watch { live }, state.change());
    app.apply_state(&state);
    for record in &records {
        app.apply(record);
    }
    app.apply_state(&state);
    // The log's stops and resumes are history: the lock says what runs now.
    app.mode = Mode::Watch { live };
    app.run_dir = Some(found.dir.clone());
    if opened.cut {
        mark_cut(&mut app, &records);
    }

    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (requests_tx, mut requests_rx) = mpsc::unbounded_channel();
    let follows = !found.history;
    let follow = std::thread::spawn(move || {
        follow(&mut follower, &events_tx, seen, follows, move || {
            alive().is_some()
        })
    });
    let stopper = std::thread::spawn(move || {
        while let Some(request) = requests_rx.blocking_recv() {
            if request == UiRequest::StopRun
                && let Some((pid, _)) = holder()
            {
                ask_to_stop(pid);
            }
        }
    });
    let details = Box::new(RunDetails::new(repo, found.dir.clone()));
    let exit = LoopScreen::run(
        app,
        events_rx,
        requests_tx,
        details,
        &std::sync::atomic::AtomicBool::new(false),
    );
    let _ = stopper.join();
    drop(follow);
    exit?;
    Ok(())
}

/// Off the screen's path: the older attempts first, then, for a run not
/// in history (any may be resumed at any time), what is appended, looked
/// at more often while a loop runs it.
fn follow(
    follower: &mut Follower,
    events: &mpsc::UnboundedSender<Record>,
    seen: impl Fn(Record) -> Record,
    follows: bool,
    alive: impl Fn() -> bool,
) {
    for record in follower.backfill().unwrap_or_default() {
        if events.send(seen(record)).is_err() {
            return;
        }
    }
    while follows && !events.is_closed() {
        let Ok(records) = follower.poll() else { break };
        for record in records {
            if events.send(record).is_err() {
                return;
            }
        }
        std::thread::sleep(if alive() { POLL } else { IDLE_POLL });
    }
}

/// The attempt whose output the first look began in the middle of: its
/// output is marked as cut.
fn mark_cut(app: &mut App, records: &[Record]) {
    let Some((story, attempt)) = records.iter().find_map(|record| match &record.event {
        Event::StoryEvent {
            story_id, attempt, ..
        } => Some((story_id.clone(), *attempt)),
        _ => None,
    }) else {
        return;
    };
    if let Some(item) = app
        .stories
        .iter_mut()
        .find(|s| s.id == story)
        .and_then(|s| s.attempts.iter_mut().find(|a| a.number == attempt))
    {
        item.output.skipped_bytes = 1;
    }
}
