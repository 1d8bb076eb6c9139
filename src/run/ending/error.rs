//! Why a run could not be finished or aborted: the ending's own error.
//! What the user can do about it is said by the command layer.

use std::time::Duration;

use super::handoff::HandoffError;
use crate::config::ConfigError;
use crate::git::{ChangeName, GitFailure, OpError};
use crate::state::{FinishChoice, LockError, StateError};

#[derive(Debug, thiserror::Error)]
pub enum EndingError {
    /// `finish` while a loop still drives the run.
    #[error("the loop for '{change}' is still running (pid {pid})")]
    StillRunning { change: ChangeName, pid: u32 },
    /// `abort` asked the loop to stop, and it did not.
    #[error("the loop (pid {pid}) did not stop within {}s", patience.as_secs())]
    LoopWouldNotStop { pid: u32, patience: Duration },
    #[error("the run '{change}' is already finished ({with})")]
    AlreadyFinished { change: String, with: FinishChoice },
    #[error("the run '{change}' was aborted")]
    WasAborted { change: String },
    #[error("the run '{change}' is already aborted")]
    AlreadyAborted { change: String },
    #[error("the run '{change}' is finished ({with}); there is nothing to abort")]
    NothingToAbort {
        change: ChangeName,
        with: FinishChoice,
    },
    /// HEAD left the run's branch: what is there is the user's.
    #[error("cannot {what} '{change}': HEAD is on {head}, not on {}", change.branch_short())]
    NotOnBranch {
        what: &'static str,
        change: ChangeName,
        head: String,
    },
    /// Cleanup of a run beside the user would overwrite what they changed
    /// and did not commit.
    #[error("cleanup would touch your own changes in {}; nothing was done", paths.join(", "))]
    CleanupWouldTouch {
        change: ChangeName,
        paths: Vec<String>,
    },
    /// The run's work and what the user committed beside it do not merge.
    #[error("the run's work clashes with what you committed to {}; nothing was done", paths.join(", "))]
    CleanupClashes {
        change: ChangeName,
        paths: Vec<String>,
    },
    /// The worktree a run beside the user was started from is gone.
    #[error("the worktree the run was started from, {}, cannot be opened", path.display())]
    OwnerGone {
        path: std::path::PathBuf,
        #[source]
        source: Box<crate::git::OpenError>,
    },
    /// The user's worktree is in the middle of a git operation.
    #[error("cleanup would write into {}, where {source}", path.display())]
    OwnerBusy {
        path: std::path::PathBuf,
        #[source]
        source: Box<crate::git::OpenError>,
    },
    #[error(transparent)]
    Worktree(#[from] crate::git::WorktreeError),
    /// The run is kept; pushing it or opening its pull request failed.
    #[error(transparent)]
    Handoff(Box<HandoffError>),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Op(#[from] OpError),
    #[error(transparent)]
    Git(#[from] GitFailure),
    /// A story's worktree of a parallel run could not be retired.
    #[error("could not retire a story's worktree: {0}")]
    StoryWorktree(Box<crate::run::error::RunError>),
}

impl From<HandoffError> for EndingError {
    fn from(err: HandoffError) -> Self {
        EndingError::Handoff(Box::new(err))
    }
}
