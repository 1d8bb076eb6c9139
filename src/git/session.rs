//! The life of a run's branch: begin moves the user onto `ralph/<change>` and
//! captures their uncommitted work; finish and abort bring them back. Before
//! anything moves, what abort needs is written both to the returned
//! [`Original`] and to refs under `refs/ralph/<change>/`, so the pre-start
//! state can be recovered from git alone.

use gix::refs::transaction::PreviousValue;
use serde::{Deserialize, Serialize};

use super::error::{GitFailure, OpError};
use super::ids::ObjectId;
use super::lock::IndexLock;
use super::name::ChangeName;
use super::open::{HeadState, Repo};
use super::refs::{delete, move_head, update};
use super::scope::{Learned, Scope};
use super::snapshot::{Checkpoint, Snapshot};
use super::tree::write_tree;
use super::worktree::{LinkedWorktree, WorktreeError};

/// What abort needs to restore the exact pre-start state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Original {
    /// The branch (or detached commit) the user was on.
    pub head: HeadState,
    /// The user's index as a tree, as `git stash` keeps it, so that staged
    /// and unstaged changes stay apart.
    #[serde(with = "super::hex")]
    pub index_tree: ObjectId,
}

/// The result of [`Repo::begin`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Begin {
    pub original: Original,
    /// The "initial state" commit: the user's uncommitted, staged and
    /// untracked work.
    pub initial: Checkpoint,
    /// The tip `ralph/<change>` had before it was reset, kept under
    /// `refs/ralph/<change>/replaced`.
    #[serde(with = "super::hex::option")]
    pub replaced: Option<ObjectId>,
}

/// Why a run could not begin.
#[derive(Debug, thiserror::Error)]
pub enum BeginError {
    #[error("branch '{branch}' is checked out in the worktree at {}", worktree.display())]
    CheckedOutElsewhere {
        branch: String,
        worktree: std::path::PathBuf,
    },
    #[error("HEAD is already on '{branch}'")]
    AlreadyOnBranch { branch: String },
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    #[error(transparent)]
    Op(#[from] OpError),
}

impl From<GitFailure> for BeginError {
    fn from(err: GitFailure) -> Self {
        BeginError::Op(err.into())
    }
}

impl BeginError {
    pub fn hint(&self) -> Option<String> {
        match self {
            BeginError::CheckedOutElsewhere { worktree, .. } => Some(format!(
                "run git-ralph in that worktree ({}), or switch it to another branch first",
                worktree.display()
            )),
            BeginError::AlreadyOnBranch { .. } => Some(
                "switch to the branch you want to start from (e.g. 'git switch -'), then start again"
                    .into(),
            ),
            BeginError::Worktree(err) => err.hint(),
            BeginError::Op(err) => err.hint(),
        }
    }
}

impl Repo {
    /// Everything [`Repo::begin`] refuses, checked without writing anything,
    /// so a caller can validate before it touches anything of its own.
    pub fn check_begin(&self, change: &ChangeName) -> Result<(), BeginError> {
        let branch = change.branch_ref();
        if let Some(worktree) = self.checked_out_elsewhere(&branch)? {
            return Err(BeginError::CheckedOutElsewhere {
                branch: change.branch_short(),
                worktree,
            });
        }
        let head = self.head()?;
        if matches!(&head, HeadState::Branch { name, .. } | HeadState::Unborn { name } if *name == branch)
        {
            return Err(BeginError::AlreadyOnBranch {
                branch: change.branch_short(),
            });
        }
        // Fail on a missing identity before anything moves.
        self.signature(false)?;
        self.signature(true)?;
        Ok(())
    }

