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
mod take_over;

use std::path::PathBuf;

pub use error::EndingError;
pub use handoff::{HandedOff, Handoff, HandoffError};
use take_over::{Running, Standing, TakenOver, take_over};

use crate::git::{ChangeName, ObjectId, Repo};
use crate::settings::OnFinish;
pub use crate::state::FinishChoice;
use crate::state::{RunDir, RunState, StopReason};

/// What the user may choose when a loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndChoice {
    Finish(FinishChoice),
    /// Leave the run stopped on its branch, to resume or finish later.
    LeaveStopped,
    /// Restore the exact pre-start state.
    Abort,
}

/// The question asked when a loop ends and `--on-finish ask` is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The run's branch, `ralph/<change>`.
    pub branch: String,
    /// The branch (or commit) the run started from.
    pub original: String,
    /// A completed run is offered keep and cleanup only.
    pub completed: bool,
    /// The run works in a worktree of its own, beside the user's.
    pub beside: bool,
}

/// Something an ending did on its way, worth telling at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// `abort` is stopping the loop that still drives the run.
    StoppingLoop { pid: u32 },
    /// An agent a killed loop had left running was stopped.
    StoppedOrphanAgent,
    /// Work beyond the last checkpoint was kept at `refname` and reverted.
    SetAside { refname: String },
    /// Commits a killed loop made on the branch past the last checkpoint
    /// its record holds (`checkpoint`) were kept at `refname`, and the
    /// branch taken back to it: the record and the branch agree.
    Unrecorded { refname: String, checkpoint: String },
    /// The kept branch is being pushed.
    Pushing { branch: String, remote: String },
    /// The run's lock named a loop no longer running: it is taken over.
    TookOverLock { pid: u32, change: String },
    /// The `index.lock` a killed loop left, which no live process holds,
    /// was moved aside.
    LeftLock { was: PathBuf, kept_at: PathBuf },
    /// A ref of the user's that an agent of a killed loop moved (a branch,
    /// a tag, the stash) was put back: what it did, in words.
    PutBack { said: String },
}

/// Whoever watches a run end: told what happens, and asked how to finish
/// when the settings leave it to the user.
pub trait Onlooker {
    fn notice(&mut self, notice: Notice);
    /// `None`: nobody can answer, or the question was dismissed.
    fn ask(&mut self, question: &Question) -> Option<EndChoice>;
}

/// What `finish` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Finished {
    /// The run stays on its branch.
    Kept(Kept),
    /// Back on the original branch, the work uncommitted.
    CleanedUp(CleanedUp),
    /// The run had already been kept: nothing was done.
    AlreadyKept { change: String, branch: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub change: String,
    pub branch: String,
    pub stories_done: usize,
    pub stories_total: usize,
    /// Kept before its stories were all done: `start` takes it up again.
    pub resumable: bool,
    /// The `--max-retries` to resume a run stuck on one story with.
    pub retries_to_resume: Option<u32>,
    /// The tracker's issues the run finished, which the user may close.
    pub close: Option<CloseOffer>,
    /// The run's own worktree, removed.
    pub worktree_removed: Option<PathBuf>,
}

/// The beads issues a run finished. The run closes nothing in the tracker;
/// closing them there (`bd close`) is the user's to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseOffer {
    /// The issues' ids, in the order of the run's stories.
    pub ids: Vec<String>,
    /// The run's branch, for the reason given to the tracker.
    pub branch: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CleanedUp {
    /// The branch (or commit) the run started from, now checked out again.
    pub original: String,
    /// The deleted branch.
    pub branch: String,
    /// Its tip, kept at `tip_ref`.
    pub tip: ObjectId,
    pub tip_ref: String,
    /// What the checkpoints' receipts add up to, in one line.
    pub receipts: String,
    /// Where each checkpoint's trailers are kept.
    pub receipts_file: PathBuf,
    /// The tracker's issues the run finished, which the user may close.
    pub close: Option<CloseOffer>,
    /// The run's own worktree, removed; the user's was never left.
    pub worktree_removed: Option<PathBuf>,
}

/// What `abort` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aborted {
    /// The branch (or commit) the run started from, now checked out again.
    pub original: String,
    /// The deleted branch.
    pub branch: String,
    /// Its tip, kept at `tip_ref`.
    pub tip: ObjectId,
    pub tip_ref: String,
    /// The run's own worktree, removed; the user's was never touched.
    pub worktree_removed: Option<PathBuf>,
    /// What was left uncommitted on the run's branch (what the user did
    /// there once the run had stopped), kept before the pre-start state
    /// came back.
    pub set_aside: Option<AbortSetAside>,
    /// The run's last checkpoint, when commits were made on its branch
    /// after it: they are kept with the tip, at `tip_ref`.
    pub commits_after: Option<ObjectId>,
}

/// Where `abort` kept what was left uncommitted on the run's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbortSetAside {
    pub refname: String,
    /// The ref's parent holds what was staged, apart from the worktree.
    pub index_kept: bool,
    /// The index was conflicted: the ref's parents are its stages.
    pub conflicted: bool,
}

/// A run left stopped after its loop, and how to go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftStopped {
    pub change: String,
    pub branch: String,
    pub original: String,
    /// The `--max-retries` to resume a run stuck on one story with.
    pub retries_to_resume: Option<u32>,
    /// Every story is done: there is nothing to resume.
    pub completed: bool,
    /// The run's own worktree, where it stays, for a run beside the user.
    pub worktree: Option<PathBuf>,
}

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
        &mut run.repo,
        change,
        run_dir,
        &mut run.state,
        choice,
        onlooker,
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
            &mut run.repo,
            change,
            run_dir,
            &mut run.state,
            FinishChoice::Keep,
            onlooker,
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
    abort_run(&mut run.repo, change, run_dir, &mut run.state, onlooker)
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
        OnFinish::Push => Some(Handoff::configured(&repo, false)?),
        OnFinish::Pr => Some(Handoff::configured(&repo, true)?),
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
            &mut repo, change, run_dir, &mut state, choice, onlooker,
        )?),
        Some(EndChoice::Abort) => {
            AfterLoop::Aborted(abort_run(&mut repo, change, run_dir, &mut state, onlooker)?)
        }
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
        &mut repo,
        change,
        run_dir,
        &mut state,
        FinishChoice::Keep,
        onlooker,
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
fn finish_run(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    state: &mut RunState,
    choice: FinishChoice,
    onlooker: &mut dyn Onlooker,
) -> Result<Finished, EndingError> {
    let finished = if state.worktree().is_some() {
        beside::finish(repo, change, run_dir, state, choice, onlooker)
    } else {
        close::finish(repo, change, run_dir, state, choice, onlooker)
    }?;
    settle_index(repo);
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
fn abort_run(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    state: &mut RunState,
    onlooker: &mut dyn Onlooker,
) -> Result<Aborted, EndingError> {
    let aborted = if state.worktree().is_some() {
        beside::abort(repo, change, run_dir, state, onlooker)
    } else {
        close::abort(repo, change, run_dir, state, onlooker)
    }?;
    settle_index(repo);
    Ok(aborted)
}
