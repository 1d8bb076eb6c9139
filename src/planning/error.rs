//! Why a plan could not be made, each with what the user can do about it.

use std::path::PathBuf;

use crate::agent::RunnerError;
use crate::agent::setup::SetupError;
use crate::state::StateError;
use crate::stories::{IssuesError, StoriesError};

/// Why `git ralph plan` stopped before a plan was judged, or refused to
/// begin.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The change or file exists: a plan never overwrites one.
    #[error("{target} exists already; a plan never overwrites it")]
    Exists { target: String, change: String },
    /// `--refine` with nothing to refine.
    #[error("there is no {target} to refine")]
    NothingToRefine { target: String },
    /// Neither a brief, nor `--from`, nor `--issue`.
    #[error("nothing to plan: say what to build")]
    NoBrief,
    #[error("the brief in {} is empty", path.display())]
    EmptyBrief { path: PathBuf },
    #[error("cannot read the brief {}", path.display())]
    Brief {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The GitHub issue the brief was to come from could not be read.
    #[error("{source}")]
    Issue {
        number: u64,
        #[source]
        source: StoriesError,
    },
    #[error(transparent)]
    Stories(#[from] StoriesError),
    #[error("could not {what}")]
    Git {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    #[error("could not {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// The agent could not work at all; no try was spent on it.
    #[error("{setup}")]
    AgentSetup { command: String, setup: SetupError },
    /// The agent hit its usage limit.
    #[error("the agent hit its usage limit: {0}")]
    UsageLimit(String),
    /// A plan was cut short, and HEAD or the refs moved since it began:
    /// what its agent did cannot be told from what the user did since.
    #[error(
        "a plan of '{change}' was cut short (pid {pid} no longer runs), and since it began {}: git-ralph cannot tell what its agent did from what you did since, so it changes nothing",
        moved.join(", ")
    )]
    MovedOnSinceCutShort {
        change: String,
        pid: u32,
        moved: Vec<String>,
        /// The ref that keeps the index and worktree before that plan.
        before: String,
    },
}

impl PlanError {
    pub(super) fn git(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> PlanError {
        PlanError::Git {
            what: what.into(),
            source: Box::new(source),
        }
    }

    pub(super) fn io(what: impl Into<String>, source: std::io::Error) -> PlanError {
        PlanError::Io {
            what: what.into(),
            source,
        }
    }

    /// Whether the command line itself is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, PlanError::NoBrief)
    }

    /// Whether the user's input or repository is at fault (not git-ralph
    /// or the machine).
    pub fn is_user_error(&self) -> bool {
        !matches!(
            self,
            PlanError::Git { .. } | PlanError::Io { .. } | PlanError::State(_)
        )
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            PlanError::Exists { change, .. } => Some(format!(
                "'git ralph plan {change} --refine' has the agent split its big stories and fill in what is missing, keeping every done mark; or plan under another name"
            )),
            PlanError::NothingToRefine { .. } => {
                Some("plan it first, without --refine".to_owned())
            }
            PlanError::NoBrief => Some(
                "e.g. git ralph plan add-dark-mode \"a dark theme the user can switch to\"; or --from FILE, or --issue N".to_owned(),
            ),
            PlanError::EmptyBrief { .. } => Some("write what to build in it".to_owned()),
            PlanError::Brief { .. } => None,
            PlanError::Issue { number, source } => Some(issue_hint(*number, source)),
            PlanError::Stories(err) => err.hint(),
            PlanError::Runner(err) => err.hint(),
            PlanError::AgentSetup { command, setup } => Some(format!(
                "{} (the command: `{command}`); then plan again",
                setup.advice()
            )),
            PlanError::UsageLimit(_) => Some(
                "plan again once the limit resets, or with another agent (--agent)".to_owned(),
            ),
            PlanError::State(err) => err.hint(),
            PlanError::MovedOnSinceCutShort { change, before, .. } => Some(format!(
                "how things stood before that plan is kept at {before} (the index in it, the worktree in its parent: 'git checkout {before}^ -- <path>' takes a file back); 'git ralph abort {change}' lets that plan go, changing nothing of yours; then plan again"
            )),
            PlanError::Git { .. } | PlanError::Io { .. } => None,
        }
    }
}

/// What to do when issue `number` could not be read for a plan's brief:
/// `plan` takes the brief from a file as well (`--from`), never from a
/// list of issues.
fn issue_hint(number: u64, source: &StoriesError) -> String {
    let by_hand = format!(
        "or save the issue's title and body in a file (`gh issue view {number}` prints them) and pass --from FILE"
    );
    match source {
        StoriesError::Issues(IssuesError::GhMissing) => {
            format!("install the GitHub CLI (https://cli.github.com), {by_hand}")
        }
        StoriesError::Issues(IssuesError::GhTimedOut { .. }) => {
            format!("raise --command-timeout, {by_hand}")
        }
        StoriesError::Issues(
            err @ (IssuesError::GhFailed { .. } | IssuesError::GhSpawn { .. }),
        ) => match err.hint() {
            Some(hint) => format!("{hint}; {by_hand}"),
            None => by_hand,
        },
        _ => by_hand.trim_start_matches("or ").to_owned(),
    }
}
