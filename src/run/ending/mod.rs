//! How a run ends: finished with keep or cleanup, aborted back to the exact
//! pre-start state, or left stopped to resume later. `finish` and `abort`
//! take over a run no loop drives any more ([`take_over`]); a loop that
//! ended on its own goes through [`after_loop`], which finishes, aborts or
//! leaves the run as the settings or the user say.
//!
//! Every ending returns what it did as a typed outcome, and reports what
//! happens on the way as [`Notice`]s to an [`Onlooker`], which also answers
//! the question of how to finish when that is the user's to say. This
//! module decides; it prints nothing and knows neither clap nor the
//! terminal.
//!
//! A run over beads issues finishes without touching beads: closing the
//! issues it finished is the user's choice, so the outcome lists them
//! ([`CloseOffer`]) for whoever shows it to offer `bd close`.

mod beside;
mod close;
mod error;
pub mod handoff;
mod outcome;
mod take_over;
mod unrecorded;

use close::Closing;
pub use error::EndingError;
pub use handoff::{HandedOff, Handoff, HandoffError, NotOpened, ReviewFailure};
pub use outcome::{
    Aborted, CloseOffer, EndChoice, Finished, Kept, LeftStopped, Notice, Onlooker, Question,
};
use take_over::{Running, Standing, TakenOver, take_over};

use crate::git::{ChangeName, Repo};
use crate::settings::{Configured, OnFinish};
pub use crate::state::FinishChoice;
use crate::state::{RunDir, RunState, StopReason};

/// What became of a run whose loop ended on its own.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterLoop {
    Finished(Finished),
    HandedOff(HandedOff),
    Aborted(Aborted),
    LeftStopped(LeftStopped),
}

/// `git ralph finish`: keep or clean up a run no loop drives.
pub fn finish(
    repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    choice: FinishChoice,
    onlooker: &mut dyn Onlooker,
) -> Result<Finished, EndingError> {
    let mut run = take_over(repo, change, run_dir, Running::Refuse, onlooker)?;
    if let Some(already) = already_finished(&run, change, choice)? {
        return Ok(already);
    }
    finish_run(
        Closing::new(&mut run.repo, change, run_dir, &mut run.state, onlooker),
        choice,
    )
}

/// `git ralph finish --push` or `--pr`: keep a run no loop drives (or take
/// one already kept), then push its branch and open its pull request.
pub fn hand_off(
    repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    handoff: &Handoff,
    onlooker: &mut dyn Onlooker,
) -> Result<HandedOff, EndingError> {
    let mut run = take_over(repo, change, run_dir, Running::Refuse, onlooker)?;
    let already = already_finished(&run, change, FinishChoice::Keep)?;
    // Everything that can be known before keeping is checked first: a
    // refusal leaves the run as it was.
    let to = handoff.destination(&run.repo, change, &run.state.original().head)?;
    let kept = match already {
        Some(already) => already,
        None => finish_run(
            Closing::new(&mut run.repo, change, run_dir, &mut run.state, onlooker),
            FinishChoice::Keep,
        )?,
    };
    let (pushed, review) = handoff::hand_off(
        &run.repo, change, run_dir, &run.state, handoff, to, onlooker,
    )?;
    Ok(HandedOff {
        kept,
        pushed,
        review,
    })
}

/// A run that cannot be finished with `choice` as it stands: an error, or
/// `Some` when it is already kept and keep was asked for.
fn already_finished(
    run: &TakenOver,
    change: &ChangeName,
    choice: FinishChoice,
) -> Result<Option<Finished>, EndingError> {
    let change_name = || change.to_string();
    match (run.standing, choice) {
        // A kept run's branch is still there: it can still be cleaned up.
        (Standing::Open, _) | (Standing::Kept, FinishChoice::Cleanup) => Ok(None),
        (Standing::Kept, FinishChoice::Keep) => Ok(Some(Finished::AlreadyKept {
            change: change_name(),
            branch: run.state.branch().clone(),
        })),
        (Standing::Closed(with), _) => Err(EndingError::AlreadyFinished {
            change: change_name(),
            with,
        }),
        (Standing::Aborted, _) => Err(EndingError::WasAborted {
            change: change_name(),
        }),
    }
}

