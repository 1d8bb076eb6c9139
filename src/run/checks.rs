//! A story's checks (`[checks]`, `--check`, the contract's commands), run
//! in the worktree under the run's command timeout, with which passed
//! recorded on the attempt and told as an event. Both judging an attempt
//! and taking up stories the user ticked while the run was stopped go
//! through here.

use super::context::Run;
use crate::contract::{self, CheckOutcome, StoryRules};
use crate::events::Event;
use crate::state::AttemptNote;
use crate::stories::Story;

/// The checks of `rules`, run in the run's worktree under its command
/// timeout; a stop ends the check under way, as it ends an agent.
pub(super) async fn run_until_stopped(run: &Run, rules: &StoryRules) -> Vec<CheckOutcome> {
    let workdir = run.repo_lock().workdir().to_owned();
    contract::run_checks_until_stopped(
        &rules.checks,
        &workdir,
        run.settings.command_timeout(),
        Some(run.stop.clone()),
    )
    .await
}

/// Every objective check, run on the worktree; all of them run, so the
/// report names every failure at once, unless the run is asked to stop:
/// the check under way is then ended and the rest are not run. Which
/// passed goes into the attempt's record and an event.
pub(super) async fn run_checks(
    run: &mut Run,
    story: &Story,
    attempt: u32,
    rules: &StoryRules,
) -> Vec<CheckOutcome> {
    let outcomes = run_until_stopped(run, rules).await;
    if !outcomes.is_empty() {
        // A stopped check neither passed nor failed.
        let names = |passed: bool| {
            outcomes
                .iter()
                .filter(|o| o.passed == passed && !o.stopped)
                .map(|o| o.name.clone())
                .collect()
        };
        let passed: Vec<String> = names(true);
        let note = AttemptNote::PassedChecks(passed.clone());
        run.state.attempt_noted(&story.id, attempt, note);
        run.emit(Event::Checks {
            story_id: story.id.clone(),
            attempt,
            passed,
            failed: names(false),
        });
    }
    outcomes
}
