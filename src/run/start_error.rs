//! Why a run could not start: refused before anything was written, or
//! stopped while its branch and files were being made. The start stage's
//! own error, as an attempt's and the ending's have theirs; a step a start
//! shares with the loop (reading the stories, naming the agent) fails here
//! in the start's words when the start takes it. It names what is wrong in
//! the engine's words; what the user can do about it is said by the
//! command layer, which knows the commands. Nothing here imports the rest
//! of the engine, so every step may name it.

use std::io;
use std::path::PathBuf;

use crate::agent::PresetError;
use crate::contract::{ContractError, RoleError};
use crate::git::{BeginError, OpError, Unsettled, WorktreeError};
use crate::prompt::PromptError;
use crate::settings::SettingsError;
use crate::state::StateError;
use crate::stories::StoriesError;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "the run '{change}' works in your worktree; --worktree and --parallel only choose how a new run works"
    )]
    WorktreeOnResume { change: String },
    #[error(
        "the run '{change}' works on its stories in parallel; --once makes a single pass, one story after another"
    )]
    OnceOnParallel { change: String },
    #[error(
        "every story of '{change}' is already done ({count} {} in {})",
        if *count == 1 { "story" } else { "stories" },
        file.display()
    )]
    AllDone {
        change: String,
        count: usize,
        file: PathBuf,
        kind: crate::stories::SourceKind,
    },
    #[error("the stories cannot run in parallel: {what}")]
    ParallelUnfit { what: String },
    #[error("the run '{change}' is stopped, but HEAD is on {head}, not on {branch}")]
    NotOnBranch {
        change: String,
        head: String,
        branch: String,
    },
    #[error("cannot read the prompt file {}: {source}", path.display())]
    PromptFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a role pipeline works story by story; it does not go with --once or --prompt")]
    RolesNeedStories,
    /// The task file is one git does not see.
    #[error(transparent)]
    TaskFile(#[from] TaskFileError),
    /// A submodule holds work a run could lose.
    #[error(transparent)]
    Submodules(#[from] UnsettledSubmodules),
    /// `--on-finish push` or `pr`, and the hand-off could not happen.
    #[error("--on-finish {on_finish}: {why}")]
    CannotHandOff {
        on_finish: &'static str,
        change: String,
        why: Box<super::ending::handoff::HandoffError>,
    },
    #[error(transparent)]
    Stories(#[from] StoriesError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Contract(#[from] ContractError),
    #[error(transparent)]
    Preset(#[from] PresetError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Roles(#[from] RoleError),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error(transparent)]
    Notify(#[from] crate::notify::NotifyError),
    #[error(transparent)]
    Begin(#[from] BeginError),
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("the agent '{name}' is not installed: '{program}' is not on PATH")]
    AgentMissing { name: String, program: String },
    #[error("cannot read the prompt template {}: {source}", path.display())]
    Template { path: PathBuf, source: io::Error },
    /// A git operation of the start failed.
    #[error("could not {what}: {source}")]
    Git { what: String, source: OpError },
    #[error("could not {what}: {source}")]
    Io { what: String, source: io::Error },
    /// The run's branch was begun but its files could not be written,
    /// and taking the branch back failed too.
    #[error("{cause}; and the begun run could not be taken back: {undo}")]
    BeginNotUndone {
        change: String,
        cause: Box<StartError>,
        undo: OpError,
    },
}

impl StartError {
    pub(crate) fn git(what: impl Into<String>, source: impl Into<OpError>) -> StartError {
        StartError::Git {
            what: what.into(),
            source: source.into(),
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> StartError {
        StartError::Io {
            what: what.into(),
            source,
        }
    }

    /// Whether the user's input is at fault, rather than the machine: a
    /// refusal is, a repository or disk that failed the start is not.
    pub fn is_user_error(&self) -> bool {
        !matches!(
            self,
            StartError::Io { .. }
                | StartError::Git { .. }
                | StartError::State(_)
                | StartError::BeginNotUndone { .. }
                | StartError::Contract(ContractError::Snapshot { .. })
                | StartError::Worktree(WorktreeError::Git(_))
        )
    }

    /// Whether the command line itself is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, StartError::Settings(err) if err.is_usage())
    }

    /// Every one of the `count` stories `source` gives `change` is done.
    pub(crate) fn all_done(
        change: &crate::git::ChangeName,
        count: usize,
        source: &dyn crate::stories::StorySource,
    ) -> StartError {
        StartError::AllDone {
            change: change.to_string(),
            count,
            file: source.tracking_file().to_owned(),
            kind: source.kind(),
        }
    }
}

/// Why the task file cannot carry a run's progress.
#[derive(Debug, thiserror::Error)]
pub enum TaskFileError {
    #[error(
        "the task file {} leads through a symlink to {}, outside the repository: git does not see the boxes ticked there, so a failed attempt's ticks could not be undone",
        path.display(),
        target.display()
    )]
    OutsideThroughSymlink { path: PathBuf, target: PathBuf },
    #[error(
        "the task file {} is ignored by git (an ignore rule names it and git does not track it): git does not see the boxes ticked in it, so a failed attempt's ticks could not be undone",
        path.display()
    )]
    Ignored { path: PathBuf },
}

/// A start refused: these submodules hold what a run could lose.
#[derive(Debug, thiserror::Error)]
#[error("cannot start while {}", said(.0))]
pub struct UnsettledSubmodules(pub Vec<Unsettled>);

/// What is found in each submodule, in words.
fn said(found: &[Unsettled]) -> String {
    let each: Vec<String> = found
        .iter()
        .map(|unsettled| match unsettled.checked_out {
            None => format!(
                "submodule {} has uncommitted changes or untracked files",
                unsettled.path
            ),
            Some(head) => format!(
                "submodule {} has {} checked out, where the superproject records {}",
                unsettled.path,
                head.to_hex_with_len(10),
                unsettled.recorded.to_hex_with_len(10)
            ),
        })
        .collect();
    each.join("; ")
}
