//! A loop killed during an attempt may have committed on the run's
//! branch before its record said so: its agent's own commits, or the
//! story's checkpoint. Finish and abort take the branch back to the last
//! checkpoint the record holds, those commits kept under a `strays/<ms>`
//! ref, so that the record and the branch agree. The commits the user made
//! above the loop's checkpoint after the kill are theirs: when the loop
//! had noted that checkpoint as due (see `CheckpointDue`), they are told
//! apart from it and carried onto the last recorded checkpoint with a
//! three-way merge, each with its own message; only when they do not merge
//! there do they stay with the loop's commit, as said.
//!
//! An ending runs no hooks and tells no tracker, so it does not record
//! the loop's checkpoint as a story done the way a resume does: the
//! story's work is kept with the loop's commit, as before.

use super::error::EndingError;
use super::outcome::{Notice, Onlooker};
use crate::git::{ChangeName, ObjectId, Repo, StoryMerge};
use crate::run::adopt::{noted_commit, unrecorded_due};
use crate::state::{AttemptOutcome, RunState};

/// Takes the branch back to the last recorded checkpoint after a loop
/// killed mid-attempt, the user's commits after the kill carried onto it
/// when they can be told apart; the worktree is left as it is, for what
/// follows to set aside. Commits made after a clean stop are the user's
/// and stay.
pub(super) fn rewind_unrecorded(
    repo: &mut Repo,
    change: &ChangeName,
    state: &mut RunState,
    onlooker: &mut dyn Onlooker,
) -> Result<(), EndingError> {
    let cut_short = state
        .stories()
        .iter()
        .flat_map(|story| &story.attempts)
        .any(|attempt| attempt.outcome == AttemptOutcome::Running || attempt.unsettled);
    if !cut_short {
        return Ok(());
    }
    let keep = repo.unused_ref(&format!(
        "{}/strays/{}",
        change.ref_namespace(),
        crate::events::now_ms()
    ))?;
    let checkpoint = state.checkpoint();
    let own = match unrecorded_due(state) {
        Some(due) => noted_commit(repo, change, due)?,
        None => None,
    };
    state.checkpoint_settled();
    let (to, carried) = match own {
        Some(own) => carry_users_commits(repo, change, own, checkpoint, onlooker)?,
        None => (checkpoint, 0),
    };
    let back = repo.reattach(change, to, &keep)?;
    if let Some(refname) = back.and_then(|back| back.kept_at) {
        onlooker.notice(Notice::Unrecorded {
            refname,
            checkpoint: checkpoint.to_hex_with_len(10).to_string(),
            carried,
        });
    }
    Ok(())
}

/// The commits on the branch above `own`, the killed loop's checkpoint,
/// carried one by one onto `onto`: the commit the branch is to point at,
/// and how many were carried. `onto` itself, and none, when there are
/// none or one does not merge (then said).
fn carry_users_commits(
    repo: &Repo,
    change: &ChangeName,
    own: ObjectId,
    onto: ObjectId,
    onlooker: &mut dyn Onlooker,
) -> Result<(ObjectId, usize), EndingError> {
    let mut above = Vec::new();
    let mut at = repo.resolve_ref(&change.branch_ref())?.unwrap_or(own);
    while at != own {
        above.push(at);
        match repo.first_parent(at)? {
            Some(parent) => at = parent,
            None => return Ok((onto, 0)),
        }
    }
    let mut tip = onto;
    for commit in above.iter().rev() {
        let base = repo.first_parent(*commit)?.unwrap_or(own);
        match repo.merge_onto(base, tip, *commit)? {
            StoryMerge::Clean { tree } => {
                tip = repo.carry_commit(*commit, tree, tip)?;
            }
            StoryMerge::Conflicted { paths } => {
                onlooker.notice(Notice::NotCarried { paths });
                return Ok((onto, 0));
            }
        }
    }
    Ok((tip, above.len()))
}
