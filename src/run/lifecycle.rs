//! How a loop begins and ends, the same for a run done story by story and
//! for one whose stories run at once: the run marked running, its stories
//! read and announced; at the end, the run marked stopped with its one
//! reason, saved, then told (the events, the notifications, the end
//! hooks), and a bug in git-ralph turned into a run left as after a clean
//! stop.

use super::context::{AgentVersion, Run};
use super::error::RunError;
use super::mode::Pick;
use super::runtime::blocking;
use super::{hooks, notifications, settle};
use crate::bug::Bug;
use crate::events::Event;
use crate::git::Repo;
use crate::state::{Change, RunState, StopReason};
use crate::stories::openspec_cli::{self, CrossCheck};
use crate::stories::{SourceKind, Story};

/// How the loop ended.
#[derive(Debug)]
pub struct LoopEnd {
    pub reason: StopReason,
    pub message: String,
    pub state: RunState,
    /// The bug in git-ralph that ended the loop, if one did.
    pub bug: Option<Bug>,
    /// The error that ended it, when the command should report it as such
    /// (an agent that could not work at all).
    pub error: Option<RunError>,
    /// git-ralph's own error ended it (an I/O or git failure, a full
    /// disk): the run is left stopped, to be resumed once it is mended.
    pub internal: bool,
}

/// The run is running in this process: asked for its agent's version
/// meanwhile, for the receipts.
pub(super) fn start(run: &mut Run) {
    if run.settings.recorded().agent_command.is_none() {
        let program = run.settings.agent().program.clone();
        run.agent_version = AgentVersion::Asking(tokio::spawn(async move {
            crate::verification::version(&program).await
        }));
    }
    run.state.loop_began(std::process::id());
    // Each checkpoint and revert then writes what changed, not the whole
    // index; `end` hands the index back whole.
    run.repo_lock()
        .write_index_split(crate::git::SPLIT_INDEX_FROM);
}

/// The stories as the file has them now, recorded and announced, with
/// what the reader warned of. Returns them.
pub(super) async fn announce(run: &mut Run, resumed: bool) -> Result<Vec<Story>, RunError> {
    let set = {
        let source = run.source.clone();
        blocking(move || source.load_set()).await?
    };
    let stories = set.stories;
    run.sync_stories(&stories);
    run.commit(Change::telling(Event::RunStarted {
        branch: run.state.branch().clone(),
        source: run.source.kind().to_string(),
        stories_total: stories.len(),
        stories_done: stories.iter().filter(|story| story.is_complete()).count(),
        resumed,
    }))?;
    for warning in set.warnings {
        let message = format!("{}: {warning}", run.tracking_file());
        run.warn(message);
    }
    cross_check(run, &stories).await;
    Ok(stories)
}

/// What tells the loop of one story at a time from the coordinator of
/// stories at once; the rest of a loop's life is [`live`].
pub(super) trait Driven {
    fn run_mut(&mut self) -> &mut Run;
    /// The loop proper, until it has a reason to stop.
    async fn drive(&mut self) -> Result<(StopReason, String), RunError>;
}

/// A loop's life: begun, what a killed loop left taken up on resume (by
/// `recover`), announced, driven until it has a reason to stop; and its
/// end made, whatever ended it, a bug included.
pub(super) async fn live(
    mut driven: impl Driven,
    resumed: bool,
    recover: impl AsyncFnOnce(&mut Run) -> Result<(), RunError>,
) -> LoopEnd {
    let outcome = super::runtime::catching(begin_and_drive(&mut driven, resumed, recover)).await;
    finish(driven.run_mut(), outcome).await
}

async fn begin_and_drive(
    driven: &mut impl Driven,
    resumed: bool,
    recover: impl AsyncFnOnce(&mut Run) -> Result<(), RunError>,
) -> Result<(StopReason, String), RunError> {
    start(driven.run_mut());
    if resumed {
        recover(driven.run_mut()).await?;
    }
    announce(driven.run_mut(), resumed).await?;
    driven.drive().await
}

/// The loop's outcome (a bug that cut it short, an error, or its reason
/// to stop) made the run's end.
pub(super) async fn finish(
    run: &mut Run,
    outcome: Result<Result<(StopReason, String), RunError>, Bug>,
) -> LoopEnd {
    match outcome {
        Err(bug) => after_bug(run, bug).await,
        Ok(Ok((reason, message))) => end(run, reason, message).await,
        Ok(Err(err)) => {
            let message = err.told(run.hints);
            if matches!(err, RunError::AgentSetup { .. }) {
                // Resumable as after a clean stop, once fixed.
                let mut end = end(run, StopReason::Setup, message).await;
                end.error = Some(err);
                return end;
            }
            let internal = !err.is_user_error();
            if internal {
                settle::cut_short_by_error(run, &message);
            }
            let mut end = end(run, StopReason::Error, message).await;
            end.internal = internal;
            end
        }
    }
}

