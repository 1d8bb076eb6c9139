//! The two ways to close a run, whoever decided on them: finish (keep or
//! cleanup, with unfinished work set aside first) and abort. Both work on
//! the run's branch only, and record what they did in `state.json`.

use std::path::PathBuf;

use super::error::EndingError;
use super::outcome::{
    AbortSetAside, Aborted, CleanedUp, CloseOffer, Finished, Kept, Notice, Onlooker,
};
use super::unrecorded::rewind_unrecorded;
use crate::git::{ChangeName, HeadState, ObjectId, Repo};
use crate::state::{AttemptOutcome, FinishChoice, RunDir, RunState, StopReason, now};
use crate::stories::SourceKind;

/// The run being closed, and whoever watches: what every way of closing
/// it, in the user's worktree or beside it, works on.
pub(super) struct Closing<'a> {
    pub repo: &'a mut Repo,
    pub change: &'a ChangeName,
    pub run_dir: &'a RunDir,
    pub state: &'a mut RunState,
    pub onlooker: &'a mut dyn Onlooker,
}

impl<'a> Closing<'a> {
    pub(super) fn new(
        repo: &'a mut Repo,
        change: &'a ChangeName,
        run_dir: &'a RunDir,
        state: &'a mut RunState,
        onlooker: &'a mut dyn Onlooker,
    ) -> Closing<'a> {
        Closing {
            repo,
            change,
            run_dir,
            state,
            onlooker,
        }
    }
}

/// Keep or clean up a run in the user's worktree, and record it. A
/// half-done attempt is never left
/// behind: the worktree must be at the last checkpoint.
pub(super) fn finish(closing: &mut Closing, choice: FinishChoice) -> Result<Finished, EndingError> {
    let (repo, change, run_dir) = (&mut *closing.repo, closing.change, closing.run_dir);
    let (state, onlooker) = (&mut *closing.state, &mut *closing.onlooker);
    require_on_branch(repo, change, "finish")?;
    rewind_unrecorded(repo, change, state, onlooker)?;
    ignore_agent_scratch(repo, state);
    set_aside_unfinished_work(repo, change, onlooker)?;
    let finished = match choice {
        FinishChoice::Keep => {
            repo.finish_keep(change)?;
            Finished::Kept(kept(state, None))
        }
        FinishChoice::Cleanup => {
            let tip = repo.finish_cleanup(change, state.original())?;
            Finished::CleanedUp(cleaned_up(change, run_dir, state, tip, None))
        }
    };
    record_finished(run_dir, state, choice)?;
    Ok(finished)
}

/// The agent's own files (Aider's history) are not unfinished work.
pub(super) fn ignore_agent_scratch(repo: &mut Repo, state: &RunState) {
    if state.settings().agent_command.is_none() {
        repo.set_scratch(crate::agent::presets::scratch_of(&state.settings().agent));
    }
}

/// What keeping the run's branch left, and the run's worktree removed if it
/// had one.
pub(super) fn kept(state: &RunState, worktree_removed: Option<PathBuf>) -> Kept {
    Kept {
        change: state.change().clone(),
        branch: state.branch().clone(),
        stories_done: state.stories_done(),
        stories_total: state.stories().len(),
        resumable: state
            .reason()
            .is_some_and(|reason| reason != StopReason::Completed),
        retries_to_resume: state.retries_to_resume(),
        close: close_offer(state),
        worktree_removed,
    }
}

/// What cleaning up left: the branch's `tip` kept under `finished`, the
/// receipts, and the run's worktree removed if it had one.
pub(super) fn cleaned_up(
    change: &ChangeName,
    run_dir: &RunDir,
    state: &RunState,
    tip: ObjectId,
    worktree_removed: Option<PathBuf>,
) -> CleanedUp {
    CleanedUp {
        original: state.original().head.reflog_name(),
        branch: state.branch().clone(),
        tip,
        tip_ref: format!("{}/finished", change.ref_namespace()),
        receipts: state.receipts_summary(),
        receipts_file: run_dir.receipts_path(),
        close: close_offer(state),
        worktree_removed,
    }
}

/// Records that the run finished as `choice` says.
pub(super) fn record_finished(
    run_dir: &RunDir,
    state: &mut RunState,
    choice: FinishChoice,
) -> Result<(), EndingError> {
    state.finished(choice, now());
    run_dir.save(state)?;
    Ok(())
}

