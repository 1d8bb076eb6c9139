//! The Ralph loop, as one state machine: pick the first incomplete story,
//! give it to a fresh agent, judge the attempt, and decide whether to go
//! on. A story is done only when the agent kept the contract *and* the
//! story is marked done in its file *and* every objective check passes;
//! any other ending is a failed attempt, preserved and reverted, and the
//! story is retried up to a limit. Guardrails bound every run, and every
//! run ends with exactly one [`StopReason`]. A usage limit is not a
//! failure: the loop pauses and tries again.
//!
//! This file holds the machine and the bookkeeping (`state.json`,
//! `events.jsonl`); one attempt, its judgement and its settling into git
//! live beside it. Blocking work runs off the async runtime, so a stop
//! request is seen at once.

use super::attempt_steps;
use super::hooks;
use super::notifications;
use super::pipeline;
use super::settle;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::attempt::Turn;
use super::context::{AgentVersion, Run};
use super::error::RunError;
use super::{blocking, guardrails};
use crate::agent::AgentSpec;
use crate::bug::Bug;
use crate::contract::Contract;
use crate::events::{Event, Record};
use crate::git::{ChangeName, Repo};
use crate::state::{
    AttemptOutcome, EventsLog, Guardrails, RunDir, RunState, RunStatus, StopReason, now,
};
use crate::stories::openspec_cli::{self, CrossCheck};
use crate::stories::{SourceKind, Story, StorySource};

/// Where the loop delivers events besides `events.jsonl`. It is called on
/// the loop's task for every event, agent output included, so it must not
/// block for long; a renderer that cannot keep up may drop agent output
/// (never milestones), since the log on disk has it all.
pub type EventSink = Arc<dyn Fn(Record) + Send + Sync>;

/// What the loop needs beyond the run's state.
#[derive(Clone)]
pub struct LoopSettings {
    pub change: ChangeName,
    pub agent: AgentSpec,
    /// The agents a story goes to, in turn, when the agent's usage limit
    /// outlasts `--max-rate-limit-wait`.
    pub fallback_agents: Vec<AgentSpec>,
    pub max_retries: u32,
    pub agent_timeout: Duration,
    /// How long an agent may print nothing; `None` lets it be silent.
    pub idle_timeout: Option<Duration>,
    pub command_timeout: Duration,
    pub template: String,
    /// The prompt itself in prompt mode.
    pub classic_prompt: Option<String>,
    pub contract: Contract,
    pub guardrails: Guardrails,
    /// One attempt per story, no interception, no retries.
    pub once: bool,
    /// Prompt mode: revert an iteration the contract does not accept,
    /// instead of building on it.
    pub revert_failed: bool,
    /// Refuse a claim that changes nothing besides ticking boxes, unless
    /// the story's contract says otherwise.
    pub require_change: bool,
    /// Keep a learnings file and show it in prompts.
    pub learnings: bool,
    /// Never watch the worktree: every snapshot and revert looks at every
    /// file.
    pub full_scan: bool,
    /// Run the agent under bubblewrap, the git directory read-only to it.
    pub sandbox: bool,
    /// The role pipeline every story goes through; empty for one agent
    /// per story.
    pub roles: Vec<crate::contract::Role>,
    /// The command line's choice of agent per role.
    pub role_agents: std::collections::BTreeMap<crate::contract::Role, crate::contract::RoleAgent>,
    /// Post a comment on the GitHub issue of each finished story.
    pub comment: bool,
    /// Who is told when the run ends.
    pub notifier: crate::notify::Notifier,
    /// The one story this loop works on: a story of a parallel run, in a
    /// worktree of its own. Such a loop tells nobody when it ends; the
    /// run it belongs to does.
    pub story_only: Option<String>,
    /// The parallel run such a loop belongs to: the change its agents are
    /// told of.
    pub story_of: Option<ChangeName>,
}

impl LoopSettings {
    /// The change as agents and prompts name it.
    pub fn change_shown(&self) -> &ChangeName {
        self.story_of.as_ref().unwrap_or(&self.change)
    }

