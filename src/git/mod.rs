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
//!
//! This file only declares the operations' files and names what the rest of
//! the crate may use; the files import one another directly, never through
//! it, so none of them depends on the list that depends on all of them.

mod blob;
mod bring;
mod confine;
mod conflicted;
mod diff;
mod dir_cache;
mod error;
mod git_dir;
mod glob;
mod guard;
mod handover;
pub(crate) mod hex;
mod ids;
mod index_cache;
mod index_file;
mod left_lock;
mod lock;
mod merge;
mod name;
mod open;
mod own_files;
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
mod worktree;

pub use blob::human_size;
pub use bring::{BringError, Brought};
pub use conflicted::Stages;
pub use diff::ChangedFile;
pub use error::{GitFailure, LockedError, OpError};
pub use git_dir::{FileChange, GitDirChange, GitDirSnapshot, Risk};
pub use glob::glob_matches;
pub use guard::{RefSnapshot, RestoredRef};
pub use ids::ObjectId;
pub use left_lock::LeftLock;
pub use merge::{Carried, StoryMerge};
pub use name::{ChangeName, NameError, ref_component};
pub use open::{HeadState, OpenError, Repo, init};
pub use own_files::OWN_FILES;
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
