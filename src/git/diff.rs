//! Which files an attempt changed, between two trees: what the contract's
//! integrity check and the semantic verifier look at.

use gix::bstr::ByteSlice;

use super::error::{Context, GitFailure};
use super::ids::ObjectId;
use super::open::Repo;

/// A file that differs between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Repository-relative, `/`-separated.
    pub path: String,
    pub old: Option<ObjectId>,
    pub new: Option<ObjectId>,
    /// The file's mode in each tree, as git writes it (`0o100644`,
    /// `0o100755`, `0o120000`, `0o160000`).
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
}

impl Repo {
    /// Files (not directories) added, removed or modified from `old` to
    /// `new`, sorted by path. Renames are reported as a removal plus an
    /// addition.
    pub fn changed_files(
        &self,
        old: ObjectId,
        new: ObjectId,
    ) -> Result<Vec<ChangedFile>, GitFailure> {
        let old_tree = self
            .repo
            .find_tree(old)
            .ctx(|| format!("could not read tree {old}"))?;
        let new_tree = self
            .repo
            .find_tree(new)
            .ctx(|| format!("could not read tree {new}"))?;
        // The plain tree diff: `diff_tree_to_tree` would set up a blob
        // cache, which reads the whole index, for renames not asked for.
        let mut recorder = gix::diff::tree::Recorder::default();
        gix::diff::tree(
            gix::objs::TreeRefIter::from_bytes(&old_tree.data, old.kind()),
            gix::objs::TreeRefIter::from_bytes(&new_tree.data, new.kind()),
            gix::diff::tree::State::default(),
            &self.repo.objects,
            &mut recorder,
        )
        .ctx(|| format!("could not compare {old} with {new}"))?;
        let mut files = Vec::new();
        for change in recorder.records {
            use gix::diff::tree::recorder::Change::*;
            let (path, old, new, old_mode, mode) = match change {
                Addition {
                    path,
                    oid,
                    entry_mode,
                    ..
                } => (path, None, Some(oid), None, entry_mode),
                Deletion {
                    path,
                    oid,
                    entry_mode,
                    ..
                } => (path, Some(oid), None, Some(entry_mode), entry_mode),
                Modification {
                    path,
                    previous_oid,
                    previous_entry_mode,
                    oid,
                    entry_mode,
                } => (
                    path,
                    Some(previous_oid),
                    Some(oid),
                    Some(previous_entry_mode),
                    entry_mode,
                ),
            };
            if mode.is_tree() {
                continue;
            }
            let mode_of = |mode: gix::object::tree::EntryMode| {
                u32::from_str_radix(&mode.kind().as_octal_str().to_str_lossy(), 8).unwrap_or(0)
            };
            let deleted = new.is_none();
            files.push(ChangedFile {
                path: path.to_str_lossy().into_owned(),
                old,
                new,
                old_mode: old_mode.map(mode_of),
                new_mode: (!deleted).then(|| mode_of(mode)),
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }

    /// A blob as text, or `None` when it is missing, binary or larger than
    /// `limit` bytes.
    pub fn blob_text(&self, id: ObjectId, limit: usize) -> Option<String> {
        // Never read a big blob just to find it is too big.
        if self.blob_size(id).is_none_or(|size| size > limit as u64) {
            return None;
        }
        let blob = self.repo.find_blob(id).ok()?;
        let data = &blob.data;
        if data.len() > limit || data.contains(&0) {
            return None;
        }
        Some(String::from_utf8_lossy(data).into_owned())
    }
}

impl Repo {
    /// The first parent of `commit`, if it has one.
    pub fn first_parent(&self, commit: ObjectId) -> Result<Option<ObjectId>, GitFailure> {
        let found = self
            .repo
            .find_commit(commit)
            .ctx(|| format!("could not read commit {commit}"))?;
        Ok(found.parent_ids().next().map(|id| id.detach()))
    }
}
