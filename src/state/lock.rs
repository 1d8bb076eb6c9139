//! One loop per repository: `<git-dir>/ralph/lock` holds the PID and change
//! of the running loop. A lock whose PID is dead is taken over (the caller
//! warns); `abort` from another terminal finds the loop through it.
//!
//! Two loops started at the same moment must not both win, so the file is
//! held with `flock` while the loop lives: the kernel gives it to exactly
//! one process and takes it back when that process dies, however it dies.
//! The PID and change written into it are for readers (`status`, `abort`)
//! and for loops of earlier releases, which did not take the `flock`.

use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::kill;
use nix::unistd::Pid;

/// The lock, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    /// The open lock file, `flock`ed: released when dropped.
    held: Option<Flock<std::fs::File>>,
    /// The dead holder whose lock was taken over, if any.
    pub took_over_from: Option<(u32, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("a git-ralph loop for '{change}' is already running (pid {pid})")]
    Held { pid: u32, change: String },
    #[error("another git-ralph loop is starting in this repository at this very moment")]
    Starting,
    #[error("could not create {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    pub fn hint(&self) -> Option<String> {
        match self {
            LockError::Held { change, .. } => Some(format!(
                "watch it with 'git ralph watch {change}' (s there asks it to stop), or undo it with 'git ralph abort {change}'"
            )),
            LockError::Starting => Some(
                "see which with 'git ralph status'; start this one once that loop has ended".into(),
            ),
            LockError::Io { .. } => None,
        }
    }
}

/// `pid` as a single process `kill` may name: 0 and numbers past
/// `i32::MAX` (which wrap to -1 and below) name a group or every process.
fn single_process(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|raw| *raw > 0)
        .map(Pid::from_raw)
}

/// The lock shared by every run of the repository whose ralph directory
/// is `ralph_dir`.
pub fn lock_path(ralph_dir: &Path) -> PathBuf {
    ralph_dir.join(super::layout::LOCK)
}

