//! What taking the repository's lock over from a loop that is no longer
//! running (kill -9) sets right before anything else is done, the same for
//! `start`, `abort`, `finish` and `plan`: the lock files the dead loop
//! left (the index lock of its worktrees, `packed-refs.lock`, `HEAD.lock`,
//! its refs' locks), which would stop every later write there (and, in a
//! plan, the putting back of what its agent changed), are moved aside when
//! no live process holds them; one a live process holds refuses the
//! command.

use std::path::Path;

use crate::git::{ChangeName, LeftLock, OpError, Repo};
use crate::state::{RunDir, RunLock, check_run_name};

/// The dead loop whose lock was taken over, and the lock files it left.
#[derive(Debug)]
pub struct DeadLoop {
    pub pid: u32,
    pub change: String,
    pub left_locks: Vec<LeftLock>,
}

/// Set right what the loop `lock` was taken over from left, moving its
/// left lock files into `aside_dir` (by default the dead loop's own run
/// directory); `None` when the lock was not taken over.
pub fn take_over(
    repo: &Repo,
    lock: &RunLock,
    aside_dir: Option<&Path>,
) -> Result<Option<DeadLoop>, OpError> {
    let Some((pid, change)) = &lock.took_over_from else {
        return Ok(None);
    };
    let ralph_dir = repo.ralph_dir();
    // A name no run could have (the lock file is only read) keeps the
    // lock beside the run directories.
    let valid = ChangeName::parse(change)
        .ok()
        .filter(|_| check_run_name(change).is_ok());
    let its_dir = match &valid {
        Some(_) => RunDir::new(&ralph_dir, change).dir,
        None => ralph_dir,
    };
    let left_locks = repo.set_aside_left_locks(valid.as_ref(), aside_dir.unwrap_or(&its_dir))?;
    Ok(Some(DeadLoop {
        pid: *pid,
        change: change.clone(),
        left_locks,
    }))
}
