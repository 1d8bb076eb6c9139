//! Tree → worktree: the `git reset --hard && git clean -fd` that gix lacks.
//!
//! Only what differs is touched, so untouched files keep their mtimes and
//! incremental builds stay warm: the target index inherits stat data from the
//! current one where content matches, status then names the entries that
//! differ, and only those are checked out. Untracked files go one by one, and
//! only directories that end up empty are removed, so ignored files survive
//! anywhere, even inside untracked directories. Nested repositories and
//! worktrees are never deleted.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use gix::bstr::{BString, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use gix::status::index_worktree::Item;
use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
use serde::{Deserialize, Serialize};

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::lock::IndexLock;
use super::open::Repo;
use super::scope::{Learned, Scope};
use super::walk::Walk;

/// What a revert did, for the record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertStats {
    /// Tracked files written back.
    pub restored: usize,
    /// Untracked files and directories removed, plus tracked files that the
    /// target tree does not have.
    pub removed: usize,
}

impl Repo {
    /// `git reset --hard HEAD && git clean -fd`.
    pub fn revert(&mut self) -> Result<RevertStats, OpError> {
        let commit = self.head()?.commit();
        self.reset_to(commit)
    }

    /// The worktree and index as `commit` has them (`git read-tree -u
    /// --reset <commit> && git clean -fd`), HEAD left where it is: the
    /// uncommitted work a story has so far, taken up again.
    pub fn revert_to(&mut self, commit: ObjectId) -> Result<RevertStats, OpError> {
        self.reset_to(Some(commit))
    }

    fn reset_to(&mut self, commit: Option<ObjectId>) -> Result<RevertStats, OpError> {
        let _timed = crate::timings::phase("revert");
        let lock = IndexLock::acquire(self)?;
        self.scoped(|scope| -> Result<_, OpError> {
            let current = self.shared_index()?;
            let tree = match commit {
                Some(commit) => self.commit_tree(commit)?,
                None => self.repo.empty_tree().id,
            };
            let (index, stats) = self.reset_worktree(tree, current, scope)?;
            self.commit_index(lock, index, Some(tree))?;
            Ok((stats, Some(Learned::Clean)))
        })
    }