/// Is `pid` a live process?
pub fn process_alive(pid: u32) -> bool {
    let Some(pid) = single_process(pid) else {
        return false;
    };
    match kill(pid, None) {
        Ok(()) => true,
        Err(nix::errno::Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// Ask the loop `pid` to stop gracefully: SIGTERM, which it handles like a
/// stop request (the agent is stopped, completed work is kept, no menu).
pub fn ask_to_stop(pid: u32) -> bool {
    let Some(pid) = single_process(pid) else {
        return false;
    };
    kill(pid, nix::sys::signal::Signal::SIGTERM).is_ok()
}

/// The live holder of the lock at `path`: PID and change. A lock that
/// names no live process (cut short, garbage, a PID of 0) has none, and
/// [`RunLock::acquire`] takes it over.
pub fn lock_holder(path: &Path) -> Option<(u32, String)> {
    // Read as `acquire` reads it, so that `status` and `start` agree on
    // a holder whose change is not UTF-8.
    let bytes = std::fs::read(path).ok()?;
    let (pid, change) = parse(&String::from_utf8_lossy(&bytes))?;
    process_alive(pid).then_some((pid, change))
}

fn parse(text: &str) -> Option<(u32, String)> {
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse().ok()?;
    let change = lines.next().unwrap_or_default().trim().to_owned();
    Some((pid, change))
}

impl RunLock {
    pub fn acquire(path: &Path, change: &str) -> Result<RunLock, LockError> {
        let io = |source| LockError::Io {
            path: path.to_owned(),
            source,
        };
        for _ in 0..10 {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path);
            // A command refused at this moment may have removed the
            // directory it had made: made again.
            let file = match opened {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                opened => opened.map_err(io)?,
            };
            let mut held = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(held) => held,
                Err((_, nix::errno::Errno::EWOULDBLOCK)) => return Err(held_by(path)),
                Err((_, errno)) => return Err(io(errno.into())),
            };
            // The file may have been removed by the holder that just let
            // go of it: the lock is on the file the path names now.
            if !same_file(&held, path) {
                continue;
            }
            // Whatever the file holds (garbage included) is read, never
            // refused: a lock no live loop holds is taken over.
            let mut bytes = Vec::new();
            held.read_to_end(&mut bytes).map_err(io)?;
            let holder = parse(&String::from_utf8_lossy(&bytes));
            if let Some((pid, change)) = &holder
                && process_alive(*pid)
                && *pid != std::process::id()
            {
                // A loop of an earlier release, which holds no `flock`.
                return Err(LockError::Held {
                    pid: *pid,
                    change: change.clone(),
                });
            }
            write_holder(&mut held, change).map_err(io)?;
            return Ok(RunLock {
                path: path.to_owned(),
                held: Some(held),
                took_over_from: holder.filter(|(pid, _)| *pid != std::process::id()),
            });
        }
        Err(io(std::io::Error::other("the lock kept reappearing")))
    }
}

/// `<git-dir>/ralph/` as a command found it, so that a refused one leaves
/// no such directory where there was none. The lock makes it; a second
/// command started at the same moment finds it holding nothing but the
/// first one's lock, and when both are refused, whichever lets go last
/// must remove it: so a directory that holds no more than a lock being
/// taken, or held by a live process, counts as not there.
#[derive(Debug)]
pub struct RalphDirBefore {
    dir: PathBuf,
    was_there: bool,
}

impl RalphDirBefore {
    pub fn note(ralph_dir: &Path) -> RalphDirBefore {
        RalphDirBefore {
            dir: ralph_dir.to_owned(),
            was_there: ralph_dir.exists() && !only_a_lock_being_held(ralph_dir),
        }
    }

    /// For a refused command: the directory removed if it was not there
    /// and holds nothing now. A command still holding the lock keeps it.
    pub fn leave_as_found(&self) {
        if !self.was_there {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// Whether `ralph_dir` holds nothing but the lock, empty (its holder
/// about to write itself into it) or held by a live process, and the run
/// directories such a holder is still preparing (holding no file but
/// its write probe).
fn only_a_lock_being_held(ralph_dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(ralph_dir) else {
        return false;
    };
    let lock = lock_path(ralph_dir);
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        if entry.path() != lock {
            if being_prepared(&entry.path()) {
                continue;
            }
            return false;
        }
        let empty = std::fs::metadata(&lock).is_ok_and(|meta| meta.len() == 0);
        if !empty && lock_holder(&lock).is_none() {
            return false;
        }
    }
    true
}

/// Whether `dir` is a run directory a start is still preparing: a
/// directory holding nothing but, for a moment, its write probe.
fn being_prepared(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.into_iter().all(|entry| {
        entry.is_ok_and(|entry| entry.file_name().to_string_lossy().starts_with(".probe."))
    })
}

/// Whether the open `file` is the one `path` names.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// This process as the holder: the file's whole text replaced.
fn write_holder(file: &mut std::fs::File, change: &str) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    // One write, so that a reader never sees the PID without the change.
    let text = format!("{}\n{change}\n", std::process::id());
    file.write_all(text.as_bytes())?;
    file.flush()
}

/// Who holds the lock another process has `flock`ed: its text, once the
/// holder has written it (it does so right after taking the lock).
fn held_by(path: &Path) -> LockError {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // Whole: the PID and the change, each on its line.
        let whole = text.lines().count() >= 2 && text.ends_with('\n');
        if let Some((pid, change)) = parse(&text).filter(|_| whole) {
            return LockError::Held { pid, change };
        }
        if Instant::now() > deadline {
            return LockError::Starting;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Only remove the lock if it is still ours; it is let go of after.
        if let Some((pid, _)) = std::fs::read_to_string(&self.path)
            .ok()
            .as_deref()
            .and_then(parse)
            && pid == std::process::id()
        {
            let _ = std::fs::remove_file(&self.path);
        }
        drop(self.held.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_a_dead_one_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let first = RunLock::acquire(&path, "one").unwrap();
        assert_eq!(lock_holder(&path), Some((std::process::id(), "one".into())));
        drop(first);
        assert!(!path.exists());

        // A PID that cannot be alive.
        std::fs::write(&path, format!("{}\nold\n", i32::MAX)).unwrap();
        let lock = RunLock::acquire(&path, "new").unwrap();
        assert_eq!(lock.took_over_from, Some((i32::MAX as u32, "old".into())));
    }
}
