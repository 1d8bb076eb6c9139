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
use std::sync::Arc;
use std::time::Duration;

use super::attempt::Turn;
use super::context::Run;
use super::error::RunError;
use super::guardrails;
use super::lifecycle::{self, LoopEnd};
use crate::agent::AgentSpec;
use crate::contract::Contract;
use crate::events::Record;
use crate::git::ChangeName;
use crate::state::{AttemptOutcome, Guardrails, StopReason, now};
use crate::stories::{SourceKind, Story};

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
    /// The loop of the run whose context is `run`.
    pub(in crate::run) fn new(run: Run) -> StoryLoop {
        StoryLoop { run }
    }

    /// Drive the run until it ends, and say why.
    pub async fn run(mut self, resumed: bool) -> LoopEnd {
        let outcome = super::catching(self.drive(resumed)).await;
        lifecycle::finish(&mut self.run, outcome).await
    }

    async fn drive(&mut self, resumed: bool) -> Result<(StopReason, String), RunError> {
        lifecycle::start(self);
        if resumed {
            settle::recover(self).await?;
        }
        lifecycle::announce(self, resumed).await?;
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
                return lifecycle::no_story_left(self, &stories).await;
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
}
