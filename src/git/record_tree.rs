//! What a run's record needs of git to travel with its branch: a commit
//! whose tree is a flat list of named files (the record written), those
//! files read back from a commit fetched from elsewhere, whether one commit
//! descends from another (two records gone apart or not), and HEAD moved
//! onto a branch taken from a remote with the worktree made its tree. All
//! of it in-process, as the rest of the engine.

use gix::bstr::ByteSlice;
use gix::objs::tree::{Entry, EntryKind};

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::open::{HeadState, Repo};
use super::refs::{move_head, update};

impl Repo {
    /// A commit of `files` (name, content), each a blob at the top of its
    /// tree, on `parent` if any; no ref moves.
    pub fn commit_files(
        &self,
        files: &[(String, Vec<u8>)],
        parent: Option<ObjectId>,
        message: &str,
    ) -> Result<ObjectId, OpError> {
        let mut entries = Vec::with_capacity(files.len());
        for (name, bytes) in files {
            let oid = self
                .repo
                .write_blob(bytes)
                .ctx(|| format!("could not write {name} of the record"))?
                .detach();
            entries.push(Entry {
                mode: EntryKind::Blob.into(),
                filename: name.as_str().into(),
                oid,
            });
        }
        entries.sort_by(|a, b| a.filename.cmp(&b.filename));
        let tree = self
            .repo
            .write_object(gix::objs::Tree { entries })
            .ctx(|| "could not write the record's tree".into())?
            .detach();
        self.write_commit(message, tree, &parent.into_iter().collect::<Vec<_>>())
    }

    /// The files at the top of `commit`'s tree, by name.
    pub fn files_of(&self, commit: ObjectId) -> Result<Vec<(String, Vec<u8>)>, GitFailure> {
        let tree = self.commit_tree(commit)?;
        let tree = self
            .repo
            .find_tree(tree)
            .ctx(|| format!("could not read the tree of {commit}"))?;
        let mut files = Vec::new();
        for entry in tree.iter() {
            let entry = entry.ctx(|| format!("could not read the tree of {commit}"))?;
            if !entry.mode().is_blob() {
                continue;
            }
            let name = entry.filename().to_str_lossy().into_owned();
            let blob = self
                .repo
                .find_object(entry.oid())
                .ctx(|| format!("could not read {name} in {commit}"))?;
            files.push((name, blob.data.clone()));
        }
        Ok(files)
    }

    /// Whether `ancestor` is `descendant` or one of its ancestors.
    pub fn descends_from(
        &self,
        descendant: ObjectId,
        ancestor: ObjectId,
    ) -> Result<bool, GitFailure> {
        if descendant == ancestor {
            return Ok(true);
        }
        let walk = self
            .repo
            .rev_walk([descendant])
            .all()
            .ctx(|| format!("could not walk the history of {descendant}"))?;
        for info in walk {
            let info = info.ctx(|| format!("could not walk the history of {descendant}"))?;
            if info.id == ancestor {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether the object is in the repository.
    pub fn has_commit(&self, id: ObjectId) -> bool {
        self.repo.find_commit(id).is_ok()
    }

    /// Whether the index and the worktree are exactly HEAD's commit (or
    /// empty, on an unborn HEAD):
    /// nothing staged, changed or untracked (ignored files aside).
    pub fn is_clean(&self) -> Result<bool, OpError> {
        // An unborn HEAD (a clone of a remote whose HEAD names no branch)
        // is clean when nothing is staged or there.
        let tree = match self.head()?.commit() {
            Some(head) => self.commit_tree(head)?,
            None => self.repo.empty_tree().id,
        };
        Ok(self.index_tree()? == tree && self.fingerprint()? == tree)
    }

    /// Move HEAD from where it is onto `branch` (full name), which points
    /// at `tip`, and make the index and worktree `tip`'s tree, with the
    /// reflog line `git switch` writes. The worktree must be clean.
    pub fn switch_to(&mut self, branch: &str, tip: ObjectId) -> Result<(), OpError> {
        let head = self.head()?;
        let to = branch.strip_prefix("refs/heads/").unwrap_or(branch);
        let message = format!("checkout: moving from {} to {to}", head.reflog_name());
        let log_len = self.head_log_len();
        self.edit_refs(vec![move_head(
            &HeadState::Unborn {
                name: branch.to_owned(),
            },
            &message,
        )?])?;
        self.log_head_switch(log_len, head.commit(), Some(tip), &head.reflog_name(), to)?;
        self.revert_to(tip)?;
        Ok(())
    }

    /// Move HEAD from where it is onto `tip`, detached, and make the index
    /// and worktree `tip`'s tree, with the reflog line `git switch
    /// --detach` writes. The worktree must be clean.
    pub fn detach_onto(&mut self, tip: ObjectId) -> Result<(), OpError> {
        let head = self.head()?;
        let to = tip.to_string();
        let message = format!("checkout: moving from {} to {to}", head.reflog_name());
        let log_len = self.head_log_len();
        self.edit_refs(vec![move_head(
            &HeadState::Detached { commit: tip },
            &message,
        )?])?;
        self.log_head_switch(log_len, head.commit(), Some(tip), &head.reflog_name(), &to)?;
        self.revert_to(tip)?;
        Ok(())
    }

    /// Point each ref at its id, whatever it held, in one transaction.
    pub fn set_refs(&self, refs: &[(String, ObjectId)], message: &str) -> Result<(), GitFailure> {
        let edits = refs
            .iter()
            .map(|(name, id)| {
                update(
                    name,
                    *id,
                    gix::refs::transaction::PreviousValue::Any,
                    message,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        if edits.is_empty() {
            return Ok(());
        }
        self.edit_refs(edits)
    }
}
