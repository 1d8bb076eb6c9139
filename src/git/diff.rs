//! Which files an attempt changed, between two trees: what the contract's
//! integrity check and the semantic verifier look at.

use gix::bstr::ByteSlice;

use super::ObjectId;
use super::error::{Context, GitFailure};
use super::open::Repo;

/// A file that differs between two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Repository-relative, `/`-separated.
    pub path: String,
    pub old: Option<ObjectId>,
    pub new: Option<ObjectId>,
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
        let options = gix::diff::Options::default().with_rewrites(None);
        let changes = self
            .repo
            .diff_tree_to_tree(&old_tree, &new_tree, options)
            .ctx(|| format!("could not compare {old} with {new}"))?;
        let mut files = Vec::new();
        for change in changes {
            use gix::object::tree::diff::ChangeDetached::*;
            let (path, old, new, mode) = match change {
                Addition {
                    location,
                    id,
                    entry_mode,
                    ..
                } => (location, None, Some(id), entry_mode),
                Deletion {
                    location,
                    id,
                    entry_mode,
                    ..
                } => (location, Some(id), None, entry_mode),
                Modification {
                    location,
                    previous_id,
                    id,
                    entry_mode,
                    ..
                } => (location, Some(previous_id), Some(id), entry_mode),
                Rewrite {
                    location,
                    id,
                    entry_mode,
                    ..
                } => (location, None, Some(id), entry_mode),
            };
            if mode.is_tree() {
                continue;
            }
            files.push(ChangedFile {
                path: path.to_str_lossy().into_owned(),
                old,
                new,
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }

    /// A blob as text, or `None` when it is missing, binary or larger than
    /// `limit` bytes.
    pub fn blob_text(&self, id: ObjectId, limit: usize) -> Option<String> {
        let blob = self.repo.find_blob(id).ok()?;
        let data = &blob.data;
        if data.len() > limit || data.contains(&0) {
            return None;
        }
        Some(String::from_utf8_lossy(data).into_owned())
    }
}