    /// Move onto `ralph/<change>` (`git checkout -B` semantics, with the
    /// reflog lines `git checkout -` needs) and commit the user's uncommitted
    /// work as the "initial state".
    pub fn begin(&mut self, change: &ChangeName) -> Result<Begin, BeginError> {
        let _timed = crate::timings::phase("begin");
        self.check_begin(change)?;
        let head = self.head()?;

        let lock = IndexLock::acquire(self)?;
        let index = self.shared_index()?;
        let (original, replaced) = self.record_start(change, &head, &index)?;
        // A failure from here on (a full disk) takes the start back: HEAD,
        // the branch and the refs as they were; the index and the worktree
        // are written last, so they are as they were too.
        let initial = self
            .move_onto_branch(change, &head, replaced, lock, index)
            .inspect_err(|_| self.forget_start(change, &head, replaced))?;
        Ok(Begin {
            original,
            initial,
            replaced,
        })
    }

    /// The second half of [`Repo::begin`]: HEAD onto the branch, the
    /// initial state committed on it, the index written.
    fn move_onto_branch(
        &mut self,
        change: &ChangeName,
        head: &HeadState,
        replaced: Option<ObjectId>,
        lock: IndexLock,
        index: gix::worktree::Index,
    ) -> Result<Checkpoint, BeginError> {
        let branch = change.branch_ref();
        let log_len = self.head_log_len();
        let mut edits = Vec::new();
        if let Some(commit) = head.commit() {
            let message = if replaced.is_some() {
                "branch: Reset to HEAD"
            } else {
                "branch: Created from HEAD"
            };
            edits.push(update(&branch, commit, PreviousValue::Any, message)?);
        }
        let target = HeadState::Unborn {
            name: branch.clone(),
        };
        let to = change.branch_short();
        let message = format!("checkout: moving from {} to {to}", head.reflog_name());
        edits.push(move_head(&target, &message)?);
        self.edit_refs(edits)?;
        self.log_head_switch(
            log_len,
            head.commit(),
            head.commit(),
            &head.reflog_name(),
            &to,
        )?;

        // Through the watch, when one runs: this full scan is what the
        // first attempt's look builds on.
        let initial = self.scoped(|scope| -> Result<_, OpError> {
            let Snapshot { tree, index, dirty } = self.snapshot(index, scope)?;
            let message = format!("ralph({change}): initial state");
            let initial = self.commit_on_head(&message, tree, None)?;
            self.commit_index(lock, index, Some(tree))?;
            Ok((initial, Some(Learned::Dirty(dirty))))
        })?;
        Ok(initial)
    }

    /// What abort needs, kept under `refs/ralph/<change>/` before anything
    /// moves: the user's index as a tree (`original`), and the tip the
    /// run's branch had, if it existed (`replaced`).
    fn record_start(
        &self,
        change: &ChangeName,
        head: &HeadState,
        index: &gix::index::File,
    ) -> Result<(Original, Option<ObjectId>), BeginError> {
        let branch = change.branch_ref();
        let index_tree = write_tree(&self.repo, index)?;
        let namespace = change.ref_namespace();
        let original = Original {
            head: head.clone(),
            index_tree,
        };
        let keep = self.write_commit(
            &format!("ralph({change}): index before start\n\nThe tree is the index as it was when the run began."),
            index_tree,
            &head.commit().into_iter().collect::<Vec<_>>(),
        )?;
        self.set_ref(
            &format!("{namespace}/original"),
            keep,
            "ralph: record the pre-start index",
        )?;
        let replaced = self.resolve_ref(&branch)?;
        if let Some(tip) = replaced {
            self.set_ref(
                &format!("{namespace}/replaced"),
                tip,
                "ralph: keep the branch tip before reset",
            )?;
        }
        Ok((original, replaced))
    }

