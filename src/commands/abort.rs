//! `git ralph abort [<change>]`: stop a running loop (through the lock's PID)
//! and restore the exact pre-start state: the original branch and HEAD, the
//! original index, and the user's uncommitted and untracked work.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::exit::{CommandError, Exit};
use crate::git::{ChangeName, Repo};
use crate::state::{FinishChoice, RunDir, RunLock, RunState, RunStatus, lock_holder, now};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to abort; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
}

/// How long a running loop gets to stop gracefully.
const STOP_PATIENCE: Duration = Duration::from_secs(15);

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let mut repo = Repo::open_for_recovery(&super::current_dir()?)?;
    let change = super::pick_change(&repo, args.change.as_deref())?;
    let run_dir = super::existing_run(&repo, &change)?;
    let lock_path = super::lock_path(&repo);
    if let Some((pid, running)) = lock_holder(&lock_path)
        && running == change.as_str()
    {
        ui::note(&format!("stopping the running loop (pid {pid})…"));
        stop_loop(pid)?;
    }
    let _lock = RunLock::acquire(&lock_path, change.as_str())?;
    if crate::process::end_orphaned_group(&run_dir.agent_pid_file()) {
        ui::warn("stopped an agent that a killed loop had left running");
    }
    let mut state = run_dir.load()?;
    let kept = state.status == RunStatus::Finished
        && state.finished_with == Some(FinishChoice::Keep)
        && repo.resolve_ref(&change.branch_ref())?.is_some();
    match state.status {
        RunStatus::Aborted => {
            return Err(CommandError::user(format!(
                "the run '{change}' is already aborted"
            )));
        }
        // A kept run's branch is still there: it can still be undone.
        RunStatus::Finished if kept => {}
        RunStatus::Finished => {
            return Err(CommandError::user(format!(
                "the run '{change}' is finished ({}); there is nothing to abort",
                state.finished_with.unwrap_or(FinishChoice::Keep)
            ))
            .hint(format!(
                "its work stays reachable under {}/",
                change.ref_namespace()
            )));
        }
        RunStatus::Running | RunStatus::Stopped => {}
    }
    apply(&mut repo, &change, &run_dir, &mut state)?;
    Ok(Exit::Success.code())
}

/// Restore the pre-start state and record it. HEAD must be on the run's
/// branch, so that nothing the user did elsewhere is overwritten.
pub fn apply(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    state: &mut RunState,
) -> Result<(), CommandError> {
    super::finish::require_on_branch(repo, change, "abort")?;
    let tip = repo.abort(change, &state.original, state.initial_commit)?;
    state.status = RunStatus::Aborted;
    state.pid = None;
    state.updated_at = now();
    run_dir.save(state)?;
    ui::note(&format!(
        "aborted: back on {} exactly as before the run; {} was deleted (its tip {} is kept at {}/aborted).",
        state.original.head.reflog_name(),
        state.branch,
        tip.to_hex_with_len(10),
        change.ref_namespace()
    ));
    Ok(())
}

/// SIGTERM the loop and wait for it to let go of the lock.
fn stop_loop(pid: u32) -> Result<(), CommandError> {
    let target = Pid::from_raw(pid as i32);
    let _ = kill(target, Signal::SIGTERM);
    let deadline = Instant::now() + STOP_PATIENCE;
    while Instant::now() < deadline {
        if kill(target, None).is_err() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(CommandError::user(format!(
        "the loop (pid {pid}) did not stop within {}s",
        STOP_PATIENCE.as_secs()
    ))
    .hint(format!(
        "stop it by hand ('kill {pid}'), then run 'git ralph abort' again"
    )))
}
