//! A loop killed (kill -9) while it held `index.lock` leaves the lock
//! behind, and every later command that writes the index would stop at
//! it. It is looked at here only once the run's own lock has shown that
//! loop dead: a lock that some live process still has open is that
//! process's, and is never touched (the error names it); one that no
//! process holds is the dead loop's (or its agent's), and is moved aside,
//! never deleted, with whatever it held.

use std::path::{Path, PathBuf};

use super::error::{LockedError, OpError};
use super::open::Repo;

/// How long a live holder of the lock is waited for.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// An `index.lock` a dead process left, moved out of git's way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftLock {
    pub was: PathBuf,
    pub kept_at: PathBuf,
}

impl Repo {
    /// Move the `index.lock` a dead loop left to `aside_dir` (as
    /// `index.lock-left-<ms>`); `None` when there is none. A lock a live
    /// process holds open, or one whose holders cannot be known, is left
    /// where it is and reported as held.
    pub fn set_aside_left_index_lock(&self, aside_dir: &Path) -> Result<Option<LeftLock>, OpError> {
        let was = self.repo.index_path().with_extension("lock");
        if !unheld_when_waited_for(&was)? {
            return Ok(None);
        }
        let kept_at = aside_dir.join(format!("index.lock-left-{}", crate::events::now_ms()));
        let moved =
            std::fs::create_dir_all(aside_dir).and_then(|()| std::fs::rename(&was, &kept_at));
        moved.map_err(|err| {
            OpError::Git(super::error::GitFailure::new(
                format!("could not move {} aside", was.display()),
                err,
            ))
        })?;
        Ok(Some(LeftLock { was, kept_at }))
    }

    /// Refuse while `index.lock` is there: a process that holds it is
    /// named, one nobody holds is left for the user to judge. Checked
    /// before an agent works in the worktree, whose changes could not be
    /// put back past it.
    pub fn refuse_index_lock(&self) -> Result<(), OpError> {
        let was = self.repo.index_path().with_extension("lock");
        if !unheld_when_waited_for(&was)? {
            return Ok(());
        }
        Err(LockedError {
            path: was,
            holder: None,
        }
        .into())
    }
}

/// Whether `was` exists once no live process holds it; a live holder is
/// waited for a moment, as a lock is taken anywhere else (a git command of
/// the user's holds it a moment), then named in the error.
fn unheld_when_waited_for(was: &Path) -> Result<bool, OpError> {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if std::fs::symlink_metadata(was).is_err() {
            return Ok(false);
        }
        match holders(was) {
            Some(holders) if holders.is_empty() => return Ok(true),
            _ if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            holders => {
                return Err(LockedError {
                    path: was.to_owned(),
                    holder: holders.and_then(|found| found.into_iter().next()),
                }
                .into());
            }
        }
    }
}

/// The live processes that have `path` open, each as "pid N (command)";
/// `None` when that cannot be known (no `/proc`).
fn holders(path: &Path) -> Option<Vec<String>> {
    let wanted = std::fs::canonicalize(path).ok()?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == wanted));
        if holds {
            let command = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            found.push(format!("pid {pid} ({})", command.trim()));
        }
    }
    Some(found)
}