    /// Make the worktree equal `tree` (ignored files aside) and return the
    /// index that describes it, looking only at `scope` when the index
    /// already describes `tree`. The index on disk is not written.
    pub(crate) fn reset_worktree(
        &self,
        tree: ObjectId,
        current: gix::worktree::Index,
        scope: &Scope,
    ) -> Result<(gix::index::File, RevertStats), GitFailure> {
        let mut stats = RevertStats::default();
        // Right after a checkpoint or a revert the index already describes
        // the target (nothing was staged since): then it is the target, stat
        // data and all, and nothing is stale.
        let describes = self.index_describes(&current, tree)?;
        // What the watch knows is relative to the current index; against
        // another one, every entry may differ.
        let scope = if describes { scope } else { &Scope::All };
        let (target, stale) = if describes {
            (current, Vec::new())
        } else {
            let target = self.sparse_index_for_tree(tree, &current)?;
            // Tracked now but absent from the target: `git reset --hard`
            // deletes these even when they are ignored (force-added). The
            // agent's scratch files stay, untracked.
            let mut stale = paths_only_in(&current, &target);
            stale.retain(|path| !self.scratch.holds(path.as_ref()));
            (
                std::sync::Arc::new(gix::fs::FileSnapshot::new(target)),
                stale,
            )
        };
        let items = self.reset_status(&target, scope)?;
        let mut target = target.into_owned_or_cloned();

        let (checkout, mut untracked) = sort_reset_items(items, &mut target)?;

        // `git clean` judges what is ignored by the committed .gitignore
        // files, restored by `git reset --hard` first, not by the ones the
        // attempt left: when the attempt touched one, restore it, then list
        // the untracked files again under the restored rules.
        let workdir = self.workdir();
        let mut emptied_dirs = Vec::new();
        self.remove_all(&stale, &mut stats, &mut emptied_dirs)?;
        // Skip-worktree entries have no file on disk (`sparse.rs`).
        let skipped: Vec<BString> = super::sparse::present_skipped(workdir, &target)
            .into_iter()
            .map(|at| target.entries()[at].path(&target).to_owned())
            .collect();
        self.remove_all(&skipped, &mut stats, &mut emptied_dirs)?;
        let is_gitignore = |path: &[u8]| path == b".gitignore" || path.ends_with(b"/.gitignore");
        let rules: HashSet<usize> = checkout
            .iter()
            .copied()
            .filter(|at| is_gitignore(target.entries()[*at].path(&target)))
            .collect();
        if !rules.is_empty() || stale.iter().any(|path| is_gitignore(path)) {
            if !rules.is_empty() {
                self.checkout_only(&mut target, &rules)?;
            }
            let shared = std::sync::Arc::new(gix::fs::FileSnapshot::new(target));
            let items = self.reset_status(&shared, scope)?;
            target = shared.into_owned_or_cloned();
            untracked = items
                .into_iter()
                .filter_map(|item| match item {
                    Item::DirectoryContents { entry, .. } => deletable(entry),
                    _ => None,
                })
                .collect();
        }
        self.remove_all(&untracked, &mut stats, &mut emptied_dirs)?;
        remove_empty_dirs(workdir, emptied_dirs);

        stats.restored = checkout.len();
        let rest: HashSet<usize> = checkout.difference(&rules).copied().collect();
        if !rest.is_empty() {
            self.checkout_only(&mut target, &rest)?;
        }
        Ok((target, stats))
    }

    /// Remove each of `paths` (relative to the worktree) that is still there.
    fn remove_all(
        &self,
        paths: &[BString],
        stats: &mut RevertStats,
        emptied_dirs: &mut Vec<std::path::PathBuf>,
    ) -> Result<(), GitFailure> {
        for path in paths {
            let full = self.workdir().join(
                gix::path::from_bstr(path.as_bstr())
                    .ctx(|| format!("'{}' is not a valid path here", path))?,
            );
            if remove_path(&full).ctx(|| format!("could not remove '{}'", full.display()))? {
                stats.removed += 1;
                if let Some(parent) = full.parent() {
                    emptied_dirs.push(parent.to_owned());
                }
            }
        }
        Ok(())
    }

    /// Does `index` describe exactly `tree`: no conflicts, nothing only
    /// intended to be added, and the same tree? Known for free when this
    /// process wrote the index or its cache-tree is valid, else one hashing
    /// pass.
    fn index_describes(
        &self,
        index: &gix::index::File,
        tree: ObjectId,
    ) -> Result<bool, GitFailure> {
        if let Some(described) = self.tree_described_by(index) {
            return Ok(described == tree);
        }
        let plain = index
            .entries()
            .iter()
            .all(|e| e.stage_raw() == 0 && !e.flags.contains(Flags::INTENT_TO_ADD));
        Ok(plain && super::tree::tree_id(&self.repo, index)? == tree)
    }

    /// The index `git read-tree <tree>` would write, with stat data carried
    /// over from `current` wherever path, mode and content agree.
    pub(crate) fn index_for_tree(
        &self,
        tree: ObjectId,
        current: &gix::index::File,
    ) -> Result<gix::index::File, GitFailure> {
        let state = self
            .repo
            .index_from_tree(&tree)
            .ctx(|| format!("could not read tree {tree}"))?;
        let mut target = gix::index::File::from_state(state.into(), self.repo.index_path());
        // Stat data is only as good as the second it was written in: an
        // entry from the same second as the index could hide a later change
        // of the same size (racy git), so it is not carried over.
        let written = current.timestamp().unix_seconds();
        let old_entries = current.entries();
        let mut old_at = 0;
        let (entries, paths) = target.entries_mut_and_pathbacking();
        for entry in entries.iter_mut() {
            let path = entry.path_in(paths);
            // Both indexes are sorted by path: walk them side by side.
            while old_at < old_entries.len()
                && gix::index::Entry::cmp_filepaths(old_entries[old_at].path(current), path).is_lt()
            {
                old_at += 1;
            }
            if let Some(old) = old_entries.get(old_at)
                && old.path(current) == path
                && old.stage_raw() == 0
                && old.id == entry.id
                && old.mode == entry.mode
                && i64::from(old.stat.mtime.secs) < written
            {
                entry.stat = old.stat;
            }
        }
        Ok(target)
    }

