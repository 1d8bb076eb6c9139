//! The engine's one error type. Each variant keeps its cause, so the
//! command layer can print the whole chain, and knows what the user can do
//! about it ([`RunError::hint`]).

use std::io;
use std::path::PathBuf;

use crate::agent::PresetError;
use crate::agent::RunnerError;
use crate::contract::ContractError;
use crate::git::{BeginError, OpError};
use crate::prompt::PromptError;
use crate::settings::SettingsError;
use crate::state::StateError;
use crate::stories::StoriesError;

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
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Begin(#[from] BeginError),
    #[error(transparent)]
    Worktree(#[from] crate::git::WorktreeError),
    #[error(
        "the run '{change}' works in your worktree; --worktree and --parallel only choose how a new run works"
    )]
    WorktreeOnResume { change: String },
    #[error(
        "the run '{change}' works on its stories in parallel; --once makes a single pass, one story after another"
    )]
    OnceOnParallel { change: String },
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Answers(#[from] crate::state::answers::AnswersError),
    #[error(transparent)]
    Preview(#[from] crate::preview::PreviewError),
    #[error(transparent)]
    Notify(#[from] crate::notify::NotifyError),
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
    #[error("the agent '{name}' is not installed: '{program}' is not on PATH")]
    AgentMissing { name: String, program: String },
    #[error("the run '{change}' is stopped, but HEAD is on {head}, not on {branch}")]
    NotOnBranch {
        change: String,
        head: String,
        branch: String,
    },
    #[error("cannot read the prompt template {}: {source}", path.display())]
    Template { path: PathBuf, source: io::Error },
    #[error("cannot read the prompt file {}: {source}", path.display())]
    PromptFile { path: PathBuf, source: io::Error },
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
    TaskFile(#[from] super::task_file::TaskFileError),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error(transparent)]
    Roles(#[from] crate::contract::RoleError),
    #[error("a role pipeline works story by story; it does not go with --once or --prompt")]
    RolesNeedStories,
    /// A submodule holds work a run could lose.
    #[error(transparent)]
    Submodules(super::submodules::UnsettledSubmodules),
    /// A panic: a bug in git-ralph.
    #[error(transparent)]
    Bug(#[from] crate::bug::Bug),
    #[error("{reason}; waiting until it resets would exceed --max-rate-limit-wait ({cap}s)")]
    RateLimitCap { reason: String, cap: u64 },
    /// The run's branch was begun but its files could not be written,
    /// and taking the branch back failed too.
    #[error("{cause}; and the begun run could not be taken back: {undo}")]
    BeginNotUndone {
        change: String,
        cause: Box<RunError>,
        undo: OpError,
    },
    /// `--on-finish push` or `pr`, and the hand-off could not happen.
    #[error("--on-finish {on_finish}: {why}")]
    CannotHandOff {
        on_finish: &'static str,
        change: String,
        why: Box<crate::run::ending::HandoffError>,
    },
}

impl RunError {
    /// Every one of the `count` stories `source` gives `change` is done.
    pub(crate) fn all_done(
        change: &crate::git::ChangeName,
        count: usize,
        source: &dyn crate::stories::StorySource,
    ) -> RunError {
        RunError::AllDone {
            change: change.to_string(),
            count,
            file: source.tracking_file().to_owned(),
            kind: source.kind(),
        }
    }

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
            _ => !matches!(
                self,
                RunError::Io { .. }
                    | RunError::Git { .. }
                    | RunError::State(_)
                    | RunError::BeginNotUndone { .. }
                    | RunError::Contract(ContractError::Snapshot { .. })
                    | RunError::Bug(_)
                    | RunError::Worktree(crate::git::WorktreeError::Git(_))
            ),
        }
    }

    /// Whether the command line itself is at fault.
    pub fn is_usage(&self) -> bool {
        matches!(self, RunError::Settings(err) if err.is_usage())
    }

    /// The error as the end of a run tells it: its message, then its
    /// deepest cause when the message does not say it already (a lock file
    /// left behind, a full disk), then what to do.
    pub fn told(&self) -> String {
        let mut said = self.to_string();
        if let Some(cause) = deepest_cause(self)
            && !said.contains(&cause)
        {
            said.push_str(&format!(" ({cause})"));
        }
        if let Some(hint) = self.hint() {
            said.push_str(&format!("; {hint}"));
        }
        said
    }

    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            RunError::Stories(err) => err.hint(),
            RunError::Prompt(err) => err.hint(),
            RunError::Contract(err) => err.hint(),
            RunError::Preset(err) => Some(err.hint()),
            RunError::Settings(err) => err.hint(),
            RunError::Preview(err) => err.hint(),
            RunError::Begin(err) => err.hint(),
            RunError::Worktree(err) => err.hint(),
            RunError::WorktreeOnResume { change } => Some(format!(
                "resume it without --worktree, or finish it ('git ralph finish {change} --keep') and start anew with --worktree"
            )),
            RunError::OnceOnParallel { change } => Some(format!(
                "resume it without --once: 'git ralph start {change}'"
            )),
            RunError::ParallelUnfit { .. } => Some(
                "fix what is named (a story's after = [...] in ralph.toml), or run without --parallel, one story at a time (unset ralph.parallel if it is set)"
                    .into(),
            ),
            RunError::AllDone { kind, file, .. } => Some(match kind {
                crate::stories::SourceKind::Prd => format!(
                    "set \"passes\": false on a story in {}, or add a story, to give the agent work",
                    file.display()
                ),
                crate::stories::SourceKind::Github | crate::stories::SourceKind::Beads => {
                    "open an issue (or reopen one) to give the agent work".into()
                }
                _ => "untick a box, or add a story, to give the agent work".into(),
            }),
            RunError::AgentMissing { .. } => Some(
                "install it, pick another with --agent (see 'git ralph agents'), or run any CLI with --agent-command '<command>'"
                    .into(),
            ),
            RunError::NotOnBranch { change, branch, .. } => Some(format!(
                "switch back with 'git switch {branch}' to resume, or 'git ralph abort {change}' to restore the pre-start state"
            )),
            RunError::Template { .. } => Some("check the path given to --prompt-template".into()),
            RunError::PromptFile { .. } => Some("check the path given to --prompt".into()),
            RunError::Agent(err) => err.hint(),
            RunError::UserChangesRejected { story, .. } => Some(format!(
                "your changes are committed on the branch; fix them, or untick story {story}, then 'git ralph start' again"
            )),
            RunError::AgentSetup { command, change, setup } => Some(format!(
                "{} (the command: `{command}`); no retry was spent: once it is fixed, 'git ralph start {change}' resumes the run, 'git ralph abort {change}' restores the pre-start state",
                setup.advice()
            )),
            RunError::Git { source, .. } => source.hint(),
            RunError::Sandbox(err) => Some(err.hint()),
            RunError::TaskFile(err) => Some(err.hint()),
            RunError::Roles(_) => {
                Some("see ROLE PIPELINE in 'man git-ralph-start' for the roles' keys".into())
            }
            RunError::RolesNeedStories => Some(
                "run without --roles (or without roles in ralph.toml and ralph.roles) for --once or --prompt".into(),
            ),
            RunError::State(err) => err.hint(),
            RunError::Submodules(err) => err.hint(),
            RunError::BeginNotUndone { change, .. } => Some(format!(
                "your index is kept at refs/ralph/{change}/original and your uncommitted work in the 'initial state' commit on ralph/{change}: switch back to your branch, 'git restore --source=ralph/{change} --worktree -- .' brings the work back"
            )),
            RunError::Answers(crate::state::answers::AnswersError::State(err)) => err.hint(),
            RunError::Answers(crate::state::answers::AnswersError::Bad(_)) => Some(
                "git ralph answer writes one answer per line: mend or remove that line, then answer again".into(),
            ),
            RunError::CannotHandOff { change, why, .. } => Some(match why.as_ref() {
                crate::run::ending::HandoffError::NoRemote { remote, .. } => format!(
                    "add the remote ('git remote add {remote} <url>') or name another one ('git config ralph.remote <name>'); or start with --on-finish keep, and push later with 'git ralph finish {change} --push'"
                ),
                crate::run::ending::HandoffError::ShallowClone { remote, .. } => format!(
                    "fetch the whole history ('git fetch --unshallow {remote}'); or start with --on-finish keep, and push later with 'git ralph finish {change} --push'"
                ),
                _ => format!(
                    "start with --on-finish keep, and push later with 'git ralph finish {change} --push'"
                ),
            }),
            _ => None,
        }
    }
}

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
            err.told(),
            "could not make a story's branch: could not update refs/heads/x (File exists at path \"refs/heads/x.lock\")"
        );
        let said = RunError::io("read it", io::Error::other("gone away"));
        assert_eq!(said.told(), "could not read it: gone away");
    }
}
