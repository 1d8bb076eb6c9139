//! Which files an attempt changed, between two trees: what the contract's
//! integrity check and the semantic verifier look at.

use gix::bstr::ByteSlice;

use super::ObjectId;
use super::error::{Context, GitFailure, OpError};
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

/// Blobs larger than this are summarised, not diffed, in [`Repo::commit_patch`].
const PATCH_BLOB_LIMIT: usize = 4 * 1024 * 1024;

impl Repo {
    /// The first parent of `commit`, if it has one.
    pub fn first_parent(&self, commit: ObjectId) -> Result<Option<ObjectId>, GitFailure> {
        let found = self
            .repo
            .find_commit(commit)
            .ctx(|| format!("could not read commit {commit}"))?;
        Ok(found.parent_ids().next().map(|id| id.detach()))
    }

    /// `git show --format= <commit>` in spirit: what `commit` changed against
    /// its first parent (or the empty tree), as a unified patch. Read-only.
    pub fn commit_patch(&self, commit: ObjectId) -> Result<String, GitFailure> {
        let new_tree = self.commit_tree(commit)?;
        let old_tree = match self.first_parent(commit)? {
            Some(parent) => self.commit_tree(parent)?,
            None => self.repo.empty_tree().id,
        };
        self.tree_patch(old_tree, new_tree)
    }

    /// `git diff <base>` with untracked files included, as `git add -A`
    /// would see them: the worktree as it is now against `base`'s tree. The
    /// objects this takes are hashed in memory and never written, and the
    /// index is left alone, so a running loop is not disturbed.
    pub fn worktree_patch(&self, base: ObjectId) -> Result<String, OpError> {
        // Big files are named by their size, never read (see `blob.rs`).
        let mut scratch = self.in_memory();
        scratch.hashed_only = Some(Default::default());
        let old_tree = scratch.commit_tree(base)?;
        let new_tree = scratch.fingerprint()?;
        Ok(scratch.tree_patch(old_tree, new_tree)?)
    }

    /// The unified patch from tree `old_tree` to tree `new_tree`.
    fn tree_patch(&self, old_tree: ObjectId, new_tree: ObjectId) -> Result<String, GitFailure> {
        let mut patch = String::new();
        for file in self.changed_files(old_tree, new_tree)? {
            let old = file.old.map(|id| self.blob_text(id, PATCH_BLOB_LIMIT));
            let new = file.new.map(|id| self.blob_text(id, PATCH_BLOB_LIMIT));
            let (from, to) = (
                if file.old.is_some() {
                    format!("a/{}", file.path)
                } else {
                    "/dev/null".to_owned()
                },
                if file.new.is_some() {
                    format!("b/{}", file.path)
                } else {
                    "/dev/null".to_owned()
                },
            );
            patch.push_str(&format!("diff --git a/{0} b/{0}\n", file.path));
            match (old, new) {
                (Some(None), _) | (_, Some(None)) => {
                    let sizes = [file.old, file.new]
                        .into_iter()
                        .flatten()
                        .map(|id| match self.blob_size(id) {
                            Some(size) => format!("binary, {}", super::blob::human_size(size)),
                            None => "binary".to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join(" -> ");
                    patch.push_str(&format!("Binary files {from} and {to} differ ({sizes})\n"));
                }
                (old, new) => {
                    let old = old.flatten().unwrap_or_default();
                    let new = new.flatten().unwrap_or_default();
                    patch.push_str(&format!("--- {from}\n+++ {to}\n"));
                    patch.push_str(&unified(&old, &new));
                }
            }
        }
        Ok(patch)
    }
}

fn unified(old: &str, new: &str) -> String {
    use gix::diff::blob::unified_diff::{ConsumeBinaryHunk, ContextSize};
    use gix::diff::blob::{Algorithm, Diff, InternedInput, UnifiedDiff, sources};
    let input = InternedInput::new(sources::lines(old), sources::lines(new));
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    let printer = ConsumeBinaryHunk::new(gix::bstr::BString::default(), "\n");
    let bytes = UnifiedDiff::new(&diff, &input, printer, ContextSize::symmetrical(3))
        .consume()
        .unwrap_or_default();
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