    /// Where the loop keeps its refs (failed attempts, strays): the run's
    /// namespace, and for a story of a parallel run, the story's place in
    /// it, `refs/ralph/<change>/stories/<id>`.
    pub fn refs(&self) -> crate::git::RunRefs {
        match (&self.story_of, &self.story_only) {
            (Some(run), Some(story)) => crate::git::RunRefs::of_story(run, story),
            _ => crate::git::RunRefs::of(&self.change),
        }
    }

    /// The branches the run moves itself, which an attempt's agent is not
    /// blamed for: the loop's own, and in a parallel run the run's branch
    /// and every story's.
    pub fn run_branches(&self) -> Vec<String> {
        let mut branches = vec![self.change.branch_ref()];
        if let Some(run) = &self.story_of {
            branches.push(run.branch_ref());
            branches.push(format!("{}.story-*", run.branch_ref()));
        }
        branches
    }
}

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
}

/// The machine itself: which story next, when to stop, and how the run
/// ends. Everything an attempt reads and writes is its [`Run`].
pub struct StoryLoop {
    run: Run,
}

impl std::ops::Deref for StoryLoop {
    type Target = Run;

    fn deref(&self) -> &Run {
        &self.run
    }
}

impl std::ops::DerefMut for StoryLoop {
    fn deref_mut(&mut self) -> &mut Run {
        &mut self.run
    }
}

impl StoryLoop {
    pub fn new(
        repo: Repo,
        source: Box<dyn StorySource>,
        run_dir: RunDir,
        state: RunState,
        settings: LoopSettings,
        sink: EventSink,
        stop: watch::Receiver<bool>,
    ) -> std::io::Result<StoryLoop> {
        let log = EventsLog::open(&run_dir.events_path())?;
        Ok(StoryLoop {
            run: Run {
                repo: Arc::new(Mutex::new(repo.with_scratch(&settings.agent.scratch))),
                source: Arc::from(source),
                run_dir,
                state,
                settings,
                log,
                sink,
                stop,
                session_started: Instant::now(),
                agent_version: AgentVersion::Known(None),
                hook_queue: Default::default(),
                deliveries: Default::default(),
            },
        })
    }

    /// Drive the run until it ends, and say why.
    pub async fn run(mut self, resumed: bool) -> LoopEnd {
        match super::catching(self.drive(resumed)).await {
            Err(bug) => self.after_bug(bug).await,
            Ok(Ok((reason, message))) => self.end(reason, message).await,
            Ok(Err(err)) => {
                let message = match err.hint() {
                    Some(hint) => format!("{err}; {hint}"),
                    None => err.to_string(),
                };
                if matches!(err, RunError::AgentSetup { .. }) {
                    // Resumable as after a clean stop, once fixed.
                    let mut end = self.end(StopReason::Setup, message).await;
                    end.error = Some(err);
                    return end;
                }
                self.end(StopReason::Error, message).await
            }
        }
    }

    /// A bug in git-ralph cut the loop short: the run is left as after a
    /// clean stop, resumable, and the bug goes up to be reported.
    async fn after_bug(mut self, bug: Bug) -> LoopEnd {
        let set_aside = match super::catching(settle::set_aside_after_bug(&mut self)).await {
            Ok(result) => result.map_err(|err| err.to_string()),
            Err(again) => Err(again.to_string()),
        };
        if let Err(why) = set_aside {
            let message = format!(
                "after the bug, the worktree could not be set aside ({why}); 'git ralph start {}' does it on resume",
                self.settings.change
            );
            self.warn(message);
        }
        let mut end = self
            .end(StopReason::Error, format!("git-ralph hit a bug: {bug}"))
            .await;
        end.bug = Some(bug);
        end
    }

