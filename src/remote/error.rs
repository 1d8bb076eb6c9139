//! Why a run could not travel, or could not be taken up, and what the user
//! can do about it. Every refusal of a take-up comes before anything is
//! written: the refs fetched to compare are removed again.

use crate::git::{GitFailure, OpError};
use crate::process::ProcessError;
use crate::state::StateError;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("there is no remote '{remote}' to take '{change}' up from")]
    NoRemote { remote: String, change: String },
    #[error("could not fetch '{change}' from '{remote}': {detail}")]
    Fetch {
        remote: String,
        change: String,
        detail: String,
    },
    #[error("could not run git to fetch '{change}'")]
    Git {
        change: String,
        #[source]
        source: ProcessError,
    },
    #[error("'{remote}' holds no record of a run of '{change}'")]
    NoRecord { remote: String, change: String },
    #[error(
        "the record of '{change}' at {commit} was written by a later release (layout {layout}); this release reads layout {known} at most"
    )]
    LaterLayout {
        change: String,
        commit: String,
        layout: u32,
        known: u32,
    },
    #[error("the record of '{change}' at {commit} is damaged: {detail}")]
    Damaged {
        change: String,
        commit: String,
        detail: String,
    },
    #[error(
        "the records of '{change}' have gone apart: here {local}, on '{remote}' {theirs}; {differs}"
    )]
    Diverged {
        change: String,
        remote: String,
        local: String,
        theirs: String,
        differs: String,
    },
    #[error(
        "the run of '{change}' is leased to {holder} for {minutes} more minute(s): another machine is at work on it"
    )]
    LeaseHeld {
        change: String,
        holder: String,
        minutes: u64,
    },
    #[error("another machine took the lease of '{change}' on '{remote}' first")]
    LeaseTaken { change: String, remote: String },
    #[error(
        "the worktree has changes of its own: taking '{change}' up moves HEAD onto {branch} and makes the worktree its tree"
    )]
    Dirty { change: String, branch: String },
    #[error(
        "the run of '{change}' worked in a worktree of its own; it is taken up on the machine that made it"
    )]
    Beside { change: String },
    #[error("'{change}' has no story '{story}'{}", known(stories))]
    StoryUnknown {
        change: String,
        story: String,
        stories: Vec<String>,
    },
    #[error("story {story} is already done on {branch}")]
    StoryDone { story: String, branch: String },
    #[error(
        "story {story} waits for story {}, not done on {branch} yet", missing.join(", ")
    )]
    StoryWaits {
        change: String,
        story: String,
        missing: Vec<String>,
        branch: String,
    },
    #[error("story {story} cannot run on a machine of its own: {what}")]
    StoryUnfit { story: String, what: String },
    #[error(transparent)]
    Run(Box<crate::run::RunError>),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Op(#[from] OpError),
    #[error(transparent)]
    Failure(#[from] GitFailure),
    #[error("could not write {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// The stories a change has, for a refusal that names one it has not.
fn known(stories: &[String]) -> String {
    match stories {
        [] => String::new(),
        stories => format!(" (it has {})", stories.join(", ")),
    }
}
