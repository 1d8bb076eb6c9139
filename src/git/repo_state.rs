//! What a [`Repo`](super::Repo) keeps between operations, apart from the
//! repository itself: the index it last read or wrote, the identity of a
//! file on disk, and the worktree watch with what it has told since the
//! last baseline. These are plain values; the operations on them are the
//! `impl` blocks of `index_cache.rs`, `scope.rs` and `scratch.rs`. Kept apart so that
//! the file that declares `Repo` names nothing that names it.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use gix::bstr::BString;
use serde::{Deserialize, Serialize};

use super::ids::ObjectId;
use super::watch::WorktreeWatch;

/// A cached index with the identity of the file it came from.
pub(crate) struct IndexCache {
    pub(super) snapshot: gix::worktree::Index,
    pub(super) identity: Identity,
    /// The tree this index describes, when we wrote it.
    pub(super) tree: Option<ObjectId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) size: u64,
    pub(super) mtime: i64,
    pub(super) mtime_nsec: i64,
}

pub(crate) fn identity(path: &Path) -> Option<Identity> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Identity {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime: meta.mtime(),
        mtime_nsec: meta.mtime_nsec(),
    })
}

/// How the last snapshot or revert looked at the worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scan", rename_all = "snake_case")]
pub enum Scan {
    /// Every file, for the reason given.
    Full { why: String },
    /// Only these many paths (and what lies below them).
    Watched { paths: usize },
}

/// The watch and what it has told since the last baseline.
pub(crate) struct Watching {
    pub(super) watch: WorktreeWatch,
    /// Paths touched since the baseline.
    pub(super) touched: BTreeSet<BString>,
    /// Directories that appeared in the last cut, which count after the
    /// next baseline too.
    pub(super) new_dirs: BTreeSet<BString>,
    pub(super) baseline: Option<Baseline>,
    pub(super) last: Option<Scan>,
    /// Why the watch could not cover the worktree before the last full
    /// scan; until it can, no baseline is kept.
    pub(super) uncovered: Option<String>,
    /// The last snapshot, when it was not written to the index.
    pub(super) ahead: Option<Ahead>,
    /// What the operation starting now must look at when it starts from
    /// `ahead`: only what was touched since.
    pub(super) ahead_scope: Option<Vec<BString>>,
}

/// A snapshot the index was not updated with (a fingerprint, a preserve):
/// the worktree as it found it, so that the next snapshot starts from it
/// and looks only at what was touched since, instead of at everything the
/// agent changed once more.
pub(crate) struct Ahead {
    /// The index updated to match the worktree, in memory only.
    pub index: gix::worktree::Index,
    pub tree: ObjectId,
    /// Where the worktree differed from the index on disk.
    pub dirty: BTreeSet<BString>,
}

/// The worktree as an operation left it: equal to the index `index` except
/// at `dirty`.
pub(crate) struct Baseline {
    pub(super) index: Option<(Identity, gix::worktree::Index)>,
    pub(super) excludes: Option<Identity>,
    pub(super) dirty: BTreeSet<BString>,
}

/// Names at the top of the worktree; `*` at the end matches any ending. A
/// matching directory counts with everything in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scratch {
    pub(super) names: Vec<String>,
}
