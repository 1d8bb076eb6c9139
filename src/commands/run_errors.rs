//! The run's errors in the user's words. The engine names what went wrong
//! at each stage (a start refused, an attempt or the loop failed, an
//! ending or a hand-off stopped short); only this layer knows the commands
//! the user can type, so the hints that name them, and the exit status an
//! error gives, are decided here, at the edge.

use crate::exit::{CommandError, ErrorKind};
use crate::remote::RemoteError;
use crate::run::ending::{EndingError, HandoffError, NotOpened, ReviewFailure};
use crate::run::{RunError, StartError, TaskFileError, UnsettledSubmodules};
use crate::stories::SourceKind;

impl From<RunError> for CommandError {
    fn from(err: RunError) -> Self {
        if let RunError::Bug(bug) = &err {
            return CommandError::bug(bug, None);
        }
        let kind = if matches!(err, RunError::AgentSetup { .. }) {
            ErrorKind::Setup
        } else if err.is_usage() {
            ErrorKind::Usage
        } else if err.is_user_error() {
            ErrorKind::User
        } else {
            ErrorKind::Internal
        };
        let hint = run_hint(&err);
        CommandError::from_error(kind, err).maybe_hint(hint)
    }
}

impl From<StartError> for CommandError {
    fn from(err: StartError) -> Self {
        let kind = if err.is_usage() {
            ErrorKind::Usage
        } else if err.is_user_error() {
            ErrorKind::User
        } else {
            ErrorKind::Internal
        };
        let hint = start_hint(&err);
        CommandError::from_error(kind, err).maybe_hint(hint)
    }
}

impl From<EndingError> for CommandError {
    fn from(err: EndingError) -> Self {
        match err {
            EndingError::Lock(err) => err.into(),
            EndingError::State(err) => err.into(),
            EndingError::Op(err) => err.into(),
            EndingError::Git(err) => err.into(),
            EndingError::Config(err) => err.into(),
            EndingError::Handoff(err) => {
                let hints = handoff_hints(&err);
                let mut error = CommandError::from_error(ErrorKind::User, *err);
                error.hints = hints;
                error
            }
            err => {
                let hint = ending_hint(&err);
                CommandError::from_error(ErrorKind::User, err).maybe_hint(hint)
            }
        }
    }
}

impl From<crate::settings::SettingsError> for CommandError {
    fn from(err: crate::settings::SettingsError) -> Self {
        StartError::from(err).into()
    }
}

/// What the user can do about an error of a run: the hints
/// the command layer gives the engine.
pub fn run_hint(err: &RunError) -> Option<String> {
    match err {
        RunError::Stories(err) => err.hint(),
        RunError::Prompt(err) => err.hint(),
        RunError::Contract(err) => err.hint(),
        RunError::Preset(err) => Some(err.hint()),
        RunError::Preview(err) => err.hint(),
        RunError::Worktree(err) => err.hint(),
        RunError::Start(err) => start_hint(err),
        RunError::AgentMissing { .. } => Some(AGENT_MISSING.into()),
        RunError::Template { .. } => Some(TEMPLATE.into()),
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
        RunError::Roles(_) => Some(ROLES.into()),
        RunError::State(err) => err.hint(),
        RunError::Answers(crate::state::answers::AnswersError::State(err)) => err.hint(),
        RunError::Answers(crate::state::answers::AnswersError::Bad(_)) => Some(
            "git ralph answer writes one answer per line: mend or remove that line, then answer again".into(),
        ),
        _ => None,
    }
}

const AGENT_MISSING: &str = "install it, pick another with --agent (see 'git ralph agents'), or run any CLI with --agent-command '<command>'";
const TEMPLATE: &str = "check the path given to --prompt-template";
const ROLES: &str = "see ROLE PIPELINE in 'man git-ralph-start' for the roles' keys";

