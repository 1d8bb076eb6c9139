//! The checkpoint engine: every change git-ralph makes to a repository goes
//! through this module, and it goes through gix in-process. The git binary is
//! never spawned here.
//!
//! An agent rewrites the user's worktree many times an hour; after each
//! attempt this module either commits the work ([`Repo::checkpoint`]) or
//! preserves it under a ref and throws it away ([`Repo::preserve`],
//! [`Repo::revert`]). It must be exactly as correct as git, so every operation
//! is specified by the git command it mirrors and tested against that command.
//!
//! This module knows nothing of stories, agents, the terminal or clap.

mod blob;
mod bring;
mod confine;
mod conflicted;
mod diff;
mod dir_cache;
mod error;
mod git_dir;
mod guard;
mod handover;
pub(crate) mod hex;
mod index_cache;
mod index_file;
mod left_lock;
mod lock;
mod merge;
mod name;
mod open;
mod patch;
mod record_tree;
mod ref_list;
mod refs;
mod repo_state;
mod reset;
mod run_refs;
mod scope;
mod scratch;
mod session;
mod set_aside;
mod settled;
mod shallow;
mod snapshot;
mod sparse;
mod split_index;
mod split_writes;
mod stash;
mod submodules;
mod tree;
mod unfinished_worktree;
mod unseen;
mod walk;
mod watch;

pub use blob::human_size;
mod worktree;

pub use bring::{BringError, Brought};
pub use conflicted::Stages;
pub use diff::ChangedFile;
pub use error::{GitFailure, LockedError, OpError};
pub use git_dir::{FileChange, GitDirChange, GitDirSnapshot, Risk};
pub use guard::{RefSnapshot, RestoredRef};
pub use left_lock::LeftLock;
pub use merge::{Carried, StoryMerge};
pub use name::{ChangeName, NameError, ref_component};
pub use open::{HeadState, OpenError, Repo};
pub use patch::PatchFor;
pub use repo_state::Scan;
pub use reset::RevertStats;
pub use run_refs::{RunRefs, ref_key};
pub use session::{Begin, BeginError, Original, Reattached};
pub use set_aside::SetAside;
pub use snapshot::Checkpoint;
pub use split_writes::SPLIT_INDEX_FROM;
pub use stash::StashPutBack;
pub use submodules::{SubmoduleHeads, SubmoduleSetAside, Unsettled};
pub use unseen::Unseen;
pub use watch::WatchLost;
pub use worktree::{LinkedWorktree, WorktreeError};

/// What this module keeps in `<git-dir>/ralph/`: which directories held
/// only tracked files (`dir-cache`), which tree the index describes
/// (`index-tree`), the shared indexes a loop made (`shared-indexes`), and
/// the watch's cookies (`cookies`).
pub const DIR_CACHE: &str = "dir-cache";
pub const INDEX_TREE: &str = "index-tree";
pub const SHARED_INDEXES: &str = "shared-indexes";
pub const COOKIES: &str = "cookies";
/// Every one of them: names no change may take.
pub const OWN_FILES: [&str; 4] = [DIR_CACHE, INDEX_TREE, SHARED_INDEXES, COOKIES];

/// An object id, as this module hands it out.
pub type ObjectId = gix::ObjectId;

/// Create an empty repository in `dir` (as `git init` would).
pub fn init(dir: &std::path::Path) -> Result<(), GitFailure> {
    gix::init(dir).map(drop).map_err(|err| {
        GitFailure::new(
            format!("could not create a repository in {}", dir.display()),
            err,
        )
    })
}

/// Does the glob `pattern` match `path` as git matches pathspecs (`*` does
/// not cross `/`)?
pub fn glob_matches(pattern: &str, path: &str) -> bool {
    use gix::bstr::ByteSlice;
    gix::glob::wildmatch(
        pattern.as_bytes().as_bstr(),
        path.as_bytes().as_bstr(),
        gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
    )
}
