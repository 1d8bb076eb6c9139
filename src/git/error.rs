//! Error plumbing shared by the engine's operations. gix errors are large and
//! not our API, so they are boxed behind [`GitFailure`] with a sentence that
//! says which step failed.

use std::path::PathBuf;

/// A failure inside gix or the filesystem, with the step that failed.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct GitFailure {
    context: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl GitFailure {
    /// A failure with no deeper cause than `why`.
    pub fn new_io(context: impl Into<String>, why: &str) -> Self {
        GitFailure::new(context, std::io::Error::other(why.to_owned()))
    }

    pub(crate) fn new(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        GitFailure {
            context: context.into(),
            source: source.into(),
        }
    }
}

/// Another process holds a git lock file longer than we are willing to wait.
#[derive(Debug, thiserror::Error)]
#[error("'{}' is held by another git process{}", path.display(), holder.as_ref().map(|who| format!(", {who}")).unwrap_or_default())]
pub struct LockedError {
    pub path: PathBuf,
    /// The live process found holding it, as "pid N (command)".
    pub holder: Option<String>,
}

impl LockedError {
    pub fn hint(&self) -> String {
        match &self.holder {
            Some(holder) => format!(
                "wait for {holder} to finish (or end it), then run this again; a lock a live process holds is never removed"
            ),
            None => format!(
                "wait for the other git command to finish; if none is running, remove '{}'",
                self.path.display()
            ),
        }
    }
}

/// The error of the engine's worktree operations (checkpoint, preserve,
/// fingerprint, revert, finish, abort).
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error(transparent)]
    Locked(#[from] LockedError),
    #[error("no committer identity is configured")]
    NoIdentity,
    #[error("HEAD is at {found}, not on {expected}")]
    UnexpectedHead { expected: String, found: String },
    #[error(transparent)]
    Git(#[from] GitFailure),
}

impl OpError {
    pub fn hint(&self) -> Option<String> {
        match self {
            OpError::Locked(locked) => Some(locked.hint()),
            OpError::NoIdentity => Some(
                "set it with 'git config --global user.name \"Your Name\"' and 'git config --global user.email you@example.com'"
                    .into(),
            ),
            OpError::UnexpectedHead { .. } => {
                Some("run 'git ralph status' to see the run, and 'git ralph abort' to restore the pre-start state".into())
            }
            OpError::Git(_) => None,
        }
    }
}

/// Attach a step description to any fallible call.
pub(crate) trait Context<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, GitFailure>;
}

impl<T, E> Context<T> for Result<T, E>
where
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T, GitFailure> {
        self.map_err(|err| GitFailure::new(context(), err))
    }
}
