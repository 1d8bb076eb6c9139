//! How much of the worktree a snapshot or a revert must look at. Without a
//! watch, everything: every index entry is compared with its file and every
//! directory is read. With one, only the paths touched since the last
//! operation that knew the worktree's state (its baseline), the paths that
//! operation found changed, and the entries the index itself marks as
//! unsure (no stat data, intent to add, conflicts).
//!
//! That shortcut is only as good as the chain behind it, so it is taken
//! only when every link holds: the watch has run without a gap since the
//! baseline (no overflow, no failure, a fresh watch has none yet), the
//! index is the file the baseline knew, and `info/exclude` is unchanged. A
//! `.gitignore` that was touched widens the scope to its whole directory;
//! one at the top means a full scan. Anything else is a full scan, which
//! then becomes the next baseline. Hard links are the known gap: a write
//! through a second name is reported under that name only.

use std::collections::BTreeSet;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::{Flags, Stat};
use gix::status::index_worktree::Item;

use super::open::Repo;
use super::repo_state::{Ahead, Baseline, Scan, Watching, identity};
use super::watch::{Ignored, WatchLost, WorktreeWatch};

/// Above this many paths a scoped walk costs about what a full one does.
const MAX_SCOPED: usize = 20_000;

/// What an operation examines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    All,
    /// These paths and everything below them; sorted, none below another.
    Paths(Vec<BString>),
}

/// What an operation learned about the worktree.
pub(crate) enum Learned {
    /// The index describes the worktree: it was just written to match.
    Clean,
    /// The worktree differs from the index at these paths at most.
    Dirty(BTreeSet<BString>),
    /// The worktree is this snapshot, which the index is not.
    Ahead(Ahead),
}

impl Repo {
    /// Watch the worktree from now on, so that snapshots and reverts look
    /// only at what changed. Until the next full scan nothing is known, so
    /// the first snapshot or revert after this still looks at everything.
    /// `Ok(false)` when a watch already runs, or could not be started
    /// before: it is not tried again (a failure [`Repo::start_watching`]
    /// kept is returned once).
    pub fn watch_worktree(&mut self) -> Result<bool, WatchLost> {
        let _timed = crate::timings::phase("watch start");
        if self.watching.borrow().is_some() {
            return Ok(false);
        }
        if let Some(refused) = self.watch_refused.get_mut() {
            return match refused.take() {
                Some(lost) => Err(lost),
                None => Ok(false),
            };
        }
        let watch = WorktreeWatch::start(
            self.workdir(),
            self.git_dir(),
            self.ralph_dir().join(super::own_files::COOKIES),
        )
        .inspect_err(|_| *self.watch_refused.get_mut() = Some(None))?;
        *self.watching.borrow_mut() = Some(Watching {
            watch,
            touched: BTreeSet::new(),
            new_dirs: BTreeSet::new(),
            baseline: None,
            last: None,
            uncovered: None,
            ahead: None,
            ahead_scope: None,
        });
        Ok(true)
    }

    /// [`Repo::watch_worktree`] before anything else reads the worktree (a
    /// run's initial state, a resumed run's first look), so that even the
    /// first attempt is judged on what it touched. A watch that cannot
    /// start is not an error here: the next [`Repo::watch_worktree`] says
    /// why, to whoever reports it.
    /// The watch then lives as long as the process: a later [`Repo::open`]
    /// of this worktree takes it up (see `handover.rs`).
    pub fn start_watching(&mut self) {
        match self.watch_worktree() {
            Ok(_) => self.hands_over = true,
            Err(lost) => *self.watch_refused.get_mut() = Some(Some(lost)),
        }
    }

    /// Stop watching: every later operation looks at everything.
    pub fn stop_watching(&mut self) {
        *self.watching.borrow_mut() = None;
    }

    /// How the last snapshot or revert looked at the worktree; `None`
    /// before any, or when not watching.
    pub fn last_scan(&self) -> Option<Scan> {
        self.watching.borrow().as_ref()?.last.clone()
    }

