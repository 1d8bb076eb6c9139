//! What the loop does with a story's checkpoint commit: before it is
//! made, it is noted as due in the saved state (the attempt, the commit it
//! goes on, the tree it holds), so that a loop killed before its record
//! said so leaves a commit recovery can tell for its own (`adopt`); once
//! made, it is recorded (the attempt, its event and hooks, the tracker
//! told), by the loop at once or by a resume after the kill.

use super::context::Run;
use super::error::RunError;
use super::judge::Failure;
use super::receipts;
use super::runtime::blocking;
use super::tracker;
use crate::git::ObjectId;
use crate::state::{AttemptOutcome, CheckpointDue, Ending};
use crate::stories::Story;

/// The checkpoint about to be made of the worktree as it is now, on the
/// last checkpoint, noted in the saved state.
pub(super) async fn note_checkpoint_due(
    run: &mut Run,
    story: &str,
    attempt: u32,
    kept: Option<Failure>,
) -> Result<CheckpointDue, RunError> {
    let tree = run
        .with_repo(|repo| repo.fingerprint())
        .await
        .map_err(|err| RunError::git(format!("checkpoint story {story}"), err))?;
    let (outcome, reason, checks) = match kept {
        None => (AttemptOutcome::Complete, None, Vec::new()),
        Some(failure) => (failure.outcome, Some(failure.reason), failure.checks),
    };
    let due = CheckpointDue {
        story: story.to_owned(),
        attempt,
        parent: run.state.checkpoint(),
        tree,
        outcome,
        reason,
        checks,
    };
    run.state.checkpoint_due(due.clone());
    run.save()?;
    Ok(due)
}

/// A story's checkpoint commit, with its message's subject and receipt.
pub(super) struct Made<'a> {
    pub(super) commit: ObjectId,
    pub(super) subject: &'a str,
    pub(super) receipt: &'a str,
}

/// The checkpoint `made` for the attempt `due` into the record, its
/// event told, its hooks queued, the tracker told: what the loop does
/// once it committed a story's checkpoint, and what recovery does with
/// the one a killed loop committed.
pub(super) async fn record_checkpoint(
    run: &mut Run,
    story: &Story,
    due: &CheckpointDue,
    made: Made<'_>,
) -> Result<(), RunError> {
    let attempt = due.attempt;
    run.state.checkpointed(made.commit);
    tracking_checkpointed(run).await?;
    let commit = made.commit.to_string();
    receipts::keep_receipt(run, &commit, made.subject, made.receipt);
    let finished = due.finishes_story();
    let ending = Ending {
        outcome: due.outcome,
        reason: due.reason.clone(),
        preserved: None,
        checkpoint: Some(commit.clone()),
    };
    let change = run
        .state
        .attempt_kept(&story.id, attempt, ending, due.checks.clone());
    // The record says what the branch now holds before anyone is
    // told: the story's marks as checkpointed, and no story at work.
    let stories = run.load_stories().await?;
    run.sync_stories(&stories);
    if finished {
        run.state.story_left();
        // A prompt has no file to mark it done: the contract met is.
        if run.settings.policy().marks == super::mode::Marks::Contract {
            run.state.story_met_its_contract(&story.id);
        }
    }
    run.state.checkpoint_settled();
    // Saved with the hooks its event queues, in one write.
    crate::bug::halt("checkpoint:recorded");
    run.commit(change)?;
    super::push_each::push_checkpoint(run).await;
    if finished {
        tracker::tell_tracker(run, story, attempt, &commit).await;
    }
    Ok(())
}

/// The source's tracking outside the worktree follows the checkpoint.
pub(super) async fn tracking_checkpointed(run: &Run) -> Result<(), RunError> {
    let source = run.source.clone();
    Ok(blocking(move || source.checkpointed()).await?)
}