    /// Status of the worktree against the target index, with every untracked
    /// file and empty directory listed one by one (nothing collapsed, nothing
    /// ignored), so deleting them can never reach an ignored file. The
    /// agent's scratch files are left out: neither restored nor deleted.
    fn reset_status(
        &self,
        target: &gix::worktree::Index,
        scope: &Scope,
    ) -> Result<Vec<Item>, GitFailure> {
        self.walk_status(
            target,
            Walk::Deletion,
            scope,
            "the worktree with the target tree",
        )
    }

    /// Check out the entries at `positions`, overwriting what is there, and
    /// leave every other file alone.
    pub(crate) fn checkout_only(
        &self,
        index: &mut gix::index::File,
        positions: &HashSet<usize>,
    ) -> Result<(), GitFailure> {
        let _timed = crate::timings::phase("checkout");
        // Big blobs go from their objects to disk as they are read.
        let streamed = self.stream_big_checkouts(index, positions)?;
        let rest: HashSet<usize>;
        let positions = if streamed.is_empty() {
            positions
        } else {
            rest = positions.difference(&streamed).copied().collect();
            &rest
        };
        if positions.is_empty() {
            return Ok(());
        }
        let skipped: Vec<bool> = index
            .entries()
            .iter()
            .map(|entry| entry.flags.contains(Flags::SKIP_WORKTREE))
            .collect();
        for (at, entry) in index.entries_mut().iter_mut().enumerate() {
            if !positions.contains(&at) || entry.mode == Mode::COMMIT {
                entry.flags.insert(Flags::SKIP_WORKTREE);
            }
        }
        let mut options = self
            .repo
            .checkout_options(
                gix::worktree::stack::state::attributes::Source::IdMappingThenWorktree,
            )
            .ctx(|| "could not configure checkout".into())?;
        options.overwrite_existing = true;
        options.destination_is_initially_empty = false;
        let objects = self
            .repo
            .objects
            .clone()
            .into_arc()
            .ctx(|| "could not share the object database".into())?;
        let outcome = gix::worktree::state::checkout(
            index,
            self.workdir(),
            objects,
            &gix::progress::Discard,
            &gix::progress::Discard,
            &AtomicBool::new(false),
            options,
        )
        .ctx(|| "could not check out files".into());
        for (entry, was_skipped) in index.entries_mut().iter_mut().zip(skipped) {
            if !was_skipped {
                entry.flags.remove(Flags::SKIP_WORKTREE);
            }
        }
        checked_out(&outcome?)?;
        // Entries written just now are racy by definition; leave their stat
        // empty so the next status re-hashes them rather than trust it.
        for at in positions {
            if let Some(entry) = index.entries_mut().get_mut(*at)
                && entry.mode != Mode::COMMIT
            {
                entry.stat = racy_safe(entry.stat);
            }
        }
        Ok(())
    }
}

