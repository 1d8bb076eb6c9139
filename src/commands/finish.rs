//! `git ralph finish [<change>] (--keep | --cleanup)`: close a stopped or
//! finished loop. Keep stays on `ralph/<change>`; cleanup goes back to the
//! original branch with all the work as uncommitted changes.

use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::git::{ChangeName, HeadState, Repo};
use crate::settings::OnFinish;
use crate::state::FinishChoice;
use crate::state::{RunDir, RunLock, RunState, RunStatus, StopReason, lock_holder, now};
use crate::ui::{self, EndChoice};

#[derive(clap::Args, Debug, Clone)]
#[command(group = clap::ArgGroup::new("how").required(true).args(["keep", "cleanup"]))]
pub struct Args {
    /// The change whose run to finish; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Stay on ralph/<change>, one commit per story.
    #[arg(long)]
    pub keep: bool,
    /// Back to the original branch with all the work uncommitted; the
    /// branch is deleted, its tip kept at refs/ralph/<change>/finished.
    #[arg(long)]
    pub cleanup: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let mut repo = Repo::open_for_recovery(&super::current_dir()?)?;
    let change = super::pick_change(&repo, args.change.as_deref())?;
    let run_dir = super::existing_run(&repo, &change)?;
    let lock_path = super::lock_path(&repo);
    if let Some((pid, running)) = lock_holder(&lock_path)
        && running == change.as_str()
    {
        return Err(CommandError::user(format!(
            "the loop for '{change}' is still running (pid {pid})"
        ))
        .hint(format!(
            "stop it first (Ctrl-C or q in its terminal), or 'git ralph abort {change}'"
        )));
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
        // A kept run's branch is still there: it can still be cleaned up.
        RunStatus::Finished if kept && args.cleanup => {}
        RunStatus::Finished if kept => {
            ui::note(&format!(
                "the run '{change}' is already kept on {}",
                state.branch
            ));
            return Ok(Exit::Success.code());
        }
        RunStatus::Finished => {
            return Err(CommandError::user(format!(
                "the run '{change}' is already finished ({})",
                state.finished_with.unwrap_or(FinishChoice::Keep)
            )));
        }
        RunStatus::Aborted => {
            return Err(CommandError::user(format!(
                "the run '{change}' was aborted"
            )));
        }
        RunStatus::Running | RunStatus::Stopped => {}
    }
    let choice = if args.cleanup {
        FinishChoice::Cleanup
    } else {
        FinishChoice::Keep
    };
    apply(&mut repo, &change, &run_dir, &mut state, choice)?;
    Ok(Exit::Success.code())
}

/// Keep or clean up, and record it. A half-done attempt is never left
/// behind: the worktree must be at the last checkpoint.
pub fn apply(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    state: &mut RunState,
    choice: FinishChoice,
) -> Result<(), CommandError> {
    require_on_branch(repo, change, "finish")?;
    // The agent's own files (Aider's history) are not unfinished work.
    if state.settings.agent_command.is_none() {
        repo.set_scratch(crate::presets::scratch_of(&state.settings.agent));
    }
    set_aside_unfinished_work(repo, change, state)?;
    match choice {
        FinishChoice::Keep => {
            repo.finish_keep(change)?;
            ui::note(&format!(
                "kept: {} holds one commit per finished story ({} of {} done).",
                state.branch,
                state.stories_done(),
                state.stories.len()
            ));
        }
        FinishChoice::Cleanup => {
            let tip = repo.finish_cleanup(change, &state.original)?;
            ui::note(&format!(
                "cleaned up: back on {} with all the work as uncommitted changes; {} was deleted (its tip {} is kept at {}/finished).",
                state.original.head.reflog_name(),
                state.branch,
                tip.to_hex_with_len(10),
                change.ref_namespace()
            ));
            ui::note(&format!(
                "receipts: {}; each checkpoint's trailers are kept in {}.",
                state.receipts_summary(),
                run_dir.receipts_path().display()
            ));
        }
    }
    state.status = RunStatus::Finished;
    state.finished_with = Some(choice);
    state.pid = None;
    state.updated_at = now();
    run_dir.save(state)?;
    Ok(())
}

/// Finish and abort work on the run's branch only: anything the user did on
/// another branch meanwhile is theirs, and is not touched.
pub fn require_on_branch(repo: &Repo, change: &ChangeName, what: &str) -> Result<(), CommandError> {
    match repo.head()? {
        HeadState::Branch { name, .. } if name == change.branch_ref() => Ok(()),
        other => Err(CommandError::user(format!(
            "cannot {what} '{change}': HEAD is on {}, not on {}",
            other.describe(),
            change.branch_short()
        ))
        .hint(format!(
            "commit or stash what you changed there, 'git switch {}', then run this again",
            change.branch_short()
        ))),
    }
}

/// Work in the worktree beyond the last checkpoint (a loop killed
/// mid-attempt) is preserved and reverted before finishing.
fn set_aside_unfinished_work(
    repo: &mut Repo,
    change: &ChangeName,
    state: &RunState,
) -> Result<(), CommandError> {
    let (checkpoint_tree, worktree) = repo.checkpoint_tree_and_fingerprint(state.checkpoint)?;
    if checkpoint_tree == worktree {
        return Ok(());
    }
    // Keyed by the millisecond, and never over an existing ref.
    let refname = repo.unused_ref(&format!(
        "{}/interrupted/{}",
        change.ref_namespace(),
        crate::events::now_ms()
    ))?;
    repo.preserve(
        &refname,
        &format!("ralph({change}): unfinished work set aside at finish"),
    )?;
    repo.revert()?;
    ui::warn(&format!(
        "work beyond the last checkpoint was set aside at {refname} (see it with 'git show {refname}')"
    ));
    Ok(())
}

/// The loop has ended on its own: keep, clean up, or ask (and for a run
/// that did not complete, also leave it stopped or abort).
pub fn after_loop(
    mut repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    mut state: RunState,
    on_finish: OnFinish,
) -> Result<(), CommandError> {
    let completed = state.reason == Some(StopReason::Completed);
    let choice = match on_finish {
        OnFinish::Keep => Some(EndChoice::Finish(FinishChoice::Keep)),
        OnFinish::Cleanup => Some(EndChoice::Finish(FinishChoice::Cleanup)),
        OnFinish::Ask => {
            ui::ask_finish(&state.branch, &state.original.head.reflog_name(), completed)
        }
    };
    match choice {
        Some(EndChoice::Finish(choice)) => apply(&mut repo, change, run_dir, &mut state, choice),
        Some(EndChoice::Abort) => super::abort::apply(&mut repo, change, run_dir, &mut state),
        Some(EndChoice::LeaveStopped) | None => {
            let mut text = format!(
                "the run stays on {}. Finish it with:\n  git ralph finish {change} --cleanup   # back to {}, all work uncommitted\n  git ralph finish {change} --keep      # stay on {}\n  git ralph abort {change}              # back to exactly where you started",
                state.branch,
                state.original.head.reflog_name(),
                state.branch
            );
            if let Some(retries) = state.retries_to_resume() {
                text.push_str(&format!(
                    "\nor resume it with more retries:\n  git ralph start {change} --max-retries {retries}"
                ));
            } else if !completed {
                text.push_str(&format!("\nor resume it:\n  git ralph start {change}"));
            }
            ui::note(&text);
            Ok(())
        }
    }
}
