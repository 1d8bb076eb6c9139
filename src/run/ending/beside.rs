//! Finishing and aborting a run that worked in a worktree of its own,
//! beside the user's. Whatever is left uncommitted in the run's worktree
//! is kept under a ref first, never deleted; then the worktree is removed.
//! Keep leaves the branch; cleanup brings the run's work into the user's
//! worktree as uncommitted changes, merged onto what they committed
//! meanwhile, but only when that touches none of their uncommitted changes
//! and clashes with none of their commits (otherwise it refuses before
//! anything is done); abort deletes the branch. The user's HEAD, index
//! and stashes are never touched, nor their files but by cleanup.

use super::close::{self, Closing};
use super::error::EndingError;
use super::outcome::{Aborted, Finished, Notice, Onlooker};
use crate::git::{BringError, ChangeName, HeadState, ObjectId, Repo, StoryMerge};
use crate::state::{FinishChoice, RunDir, RunState, RunWorktree};

/// The run's two sides: the user's worktree, and the run's own (`None`
/// when its directory is gone); and the record of the run's worktree.
type Sides = (Repo, Option<Repo>, RunWorktree);

fn sides(state: &RunState, what: &'static str, change: &ChangeName) -> Result<Sides, EndingError> {
    let record = state
        .worktree()
        .clone()
        .expect("only runs in a worktree of their own come here");
    let owner = Repo::open_for_recovery(&record.owner).map_err(|err| EndingError::OwnerGone {
        path: record.owner.clone(),
        source: Box::new(err),
    })?;
    owner.undo_unfinished_worktree(&record.linked)?;
    let inside = owner.open_worktree(&record.linked)?;
    if let Some(inside) = &inside {
        match inside.head()? {
            HeadState::Branch { name, .. } if name == change.branch_ref() => {}
            other => {
                return Err(EndingError::NotOnBranch {
                    what,
                    change: change.clone(),
                    head: format!("{} in {}", other.describe(), record.linked.path.display()),
                });
            }
        }
    }
    Ok((owner, inside, record))
}

/// Keep or clean up a run in a worktree of its own. `repo` becomes the
/// user's repository, the run's worktree being gone.
pub(super) fn finish(closing: &mut Closing, choice: FinishChoice) -> Result<Finished, EndingError> {
    let (repo, change, run_dir) = (&mut *closing.repo, closing.change, closing.run_dir);
    let (state, onlooker) = (&mut *closing.state, &mut *closing.onlooker);
    let (owner, mut inside, record) = sides(state, "finish", change)?;
    if choice == FinishChoice::Cleanup {
        check_cleanup(&owner, change, state)?;
    }
    retire_stories(&owner, change, run_dir, state)?;
    if let Some(inside) = inside.as_mut() {
        close::ignore_agent_scratch(inside, state);
        keep_what_is_left(inside, change, onlooker)?;
    }
    drop(inside);
    let removed = Some(record.linked.path.clone());
    let finished = match choice {
        FinishChoice::Keep => {
            remove(&owner, change, &record)?;
            Finished::Kept(close::kept(state, removed))
        }
        FinishChoice::Cleanup => {
            let (from, to) = cleanup_trees(&owner, change, state)?;
            owner
                .bring_in(from, to)
                .map_err(|err| refused(err, change))?;
            remove(&owner, change, &record)?;
            let tip = owner.retire_branch(change, "finished")?;
            Finished::CleanedUp(close::cleaned_up(change, run_dir, state, tip, removed))
        }
    };
    record_removed(state);
    close::record_finished(run_dir, state, choice)?;
    *repo = owner;
    Ok(finished)
}

/// Abort a run in a worktree of its own: what is left in its worktree is
/// kept, the worktree removed and the branch deleted; the user's worktree
/// stays exactly as it is.
pub(super) fn abort(closing: &mut Closing) -> Result<Aborted, EndingError> {
    let (repo, change, run_dir) = (&mut *closing.repo, closing.change, closing.run_dir);
    let (state, onlooker) = (&mut *closing.state, &mut *closing.onlooker);
    let (owner, mut inside, record) = sides(state, "abort", change)?;
    retire_stories(&owner, change, run_dir, state)?;
    let mut commits_after = None;
    if let Some(inside) = inside.as_mut() {
        keep_what_is_left(inside, change, onlooker)?;
        commits_after = inside
            .descendant_tip(change, state.checkpoint())?
            .map(|_| state.checkpoint());
    }
    drop(inside);
    remove(&owner, change, &record)?;
    let tip = owner.retire_branch(change, "aborted")?;
    record_removed(state);
    *repo = owner;
    let aborted = close::record_aborted(change, run_dir, state, tip, Some(record.linked.path))?;
    Ok(Aborted {
        commits_after,
        ..aborted
    })
}

