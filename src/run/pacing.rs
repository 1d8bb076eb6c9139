//! `--pace`: before an attempt starts, the run's spend over the last window
//! is weighed (see [`crate::pace`]). When the next attempt would take it
//! past the budget, the run pauses as it does at a usage limit: the pause
//! is saved (a killed run resumes into it), shown with the same countdown,
//! and waited out at the top of the loop with a stop still heard.

use super::context::Run;
use super::error::RunError;
use super::notifications;
use crate::pace::{Pace, Spent};
use crate::state::{AttemptOutcome, AttemptRecord, now};

/// Pauses the run before an attempt at `story` when its pace says so;
/// whether it did.
pub(super) fn hold(run: &mut Run, story: &str) -> Result<bool, RunError> {
    let pace = run.settings.guardrails().pace.as_deref();
    let Some(pace) = pace.and_then(|pace| pace.parse::<Pace>().ok()) else {
        return Ok(false);
    };
    let spent: Vec<Spent> = run
        .state
        .stories()
        .iter()
        .flat_map(|story| &story.attempts)
        .filter(|attempt| attempt.outcome != AttemptOutcome::Running)
        .map(|attempt| Spent {
            ended_at: attempt.started_at + attempt.duration_ms / 1000,
            cost_usd: attempt.cost_usd,
            tokens: AttemptRecord::tokens(attempt),
        })
        .collect();
    let Some((until, why)) = pace.hold_until(&spent, now()) else {
        return Ok(false);
    };
    let paused = run.state.paused(story, until, why.clone());
    run.commit(paused)?;
    notifications::notify_pause(run, until, why);
    Ok(true)
}