    /// The scope for an operation starting now.
    pub(crate) fn scope(&self) -> Scope {
        let _timed = crate::timings::phase("watch");
        let mut watching = self.watching.borrow_mut();
        let Some(watching) = watching.as_mut() else {
            return Scope::All;
        };
        let index = self.shared_index().ok();
        let mut ignored = self.ignored_dirs(index.as_ref().map(|index| &***index));
        let (scope, scan) = match self.decide(watching, &mut ignored) {
            Ok((paths, ahead_scope)) => {
                watching.ahead_scope = ahead_scope;
                let scan = Scan::Watched { paths: paths.len() };
                (Scope::Paths(paths), scan)
            }
            Err(Unscoped(why)) => {
                watching.baseline = None;
                watching.ahead = None;
                watching.ahead_scope = None;
                // Whatever changes once the full scan has looked must be
                // reported: every directory that matters is watched first.
                watching.uncovered = match &index {
                    Some(index) => watching
                        .watch
                        .cover(&tracked_dirs(index), &mut ignored)
                        .err()
                        .map(|lost| lost.to_string()),
                    None => Some("the index could not be read".into()),
                };
                (Scope::All, Scan::Full { why })
            }
        };
        watching.last = Some(scan);
        scope
    }

    /// The paths an operation starting now must look at, and the fewer a
    /// snapshot starting from the last one not written must (`None` when
    /// there is none, or the index moved since).
    fn decide(
        &self,
        watching: &mut Watching,
        ignored: &mut Ignored<'_>,
    ) -> Result<(Vec<BString>, Option<Vec<BString>>), Unscoped> {
        let cut = watching
            .watch
            .cut(ignored)
            .map_err(|lost| Unscoped(lost.to_string()))?;
        watching.touched.extend(cut.touched);
        watching.new_dirs = cut.new_dirs;
        let baseline = watching.baseline.as_ref().ok_or_else(|| {
            Unscoped(
                watching
                    .uncovered
                    .clone()
                    .unwrap_or_else(|| "no full scan since the watch began".into()),
            )
        })?;
        if baseline.excludes != identity(&self.excludes_path()) {
            return Err(Unscoped("info/exclude changed".into()));
        }
        let mut paths: BTreeSet<BString> = watching
            .touched
            .iter()
            .chain(&baseline.dirty)
            .cloned()
            .collect();
        // Another program that rewrote the index (an agent's `git status`
        // refreshes it, `git add` stages) changed what the worktree is
        // compared with at the entries that differ, and nowhere else.
        let Some((known, before)) = &baseline.index else {
            return Err(Unscoped("the index could not be read".into()));
        };
        let index_moved = Some(*known) != identity(&self.repo.index_path());
        if index_moved {
            let now = self
                .shared_index()
                .map_err(|err| Unscoped(format!("the index could not be read: {err}")))?;
            paths.extend(entries_that_differ(before, &now));
        }
        let ahead_scope = match watching.ahead {
            Some(_) if !index_moved => Some(self.widened(watching.touched.clone())?),
            _ => None,
        };
        let paths = self.widened(paths)?;
        if paths.len() > MAX_SCOPED {
            return Err(Unscoped(format!("more than {MAX_SCOPED} paths changed")));
        }
        Ok((outermost(paths), ahead_scope.map(outermost)))
    }

    /// `paths` with what a change at them reaches beyond them: the
    /// directory of a `.gitignore`, and the directories a removal emptied.
    fn widened(&self, mut paths: BTreeSet<BString>) -> Result<BTreeSet<BString>, Unscoped> {
        for rules in paths.clone().iter().filter(|p| is_gitignore(p.as_ref())) {
            match rules.rfind_byte(b'/') {
                Some(slash) => paths.insert(rules[..slash].into()),
                None => return Err(Unscoped("the top .gitignore changed".into())),
            };
        }
        // A removal can leave its directory empty, which `git clean -fd`
        // deletes: an empty directory above a path that is gone is in
        // scope too, at no cost since it holds nothing.
        let mut seen = BTreeSet::new();
        for path in paths.clone() {
            if self.exists(path.as_ref()) {
                continue;
            }
            for slash in path.rfind_iter("/") {
                let dir = BString::from(&path[..slash]);
                if !seen.insert(dir.clone()) {
                    break;
                }
                if self.is_empty_dir(dir.as_ref()) {
                    paths.insert(dir);
                }
            }
        }
        Ok(paths)
    }