/// The worktrees of the stories a parallel run left at work when it was
/// killed: retired, what they left kept.
fn retire_stories(
    owner: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    state: &mut RunState,
) -> Result<(), EndingError> {
    crate::run::parallel::retire_left_behind(owner, change, run_dir, state)
        .map_err(|err| EndingError::StoryWorktree(Box::new(err)))?;
    Ok(())
}

/// Cleanup would touch nothing of the user's: checked before anything is
/// done, so a refusal changes nothing (a merge it needs is made in memory).
fn check_cleanup(owner: &Repo, change: &ChangeName, state: &RunState) -> Result<(), EndingError> {
    if let Err(err) = owner.ensure_ready() {
        return Err(EndingError::OwnerBusy {
            path: owner.workdir().to_owned(),
            source: Box::new(err),
        });
    }
    cleanup_trees(&owner.in_memory(), change, state).map(|_| ())
}

/// What cleanup brings into the user's worktree, as the trees from and to
/// which it changes it. The run's work as it is (from the tree it began
/// with to its tip) when the paths it touches are as the run found them;
/// where the user committed to them since, that work merged onto their
/// HEAD instead. Refused where they have uncommitted changes in its way,
/// or where their commits and the run's work clash.
fn cleanup_trees(
    owner: &Repo,
    change: &ChangeName,
    state: &RunState,
) -> Result<(ObjectId, ObjectId), EndingError> {
    let tip = branch_tip(owner, change)?;
    let (base, end) = (
        owner.commit_tree(state.initial_commit())?,
        owner.commit_tree(tip)?,
    );
    let touched = owner.bring_in_conflicts(base, end)?;
    if touched.is_empty() {
        return Ok((base, end));
    }
    let would_touch = |paths| Err(refused(BringError::WouldTouch { paths }, change));
    let head = match owner.head()? {
        HeadState::Branch { commit, .. } | HeadState::Detached { commit } => commit,
        HeadState::Unborn { .. } => return would_touch(touched),
    };
    let tree = match owner.merge_onto(state.initial_commit(), head, tip)? {
        StoryMerge::Clean { tree } => tree,
        StoryMerge::Conflicted { paths } => {
            return Err(EndingError::CleanupClashes {
                change: change.clone(),
                paths,
            });
        }
    };
    let onto = owner.commit_tree(head)?;
    match owner.bring_in_conflicts(onto, tree)? {
        left if left.is_empty() => Ok((onto, tree)),
        left => would_touch(left),
    }
}

fn refused(err: BringError, change: &ChangeName) -> EndingError {
    match err {
        BringError::WouldTouch { paths } => EndingError::CleanupWouldTouch {
            change: change.clone(),
            paths,
        },
        BringError::Op(err) => err.into(),
    }
}

fn branch_tip(owner: &Repo, change: &ChangeName) -> Result<crate::git::ObjectId, EndingError> {
    owner
        .resolve_ref(&change.branch_ref())?
        .ok_or_else(|| EndingError::NotOnBranch {
            what: "finish",
            change: change.clone(),
            head: "nothing: the branch is gone".into(),
        })
}

/// Work in the run's worktree beyond the last checkpoint (a loop killed
/// mid-attempt, a file left there by hand) is kept under a ref before the
/// worktree goes.
fn keep_what_is_left(
    inside: &mut Repo,
    change: &ChangeName,
    onlooker: &mut dyn Onlooker,
) -> Result<(), EndingError> {
    let why = "work left in the run's worktree, kept before it was removed";
    if let Some(refname) = close::keep_interrupted(inside, change, why)? {
        onlooker.notice(Notice::SetAside { refname });
    }
    Ok(())
}

/// Remove the run's worktree, and the directory of run worktrees beside
/// the user's when it is left empty.
fn remove(owner: &Repo, change: &ChangeName, record: &RunWorktree) -> Result<(), EndingError> {
    owner.remove_worktree(&record.linked)?;
    let default = crate::run::beside::default_place(owner.workdir(), change);
    if let Some(parent) = record.linked.path.parent()
        && default.parent() == Some(parent)
    {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(())
}

fn record_removed(state: &mut RunState) {
    state.worktree_removed(true);
}
