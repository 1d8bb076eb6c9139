//! Sparse checkouts, handed back sparse. An index entry git marks
//! skip-worktree (outside the sparse-checkout patterns) has no file on
//! disk, and status looks past it. Three rules keep that so through a run,
//! each one git's own:
//!
//! - an index built from a tree (a revert, abort, cleanup) has the
//!   patterns applied to it, as git re-applies sparsity when it resets;
//! - a skip-worktree entry whose file is on disk all the same (an agent
//!   wrote it) is an ordinary tracked entry to a snapshot, as git clears
//!   the bit of such an entry when it reads the index: its content is
//!   committed, never overlooked;
//! - a reset removes the file of an entry that ends up skip-worktree, as
//!   git does when it re-applies sparsity; what was in it is kept first
//!   (the attempt's ref, the set-aside, the checkpoint).
//!
//! Nothing here writes the index; the callers do.

use std::path::Path;

use gix::index::entry::Flags;

use super::error::{Context, GitFailure};
use super::open::Repo;

impl Repo {
    /// Mark the entries of `index` that the sparse-checkout patterns leave
    /// out skip-worktree. Nothing when sparse checkout is off or has no
    /// patterns; `index` must carry no skip-worktree bit yet.
    pub(crate) fn apply_sparsity(&self, index: &mut gix::index::State) -> Result<(), GitFailure> {
        let config = self.repo.config_snapshot();
        if !config.boolean("core.sparseCheckout").unwrap_or(false) {
            return Ok(());
        }
        let git_dir = self.repo.git_dir();
        let source = git_dir.join("info/sparse-checkout");
        let Some(patterns) = gix::worktree::sparse::read_patterns(git_dir)
            .ctx(|| format!("could not read {}", source.display()))?
        else {
            return Ok(());
        };
        let cone = config.boolean("core.sparseCheckoutCone").unwrap_or(false);
        let case = if config.boolean("core.ignoreCase").unwrap_or(false) {
            gix::glob::pattern::Case::Fold
        } else {
            gix::glob::pattern::Case::Sensitive
        };
        gix::worktree::sparse::apply_patterns(index, &patterns, &source, cone, case)
            .map_err(|err| GitFailure::new(format!("could not apply {}", source.display()), err))
    }

    /// [`Repo::index_for_tree`] with the sparse-checkout patterns applied.
    pub(crate) fn sparse_index_for_tree(
        &self,
        tree: super::ids::ObjectId,
        current: &gix::index::File,
    ) -> Result<gix::index::File, GitFailure> {
        let mut index = self.index_for_tree(tree, current)?;
        self.apply_sparsity(&mut index)?;
        Ok(index)
    }
}

/// Positions of the skip-worktree entries of `index` whose file is on disk
/// in `workdir`. A directory found missing is not looked into again.
pub(crate) fn present_skipped(workdir: &Path, index: &gix::index::State) -> Vec<usize> {
    let mut missing_dir: Option<Vec<u8>> = None;
    let mut present = Vec::new();
    for (at, entry) in index.entries().iter().enumerate() {
        if !entry.flags.contains(Flags::SKIP_WORKTREE) {
            continue;
        }
        let path: &[u8] = entry.path(index);
        if let Some(dir) = &missing_dir
            && path.starts_with(dir)
            && path.get(dir.len()) == Some(&b'/')
        {
            continue;
        }
        let Ok(rel) = gix::path::from_byte_slice(path) else {
            continue;
        };
        if std::fs::symlink_metadata(workdir.join(rel)).is_ok() {
            present.push(at);
            continue;
        }
        missing_dir = first_missing_dir(workdir, path);
    }
    present
}

/// Positions, in order, of the skip-worktree entries of `index` whose
/// directory is on disk in `workdir`: where untracked files may stand
/// beside them.
pub(crate) fn skipped_in_present_dirs(workdir: &Path, index: &gix::index::State) -> Vec<usize> {
    let mut last: Option<(&[u8], bool)> = None;
    let mut found = Vec::new();
    for (at, entry) in index.entries().iter().enumerate() {
        if !entry.flags.contains(Flags::SKIP_WORKTREE) {
            continue;
        }
        let path: &[u8] = entry.path(index);
        let dir = &path[..path.iter().rposition(|b| *b == b'/').unwrap_or(0)];
        let exists = match last {
            Some((seen, exists)) if seen == dir => exists,
            _ => {
                let exists = dir.is_empty()
                    || gix::path::from_byte_slice(dir).is_ok_and(|rel| {
                        std::fs::symlink_metadata(workdir.join(rel)).is_ok_and(|m| m.is_dir())
                    });
                last = Some((dir, exists));
                exists
            }
        };
        if exists {
            found.push(at);
        }
    }
    found
}

/// The shallowest directory on the way to `path` that is not on disk.
fn first_missing_dir(workdir: &Path, path: &[u8]) -> Option<Vec<u8>> {
    let mut end = 0;
    while let Some(slash) = path[end..].iter().position(|b| *b == b'/') {
        let dir = &path[..end + slash];
        let rel = gix::path::from_byte_slice(dir).ok()?;
        if std::fs::symlink_metadata(workdir.join(rel)).is_err() {
            return Some(dir.to_vec());
        }
        end += slash + 1;
    }
    None
}

/// Clear the skip-worktree bit of the entries at `positions`.
pub(crate) fn unskip(index: &mut gix::index::State, positions: &[usize]) {
    let entries = index.entries_mut();
    for at in positions {
        let flags = &mut entries[*at].flags;
        flags.remove(Flags::SKIP_WORKTREE);
        if !flags.contains(Flags::INTENT_TO_ADD) {
            flags.remove(Flags::EXTENDED);
        }
    }
}

/// `index` with the skip-worktree bit cleared for every entry whose file
/// is on disk in `workdir`; itself when there is none.
pub(crate) fn unskip_present(workdir: &Path, index: gix::worktree::Index) -> gix::worktree::Index {
    let present = present_skipped(workdir, &index);
    if present.is_empty() {
        return index;
    }
    let mut owned = gix::fs::FileSnapshot::into_owned_or_cloned(index);
    unskip(&mut owned, &present);
    std::sync::Arc::new(gix::fs::FileSnapshot::new(owned))
}
