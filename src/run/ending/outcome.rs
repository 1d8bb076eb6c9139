//! What an ending did, as typed outcomes, and who watches it happen: the
//! [`Onlooker`], told each [`Notice`] and asked the [`Question`] of how to
//! finish. Every way to end a run returns these; they name nothing of how
//! the run got there, so each ending's file can name them.

use std::path::PathBuf;

use crate::git::ObjectId;
use crate::state::FinishChoice;

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
    /// branch taken back to it: the record and the branch agree. The
    /// user's `carried` commits made above the loop's own after it was
    /// killed were carried onto it.
    Unrecorded {
        refname: String,
        checkpoint: String,
        carried: usize,
    },
    /// The user's commits above a killed loop's checkpoint do not merge
    /// onto the last recorded checkpoint (in `paths`): they stay with it.
    NotCarried { paths: Vec<String> },
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