/// The beads issues the run finished: those its record marks done, or
/// whose last attempt was accepted (the record may not have been read
/// again after it). Other sources have nothing to close.
pub(super) fn close_offer(state: &RunState) -> Option<CloseOffer> {
    if state.settings().source != Some(SourceKind::Beads) {
        return None;
    }
    let ids: Vec<String> = state
        .stories()
        .iter()
        .filter(|story| {
            story.done
                || story
                    .attempts
                    .last()
                    .is_some_and(|attempt| attempt.outcome == AttemptOutcome::Complete)
        })
        .map(|story| story.id.clone())
        .collect();
    (!ids.is_empty()).then(|| CloseOffer {
        ids,
        branch: state.branch().clone(),
    })
}

/// Restore the pre-start state of a run in the user's worktree and record
/// it.
pub(super) fn abort(closing: &mut Closing) -> Result<Aborted, EndingError> {
    let (repo, change, run_dir) = (&mut *closing.repo, closing.change, closing.run_dir);
    let (state, onlooker) = (&mut *closing.state, &mut *closing.onlooker);
    require_on_branch(repo, change, "abort")?;
    rewind_unrecorded(repo, change, state, onlooker)?;
    let set_aside = set_aside_before_abort(repo, change)?;
    let commits_after = repo
        .descendant_tip(change, state.checkpoint())?
        .map(|_| state.checkpoint());
    let tip = repo.abort(change, state.original(), state.initial_commit())?;
    let aborted = record_aborted(change, run_dir, state, tip, None)?;
    Ok(Aborted {
        set_aside,
        commits_after,
        ..aborted
    })
}

/// What is uncommitted on the run's branch when it is aborted (once the
/// run stopped, the user may have worked there) is kept under a new
/// `interrupted/<ms>` ref, index and worktree, before the pre-start state
/// replaces it.
fn set_aside_before_abort(
    repo: &mut Repo,
    change: &ChangeName,
) -> Result<Option<AbortSetAside>, EndingError> {
    let refname = repo.unused_ref(&format!(
        "{}/interrupted/{}",
        change.ref_namespace(),
        crate::events::now_ms()
    ))?;
    let message = format!("ralph({change}): left uncommitted on the branch, set aside at abort");
    Ok(repo
        .set_aside(&refname, &message)?
        .map(|kept| AbortSetAside {
            refname,
            index_kept: kept.index_kept,
            conflicted: kept.stages.is_some(),
        }))
}

/// Records that the run was aborted, its branch's `tip` kept, and the run's
/// worktree removed if it had one.
pub(super) fn record_aborted(
    change: &ChangeName,
    run_dir: &RunDir,
    state: &mut RunState,
    tip: ObjectId,
    worktree_removed: Option<PathBuf>,
) -> Result<Aborted, EndingError> {
    state.aborted(now());
    run_dir.save(state)?;
    Ok(Aborted {
        original: state.original().head.reflog_name(),
        branch: state.branch().clone(),
        tip,
        tip_ref: format!("{}/aborted", change.ref_namespace()),
        worktree_removed,
        set_aside: None,
        commits_after: None,
    })
}

/// Finish and abort work on the run's branch only: anything the user did on
/// another branch meanwhile is theirs, and is not touched.
fn require_on_branch(
    repo: &Repo,
    change: &ChangeName,
    what: &'static str,
) -> Result<(), EndingError> {
    match repo.head()? {
        HeadState::Branch { name, .. } if name == change.branch_ref() => Ok(()),
        other => Err(EndingError::NotOnBranch {
            what,
            change: change.clone(),
            head: other.describe(),
        }),
    }
}

/// Work in the worktree beyond the last checkpoint (a loop killed
/// mid-attempt) is preserved and reverted before finishing.
fn set_aside_unfinished_work(
    repo: &mut Repo,
    change: &ChangeName,
    onlooker: &mut dyn Onlooker,
) -> Result<(), EndingError> {
    let kept = keep_interrupted(repo, change, "unfinished work set aside at finish")?;
    if let Some(refname) = kept {
        repo.revert()?;
        onlooker.notice(Notice::SetAside { refname });
    }
    Ok(())
}

/// Keeps the work in `repo`'s worktree and index beyond the branch's tip
/// (the run's last checkpoint, or a commit of the user's after it) under
/// a new `interrupted/<ms>` ref of the change, with `why` in its message:
/// the worktree, on what was staged when it stands apart (and every stage
/// of a conflicted index). `None` when there is no such work.
pub(super) fn keep_interrupted(
    repo: &mut Repo,
    change: &ChangeName,
    why: &str,
) -> Result<Option<String>, EndingError> {
    // Keyed by the millisecond, and never over an existing ref.
    let refname = repo.unused_ref(&format!(
        "{}/interrupted/{}",
        change.ref_namespace(),
        crate::events::now_ms()
    ))?;
    let kept = repo.set_aside(&refname, &format!("ralph({change}): {why}"))?;
    Ok(kept.map(|_| refname))
}
