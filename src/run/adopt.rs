//! A loop killed once a story's checkpoint was committed, before its
//! record said so, left a commit on the run's branch the record does not
//! know, and the user may have committed on top of it since. The loop
//! noted the checkpoint as due before making it (the attempt, the parent
//! and the tree: `CheckpointDue`); the one commit on the branch's
//! first-parent line with exactly that parent and tree is the loop's own,
//! made of work it had verified. A resume records it as the loop would
//! have (its event, its hooks, the tracker told), and the user's commits
//! above it stay where they are. Nothing an agent commits can pass for
//! it: the note is written only once the loop has verified the work.

use super::checkpoint_record::{Made, record_checkpoint};
use super::context::Run;
use super::error::RunError;
use crate::git::{ChangeName, GitFailure, ObjectId, Repo};
use crate::state::{AttemptOutcome, CheckpointDue, RunState};

/// The commit `due` describes on the first-parent line of the run's
/// branch, above the checkpoint it was to follow; `None` when there is
/// none (the loop was killed before it committed, or the branch was
/// rewound since).
pub(super) fn noted_commit(
    repo: &Repo,
    change: &ChangeName,
    due: &CheckpointDue,
) -> Result<Option<ObjectId>, GitFailure> {
    let Some(mut at) = repo.resolve_ref(&change.branch_ref())? else {
        return Ok(None);
    };
    while at != due.parent {
        let Some(parent) = repo.first_parent(at)? else {
            return Ok(None);
        };
        if parent == due.parent && repo.commit_tree(at)? == due.tree {
            return Ok(Some(at));
        }
        at = parent;
    }
    Ok(None)
}

/// The checkpoint noted as due, when the attempt it settles is the one
/// the record leaves at work (so its record was never saved).
pub(super) fn unrecorded_due(state: &RunState) -> Option<&CheckpointDue> {
    let due = state.due_checkpoint()?;
    let at_work = state
        .stories()
        .iter()
        .filter(|story| story.id == due.story)
        .flat_map(|story| &story.attempts)
        .any(|attempt| {
            attempt.attempt == due.attempt
                && attempt.outcome == AttemptOutcome::Running
                && !attempt.unsettled
        });
    at_work.then_some(due)
}

/// On resume: the killed loop's own checkpoint, if it made one, is
/// recorded as the loop would have recorded it. The note goes either way.
pub(super) async fn adopt_noted_checkpoint(run: &mut Run) -> Result<(), RunError> {
    let Some(due) = unrecorded_due(&run.state).cloned() else {
        if run.state.checkpoint_settled().is_some() {
            run.save()?;
        }
        return Ok(());
    };
    let (change, wanted) = (run.settings.change().clone(), due.clone());
    let found = run
        .with_repo(move |repo| noted_commit(repo, &change, &wanted))
        .await
        .map_err(|err| RunError::git("read the run's branch on resume", err))?;
    let stories = run.load_stories().await?;
    let story = stories.into_iter().find(|story| story.id == due.story);
    let (Some(commit), Some(story)) = (found, story) else {
        run.state.checkpoint_settled();
        run.save()?;
        return Ok(());
    };
    let message = run
        .with_repo(move |repo| repo.commit_message(commit))
        .await
        .map_err(|err| RunError::git("read the checkpoint's message", err))?;
    let (subject, receipt) = message.split_once("\n\n").unwrap_or((&message, ""));
    run.warn(format!(
        "the previous loop was killed once story {}'s checkpoint {} was committed, before its record said so: it is recorded now",
        story.id,
        commit.to_hex_with_len(10)
    ));
    let made = Made {
        commit,
        subject: subject.trim_end(),
        receipt: receipt.trim_end(),
    };
    record_checkpoint(run, &story, &due, made).await
}
