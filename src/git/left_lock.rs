//! A loop killed (kill -9) while it held a git lock file (`index.lock`
//! of its worktree, `packed-refs.lock`, `HEAD.lock`, a ref's `.lock`)
//! leaves it behind, and every later command that writes there would stop
//! at it. It is looked at here only once the run's own lock has shown that
//! loop dead: a lock that some live process still has open is that
//! process's, and is never touched (the error names it); one that no
//! process holds is the dead loop's (or its agent's), and is moved aside,
//! never deleted, with whatever it held.

use std::path::{Path, PathBuf};

use super::error::{LockedError, OpError};
use super::open::Repo;

/// How long a live holder of the lock is waited for.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// A lock file a dead process left, moved out of git's way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftLock {
    pub was: PathBuf,
    pub kept_at: PathBuf,
}

impl Repo {
    /// Move every lock file a dead loop of change `change` can leave to
    /// `aside_dir` (each as `<where>-left-<ms>`): the index lock of this
    /// worktree and of each worktree a run made (`ralph-run` in its
    /// administrative directory), `packed-refs.lock`, the `HEAD.lock`s of
    /// those worktrees, and a loose ref's lock under the run's refs
    /// (`refs/heads/ralph/<change>`, `refs/ralph/<change>/`). Every lock
    /// is looked at before any is moved: one a live process holds open,
    /// or whose holders cannot be known, refuses the whole and moves none.
    pub fn set_aside_left_locks(
        &self,
        change: Option<&super::name::ChangeName>,
        aside_dir: &Path,
    ) -> Result<Vec<LeftLock>, OpError> {
        let mut left = Vec::new();
        for was in self.lock_places(change) {
            if unheld_when_waited_for(&was)? && !left.contains(&was) {
                left.push(was);
            }
        }
        let ms = crate::events::now_ms();
        left.into_iter()
            .map(|was| {
                let kept_at = aside_dir.join(format!("{}-left-{ms}", self.aside_name(&was)));
                let moved = std::fs::create_dir_all(aside_dir)
                    .and_then(|()| std::fs::rename(&was, &kept_at));
                moved.map_err(|err| {
                    OpError::Git(super::error::GitFailure::new(
                        format!("could not move {} aside", was.display()),
                        err,
                    ))
                })?;
                Ok(LeftLock { was, kept_at })
            })
            .collect()
    }

    /// Where a dead loop of `change` can have left a lock file; its refs'
    /// locks only when its name is one a run can have.
    fn lock_places(&self, change: Option<&super::name::ChangeName>) -> Vec<PathBuf> {
        let common = self.common_dir().to_owned();
        let mut places = vec![
            self.repo.index_path().with_extension("lock"),
            self.git_dir().join("HEAD.lock"),
            common.join("HEAD.lock"),
            common.join("packed-refs.lock"),
        ];
        if let Ok(entries) = std::fs::read_dir(common.join("worktrees")) {
            for admin in entries.flatten().map(|entry| entry.path()) {
                if admin.join(super::open::STATE_HOME).is_file() {
                    places.push(admin.join("index.lock"));
                    places.push(admin.join("HEAD.lock"));
                }
            }
        }
        if let Some(change) = change {
            places.push(common.join(format!("refs/heads/ralph/{}.lock", change.as_str())));
            ref_locks_under(
                &common.join("refs/ralph").join(change.as_str()),
                &mut places,
            );
        }
        places
    }

    /// The name a lock is kept aside under: its path below the common
    /// directory, `/` written `-` (the main index lock stays `index.lock`).
    fn aside_name(&self, was: &Path) -> String {
        let common = std::fs::canonicalize(self.common_dir()).unwrap_or_default();
        let was_full = was
            .parent()
            .and_then(|dir| std::fs::canonicalize(dir).ok())
            .zip(was.file_name())
            .map(|(dir, name)| dir.join(name))
            .unwrap_or_else(|| was.to_owned());
        let below = was_full.strip_prefix(&common).unwrap_or(&was_full);
        below
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .filter(|part| part != "/")
            .collect::<Vec<_>>()
            .join("-")
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

/// Every `*.lock` file below `dir`, added to `places`.
fn ref_locks_under(dir: &Path, places: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|entry| entry.path()) {
        if path.is_dir() {
            ref_locks_under(&path, places);
        } else if path.extension().is_some_and(|ext| ext == "lock") {
            places.push(path);
        }
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