    /// Take back a start that failed half-way (a full disk refuses a
    /// reflog, or an object of the initial state): the refs
    /// [`Repo::record_start`] wrote go, HEAD goes back where it was
    /// (`head`), the branch is as it was (`replaced`, or none). One edit
    /// after the other, the deletions first, which free the room the next
    /// needs on a full disk. What cannot be taken back is left: the first
    /// failure is the one to report.
    fn forget_start(&self, change: &ChangeName, head: &HeadState, replaced: Option<ObjectId>) {
        let namespace = change.ref_namespace();
        let branch = change.branch_ref();
        // `replaced` only when this start wrote it.
        let written: &[&str] = if replaced.is_some() {
            &["original", "replaced"]
        } else {
            &["original"]
        };
        for kept in written {
            let name = format!("{namespace}/{kept}");
            if let Ok(Some(tip)) = self.resolve_ref(&name)
                && let Ok(edit) = delete(&name, tip)
            {
                let _ = self.edit_refs(vec![edit]);
            }
        }
        let message = "ralph: the run could not begin; put back";
        if self.head().is_ok_and(|now| now != *head)
            && let Ok(edit) = move_head(head, message)
        {
            let _ = self.edit_refs(vec![edit]);
        }
        let now = self.resolve_ref(&branch).ok().flatten();
        let branch_back = match (now, replaced) {
            (Some(now), None) => delete(&branch, now).ok(),
            (Some(now), Some(tip)) if now != tip => {
                update(&branch, tip, PreviousValue::Any, message).ok()
            }
            _ => None,
        };
        if let Some(edit) = branch_back {
            let _ = self.edit_refs(vec![edit]);
        }
    }

    /// Begin a run beside the user: commit their uncommitted work as the
    /// "initial state" on `ralph/<change>` (as [`Repo::begin`] does), without
    /// touching their HEAD, index or files, and make the run's own worktree
    /// at `path` on that branch. `reason` locks it while the run lives.
    pub fn begin_beside(
        &self,
        change: &ChangeName,
        path: &std::path::Path,
        reason: &str,
    ) -> Result<(Begin, LinkedWorktree), BeginError> {
        self.check_begin(change)?;
        self.check_worktree_place(path)?;
        let branch = change.branch_ref();
        let head = self.head()?;
        let index = self.shared_index()?;
        let (original, replaced) = self.record_start(change, &head, &index)?;
        let parent = head.commit();
        let begun = || -> Result<_, BeginError> {
            // The user's worktree as `git add -A` would see it; their
            // index is read, never written.
            let Snapshot { tree, .. } = self.snapshot(index, &Scope::All)?;
            let parent_tree = match parent {
                Some(parent) => self.commit_tree(parent)?,
                None => self.repo.empty_tree().id,
            };
            let commit = self.write_commit(
                &format!("ralph({change}): initial state"),
                tree,
                &parent.into_iter().collect::<Vec<_>>(),
            )?;
            let message = if replaced.is_some() {
                "branch: Reset to the run's initial state"
            } else {
                "branch: Created with the run's initial state"
            };
            self.edit_refs(vec![update(&branch, commit, PreviousValue::Any, message)?])?;
            Ok((commit, tree, parent_tree))
        };
        let (commit, tree, parent_tree) =
            begun().inspect_err(|_| self.forget_start(change, &head, replaced))?;
        let worktree = self.add_worktree(path, &branch, reason)?;
        let initial = Checkpoint {
            commit,
            tree,
            changed: tree != parent_tree,
        };
        Ok((
            Begin {
                original,
                initial,
                replaced,
            },
            worktree,
        ))
    }

    /// The run's branch is done with: deleted, its tip kept at
    /// `refs/ralph/<change>/<keep_as>`. Nothing is checked out: the run's
    /// worktree must be gone first.
    pub fn retire_branch(&self, change: &ChangeName, keep_as: &str) -> Result<ObjectId, OpError> {
        let branch = change.branch_ref();
        let Some(tip) = self.resolve_ref(&branch)? else {
            return Err(OpError::UnexpectedHead {
                expected: change.branch_short(),
                found: "no such branch".into(),
            });
        };
        let keep_ref = format!("{}/{keep_as}", change.ref_namespace());
        self.edit_refs(vec![update(
            &keep_ref,
            tip,
            PreviousValue::Any,
            &format!("ralph: keep the tip of {}", change.branch_short()),
        )?])?;
        self.edit_refs(vec![delete(&branch, tip)?])?;
        Ok(tip)
    }

