//! The opening `finish` and `abort` share: make sure no loop drives the run
//! (refuse, or stop it), take the lock, stop an agent a killed loop left
//! behind, and read where the run stands.

use std::time::{Duration, Instant};

use super::error::EndingError;
use super::outcome::{Notice, Onlooker};
use crate::git::{ChangeName, Repo};
use crate::state::{
    FinishChoice, RunDir, RunLock, RunState, RunStatus, ask_to_stop, lock_holder, lock_path,
    process_alive,
};

/// How long a running loop gets to stop gracefully.
const STOP_PATIENCE: Duration = Duration::from_secs(15);

/// What to do when a loop still drives the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Running {
    /// Refuse: finishing is for runs whose loop has ended.
    Refuse,
    /// Ask it to stop (SIGTERM) and wait for it to let go.
    Stop,
}

/// Where a taken-over run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    /// Stopped, or running in a loop that was killed: open to finish or abort.
    Open,
    /// Finished with keep, its branch still there: it can still be
    /// cleaned up or undone.
    Kept,
    /// Finished otherwise, or kept with its branch gone.
    Closed(FinishChoice),
    Aborted,
}

/// A run no loop drives any more, held under the lock.
pub(super) struct TakenOver {
    pub repo: Repo,
    pub state: RunState,
    pub standing: Standing,
    _lock: RunLock,
}

pub(super) fn take_over(
    repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    running: Running,
    onlooker: &mut dyn Onlooker,
) -> Result<TakenOver, EndingError> {
    let lock_path = lock_path(&repo.ralph_dir());
    if let Some((pid, holder)) = lock_holder(&lock_path)
        && holder == change.as_str()
    {
        match running {
            Running::Refuse => {
                return Err(EndingError::StillRunning {
                    change: change.clone(),
                    pid,
                });
            }
            Running::Stop => {
                onlooker.notice(Notice::StoppingLoop { pid });
                stop_loop(pid)?;
            }
        }
    }
    let lock = RunLock::acquire(&lock_path, change.as_str())?;
    if let Some(dead) = crate::run::dead_loop::take_over(&repo, &lock, Some(&run_dir.dir))? {
        onlooker.notice(Notice::TookOverLock {
            pid: dead.pid,
            change: dead.change,
        });
        for left in dead.left_locks {
            onlooker.notice(Notice::LeftLock {
                was: left.was,
                kept_at: left.kept_at,
            });
        }
    }
    if crate::process::end_orphaned_group(&run_dir.agent_pid_file()) {
        onlooker.notice(Notice::StoppedOrphanAgent);
    }
    for moved in crate::run::kept_refs::put_back(&repo, change, run_dir)? {
        onlooker.notice(Notice::PutBack {
            said: crate::run::kept_refs::words(&moved),
        });
    }
    let state = run_dir.load()?;
    let standing = standing(&repo, change, &state)?;
    Ok(TakenOver {
        repo,
        state,
        standing,
        _lock: lock,
    })
}

fn standing(repo: &Repo, change: &ChangeName, state: &RunState) -> Result<Standing, EndingError> {
    Ok(match state.status() {
        RunStatus::Running | RunStatus::Stopped => Standing::Open,
        RunStatus::Aborted => Standing::Aborted,
        RunStatus::Finished => {
            let with = state.finished_with().unwrap_or(FinishChoice::Keep);
            let kept = state.finished_with() == Some(FinishChoice::Keep)
                && repo.resolve_ref(&change.branch_ref())?.is_some();
            if kept {
                Standing::Kept
            } else {
                Standing::Closed(with)
            }
        }
    })
}

/// SIGTERM the loop and wait for it to end.
fn stop_loop(pid: u32) -> Result<(), EndingError> {
    ask_to_stop(pid);
    let deadline = Instant::now() + STOP_PATIENCE;
    while Instant::now() < deadline {
        if !process_alive(pid) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(EndingError::LoopWouldNotStop {
        pid,
        patience: STOP_PATIENCE,
    })
}
