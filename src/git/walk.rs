//! The one status walk behind snapshots and reverts: the index against the
//! worktree, every untracked file listed on its own (nothing collapsed,
//! nothing ignored), nested repositories never entered. A snapshot and a
//! revert ask the same question and differ only in what a revert must also
//! know to delete safely: empty directories, and which entries a deletion
//! may reach.

use gix::bstr::BString;
use gix::status::index_worktree::Item;

use super::error::{Context, GitFailure};
use super::open::Repo;

/// What the walk is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// What `git add -A` would stage.
    Snapshot,
    /// What `git reset --hard && git clean -fd` would restore or delete.
    Deletion,
}

impl Repo {
    /// Status between `index` and the worktree, the agent's scratch files
    /// left out; `what` names the comparison in errors.
    pub(crate) fn walk_status(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
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
                    .emit_empty_directories(deletion)
                    .recurse_repositories(false)
                    .for_deletion(deletion.then(Default::default))
            })
            .into_index_worktree_iter(Vec::<BString>::new())
            .ctx(|| format!("could not compare {what}"))?;
        self.scratch.leave_out(status, what)
    }
}
