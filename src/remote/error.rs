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

impl RemoteError {
    /// What the user can do about it.
    pub fn hints(&self) -> Vec<String> {
        match self {
            RemoteError::NoRemote { remote, .. } => vec![format!(
                "add it ('git remote add {remote} <url>') or name another with --from"
            )],
            RemoteError::NoRecord { change, .. } => vec![format!(
                "a run's record travels with 'git ralph finish {change} --push', '--on-finish push' or 'start --push-each'"
            )],
            RemoteError::LaterLayout { .. } => vec![
                "upgrade git-ralph on this machine to the release that wrote the record".to_owned(),
            ],
            RemoteError::Diverged { change, remote, .. } => vec![
                format!(
                    "keep the remote's: 'git ralph abort {change}' here (your run's refs stay under refs/ralph/{change}/history/ once a new run begins), then 'git ralph start {change} --from {remote}'"
                ),
                format!(
                    "keep this one: 'git push --force-with-lease {remote} refs/ralph/{change}/record refs/heads/ralph/{change}' replaces the remote's, then go on here with 'git ralph start {change}'"
                ),
            ],
            RemoteError::LeaseHeld { change, .. } | RemoteError::LeaseTaken { change, .. } => {
                vec![format!(
                    "let that machine finish; once its lease has expired (or it is done), 'git ralph start {change} --from <remote>' takes the run up"
                )]
            }
            RemoteError::Dirty { .. } => {
                vec!["commit or stash your changes first ('git stash -u')".to_owned()]
            }
            _ => Vec::new(),
        }
    }
}