/// `git ralph abort`: stop the loop if one still drives the run, and
/// restore the exact pre-start state.
pub fn abort(
    repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    onlooker: &mut dyn Onlooker,
) -> Result<Aborted, EndingError> {
    let mut run = take_over(repo, change, run_dir, Running::Stop, onlooker)?;
    match run.standing {
        Standing::Aborted => {
            return Err(EndingError::AlreadyAborted {
                change: change.to_string(),
            });
        }
        // A kept run's branch is still there: it can still be undone.
        Standing::Open | Standing::Kept => {}
        Standing::Closed(with) => {
            return Err(EndingError::NothingToAbort {
                change: change.clone(),
                with,
            });
        }
    }
    abort_run(Closing::new(
        &mut run.repo,
        change,
        run_dir,
        &mut run.state,
        onlooker,
    ))
}

/// The loop has ended on its own: keep, clean up, or ask (and for a run
/// that did not complete, also leave it stopped or abort). The caller
/// still holds the run's lock.
pub fn after_loop(
    mut repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    mut state: RunState,
    on_finish: OnFinish,
    onlooker: &mut dyn Onlooker,
) -> Result<AfterLoop, EndingError> {
    let completed = state.reason() == Some(StopReason::Completed);
    let handoff = match on_finish {
        OnFinish::Push => Some(Configured::of(&repo).handoff(false)?),
        OnFinish::Pr => Some(Configured::of(&repo).handoff(true)?),
        _ => None,
    };
    if let Some(handoff) = handoff {
        return keep_and_hand_off(repo, change, run_dir, state, &handoff, onlooker)
            .map(AfterLoop::HandedOff);
    }
    let choice = match on_finish {
        OnFinish::Keep | OnFinish::Push | OnFinish::Pr => {
            Some(EndChoice::Finish(FinishChoice::Keep))
        }
        OnFinish::Cleanup => Some(EndChoice::Finish(FinishChoice::Cleanup)),
        OnFinish::Ask => onlooker.ask(&Question {
            branch: state.branch().clone(),
            original: state.original().head.reflog_name(),
            completed,
            beside: state.worktree().is_some(),
        }),
    };
    Ok(match choice {
        Some(EndChoice::Finish(choice)) => AfterLoop::Finished(finish_run(
            Closing::new(&mut repo, change, run_dir, &mut state, onlooker),
            choice,
        )?),
        Some(EndChoice::Abort) => AfterLoop::Aborted(abort_run(Closing::new(
            &mut repo, change, run_dir, &mut state, onlooker,
        ))?),
        Some(EndChoice::LeaveStopped) | None => AfterLoop::LeftStopped(LeftStopped {
            change: change.to_string(),
            branch: state.branch().clone(),
            original: state.original().head.reflog_name(),
            retries_to_resume: state.retries_to_resume(),
            completed,
            worktree: state
                .worktree()
                .as_ref()
                .map(|record| record.linked.path.clone()),
        }),
    })
}

/// `--on-finish push` or `pr`: keep, then hand off.
fn keep_and_hand_off(
    mut repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    mut state: RunState,
    handoff: &Handoff,
    onlooker: &mut dyn Onlooker,
) -> Result<HandedOff, EndingError> {
    let to = handoff.destination(&repo, change, &state.original().head)?;
    let kept = finish_run(
        Closing::new(&mut repo, change, run_dir, &mut state, onlooker),
        FinishChoice::Keep,
    )?;
    let (pushed, review) =
        handoff::hand_off(&repo, change, run_dir, &state, handoff, to, onlooker)?;
    Ok(HandedOff {
        kept,
        pushed,
        review,
    })
}

/// Keep or clean up, and record it: in the run's own worktree when it has
/// one, else in the user's.
fn finish_run(mut closing: Closing, choice: FinishChoice) -> Result<Finished, EndingError> {
    let finished = if closing.state.worktree().is_some() {
        beside::finish(&mut closing, choice)
    } else {
        close::finish(&mut closing, choice)
    }?;
    settle_index(closing.repo);
    Ok(finished)
}

/// A loop cut short (kill -9) may have left the index split (see
/// `git/split_writes.rs`): the run's end hands it back whole. git reads a
/// split index as the same index, so a failure here loses nothing and is
/// not one of the ending's.
fn settle_index(repo: &mut Repo) {
    let _ = repo.settle_index();
}

/// Restore the pre-start state and record it, wherever the run worked.
fn abort_run(mut closing: Closing) -> Result<Aborted, EndingError> {
    let aborted = if closing.state.worktree().is_some() {
        beside::abort(&mut closing)
    } else {
        close::abort(&mut closing)
    }?;
    settle_index(closing.repo);
    Ok(aborted)
}