/// What the user can do about a start the engine refused, or one that
/// failed on its way.
fn start_hint(err: &StartError) -> Option<String> {
    match err {
        StartError::Stories(err) => err.hint(),
        StartError::Prompt(err) => err.hint(),
        StartError::Contract(err) => err.hint(),
        StartError::Preset(err) => Some(err.hint()),
        StartError::Settings(err) => err.hint(),
        StartError::Begin(err) => err.hint(),
        StartError::Worktree(err) => err.hint(),
        StartError::AgentMissing { .. } => Some(AGENT_MISSING.into()),
        StartError::Template { .. } => Some(TEMPLATE.into()),
        StartError::Git { source, .. } => source.hint(),
        StartError::Sandbox(err) => Some(err.hint()),
        StartError::Roles(_) => Some(ROLES.into()),
        StartError::State(err) => err.hint(),
        StartError::BeginNotUndone { change, .. } => Some(format!(
            "your index is kept at refs/ralph/{change}/original and your uncommitted work in the 'initial state' commit on ralph/{change}: switch back to your branch, 'git restore --source=ralph/{change} --worktree -- .' brings the work back"
        )),
        StartError::Notify(_) | StartError::Io { .. } => None,
        StartError::OnceOnParallel { change } => Some(format!(
            "resume it without --once: 'git ralph start {change}'"
        )),
        StartError::WorktreeOnResume { change } => Some(format!(
            "resume it without --worktree, or finish it ('git ralph finish {change} --keep') and start anew with --worktree"
        )),
        StartError::ParallelUnfit { .. } => Some(
            "fix what is named (a story's after = [...] in ralph.toml), or run without --parallel, one story at a time (unset ralph.parallel if it is set)"
                .into(),
        ),
        StartError::AllDone { kind, file, .. } => Some(match kind {
            SourceKind::Prd => format!(
                "set \"passes\": false on a story in {}, or add a story, to give the agent work",
                file.display()
            ),
            SourceKind::Github | SourceKind::Beads => {
                "open an issue (or reopen one) to give the agent work".into()
            }
            _ => "untick a box, or add a story, to give the agent work".into(),
        }),
        StartError::NotOnBranch { change, branch, .. } => Some(format!(
            "switch back with 'git switch {branch}' to resume, or 'git ralph abort {change}' to restore the pre-start state"
        )),
        StartError::PromptFile { .. } => Some("check the path given to --prompt".into()),
        StartError::RolesNeedStories => Some(
            "run without --roles (or without roles in ralph.toml and ralph.roles) for --once or --prompt".into(),
        ),
        StartError::TaskFile(err) => Some(task_file_hint(err)),
        StartError::Submodules(err) => submodules_hint(err),
        StartError::CannotHandOff { change, why, .. } => Some(match why.as_ref() {
            HandoffError::NoRemote { remote, .. } => format!(
                "add the remote ('git remote add {remote} <url>') or name another one ('git config ralph.remote <name>'); or start with --on-finish keep, and push later with 'git ralph finish {change} --push'"
            ),
            HandoffError::ShallowClone { remote, .. } => format!(
                "fetch the whole history ('git fetch --unshallow {remote}'); or start with --on-finish keep, and push later with 'git ralph finish {change} --push'"
            ),
            _ => format!(
                "start with --on-finish keep, and push later with 'git ralph finish {change} --push'"
            ),
        }),
    }
}

fn task_file_hint(err: &TaskFileError) -> String {
    match err {
        TaskFileError::OutsideThroughSymlink { path, target } => format!(
            "nothing was changed; put the file itself in the repository and commit it (e.g. 'cp --remove-destination {} {}' then 'git commit {}'), or name a file of the repository with --tasks",
            target.display(),
            path.display(),
            path.display()
        ),
        TaskFileError::Ignored { path } => format!(
            "nothing was changed; track the file ('git add -f {}' and commit it), or take it out of .gitignore, then start again",
            path.display()
        ),
    }
}

/// What to do about unsettled submodules, naming the first one.
fn submodules_hint(err: &UnsettledSubmodules) -> Option<String> {
    let first = err.0.first()?;
    let path = &first.path;
    Some(match first.checked_out {
        None => format!(
            "commit it inside the submodule, or stash it there ('git -C {path} stash -u'), then start again"
        ),
        Some(_) => format!(
            "check out the commit the superproject records ('git submodule update {path}'), or record the submodule's commit ('git add {path}' and commit), then start again"
        ),
    })
}
/// What the user can do about an ending that stopped short.
fn ending_hint(err: &EndingError) -> Option<String> {
    match err {
        EndingError::StillRunning { change, .. } => Some(format!(
            "stop it first (Ctrl-C or q in its terminal), or 'git ralph abort {change}'"
        )),
        EndingError::LoopWouldNotStop { pid, .. } => Some(format!(
            "stop it by hand ('kill {pid}'), then run 'git ralph abort' again"
        )),
        EndingError::NothingToAbort { change, .. } => Some(format!(
            "its work stays reachable under {}/",
            change.ref_namespace()
        )),
        EndingError::NotOnBranch { change, .. } => Some(format!(
            "commit or stash what you changed there, 'git switch {}', then run this again",
            change.branch_short()
        )),
        // Cleanup merges the run's work onto what is committed: an
        // uncommitted change is all that stands in its way.
        EndingError::CleanupWouldTouch { change, paths } => Some(format!(
            "commit your changes to {}, then clean up again: the run's work is merged onto your commits (a file of yours in the way of a new one: move it aside first); or finish with 'git ralph finish {change} --keep' and merge {} yourself",
            paths.join(", "),
            change.branch_short()
        )),
        EndingError::CleanupClashes { change, .. } => Some(format!(
            "finish with 'git ralph finish {change} --keep': the work stays on {branch}; then merge it ('git merge {branch}', or 'git merge --squash {branch}' to have it uncommitted) and resolve the clash there",
            branch = change.branch_short()
        )),
        EndingError::OwnerGone { .. } => {
            Some("put that worktree back where it was, then run this again".into())
        }
        EndingError::OwnerBusy { source, .. } => source.hint(),
        EndingError::Worktree(err) => err.hint(),
        _ => None,
    }
}