    async fn drive(&mut self, resumed: bool) -> Result<(StopReason, String), RunError> {
        if self.state.settings.agent_command.is_none() {
            let program = self.settings.agent.program.clone();
            self.agent_version = AgentVersion::Asking(tokio::spawn(async move {
                crate::verification::version(&program).await
            }));
        }
        self.state.status = RunStatus::Running;
        self.state.reason = None;
        self.state.pid = Some(std::process::id());
        if resumed && self.is_parallel() {
            self.recover_parallel().await?;
        } else if resumed {
            settle::recover(self).await?;
        }
        let set = {
            let source = self.source.clone();
            blocking(move || source.load_set()).await?
        };
        let stories = set.stories;
        self.sync_stories(&stories);
        self.save()?;
        let event = Event::RunStarted {
            branch: self.state.branch.clone(),
            source: self.source.kind().to_string(),
            stories_total: stories.len(),
            stories_done: stories.iter().filter(|story| story.is_complete()).count(),
            resumed,
        };
        self.emit(event);
        for warning in set.warnings {
            let message = format!("{}: {warning}", self.tracking_file());
            self.warn(message);
        }
        self.cross_check(&stories).await;
        if self.is_parallel() {
            return self.drive_parallel().await;
        }

        loop {
            notifications::report_deliveries(self).await;
            if let Some(stop) = hooks::run_due_hooks(self).await {
                return Ok(stop);
            }
            if self.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
            if let Some(paused) = self.wait_out_pause().await? {
                return Ok(paused);
            }
            let stories = self.load_stories().await?;
            self.sync_stories(&stories);
            let Some(story) = self.next_story(&stories).cloned() else {
                self.state.current_story = None;
                return self.no_story_left(&stories).await;
            };
            let turn = pipeline::turn(self, &story)?;
            if let Some(limit) = self.guardrail(&story, turn.as_ref()) {
                self.state.current_story = Some(story.id.clone());
                return Ok(limit);
            }
            let attempts_before = self.story_record(&story.id).attempts.len();
            attempt_steps::attempt(self, &story, &stories, turn).await?;
            if self.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
            let attempted = self.story_record(&story.id).attempts.len() > attempts_before;
            if attempted
                && self.source.kind() == SourceKind::Prompt
                && self.last_outcome(&story.id) == Some(AttemptOutcome::Complete)
            {
                return Ok((StopReason::Completed, "the contract is met".into()));
            }
        }
    }