/// Paths in `old` that `new` does not have, by walking both sorted indexes.
fn paths_only_in(old: &gix::index::File, new: &gix::index::File) -> Vec<BString> {
    let new_entries = new.entries();
    let mut at = 0;
    let mut only = Vec::new();
    for entry in old.entries() {
        let path = entry.path(old);
        while at < new_entries.len()
            && gix::index::Entry::cmp_filepaths(new_entries[at].path(new), path).is_lt()
        {
            at += 1;
        }
        if new_entries.get(at).is_none_or(|e| e.path(new) != path)
            && only.last().is_none_or(|p: &BString| p != path)
        {
            only.push(path.to_owned());
        }
    }
    only
}

/// What a revert must do about each status item against its target: the
/// entries to check out, and the untracked paths to delete. An entry whose
/// content is unchanged takes the file's stat data, unless the file was
/// written in this second (git's racy-clean rule).
fn sort_reset_items(
    items: Vec<Item>,
    target: &mut gix::index::File,
) -> Result<(HashSet<usize>, Vec<BString>), GitFailure> {
    let started = gix::index::entry::stat::Time::try_from(std::time::SystemTime::now())
        .ctx(|| "the system clock is before 1970".into())?;
    let mut checkout = HashSet::new();
    let mut untracked = Vec::new();
    for item in items {
        match item {
            Item::Modification {
                entry_index,
                status,
                ..
            } => match status {
                EntryStatus::Change(Change::SubmoduleModification(_)) => {}
                EntryStatus::Change(_)
                | EntryStatus::IntentToAdd
                | EntryStatus::Conflict { .. } => {
                    checkout.insert(entry_index);
                }
                EntryStatus::NeedsUpdate(stat) => {
                    if stat.mtime.secs < started.secs {
                        target.entries_mut()[entry_index].stat = stat;
                    }
                }
            },
            Item::DirectoryContents { entry, .. } => {
                untracked.extend(deletable(entry));
            }
            Item::Rewrite { .. } => {}
        }
    }
    Ok((checkout, untracked))
}

/// An untracked entry `git clean -fd` would delete: never a nested
/// repository.
fn deletable(entry: gix::dir::Entry) -> Option<BString> {
    use gix::dir::entry::{Kind, Status};
    (entry.status == Status::Untracked && entry.disk_kind != Some(Kind::Repository))
        .then_some(entry.rela_path)
}

/// Keep stat data only when its mtime is safely before now.
fn racy_safe(stat: Stat) -> Stat {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if u64::from(stat.mtime.secs) + 1 < now {
        stat
    } else {
        Stat::default()
    }
}

/// Remove a file, a symlink or an (empty) directory entry; `false` when it
/// was already gone. A directory that still holds something is left alone.
fn remove_path(path: &Path) -> std::io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err),
        Ok(metadata) if metadata.is_dir() => match std::fs::remove_dir(path) {
            Ok(()) => Ok(true),
            Err(_) => Ok(false),
        },
        Ok(_) => std::fs::remove_file(path).map(|()| true),
    }
}

/// Remove directories left empty by deletions, bottom-up, never the worktree
/// root and never a directory that still holds anything (an ignored file).
pub(crate) fn remove_empty_dirs(workdir: &Path, mut dirs: Vec<std::path::PathBuf>) {
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    dirs.dedup();
    for dir in dirs {
        let mut current = Some(dir.as_path());
        while let Some(dir) = current {
            if dir == workdir || !dir.starts_with(workdir) || std::fs::remove_dir(dir).is_err() {
                break;
            }
            current = dir.parent();
        }
    }
}

/// The first path a checkout could not write, as a failure.
pub(super) fn checked_out(
    outcome: &gix::worktree::state::checkout::Outcome,
) -> Result<(), GitFailure> {
    if let Some(error) = outcome.errors.first() {
        return Err(GitFailure::new(
            format!("could not check out '{}'", error.path.to_str_lossy()),
            format!("{}", error.error),
        ));
    }
    if let Some(collision) = outcome.collisions.first() {
        return Err(GitFailure::new(
            format!("could not check out '{}'", collision.path.to_str_lossy()),
            "another path collides with it",
        ));
    }
    Ok(())
}