/// What the user can do about a hand-off that stopped short, most
/// useful first.
fn handoff_hints(err: &HandoffError) -> Vec<String> {
    let again = |command: &str| format!("then run '{command}' again");
    match err {
        // Refused before anything was done: the run is as it was.
        HandoffError::NoRemote {
            remote,
            again: command,
            ..
        } => vec![format!(
            "add the remote ('git remote add {remote} <url>') or name another one with --remote, {}",
            again(command)
        )],
        HandoffError::ShallowClone {
            remote,
            again: command,
            ..
        } => vec![format!(
            "fetch the whole history ('git fetch --unshallow {remote}'), {}",
            again(command)
        )],
        HandoffError::NoBranch { change, .. } => vec![format!(
            "see where the run stands with 'git ralph status {change}'"
        )],
        HandoffError::PushRejected {
            remote,
            branch,
            again: command,
            ..
        } => vec![
            format!(
                "the run is kept on {branch}; see what the remote holds with 'git fetch {remote} {branch} && git log {branch}..FETCH_HEAD'"
            ),
            format!(
                "to replace it with this run: 'git push --force-with-lease {remote} {branch}'; or fix what refused it, {}",
                again(command)
            ),
        ],
        HandoffError::PushCredentials {
            remote,
            again: command,
            ..
        } => vec![format!(
            "the run is kept on its branch; give git credentials for '{remote}' without a prompt (a credential helper, an SSH key or agent; in CI a token), {}",
            again(command)
        )],
        HandoffError::PushFailed { again: command, .. } => vec![format!(
            "the run is kept on its branch; {}",
            again(command)
        )],
        HandoffError::Git { source, .. } if source.is_setup() => vec![
            "the push runs the git binary (gitoxide cannot push): install git or put it on PATH, then run this again; the run is kept on its branch".to_owned(),
        ],
        HandoffError::Git { .. } => Vec::new(),
        HandoffError::Review(not_opened) => review_hints(not_opened),
        HandoffError::Op(err) => err.hint().into_iter().collect(),
        HandoffError::Write { .. } | HandoffError::Config(_) => Vec::new(),
        HandoffError::Record(err) => remote_hints(err),
    }
}

/// How to open the pull request after all.
fn review_hints(not_opened: &NotOpened) -> Vec<String> {
    let again = format!("then run '{}' again", not_opened.again);
    let mut hints = Vec::new();
    match &not_opened.why {
        ReviewFailure::Missing { tool } => hints.push(format!("install `{tool}`, {again}")),
        ReviewFailure::NotLoggedIn { tool } => hints.push(format!(
            "log in with '{tool} auth login' (in CI: set {}), {again}",
            if *tool == "gh" {
                "GH_TOKEN"
            } else {
                "GITLAB_TOKEN"
            },
        )),
        ReviewFailure::Failed { .. } => {}
    }
    hints.push(format!("or open it by hand: {}", not_opened.by_hand));
    hints
}

/// What the user can do about a refused take-up or record, in the
/// command layer's words.
pub fn remote_hints(err: &RemoteError) -> Vec<String> {
    match err {
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
        RemoteError::StoryWaits {
            change, missing, ..
        } => vec![format!(
            "run story {} first (each with 'git ralph start {change} --story ID --push'), merge them onto ralph/{change} ('git ralph merge {change} --from <remote> --push'), then run this one",
            missing.join(", ")
        )],
        _ => Vec::new(),
    }
}

impl From<crate::remote::RemoteError> for CommandError {
    fn from(err: crate::remote::RemoteError) -> Self {
        match err {
            RemoteError::State(err) => err.into(),
            RemoteError::Op(err) => err.into(),
            RemoteError::Failure(err) => err.into(),
            RemoteError::Run(err) => (*err).into(),
            err => {
                let hints = remote_hints(&err);
                let mut error = CommandError::from_error(ErrorKind::User, err);
                error.hints = hints;
                error
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start's errors keep the exit status and hints they had when the
    /// loop's error carried them: a refusal is the user's, a failing disk
    /// the machine's, a bad flag a usage error; and the same when the loop
    /// carries one (a worker reading its story's source).
    #[test]
    fn a_start_error_keeps_its_exit_status_and_hint() {
        let missing = CommandError::from(StartError::AgentMissing {
            name: "claude".into(),
            program: "claude".into(),
        });
        assert_eq!(missing.kind, ErrorKind::User);
        assert_eq!(missing.hints, vec![AGENT_MISSING.to_owned()]);
        let disk = || StartError::io("archive the previous run", std::io::Error::other("full"));
        assert_eq!(CommandError::from(disk()).kind, ErrorKind::Internal);
        let carried = CommandError::from(RunError::from(disk()));
        assert_eq!(carried.kind, ErrorKind::Internal);
        let flag = CommandError::from(crate::settings::SettingsError::ZeroTimeout);
        assert_eq!(flag.kind, ErrorKind::Usage);
    }
}