    /// Where a snapshot starting now begins: from the last one, when it
    /// was not written and nothing but what the watch reports changed
    /// since; the paths to look at then.
    pub(crate) fn ahead_start(&self) -> Option<(Ahead, Vec<BString>)> {
        let mut watching = self.watching.borrow_mut();
        let watching = watching.as_mut()?;
        let paths = watching.ahead_scope.take()?;
        // Taken, not copied: the operation's end learns anew (see
        // `learned`), and an index nothing else holds is updated in place.
        let ahead = watching.ahead.take()?;
        Some((ahead, paths))
    }

    /// Record what an operation that looked at the worktree learned; an
    /// operation that failed leaves nothing known.
    pub(crate) fn learned(&self, learned: Option<Learned>) {
        let mut watching = self.watching.borrow_mut();
        let Some(watching) = watching.as_mut() else {
            return;
        };
        let learned = learned.filter(|_| watching.uncovered.is_none());
        watching.ahead = None;
        watching.ahead_scope = None;
        watching.baseline = learned.map(|learned| Baseline {
            index: self.cached_index(),
            excludes: identity(&self.excludes_path()),
            dirty: match learned {
                Learned::Clean => BTreeSet::new(),
                Learned::Dirty(dirty) => dirty,
                Learned::Ahead(ahead) => {
                    let dirty = ahead.dirty.clone();
                    watching.ahead = Some(ahead);
                    dirty
                }
            },
        });
        watching.touched = watching.new_dirs.clone();
    }

    /// Tells whether a directory is ignored, by the rules `index` and the
    /// worktree give; reads them only when first asked.
    fn ignored_dirs<'a>(
        &'a self,
        index: Option<&'a gix::index::File>,
    ) -> impl FnMut(&BStr) -> bool + 'a {
        let mut stack = None;
        move |dir: &BStr| {
            let Some(index) = index else { return false };
            let stack = stack.get_or_insert_with(|| {
                self.repo
                    .excludes(
                        index,
                        None,
                        gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
                    )
                    .ok()
            });
            let (Some(stack), Ok(path)) = (stack.as_mut(), gix::path::from_bstr(dir)) else {
                return false;
            };
            stack
                .at_path(path, Some(gix::index::entry::Mode::DIR))
                .is_ok_and(|platform| platform.is_excluded())
        }
    }

    fn exists(&self, relative: &BStr) -> bool {
        gix::path::from_bstr(relative)
            .is_ok_and(|relative| self.workdir().join(relative).symlink_metadata().is_ok())
    }

    fn is_empty_dir(&self, relative: &BStr) -> bool {
        let Ok(relative) = gix::path::from_bstr(relative) else {
            return false;
        };
        let dir = self.workdir().join(relative);
        dir.symlink_metadata().is_ok_and(|meta| meta.is_dir())
            && std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_none())
    }

    fn excludes_path(&self) -> std::path::PathBuf {
        self.repo.common_dir().join("info").join("exclude")
    }

    /// Run `op` with the scope the watch allows, and keep what it learned.
    pub(crate) fn scoped<T, E>(
        &self,
        op: impl FnOnce(&Scope) -> Result<(T, Option<Learned>), E>,
    ) -> Result<T, E> {
        let scope = self.scope();
        match op(&scope) {
            Ok((value, learned)) => {
                self.learned(learned);
                Ok(value)
            }
            Err(err) => {
                self.learned(None);
                Err(err)
            }
        }
    }
}

