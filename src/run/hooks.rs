//! The user's lifecycle hooks (`[hooks]`, `ralph.hook.<event>`), run by the
//! loop at the moments they name. Every delivered event that a hook waits
//! for is queued; the loop runs what is queued, in order, at the points
//! where the run may go on or stop: before each story is picked, before an
//! attempt's agent starts, and when the run ends. Each hook runs through
//! the one supervisor in the worktree, under its timeout (the run's
//! command timeout by default), with the event as JSON on stdin and
//! `RALPH_HOOK`, `RALPH_CHANGE`, `RALPH_STORY`, `RALPH_ATTEMPT` and
//! `RALPH_OUTCOME` in its environment. A failing hook is reported and the
//! run goes on, unless it says `on_error = "stop"`: then the run stops as
//! after a stop request, resumable.

use super::context::Run;
use super::pending::Due;
use std::fmt;

use super::error::RunError;
use crate::contract::{Hook, HookEvent, OnError};
use crate::events::{Event, Record};
use crate::process::{self, ExitStatusKind, Limits, Spec};
use crate::state::{AttemptOutcome, StopReason};
use crate::stories::Story;

/// How much of a hook's output is kept to say why it failed.
const OUTPUT_TAIL_BYTES: usize = 4 * 1024;

/// How one hook's run went.
enum HookRun {
    Ran,
    Failed(HookFailure),
    /// A stop request ended it before it finished: it runs again when the
    /// run ends.
    CutShort,
}

/// Why a hook failed.
#[derive(Debug)]
enum HookFailure {
    /// It ran and ended badly; with the last thing it said.
    Ended {
        exit: ExitStatusKind,
        said: Option<String>,
    },
    /// It could not be started.
    NotRun(process::ProcessError),
}

impl fmt::Display for HookFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HookFailure::Ended { exit, said: None } => write!(f, "{exit}"),
            HookFailure::Ended {
                exit,
                said: Some(said),
            } => write!(f, "{exit} ({said})"),
            HookFailure::NotRun(err) => write!(f, "could not run: {err}"),
        }
    }
}

/// Run the hooks of every event since the last call, in order. A hook
/// that fails is reported; the stop one asked for is returned (now and
/// on every later call), with its reason.
/// What a stop leaves undone stays queued for the run's end, so that
/// every hook of every event runs once.
pub(super) async fn run_due_hooks(run: &mut Run) -> Option<(StopReason, String)> {
    while run.hook_queue.stop.is_none() && !run.hook_queue.due.is_empty() {
        let item = run.hook_queue.due.remove(0);
        if let Some(rest) = run_hooks_of(run, item, true).await {
            run.hook_queue.due.insert(0, rest);
            break;
        }
    }
    run.hook_queue
        .stop
        .clone()
        .map(|why| (StopReason::Stopped, why))
}

/// The hooks before `story`'s agent starts. When one stops the run, the
/// attempt is taken back, as if it had never begun; returns whether the
/// agent may start.
pub(super) async fn hooks_let_agent_start(
    run: &mut Run,
    story: &Story,
    attempt: u32,
) -> Result<bool, RunError> {
    if run_due_hooks(run).await.is_none() {
        return Ok(true);
    }
    run.state.attempt_taken_back(&story.id, attempt);
    run.save()?;
    Ok(false)
}

/// The hooks of the run's end (and any still queued). The run is over:
/// a failure is reported, whatever the hook says.
pub(super) async fn run_end_hooks(run: &mut Run) {
    while !run.hook_queue.due.is_empty() {
        let item = run.hook_queue.due.remove(0);
        run_hooks_of(run, item, false).await;
    }
}

/// The hooks of `due`, in order; a stop request ends a hook only while
/// the run goes on. Returns what is left when a hook stopped the run or
/// was cut short by a stop.
async fn run_hooks_of(run: &mut Run, due: Due, going_on: bool) -> Option<Due> {
    let Due {
        event,
        ref record,
        from,
    } = due;
    let hooks = run.settings.contract().hooks.of(event).to_vec();
    for (at, hook) in hooks.iter().enumerate().skip(from) {
        // On the record until it has ended; the file its shell writes
        // first says, to a loop killed meanwhile, that it need not run
        // again. One killed before it started runs it.
        run.hook_queue.running = Some(Due {
            from: at,
            ..due.clone()
        });
        let _ = run.save();
        crate::bug::halt("hook:recorded");
        let ran = run_hook(run, event, hook, record, going_on).await;
        crate::bug::halt("hook:returned");
        // Off the record as soon as it ended, the hooks after it still on;
        // one a stop cut short stays on, to run again.
        if !matches!(ran, HookRun::CutShort) {
            run.hook_queue.running = (at + 1 < hooks.len()).then(|| Due {
                from: at + 1,
                ..due.clone()
            });
            let _ = run.save();
        }
        let _ = std::fs::remove_file(run.run_dir.hook_started_file());
        crate::bug::halt("hook:ended");
        run.hook_queue.running = None;
        let failure = match ran {
            HookRun::Ran => continue,
            HookRun::CutShort => return Some(Due { from: at, ..due }),
            HookRun::Failed(failure) => failure,
        };
        let said = format!("the {event} hook `{}` {failure}", hook.command);
        if going_on && hook.on_error == OnError::Stop {
            run.warn(format!("{said}; the run stops (on_error = \"stop\")"));
            run.hook_queue.stop = Some(format!("stopped by the {event} hook: {said}"));
            return (at + 1 < hooks.len()).then(|| Due {
                from: at + 1,
                ..due
            });
        }
        let after = if going_on {
            "the run goes on"
        } else {
            "the run had ended"
        };
        run.warn(format!("{said}; {after}"));
    }
    None
}

