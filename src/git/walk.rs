//! The one status walk behind snapshots and reverts: the index against the
//! worktree, every untracked file listed on its own (nothing collapsed,
//! nothing ignored), nested repositories never entered. A snapshot and a
//! revert ask the same question and differ only in what a revert must also
//! know to delete safely: which entries a deletion may reach.

use gix::bstr::{BString, ByteSlice};
use gix::status::index_worktree::Item;

use super::error::{Context, GitFailure};
use super::open::Repo;
use super::scope::Scope;

/// What the walk is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// What `git add -A` would stage.
    Snapshot,
    /// What `git reset --hard && git clean -fd` would restore or delete.
    Deletion,
}

impl Repo {
    /// Status between `index` and the worktree within `scope`, the agent's
    /// scratch files left out; `what` names the comparison in errors.
    /// Items name their entries by position in `index`.
    pub(crate) fn walk_status(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
        scope: &Scope,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let Scope::Paths(paths) = scope else {
            return self.walk(index, walk, Some(Vec::new()), what);
        };
        // The entries in scope are compared without pathspecs, whose
        // matching costs every pattern for every path; only the paths that
        // may hold untracked files are walked, with pathspecs.
        let subset = super::scope::subset(index, paths);
        let mut items = if subset.index.entries().is_empty() {
            Vec::new()
        } else {
            self.walk(&subset.index, walk, None, what)?
        };
        super::scope::remap(&mut items, &subset.positions);
        let untracked = self.may_hold_untracked(index, paths);
        if !untracked.is_empty() {
            let found = self.walk(&subset.index, walk, Some(untracked), what)?;
            items.extend(
                found
                    .into_iter()
                    .filter(|item| matches!(item, Item::DirectoryContents { .. })),
            );
        }
        Ok(items)
    }

    /// Literal pathspecs for the paths of `paths` that are not a tracked
    /// file still standing: new files, directories, and paths now gone.
    fn may_hold_untracked(&self, index: &gix::index::File, paths: &[BString]) -> Vec<BString> {
        paths
            .iter()
            .filter(|path| {
                index.entry_by_path(path.as_bstr()).is_none()
                    || gix::path::from_bstr(path.as_bstr()).is_ok_and(|relative| {
                        self.workdir()
                            .join(relative)
                            .symlink_metadata()
                            .is_ok_and(|meta| meta.is_dir())
                    })
            })
            .map(|path| super::scope::literal(path.as_bstr()))
            .collect()
    }

    /// One status run: with `pathspecs` the untracked files within them
    /// too (none for every path), without only the index entries.
    fn walk(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
        pathspecs: Option<Vec<BString>>,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let deletion = walk == Walk::Deletion;
        let mut status = self
            .repo
            .status(gix::progress::Discard)
            .ctx(|| "could not prepare a status".into())?
            .index(self.status_input(index))
            .index_worktree_submodules(None)
            .untracked_files(gix::status::UntrackedFiles::Files)
            .dirwalk_options(|options| {
                options
                    .emit_ignored(None)
                    .emit_tracked(false)
                    // A snapshot adds none, but a watched revert must
                    // know the ones a checkpoint left.
                    .emit_empty_directories(true)
                    .recurse_repositories(false)
                    .for_deletion(deletion.then(Default::default))
            });
        if pathspecs.is_none() {
            status = status.untracked_files(gix::status::UntrackedFiles::None);
        }
        let status = status
            .into_index_worktree_iter(pathspecs.unwrap_or_default())
            .ctx(|| format!("could not compare {what}"))?;
        self.scratch.leave_out(status, what)
    }
}
