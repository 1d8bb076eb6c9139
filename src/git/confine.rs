//! Confining an agent that works in the user's own worktree, beside their
//! uncommitted work, to the paths it was given. Before it starts, the
//! worktree's fingerprint (the tree `git add -A` would write, untracked
//! files included), the index as a tree and HEAD are noted; afterwards
//! every file it changed outside its paths goes back to the fingerprint,
//! the index back to the user's, and HEAD back where it was, while what it
//! wrote inside its paths stays. `git ralph plan` runs its agent so.
//!
//! Nothing here decides which paths are allowed, and nothing is thrown
//! away: the caller preserves the agent's work under a ref
//! ([`Repo::preserve`]) before it puts anything back.

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

use super::diff::ChangedFile;
use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::lock::IndexLock;
use super::open::{HeadState, Repo};
use super::refs::{move_head, update};
use super::reset::RevertStats;
use super::scope::Scope;

impl Repo {
    /// The index as a tree, as `git write-tree` writes it.
    pub fn index_tree(&self) -> Result<ObjectId, OpError> {
        let index = self.shared_index()?;
        Ok(super::tree::write_tree(&self.repo, &index)?)
    }

    /// The worktree's fingerprint now, and every file that differs from
    /// the fingerprint `before`, sorted by path.
    pub fn changed_since(&self, before: ObjectId) -> Result<(ObjectId, Vec<ChangedFile>), OpError> {
        let after = self.fingerprint()?;
        let changed = self.changed_files(before, after)?;
        Ok((after, changed))
    }

    /// `paths` (files that differ between the fingerprints `before` and
    /// `after`) as `before` has them, in the worktree, every other file
    /// left as `after` has it; then the index as the tree `index`
    /// describes (the user's, staged and unstaged changes apart). As
    /// `git restore --source=<before> -- <paths>` followed by `git
    /// read-tree <index>`, with the files `before` lacks removed.
    pub fn put_back_paths(
        &mut self,
        before: ObjectId,
        after: ObjectId,
        paths: &[String],
        index: ObjectId,
    ) -> Result<RevertStats, OpError> {
        let target = self.tree_with_paths_of(after, before, paths)?;
        let lock = IndexLock::acquire(self)?;
        let current = self.shared_index()?;
        let (restored, stats) = self.reset_worktree(target, current, &Scope::All)?;
        let index_file = self.index_for_tree(index, &restored)?;
        self.commit_index(lock, index_file, Some(index))?;
        Ok(stats)
    }

    /// `base` with each of `paths` as `from` has it: the same entry, or
    /// none.
    fn tree_with_paths_of(
        &self,
        base: ObjectId,
        from: ObjectId,
        paths: &[String],
    ) -> Result<ObjectId, GitFailure> {
        let context = || "could not build the tree to put back".to_owned();
        let from_tree = self
            .repo
            .find_tree(from)
            .ctx(|| format!("could not read tree {from}"))?;
        let mut editor = self.repo.edit_tree(base).ctx(context)?;
        for path in paths {
            let entry = from_tree
                .lookup_entry_by_path(path)
                .ctx(|| format!("could not look up {path} in {from}"))?;
            match entry {
                Some(entry) => {
                    let kind: EntryKind = entry.mode().kind();
                    editor
                        .upsert(path.as_bytes().as_bstr(), kind, entry.object_id())
                        .ctx(context)?;
                }
                None => {
                    editor.remove(path.as_bytes().as_bstr()).ctx(context)?;
                }
            }
        }
        Ok(editor.write().ctx(context)?.detach())
    }

    /// HEAD back at `before` (its branch, or its commit) when it points
    /// elsewhere now; returns where it was found. A commit HEAD was left
    /// detached at is kept at `keep_ref` first.
    pub fn put_head_back(
        &self,
        before: &HeadState,
        keep_ref: &str,
    ) -> Result<Option<HeadState>, OpError> {
        let now = self.head()?;
        let same = match (before, &now) {
            (
                HeadState::Branch { name: was, .. } | HeadState::Unborn { name: was },
                HeadState::Branch { name: is, .. } | HeadState::Unborn { name: is },
            ) => was == is,
            (HeadState::Detached { commit: was }, HeadState::Detached { commit: is }) => was == is,
            _ => false,
        };
        if same {
            return Ok(None);
        }
        let mut edits = Vec::new();
        if let HeadState::Detached { commit } = &now {
            edits.push(update(
                keep_ref,
                *commit,
                gix::refs::transaction::PreviousValue::Any,
                "ralph: keep where an agent left HEAD",
            )?);
        }
        let (from, to) = (now.reflog_name(), before.reflog_name());
        edits.push(move_head(
            before,
            &format!("checkout: moving from {from} to {to}"),
        )?);
        let log_len = self.head_log_len();
        self.edit_refs(edits)?;
        let back = self.head()?.commit();
        self.log_head_switch(log_len, now.commit(), back, &from, &to)?;
        Ok(Some(now))
    }
}