    /// Squash to uncommitted: HEAD goes back to the original branch, the
    /// worktree keeps the final state, the index goes back to the original
    /// index, and `ralph/<change>` is deleted, its tip kept at
    /// `refs/ralph/<change>/finished`.
    pub fn finish_cleanup(
        &mut self,
        change: &ChangeName,
        original: &Original,
    ) -> Result<ObjectId, OpError> {
        let _timed = crate::timings::phase("finish");
        let tip = self.ensure_on_branch(change)?;
        let lock = IndexLock::acquire(self)?;
        let current = self.shared_index()?;
        let mut index = self.sparse_index_for_tree(original.index_tree, &current)?;
        // The run's work outside the sparse patterns stays on disk, an
        // ordinary tracked entry to git.
        let present = super::sparse::present_skipped(self.workdir(), &index);
        super::sparse::unskip(&mut index, &present);
        self.leave_branch(change, original, tip, "finished")?;
        self.commit_index(lock, index, Some(original.index_tree))?;
        Ok(tip)
    }

    /// Leave everything on `ralph/<change>`: nothing to do in git, and kept as
    /// an operation so the loop never has to know that.
    pub fn finish_keep(&mut self, change: &ChangeName) -> Result<ObjectId, OpError> {
        let _timed = crate::timings::phase("finish");
        self.ensure_on_branch(change)
    }

    /// Restore the pre-start state exactly: branch and HEAD, the original
    /// index, and a worktree equal to the initial-state snapshot. The branch
    /// is deleted; its tip stays at `refs/ralph/<change>/aborted`.
    pub fn abort(
        &mut self,
        change: &ChangeName,
        original: &Original,
        initial: ObjectId,
    ) -> Result<ObjectId, OpError> {
        let tip = self.ensure_on_branch(change)?;
        let lock = IndexLock::acquire(self)?;
        let mut current = self.shared_index()?;
        // A conflicted index (set aside before) is read as the worktree.
        if super::conflicted::conflicted(&current) {
            current = super::conflicted::flattened_shared(&current);
        }
        let initial_tree = self.commit_tree(initial)?;
        let (restored, _) = self.reset_worktree(initial_tree, current, &Scope::All)?;
        let index = self.sparse_index_for_tree(original.index_tree, &restored)?;
        self.leave_branch(change, original, tip, "aborted")?;
        self.commit_index(lock, index, Some(original.index_tree))?;
        Ok(tip)
    }

    /// Take back a [`Repo::begin`] whose run could not be recorded: HEAD,
    /// index and worktree as abort leaves them, the branch as it was
    /// (gone, or at the tip it had), and none of the refs begin wrote.
    pub fn undo_begin(&mut self, change: &ChangeName, begin: &Begin) -> Result<(), OpError> {
        self.abort(change, &begin.original, begin.initial.commit)?;
        let namespace = change.ref_namespace();
        let mut edits = Vec::new();
        for kept in ["aborted", "original", "replaced"] {
            let name = format!("{namespace}/{kept}");
            if let Some(tip) = self.resolve_ref(&name)? {
                edits.push(delete(&name, tip)?);
            }
        }
        if let Some(tip) = begin.replaced {
            edits.push(update(
                &change.branch_ref(),
                tip,
                PreviousValue::MustNotExist,
                "ralph: the run could not begin; the branch is put back",
            )?);
        }
        self.edit_refs(edits)?;
        Ok(())
    }

    /// HEAD must be on `ralph/<change>`; returns its tip.
    pub fn ensure_on_branch(&self, change: &ChangeName) -> Result<ObjectId, OpError> {
        let head = self.head()?;
        match &head {
            HeadState::Branch { name, commit } if *name == change.branch_ref() => Ok(*commit),
            other => Err(OpError::UnexpectedHead {
                expected: change.branch_short(),
                found: other.describe(),
            }),
        }
    }

