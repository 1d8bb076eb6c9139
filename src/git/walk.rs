//! The one status walk behind snapshots and reverts: the index against the
//! worktree, every untracked file listed on its own (nothing collapsed,
//! nothing ignored), nested repositories never entered. A snapshot and a
//! revert ask the same question and differ only in what a revert must also
//! know to delete safely: which entries a deletion may reach.

use gix::bstr::BString;
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
        match scope {
            Scope::All => self.walk(index, walk, Vec::new(), what),
            Scope::Paths(paths) => {
                let subset = super::scope::subset(index, paths);
                // No pathspec would mean every path.
                if subset.pathspecs.is_empty() {
                    return Ok(Vec::new());
                }
                let mut items = self.walk(&subset.index, walk, subset.pathspecs, what)?;
                super::scope::remap(&mut items, &subset.positions);
                Ok(items)
            }
        }
    }

    fn walk(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
        pathspecs: Vec<BString>,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let deletion = walk == Walk::Deletion;
        let status = self
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
            })
            .into_index_worktree_iter(pathspecs)
            .ctx(|| format!("could not compare {what}"))?;
        self.scratch.leave_out(status, what)
    }
}
