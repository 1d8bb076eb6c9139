//! The one status walk behind snapshots and reverts: the index against the
//! worktree, every untracked file listed on its own (nothing collapsed,
//! nothing ignored), nested repositories never entered. A snapshot and a
//! revert ask the same question and differ only in what a revert must also
//! know to delete safely: which entries a deletion may reach.

use gix::bstr::{BString, ByteSlice};
use gix::status::index_worktree::Item;

use super::dir_cache::DirCache;
use super::error::{Context, GitFailure};
use super::open::Repo;
use super::scope::{Scope, Subset};

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
        // gix's walk never enters a directory whose entries are all
        // skip-worktree, where git finds untracked files all the same: the
        // walk sees such entries as ordinary ones, and what it says of
        // them is left out (`sparse.rs` has the rules for them).
        let revealed = super::sparse::skipped_in_present_dirs(self.workdir(), index);
        if revealed.is_empty() {
            return self.walk_status_as_is(index, walk, scope, what);
        }
        let mut copy = (***index).clone();
        super::sparse::unskip(&mut copy, &revealed);
        let copy = std::sync::Arc::new(gix::fs::FileSnapshot::new(copy));
        let mut items = self.walk_status_as_is(&copy, walk, scope, what)?;
        items.retain(|item| match item {
            Item::Modification { entry_index, .. } => revealed.binary_search(entry_index).is_err(),
            _ => true,
        });
        Ok(items)
    }

    fn walk_status_as_is(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
        scope: &Scope,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let _timed = crate::timings::phase("scan");
        let Scope::Paths(paths) = scope else {
            return self.walk_everything(index, walk, what);
        };
        // The entries in scope are compared without pathspecs, whose
        // matching costs every pattern for every path; only the paths that
        // may hold untracked files are walked, with pathspecs.
        let subset = super::scope::subset(index, paths);
        let mut items = self.walk_subset(&subset, walk, what)?;
        let untracked = self.may_hold_untracked(index, paths);
        if !untracked.is_empty() {
            items.extend(self.walk_untracked(&subset, walk, untracked, what)?);
        }
        Ok(items)
    }

    /// Every entry compared, first on its stat data, directory by directory
    /// (see `settled.rs`), then by status where that leaves doubt; and the
    /// untracked files looked for only where the directory cache says they
    /// may be (see `dir_cache.rs`), alongside. When the cache cannot tell,
    /// one walk of everything.
    fn walk_everything(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let case_sensitive = self
            .repo
            .filesystem_options()
            .is_ok_and(|caps| !caps.ignore_case);
        if !case_sensitive {
            return self.walk(index, walk, Some(Vec::new()), what);
        }
        let workdir = self.workdir();
        let old = self
            .dir_cache
            .take()
            .unwrap_or_else(|| DirCache::read(&self.dir_cache_path()));
        let (unsettled, found) = std::thread::scope(|threads| {
            let found =
                threads.spawn(|| super::dir_cache::untracked_candidates(workdir, index, old));
            let unsettled = super::settled::unsettled(workdir, index);
            (unsettled, found.join().ok().flatten())
        });
        let Some((candidates, learned)) = found else {
            return self.walk(index, walk, Some(Vec::new()), what);
        };
        *self.dir_cache.borrow_mut() = Some(learned);
        // Only the entries their stat data does not settle go to status.
        let items = match unsettled {
            Some(positions) => {
                self.walk_subset(&super::scope::subset_at(index, positions), walk, what)
            }
            None => self.walk(index, walk, None, what),
        };
        let mut items = items?;
        if !candidates.is_empty() {
            let subset = super::scope::subset(index, &candidates);
            let literals = candidates
                .iter()
                .map(|path| super::scope::literal(path.as_bstr()))
                .collect();
            items.extend(self.walk_untracked(&subset, walk, literals, what)?);
        }
        Ok(items)
    }

    /// The entries of `subset` compared, told at their places in the whole
    /// index.
    fn walk_subset(
        &self,
        subset: &Subset,
        walk: Walk,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let mut items = if subset.index.entries().is_empty() {
            Vec::new()
        } else {
            self.walk(&subset.index, walk, None, what)?
        };
        super::scope::remap(&mut items, &subset.positions);
        Ok(items)
    }

    /// The untracked files below `pathspecs`; the entries of `subset`
    /// stand for what is tracked there.
    fn walk_untracked(
        &self,
        subset: &Subset,
        walk: Walk,
        pathspecs: Vec<BString>,
        what: &str,
    ) -> Result<impl Iterator<Item = Item>, GitFailure> {
        let found = self.walk(&subset.index, walk, Some(pathspecs), what)?;
        Ok(found
            .into_iter()
            .filter(|item| matches!(item, Item::DirectoryContents { .. })))
    }

    /// `<git-dir>/ralph/dir-cache`: which directories held only tracked
    /// files at the last full scan of this worktree.
    pub(crate) fn dir_cache_path(&self) -> std::path::PathBuf {
        self.own_ralph_dir().join(super::own_files::DIR_CACHE)
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
    /// too (none for every path), without only the index entries. Run on
    /// this thread, and without looking for submodules, which would read
    /// the index from disk once more.
    fn walk(
        &self,
        index: &gix::worktree::Index,
        walk: Walk,
        pathspecs: Option<Vec<BString>>,
        what: &str,
    ) -> Result<Vec<Item>, GitFailure> {
        let deletion = walk == Walk::Deletion;
        let dirwalk = match &pathspecs {
            None => None,
            Some(_) => Some(
                self.repo
                    .dirwalk_options()
                    .ctx(|| "could not prepare a status".into())?
                    .emit_untracked(gix::dir::walk::EmissionMode::Matching)
                    .emit_ignored(None)
                    .emit_tracked(false)
                    // A snapshot adds none, but a watched revert must know
                    // the ones a checkpoint left.
                    .emit_empty_directories(true)
                    .recurse_repositories(false)
                    .for_deletion(deletion.then(Default::default)),
            ),
        };
        let options = gix::status::index_worktree::Options {
            sorting: None,
            dirwalk_options: dirwalk,
            rewrites: None,
            thread_limit: None,
        };
        let input = self.status_input(index);
        let mut collect = Collect(Vec::new());
        self.repo
            .index_worktree_status(
                &input,
                pathspecs.unwrap_or_default(),
                &mut collect,
                gix::status::plumbing::index_as_worktree::traits::FastEq,
                NoSubmodules,
                &mut gix::progress::Discard,
                &std::sync::atomic::AtomicBool::new(false),
                options,
            )
            .ctx(|| format!("could not compare {what}"))?;
        self.scratch
            .leave_out(collect.0.into_iter().map(Ok::<_, GitFailure>), what)
    }
}

/// Status items as they come.
struct Collect(Vec<Item>);

impl<'index> gix::status::plumbing::index_as_worktree_with_renames::VisitEntry<'index> for Collect {
    type ContentChange = ();
    type SubmoduleStatus = gix::submodule::Status;

    fn visit_entry(
        &mut self,
        entry: gix::status::plumbing::index_as_worktree_with_renames::Entry<
            'index,
            Self::ContentChange,
            Self::SubmoduleStatus,
        >,
    ) {
        self.0.push(entry.into());
    }
}

/// Submodules are left alone: a snapshot reads their HEAD itself, and a
/// revert never touches them.
#[derive(Clone, Copy)]
struct NoSubmodules;

impl gix::status::plumbing::index_as_worktree::traits::SubmoduleStatus for NoSubmodules {
    type Output = gix::submodule::Status;

    fn status(
        &mut self,
        _entry: &gix::index::Entry,
        _rela_path: &gix::bstr::BStr,
    ) -> gix::Result<Option<Self::Output>> {
        Ok(None)
    }
}