/// Paths whose entries differ between two indexes in anything but stat
/// data, by walking both sorted lists side by side.
fn entries_that_differ(old: &gix::index::File, new: &gix::index::File) -> BTreeSet<BString> {
    let (a, b) = (old.entries(), new.entries());
    let (mut i, mut j) = (0, 0);
    let mut out = BTreeSet::new();
    let meaning = Flags::INTENT_TO_ADD | Flags::SKIP_WORKTREE | Flags::ASSUME_VALID;
    let same = |x: &gix::index::Entry, y: &gix::index::Entry| {
        x.id == y.id && x.mode == y.mode && (x.flags & meaning) == (y.flags & meaning)
    };
    while i < a.len() || j < b.len() {
        let order = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => gix::index::Entry::cmp_filepaths(x.path(old), y.path(new))
                .then_with(|| x.stage_raw().cmp(&y.stage_raw())),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, _) => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                out.insert(a[i].path(old).to_owned());
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.insert(b[j].path(new).to_owned());
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                if !same(&a[i], &b[j]) {
                    out.insert(a[i].path(old).to_owned());
                }
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Every directory that holds an entry of `index`, its top (`""`) first.
fn tracked_dirs(index: &gix::index::File) -> Vec<BString> {
    let mut seen = std::collections::HashSet::new();
    let mut dirs = vec![BString::default()];
    let mut last: &[u8] = b"";
    for entry in index.entries() {
        let path = entry.path(index);
        let Some(slash) = path.rfind_byte(b'/') else {
            continue;
        };
        let dir = &path[..slash];
        if dir == last {
            continue;
        }
        last = dir;
        // The directory, then those above it, up to one already seen.
        let mut end = dir.len();
        loop {
            if !seen.insert(&dir[..end]) {
                break;
            }
            dirs.push(BString::from(&dir[..end]));
            match dir[..end].rfind_byte(b'/') {
                Some(slash) => end = slash,
                None => break,
            }
        }
    }
    dirs
}

fn is_gitignore(path: &BStr) -> bool {
    path == ".gitignore" || path.ends_with(b"/.gitignore")
}

/// `paths` without those that lie below another.
fn outermost(paths: BTreeSet<BString>) -> Vec<BString> {
    let mut out: Vec<BString> = Vec::with_capacity(paths.len());
    // Sorted bytewise, a directory comes right before what it holds, but
    // `a-b` sorts between `a` and `a/b`: compare with every kept ancestor.
    let mut kept = BTreeSet::<BString>::new();
    for path in paths {
        let below = path
            .find_iter("/")
            .any(|slash| kept.contains(&BString::from(&path[..slash])));
        if !below {
            kept.insert(path.clone());
            out.push(path);
        }
    }
    out
}

/// The part of an index a scoped walk compares: the entries at or below
/// the scope's paths, and the entries the index marks as unsure.
pub(crate) struct Subset {
    pub index: gix::worktree::Index,
    /// The position in the whole index of each entry here.
    pub positions: Vec<usize>,
}

pub(crate) fn subset(index: &gix::index::File, paths: &[BString]) -> Subset {
    let entries = index.entries();
    let mut positions = Vec::new();
    for path in paths {
        let Some(range) = index.prefixed_entries_range(path.as_ref()) else {
            continue;
        };
        for at in range {
            let entry_path = entries[at].path(index);
            if entry_path.len() == path.len() || entry_path.get(path.len()) == Some(&b'/') {
                positions.push(at);
            }
        }
    }
    let written = index.timestamp().unix_seconds();
    for (at, entry) in entries.iter().enumerate() {
        if entry.stat == Stat::default()
            || i64::from(entry.stat.mtime.secs) >= written
            || entry.stage_raw() != 0
            || entry.flags.contains(Flags::INTENT_TO_ADD)
        {
            positions.push(at);
        }
    }
    positions.sort_unstable();
    positions.dedup();
    subset_at(index, positions)
}

/// The entries of `index` at `positions` (sorted, no duplicates).
pub(crate) fn subset_at(index: &gix::index::File, positions: Vec<usize>) -> Subset {
    let entries = index.entries();
    let mut state = gix::index::State::new(index.object_hash());
    // Racy entries are told by the index file's own time: the subset
    // must keep it, or an entry written in the same second as the index
    // would be trusted on its stat data alone.
    state.set_timestamp(index.timestamp());
    for &at in &positions {
        let entry = &entries[at];
        state.dangerously_push_entry(
            entry.stat,
            entry.id,
            entry.flags,
            entry.mode,
            entry.path(index),
        );
    }
    let file = gix::index::File::from_state(state, index.path().to_owned());
    Subset {
        index: std::sync::Arc::new(gix::fs::FileSnapshot::new(file)),
        positions,
    }
}

/// A pathspec for exactly `path` and what lies below it.
pub(crate) fn literal(path: &BStr) -> BString {
    let mut spec = BString::from(":(top,literal)");
    spec.extend_from_slice(path);
    spec
}

/// Put the positions of a subset's items back into the whole index's.
pub(crate) fn remap(items: &mut [Item], positions: &[usize]) {
    for item in items {
        if let Item::Modification { entry_index, .. } = item {
            *entry_index = positions[*entry_index];
        }
    }
}

/// Why the watch cannot say which paths changed, so that an operation
/// must look at every file; shown as the scan's reason.
#[derive(Debug)]
struct Unscoped(String);