    /// Move HEAD back to `original.head`, delete the branch and keep its tip
    /// under `refs/ralph/<change>/<keep_as>`.
    fn leave_branch(
        &self,
        change: &ChangeName,
        original: &Original,
        tip: ObjectId,
        keep_as: &str,
    ) -> Result<(), OpError> {
        let from = change.branch_short();
        let to = original.head.reflog_name();
        let message = format!("checkout: moving from {from} to {to}");
        let log_len = self.head_log_len();
        let keep_ref = format!("{}/{keep_as}", change.ref_namespace());
        self.edit_refs(vec![
            move_head(&original.head, &message)?,
            update(
                &keep_ref,
                tip,
                PreviousValue::Any,
                &format!("ralph: keep the tip of {from}"),
            )?,
        ])?;
        self.edit_refs(vec![delete(&change.branch_ref(), tip)?])?;
        // HEAD goes back to where the original branch is now.
        let new = self.head()?.commit();
        self.log_head_switch(log_len, Some(tip), new, &from, &to)?;
        Ok(())
    }
}

/// What [`Repo::reattach`] found and undid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reattached {
    /// Where HEAD was: another branch, a detached commit, or the run's branch
    /// moved past the checkpoint by commits of the agent.
    pub found: String,
    /// The ref that now keeps what the agent committed.
    pub kept_at: Option<String>,
    /// The commit HEAD was found at, if any: the worktree's work was done
    /// on top of it.
    #[serde(skip)]
    pub commit: Option<ObjectId>,
}

impl Repo {
    /// Put HEAD back on `ralph/<change>` at `checkpoint` if the agent
    /// committed, switched branch or detached HEAD. The worktree is left
    /// alone, so the agent's work stays in it as uncommitted changes and the
    /// next checkpoint or preserve captures it; whatever the agent committed
    /// stays reachable under `keep_ref`.
    pub fn reattach(
        &mut self,
        change: &ChangeName,
        checkpoint: ObjectId,
        keep_ref: &str,
    ) -> Result<Option<Reattached>, OpError> {
        let branch = change.branch_ref();
        let head = self.head()?;
        let found = match &head {
            HeadState::Branch { name, commit } if *name == branch && *commit == checkpoint => {
                return Ok(None);
            }
            HeadState::Branch { name, commit } if *name == branch => {
                format!(
                    "{} moved to {}",
                    change.branch_short(),
                    commit.to_hex_with_len(12)
                )
            }
            other => other.describe(),
        };
        let lock = IndexLock::acquire(self)?;
        let mut kept_at = None;
        let mut edits = Vec::new();
        if let Some(commit) = head.commit()
            && commit != checkpoint
        {
            edits.push(update(
                keep_ref,
                commit,
                PreviousValue::Any,
                "ralph: keep commits made during an attempt",
            )?);
            kept_at = Some(keep_ref.to_owned());
        }
        edits.push(update(
            &branch,
            checkpoint,
            PreviousValue::Any,
            "ralph: back to the last checkpoint",
        )?);
        let log_len = self.head_log_len();
        let to = change.branch_short();
        let message = format!("checkout: moving from {} to {to}", head.reflog_name());
        if !matches!(&head, HeadState::Branch { name, .. } if *name == branch) {
            edits.push(move_head(
                &HeadState::Unborn {
                    name: branch.clone(),
                },
                &message,
            )?);
        }
        self.edit_refs(edits)?;
        if !matches!(&head, HeadState::Branch { name, .. } if *name == branch) {
            self.log_head_switch(
                log_len,
                head.commit(),
                Some(checkpoint),
                &head.reflog_name(),
                &to,
            )?;
        }
        // The index may describe the agent's commit; it stays as it is, a
        // stat cache only, and nothing is checked out.
        drop(lock);
        Ok(Some(Reattached {
            found,
            kept_at,
            commit: head.commit(),
        }))
    }
}