async fn run_hook(
    run: &Run,
    event: HookEvent,
    hook: &Hook,
    record: &Record,
    going_on: bool,
) -> HookRun {
    let workdir = run.repo_lock().workdir().to_owned();
    let started = run.run_dir.hook_started_file();
    let spec = Spec {
        stdin: Some(event_json(event, record)),
        env: hook_env(event, record),
        ..Spec::shell_marking_start(&hook.command, &workdir, &started)
    };
    let limits = Limits {
        timeout: hook
            .timeout
            .map(std::time::Duration::from_secs)
            .unwrap_or(run.settings.command_timeout()),
        idle: None,
        stop: going_on.then(|| run.stop.clone()),
        // A hook that ended as the stop came ran: it is not run again.
        stop_keeps_exit: true,
    };
    let (exit, stdout, stderr) = match process::run_split(&spec, limits, OUTPUT_TAIL_BYTES).await {
        Ok(ran) => ran,
        Err(err) => return HookRun::Failed(HookFailure::NotRun(err)),
    };
    match exit {
        ExitStatusKind::Exited(0) => HookRun::Ran,
        ExitStatusKind::Stopped => HookRun::CutShort,
        exit => HookRun::Failed(HookFailure::Ended {
            exit,
            said: last_line(&stderr.text()).or_else(|| last_line(&stdout.text())),
        }),
    }
}

/// The event as `events.jsonl` has it, with `hook` naming the hook.
fn event_json(event: HookEvent, record: &Record) -> String {
    let mut json = serde_json::to_value(record).unwrap_or_default();
    if let Some(object) = json.as_object_mut() {
        object.insert("hook".into(), event.as_str().into());
    }
    format!("{json}\n")
}

/// `RALPH_HOOK`, `RALPH_CHANGE`, `RALPH_STORY`, `RALPH_ATTEMPT` and
/// `RALPH_OUTCOME`: empty when the event has none.
fn hook_env(event: HookEvent, record: &Record) -> Vec<(String, String)> {
    let (story, attempt, outcome) = match &record.event {
        Event::RunStarted { resumed, .. } => (
            None,
            None,
            if *resumed { "resumed" } else { "started" }.to_owned(),
        ),
        Event::StoryProgress {
            story_id, attempt, ..
        } => (Some(story_id), Some(*attempt), "running".to_owned()),
        Event::AttemptFinished {
            story_id,
            attempt,
            outcome,
            ..
        } => (Some(story_id), Some(*attempt), outcome_name(*outcome)),
        Event::Question {
            story_id, attempt, ..
        } => (Some(story_id), Some(*attempt), "question".to_owned()),
        Event::Complete { reason, .. } => (None, None, reason.as_str().to_owned()),
        Event::Error {
            reason, story_id, ..
        } => (story_id.as_ref(), None, reason.as_str().to_owned()),
        _ => (None, None, String::new()),
    };
    [
        ("RALPH_HOOK", event.as_str().to_owned()),
        ("RALPH_CHANGE", record.change.clone()),
        ("RALPH_STORY", story.cloned().unwrap_or_default()),
        (
            "RALPH_ATTEMPT",
            attempt.map(|n| n.to_string()).unwrap_or_default(),
        ),
        ("RALPH_OUTCOME", outcome),
    ]
    .map(|(key, value)| (key.to_owned(), value))
    .to_vec()
}

/// The outcome as state.json spells it (`timed_out`).
fn outcome_name(outcome: AttemptOutcome) -> String {
    serde_json::to_value(outcome)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The last line of `text` that holds anything.
fn last_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .rev()
        .find(|line| !line.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::pending::hook_event;
    use crate::state::Totals;

    fn record(event: Event) -> Record {
        Record {
            ts_ms: 1,
            change: "greet".into(),
            event,
        }
    }

    fn finished(outcome: AttemptOutcome) -> Event {
        Event::AttemptFinished {
            story_id: "2".into(),
            attempt: 3,
            outcome,
            reason: None,
            preserved: None,
            checkpoint: None,
            role: None,
            unchanged: false,
        }
    }

    #[test]
    fn each_event_calls_its_hook_and_says_what_happened() {
        let done = record(finished(AttemptOutcome::Complete));
        assert_eq!(hook_event(&done.event), Some(HookEvent::OnStoryDone));
        let env = hook_env(HookEvent::OnStoryDone, &done);
        let value = |key: &str| env.iter().find(|(k, _)| k == key).unwrap().1.clone();
        assert_eq!(value("RALPH_STORY"), "2");
        assert_eq!(value("RALPH_ATTEMPT"), "3");
        assert_eq!(value("RALPH_OUTCOME"), "complete");
        assert_eq!(value("RALPH_HOOK"), "on_story_done");

        for outcome in [AttemptOutcome::TimedOut, AttemptOutcome::Rejected] {
            assert_eq!(
                hook_event(&finished(outcome)),
                Some(HookEvent::OnAttemptFailed)
            );
        }
        for outcome in [
            AttemptOutcome::Passed,
            AttemptOutcome::RateLimited,
            AttemptOutcome::Interrupted,
        ] {
            assert_eq!(hook_event(&finished(outcome)), None, "{outcome:?}");
        }
        let end = record(Event::Error {
            reason: StopReason::MaxRetries,
            message: "m".into(),
            story_id: Some("2".into()),
            totals: Totals::default(),
        });
        assert_eq!(hook_event(&end.event), Some(HookEvent::OnRunEnd));
        let json: serde_json::Value =
            serde_json::from_str(&event_json(HookEvent::OnRunEnd, &end)).unwrap();
        assert_eq!(json["hook"], "on_run_end");
        assert_eq!(json["type"], "error");
        assert_eq!(json["reason"], "max_retries");
    }
}
