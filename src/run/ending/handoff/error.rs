//! Why a hand-off stopped short, and what the user can do. A remote that
//! is not there is found before anything is done, and the run is left as
//! it was; every other failure comes after the run was kept: a failed push
//! leaves the repository exactly as `finish --keep` does, and a pull
//! request that could not be opened leaves the branch pushed and the
//! description written to a file.

use std::path::PathBuf;

use crate::git::OpError;
use crate::process::ProcessError;

/// The step of a hand-off that failed.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    #[error("there is no remote '{remote}' to push {branch} to")]
    NoRemote {
        remote: String,
        branch: String,
        /// The command that was run, to run again once it is fixed.
        again: String,
    },
    #[error(
        "{branch} cannot be pushed to '{remote}' from this shallow clone: the remote does not hold the history the clone is cut off at ({cut})"
    )]
    ShallowClone {
        remote: String,
        branch: String,
        /// One of the commits where the history is cut off.
        cut: String,
        again: String,
    },
    /// The run's branch is gone: there is nothing to push.
    #[error("there is no branch {branch} to push")]
    NoBranch { branch: String, change: String },
    #[error("the remote '{remote}' rejected {branch}: {detail}")]
    PushRejected {
        remote: String,
        branch: String,
        again: String,
        detail: String,
    },
    #[error(
        "could not push {branch} to '{remote}': it asks for credentials, and git-ralph never prompts for them ({detail})"
    )]
    PushCredentials {
        remote: String,
        branch: String,
        again: String,
        detail: String,
    },
    #[error("could not push {branch} to '{remote}': {detail}")]
    PushFailed {
        remote: String,
        branch: String,
        again: String,
        detail: String,
    },
    #[error("could not run git to push {branch}")]
    Git {
        branch: String,
        #[source]
        source: ProcessError,
    },
    /// The branch is pushed; the pull request is not open.
    #[error(transparent)]
    Review(Box<NotOpened>),
    #[error(transparent)]
    Op(#[from] OpError),
    /// The run's record could not be written to go with the branch.
    #[error(transparent)]
    Record(Box<crate::remote::RemoteError>),
    #[error(transparent)]
    Config(Box<crate::config::ConfigError>),
    #[error("could not write the {what} to {}", path.display())]
    Write {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A pushed branch whose pull request could not be opened or updated.
#[derive(Debug, thiserror::Error)]
#[error("{branch} is pushed to '{remote}', but the {review} was not opened: {why}")]
pub struct NotOpened {
    pub branch: String,
    pub remote: String,
    /// The command that was run, to run again once it is fixed.
    pub again: String,
    /// "pull request" or "merge request".
    pub review: &'static str,
    pub why: ReviewFailure,
    /// The command that opens it by hand.
    pub by_hand: String,
}

/// Why the forge's CLI could not open or update the pull request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewFailure {
    #[error("`{tool}` is not installed")]
    Missing { tool: &'static str },
    #[error("`{tool}` is not logged in")]
    NotLoggedIn { tool: &'static str },
    #[error("`{tool}` {detail}")]
    Failed { tool: &'static str, detail: String },
}
