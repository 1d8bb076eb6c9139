//! The error of a run under way: an attempt and the loop around it. A
//! start's errors are [`StartError`]s, carried here as one variant for the
//! steps the loop takes again (a worker reading its story's source); the
//! ending's are `ending::EndingError`. Each variant keeps its cause, so
//! the command layer can print the whole chain; what the user can do about
//! it is the command layer's to say, since only it knows the commands
//! ([`Hints`]).

use std::io;
use std::path::PathBuf;

use crate::agent::PresetError;
use crate::agent::RunnerError;
use crate::contract::ContractError;
use crate::git::OpError;
use crate::prompt::PromptError;
use crate::state::StateError;
use crate::stories::StoriesError;

use super::start_error::StartError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Stories(#[from] StoriesError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Contract(#[from] ContractError),
    #[error(transparent)]
    Preset(#[from] PresetError),
    #[error(transparent)]
    Worktree(#[from] crate::git::WorktreeError),
    /// The start refused the run.
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Answers(#[from] crate::state::answers::AnswersError),
    #[error(transparent)]
    Preview(#[from] crate::preview::PreviewError),
    #[error(transparent)]
    Notify(#[from] crate::notify::NotifyError),
    #[error("the agent '{name}' is not installed: '{program}' is not on PATH")]
    AgentMissing { name: String, program: String },
    #[error("cannot read the prompt template {}: {source}", path.display())]
    Template { path: PathBuf, source: io::Error },
    /// The agent could not be started or supervised.
    #[error(transparent)]
    Agent(#[from] RunnerError),
    /// A git operation of the loop failed.
    #[error("could not {what}: {source}")]
    Git { what: String, source: OpError },
    #[error("could not {what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("story {story} was marked done while the run was stopped, but {reason}")]
    UserChangesRejected { story: String, reason: String },
    /// The agent could not work at all; no retry was spent.
    #[error("{setup}")]
    AgentSetup {
        /// The agent's command as the user gave it.
        command: String,
        change: String,
        setup: crate::agent::setup::SetupError,
    },
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error(transparent)]
    Roles(#[from] crate::contract::RoleError),
    /// A panic: a bug in git-ralph.
    #[error(transparent)]
    Bug(#[from] crate::bug::Bug),
    #[error("{reason}; waiting until it resets would exceed --max-rate-limit-wait ({cap}s)")]
    RateLimitCap { reason: String, cap: u64 },
}

impl RunError {
    pub(crate) fn git(what: impl Into<String>, source: impl Into<OpError>) -> RunError {
        RunError::Git {
            what: what.into(),
            source: source.into(),
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> RunError {
        RunError::Io {
            what: what.into(),
            source,
        }
    }

    /// Whether the user's input is at fault, rather than the machine or a
    /// bug: it decides the exit status and how the error is introduced.
    /// An agent git-ralph started but could not supervise (its log not
    /// written on a full disk, its output not read) is the machine's.
    pub fn is_user_error(&self) -> bool {
        match self {
            RunError::Agent(err) => err.is_setup(),
            RunError::Start(err) => err.is_user_error(),
            _ => !matches!(
                self,
                RunError::Io { .. }
                    | RunError::Git { .. }
                    | RunError::State(_)
                    | RunError::Contract(ContractError::Snapshot { .. })
                    | RunError::Bug(_)
                    | RunError::Worktree(crate::git::WorktreeError::Git(_))
            ),
        }
    }

    /// Whether the command line itself is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, RunError::Start(err) if err.is_usage())
    }

    /// The error as the end of a run tells it: its message, then its
    /// deepest cause when the message does not say it already (a lock file
    /// left behind, a full disk), then what to do, as `hints` says it.
    pub fn told(&self, hints: Hints) -> String {
        let mut said = self.to_string();
        if let Some(cause) = deepest_cause(self)
            && !said.contains(&cause)
        {
            said.push_str(&format!(" ({cause})"));
        }
        if let Some(hint) = hints(self) {
            said.push_str(&format!("; {hint}"));
        }
        said
    }
}

/// What the user can do about an error, in the words of the commands: the
/// command layer gives it to the run, whose end tells the error with it.
pub type Hints = fn(&RunError) -> Option<String>;

/// The last cause in `err`'s chain that is a sentence: a library's bare
/// classification (`NotFound`) says nothing to a person.
fn deepest_cause(err: &dyn std::error::Error) -> Option<String> {
    let mut deepest = None;
    let mut next = err.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if text.contains(' ') {
            deepest = Some(text);
        }
        next = cause.source();
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::GitFailure;

    #[test]
    fn the_end_of_a_run_names_the_deepest_cause_once() {
        let lock = io::Error::other("File exists at path \"refs/heads/x.lock\"");
        let err = RunError::git(
            "make a story's branch",
            GitFailure::new("could not update refs/heads/x", lock),
        );
        assert_eq!(
            err.told(|_| None),
            "could not make a story's branch: could not update refs/heads/x (File exists at path \"refs/heads/x.lock\")"
        );
        let said = RunError::io("read it", io::Error::other("gone away"));
        assert_eq!(said.told(|_| None), "could not read it: gone away");
    }
}
