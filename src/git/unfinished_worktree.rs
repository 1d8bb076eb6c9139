//! A worktree whose making was cut short. A run records where a worktree
//! will be before making it, so that a crash at any moment leaves nothing
//! a resume cannot find; a kill during the making itself leaves git's half
//! of the work: the administrative directory reserved and locked
//! "initializing" (gix, like git, removes that lock only once the checkout
//! is done), the worktree's directory made, its `.git` perhaps half
//! written, its files perhaps half checked out.
//!
//! Nothing there can be anyone's work: the agent is started only once the
//! worktree is made, and git makes a worktree only in a directory that is
//! missing or empty. So what such a making left is removed whole, while
//! anything else at that place (a `.git` directory, files in a directory
//! git never linked) is left for the user, and the callers' usual checks
//! refuse it.

use std::path::{Path, PathBuf};

use super::error::Context;
use super::open::Repo;
use super::worktree::{LinkedWorktree, WorktreeError};

/// What git writes into a worktree's `locked` file while it makes it.
const INITIALIZING: &str = "initializing\n";

impl Repo {
    /// Remove what a cut-short making of `worktree` left, if that is what
    /// is there. Returns whether anything was removed. Call only while
    /// holding the run's lock: a worktree being made right now looks the
    /// same.
    pub fn undo_unfinished_worktree(
        &self,
        worktree: &LinkedWorktree,
    ) -> Result<bool, WorktreeError> {
        let admin = self.worktree_admin_dir(&worktree.id);
        if !is_unfinished(&admin) {
            return Ok(false);
        }
        let place = &worktree.path;
        let dot_git = place.join(".git");
        let linked_here = match std::fs::read_to_string(admin.join("gitdir")) {
            // Not yet linked: the directory, if made, is still empty.
            Err(_) => is_empty_or_missing(place),
            Ok(recorded) => {
                let recorded = recorded.trim_end_matches('\n');
                if leads_to(recorded, &dot_git) {
                    dot_git_is_a_link(place)
                } else {
                    // Cut short while git wrote where the worktree is.
                    is_start_of(recorded, &dot_git) && is_empty_or_missing(place)
                }
            }
        };
        if !linked_here {
            return Ok(false);
        }
        if std::fs::symlink_metadata(place).is_ok() {
            std::fs::remove_dir_all(place).ctx(|| {
                format!(
                    "could not remove the unfinished worktree {}",
                    place.display()
                )
            })?;
        }
        std::fs::remove_dir_all(&admin).ctx(|| format!("could not remove {}", admin.display()))?;
        Ok(true)
    }
}

/// Whether the administrative directory `admin` is one git has reserved
/// and not finished: still empty, or locked "initializing" (perhaps cut
/// short while the lock itself was written) with no index yet. git writes
/// the index once the checkout is done, just before it unlocks; a made
/// worktree someone locked with no reason has one.
fn is_unfinished(admin: &Path) -> bool {
    if !admin.is_dir() {
        return false;
    }
    match std::fs::read_to_string(admin.join("locked")) {
        Ok(reason) => INITIALIZING.starts_with(&reason) && !admin.join("index").exists(),
        Err(_) => is_empty_or_missing(admin),
    }
}

fn is_empty_or_missing(dir: &Path) -> bool {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(err) => err.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Whether `recorded` (a path git wrote) names `dot_git`, comparing the
/// places with symbolic links resolved as far as they exist.
fn leads_to(recorded: &str, dot_git: &Path) -> bool {
    resolved(Path::new(recorded)) == resolved(dot_git)
}

/// Whether `recorded` is how a path naming `dot_git` begins: what git
/// had written of it when it was cut short.
fn is_start_of(recorded: &str, dot_git: &Path) -> bool {
    resolved(dot_git).to_string_lossy().starts_with(recorded)
        || dot_git.to_string_lossy().starts_with(recorded)
}

/// `path` with its directory's symbolic links resolved, when it exists.
fn resolved(path: &Path) -> PathBuf {
    let parent = path
        .parent()
        .and_then(|dir| std::fs::canonicalize(dir).ok());
    match (parent, path.file_name()) {
        (Some(parent), Some(name)) => parent.join(name),
        _ => path.to_owned(),
    }
}

/// Whether `place/.git` is missing or a file (the link git writes), never
/// a directory of its own.
fn dot_git_is_a_link(place: &Path) -> bool {
    match std::fs::symlink_metadata(place.join(".git")) {
        Ok(meta) => meta.is_file(),
        Err(err) => err.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests;