/// A bug in git-ralph cut the loop short: the run is left as after a
/// clean stop, resumable, and the bug goes up to be reported.
async fn after_bug(run: &mut Run, bug: Bug) -> LoopEnd {
    let set_aside = match super::runtime::catching(settle::set_aside_after_bug(run)).await {
        Ok(result) => result.map_err(|err| err.to_string()),
        Err(again) => Err(again.to_string()),
    };
    if let Err(why) = set_aside {
        let message = format!(
            "after the bug, the worktree could not be set aside ({why}); 'git ralph start {}' does it on resume",
            run.settings.change()
        );
        run.warn(message);
    }
    let mut end = end(
        run,
        StopReason::Error,
        format!("git-ralph hit a bug: {bug}"),
    )
    .await;
    end.bug = Some(bug);
    end
}

/// Why the run ends when no story is left to attempt. It is never
/// called done while the file holds a box-like line nobody could read.
pub(super) async fn no_story_left(
    run: &Run,
    stories: &[Story],
) -> Result<(StopReason, String), RunError> {
    let open: Vec<&str> = stories
        .iter()
        .filter(|s| !s.is_complete())
        .map(|s| s.id.as_str())
        .collect();
    if run.settings.policy().pick == Pick::EachOnce && !open.is_empty() {
        return Ok((
            StopReason::MaxRetries,
            format!("single pass over; not done: story {}", open.join(", ")),
        ));
    }
    let set = {
        let source = run.source.clone();
        blocking(move || source.load_set()).await?
    };
    if let Some(line) = set.unreadable.first() {
        return Ok((
            StopReason::Error,
            format!(
                "{} still holds a line that looks like a task but cannot be read (line {}: {}); rewrite it as '- [ ]' or '- [x]'",
                run.tracking_file(),
                line.line,
                line.text
            ),
        ));
    }
    Ok((StopReason::Completed, "every story is done".into()))
}

/// A second opinion on the task counts from the `openspec` CLI, if it
/// is installed; a disagreement is a warning, never an error.
async fn cross_check(run: &mut Run, stories: &[Story]) {
    if run.source.kind() != SourceKind::OpenSpec || !run.settings.sees_every_story() {
        return;
    }
    let Ok(fenced) = run.source.fenced_checkboxes() else {
        return;
    };
    let workdir = run.repo_lock().workdir().to_owned();
    let check = openspec_cli::cross_check(
        &openspec_cli::OpenSpecCommand::from_env(),
        &workdir,
        run.settings.change().as_str(),
        stories,
        fenced,
        run.settings.command_timeout(),
    )
    .await;
    let message = match check {
        CrossCheck::NotInstalled | CrossCheck::Agrees => return,
        CrossCheck::Disagrees {
            cli_total,
            cli_done,
            native_total,
            native_done,
        } => format!(
            "the openspec CLI counts {cli_done}/{cli_total} tasks done, git-ralph counts {native_done}/{native_total}; git-ralph's count is used"
        ),
        CrossCheck::Failed(why) => format!("the openspec CLI cross-check failed: {why}"),
        CrossCheck::TimedOut => format!(
            "the openspec CLI did not answer within --command-timeout ({}s)",
            run.settings.command_timeout().as_secs()
        ),
    };
    run.warn(message);
}

async fn end(run: &mut Run, reason: StopReason, message: String) -> LoopEnd {
    if let Err(err) = run.with_repo(Repo::settle_index).await {
        run.warn(format!(
            "could not write the index whole again ({err}); git reads it as it is"
        ));
    }
    let runtime_ms = run.runtime_ms();
    let change = run.state.loop_ended(reason, &message, runtime_ms);
    run.commit_or_warn(change);
    // The user hears of the end while the end hooks run.
    notifications::notify_end(run, reason, message.clone());
    hooks::run_end_hooks(run).await;
    // No hook is left to run when the run goes on. A state that could not
    // be saved was told of above, before the end.
    let _ = run.save();
    notifications::settle_deliveries(run).await;
    LoopEnd {
        reason,
        message,
        state: run.state.clone(),
        bug: None,
        error: None,
        internal: false,
    }
}