    /// The story to attempt next. A single pass visits each story once,
    /// done or not.
    fn next_story<'s>(&self, stories: &'s [Story]) -> Option<&'s Story> {
        // A story part-way through its pipeline is finished first: its
        // file may already mark it done.
        if let Some(state) = &self.state.pipeline
            && let Some(story) = stories.iter().find(|story| story.id == state.story)
        {
            return Some(story);
        }
        if let Some(only) = &self.settings.story_only {
            return stories
                .iter()
                .find(|story| story.id == *only && !story.is_complete());
        }
        if self.settings.once {
            stories.iter().find(|story| {
                !story.is_complete()
                    && self
                        .state
                        .stories
                        .iter()
                        .all(|r| r.id != story.id || r.attempts.is_empty())
            })
        } else {
            self.source.next_story(stories)
        }
    }

    /// Why the run ends when no story is left to attempt. It is never
    /// called done while the file holds a box-like line nobody could read.
    pub(super) async fn no_story_left(
        &self,
        stories: &[Story],
    ) -> Result<(StopReason, String), RunError> {
        let open: Vec<&str> = stories
            .iter()
            .filter(|s| !s.is_complete())
            .map(|s| s.id.as_str())
            .collect();
        if self.settings.once && !open.is_empty() {
            return Ok((
                StopReason::MaxRetries,
                format!("single pass over; not done: story {}", open.join(", ")),
            ));
        }
        let set = {
            let source = self.source.clone();
            blocking(move || source.load_set()).await?
        };
        if let Some(line) = set.unreadable.first() {
            return Ok((
                StopReason::Error,
                format!(
                    "{} still holds a line that looks like a task but cannot be read (line {}: {}); rewrite it as '- [ ]' or '- [x]'",
                    self.tracking_file(),
                    line.line,
                    line.text
                ),
            ));
        }
        Ok((StopReason::Completed, "every story is done".into()))
    }

    /// The first guardrail that stops the run before another attempt at
    /// `story`, with its reason.
    /// In a role pipeline each role's bound takes the place of the retries.
    fn guardrail(&mut self, story: &Story, turn: Option<&Turn>) -> Option<(StopReason, String)> {
        if let Some(limit) = turn.and_then(|turn| pipeline::role_bound(story, turn)) {
            return Some(limit);
        }
        let max_retries = match turn {
            Some(_) => u32::MAX,
            None if self.settings.once => 0,
            None => self.settings.max_retries,
        };
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let record = self.story_record(&story.id).clone();
        guardrails::hit(
            &self.settings.guardrails,
            &self.state,
            &record,
            (rules.max_cost, rules.max_tokens),
            max_retries,
            self.runtime_ms(),
        )
    }

    fn last_outcome(&self, story: &str) -> Option<AttemptOutcome> {
        self.state
            .stories
            .iter()
            .find(|s| s.id == story)
            .and_then(|s| s.attempts.last())
            .map(|a| a.outcome)
    }

    /// Sit out a usage-limit pause recorded in state, with the stop request
    /// still live. Returns a stop reason when the run ends meanwhile.
    async fn wait_out_pause(&mut self) -> Result<Option<(StopReason, String)>, RunError> {
        let Some(until) = self.state.paused_until else {
            return Ok(None);
        };
        let now_secs = now();
        if until > now_secs {
            let wait = Duration::from_secs(until - now_secs);
            let mut stop = self.stop.clone();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|stop| *stop) => {
                    return Ok(Some((StopReason::Stopped, "stopped by the user during a usage-limit pause".into())));
                }
            }
            self.state.rate_limit_wait_secs += wait.as_secs();
        }
        self.state.paused_until = None;
        self.state.pause_reason = None;
        self.save()?;
        Ok(None)
    }

    /// A second opinion on the task counts from the `openspec` CLI, if it
    /// is installed; a disagreement is a warning, never an error.
    async fn cross_check(&mut self, stories: &[Story]) {
        if self.source.kind() != SourceKind::OpenSpec || self.settings.story_only.is_some() {
            return;
        }
        let Ok(fenced) = self.source.fenced_checkboxes() else {
            return;
        };
        let workdir = self.repo_lock().workdir().to_owned();
        let check = openspec_cli::cross_check(
            &openspec_cli::OpenSpecCommand::from_env(),
            &workdir,
            self.settings.change.as_str(),
            stories,
            fenced,
            self.settings.command_timeout,
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
                self.settings.command_timeout.as_secs()
            ),
        };
        self.warn(message);
    }

    async fn end(mut self, reason: StopReason, message: String) -> LoopEnd {
        let story_id = self.state.current_story.clone();
        self.state.runtime_ms = self.runtime_ms();
        self.state.status = RunStatus::Stopped;
        self.state.reason = Some(reason);
        self.state.pid = None;
        if reason != StopReason::Completed && reason != StopReason::Stopped {
            self.state
                .last_failure
                .get_or_insert_with(|| message.clone());
        }
        if let Err(err) = self.save() {
            self.warn(format!("could not save the run state: {err}"));
        }
        let totals = self.state.totals.clone();
        let event = match reason {
            StopReason::Completed => Event::Complete {
                reason,
                stories_total: self.state.stories.len(),
                totals,
            },
            _ => Event::Error {
                reason,
                message: message.clone(),
                story_id,
                totals,
            },
        };
        self.emit(event);
        // The user hears of the end while the end hooks run.
        notifications::notify_end(&mut self, reason, message.clone());
        hooks::run_end_hooks(&mut self).await;
        notifications::settle_deliveries(&mut self).await;
        LoopEnd {
            reason,
            message,
            state: self.run.state,
            bug: None,
            error: None,
        }
    }
}
