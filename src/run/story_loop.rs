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
use super::pacing;
use super::pipeline;
use super::questions::{self, Waiting};
use super::settle;
use std::time::Duration;

use super::attempt::{Tried, Turn};
use super::context::Run;
use super::error::RunError;
use super::guardrails;
use super::lifecycle::{self, LoopEnd};
use super::mode::{Attempts, Marks, Pick};
use crate::state::{AttemptOutcome, StopReason, now};
use crate::stories::Story;

/// The machine itself: which story next, when to stop, and how the run
/// ends. Everything an attempt reads and writes is its [`Run`].
pub struct StoryLoop {
    run: Run,
}

impl StoryLoop {
    /// The loop of the run whose context is `run`.
    pub(in crate::run) fn new(run: Run) -> StoryLoop {
        StoryLoop { run }
    }

    /// Drive the run until it ends, and say why.
    pub async fn run(self, resumed: bool) -> LoopEnd {
        lifecycle::live(self, resumed, settle::recover).await
    }

    async fn drive_stories(&mut self) -> Result<(StopReason, String), RunError> {
        loop {
            notifications::report_deliveries(&mut self.run).await;
            if let Some(stop) = hooks::run_due_hooks(&mut self.run).await {
                return Ok(stop);
            }
            if self.run.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
            if let Some(paused) = self.wait_out_pause().await? {
                return Ok(paused);
            }
            questions::take_answers(&mut self.run).await?;
            let stories = self.run.load_stories().await?;
            self.run.sync_stories(&stories);
            let Some(story) = self.next_story(&stories).cloned() else {
                self.run.state.no_story_next();
                match questions::when_none_may_start(&mut self.run).await? {
                    Waiting::Nobody => return lifecycle::no_story_left(&self.run, &stories).await,
                    Waiting::Answered => continue,
                    Waiting::Stop(stop) => return Ok(stop),
                }
            };
            let turn = pipeline::turn(&mut self.run, &story)?;
            if let Some(limit) = self.guardrail(&story, turn.as_ref()) {
                self.run.state.story_taken(&story.id);
                return Ok(limit);
            }
            if pacing::hold(&mut self.run, &story.id)? {
                continue;
            }
            let tried = attempt_steps::attempt(&mut self.run, &story, &stories, turn).await?;
            if self.run.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
            if tried == Tried::Ended(AttemptOutcome::Complete)
                && self.run.settings.policy().marks == Marks::Contract
            {
                return Ok((StopReason::Completed, "the contract is met".into()));
            }
        }
    }

    /// The story to attempt next, as the run's [`Pick`] says.
    fn next_story<'s>(&self, stories: &'s [Story]) -> Option<&'s Story> {
        // A story part-way through its pipeline is finished first: its
        // file may already mark it done.
        if let Some(state) = &self.run.state.pipeline()
            && let Some(story) = stories.iter().find(|story| story.id == state.story)
        {
            return Some(story);
        }
        let parked = super::asked::parked(&self.run.state);
        match &self.run.settings.policy().pick {
            Pick::Only(only) => stories.iter().find(|story| {
                story.id == *only && !story.is_complete() && !parked.contains(&story.id)
            }),
            Pick::EachOnce => stories.iter().find(|story| {
                !story.is_complete()
                    && self
                        .run
                        .state
                        .stories()
                        .iter()
                        .all(|r| r.id != story.id || r.attempts.is_empty())
            }),
            Pick::InOrder if parked.is_empty() => self.run.source.next_story(stories),
            Pick::InOrder => questions::next_beside(&self.run, stories, &parked),
        }
    }

    /// The first guardrail that stops the run before another attempt at
    /// `story`, with its reason.
    /// In a role pipeline each role's bound takes the place of the retries.
    fn guardrail(&mut self, story: &Story, turn: Option<&Turn>) -> Option<(StopReason, String)> {
        if let Some(limit) = turn.and_then(|turn| pipeline::role_bound(story, turn)) {
            return Some(limit);
        }
        let max_retries = match (turn, self.run.settings.policy().attempts) {
            (Some(_), _) => u32::MAX,
            (None, Attempts::One) => 0,
            (None, Attempts::Retried(retries)) => retries,
        };
        let rules = self.run.rules_for(story);
        let record = self.run.story_record(&story.id).into_owned();
        guardrails::hit(
            self.run.settings.guardrails(),
            &self.run.state,
            &record,
            (rules.max_cost, rules.max_tokens),
            max_retries,
            self.run.runtime_ms(),
        )
    }

    /// Sit out a usage-limit pause recorded in state, with the stop request
    /// still live. Returns a stop reason when the run ends meanwhile.
    async fn wait_out_pause(&mut self) -> Result<Option<(StopReason, String)>, RunError> {
        let Some(until) = self.run.state.paused_until() else {
            return Ok(None);
        };
        let now_secs = now();
        let mut waited = 0;
        if until > now_secs {
            let wait = Duration::from_secs(until - now_secs);
            let mut stop = self.run.stop.clone();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|stop| *stop) => {
                    return Ok(Some((StopReason::Stopped, "stopped by the user during a usage-limit pause".into())));
                }
            }
            waited = wait.as_secs();
        }
        self.run.state.pause_over(waited);
        self.run.save()?;
        Ok(None)
    }
}

impl lifecycle::Driven for StoryLoop {
    fn run_mut(&mut self) -> &mut Run {
        &mut self.run
    }

    async fn drive(&mut self) -> Result<(StopReason, String), RunError> {
        self.drive_stories().await
    }
}
