//! What the run owes its user besides the record: the hooks waiting to
//! run and the notifications under way. The run's context holds them; the
//! hooks and notifications modules act on them. Kept apart so that the
//! context depends on no step that works on it.

use tokio::task::JoinHandle;

use crate::contract::{HookEvent, Hooks};
use crate::events::{Event, Record};
use crate::notify::Undelivered;
use crate::state::{AttemptOutcome, HooksDue, RunState};

/// The hooks waiting to run, and the stop one of them asked for.
#[derive(Debug, Default)]
pub(super) struct HookQueue {
    pub(super) due: Vec<Due>,
    /// Why a hook with `on_error = "stop"` stopped the run.
    pub(super) stop: Option<String>,
    /// The event whose hooks are running, from the hook after the one
    /// running now.
    pub(super) running: Option<Due>,
}

/// An event whose hooks wait to run: every hook of `event` from the
/// `from`-th on (the ones before it ran already).
#[derive(Debug, Clone)]
pub(super) struct Due {
    pub(super) event: HookEvent,
    pub(super) record: Record,
    pub(super) from: usize,
}

impl HookQueue {
    /// The hooks a stopped or killed loop left queued in `state`. When
    /// `started`, the loop was killed while the first of them ran (the
    /// one it recorded as running): that one counts as run.
    pub(super) fn from_state(state: &RunState, started: bool) -> HookQueue {
        let mut due: Vec<Due> = state
            .hooks_due()
            .iter()
            .filter_map(|due| {
                let record: Record = serde_json::from_value(due.record.clone()).ok()?;
                Some(Due {
                    event: hook_event(&record.event)?,
                    record,
                    from: due.from,
                })
            })
            .collect();
        if started && let Some(first) = due.first_mut() {
            first.from += 1;
        }
        HookQueue {
            due,
            stop: None,
            running: None,
        }
    }

    /// The queue as the state keeps it.
    pub(super) fn persisted(&self) -> Vec<HooksDue> {
        self.running
            .iter()
            .chain(&self.due)
            .filter_map(|due| {
                Some(HooksDue {
                    record: serde_json::to_value(&due.record).ok()?,
                    from: due.from,
                })
            })
            .collect()
    }

    /// Queue `record` for the hooks that wait for its event.
    pub(super) fn note(&mut self, hooks: &Hooks, record: &Record) {
        if let Some(event) = hook_event(&record.event)
            && !hooks.of(event).is_empty()
        {
            self.due.push(Due {
                event,
                record: record.clone(),
                from: 0,
            });
        }
    }
}

/// The deliveries under way, and the channels whose failure was told.
#[derive(Debug, Default)]
pub(super) struct Deliveries {
    pub(super) under_way: Vec<JoinHandle<Vec<Undelivered>>>,
    pub(super) reported: Vec<String>,
}

/// The hook a record's event calls for, if any.
pub(super) fn hook_event(event: &Event) -> Option<HookEvent> {
    match event {
        Event::RunStarted { .. } => Some(HookEvent::OnRunStart),
        Event::StoryProgress { .. } => Some(HookEvent::OnStoryStart),
        Event::AttemptFinished { outcome, .. } if *outcome == AttemptOutcome::Complete => {
            Some(HookEvent::OnStoryDone)
        }
        Event::AttemptFinished { outcome, .. } if failed(*outcome) => {
            Some(HookEvent::OnAttemptFailed)
        }
        Event::Question { .. } => Some(HookEvent::OnQuestion),
        Event::Complete { .. } | Event::Error { .. } => Some(HookEvent::OnRunEnd),
        _ => None,
    }
}

/// An attempt that failed at its story; a stop, a usage limit or a role
/// that passed did not.
fn failed(outcome: AttemptOutcome) -> bool {
    matches!(
        outcome,
        AttemptOutcome::Failed
            | AttemptOutcome::Rejected
            | AttemptOutcome::NoSignal
            | AttemptOutcome::AgentError
            | AttemptOutcome::TimedOut
    )
}
