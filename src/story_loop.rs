//! The Ralph loop, as one state machine: pick the first incomplete story,
//! spawn a fresh agent with a story-specific prompt, and judge the attempt.
//! A story is done only when the agent kept the contract — by default it
//! promised COMPLETE — *and* the story is marked done in its file *and*
//! every objective check passes; then it is checkpointed. Any other ending is
//! a failed attempt: its work is preserved under a ref, the worktree goes
//! back to the last checkpoint, and the story is retried, up to a limit.
//! Guardrails (iterations, no progress, runtime, budget) bound every run, and
//! every run ends with exactly one [`StopReason`]. A usage limit is not a
//! failure: the loop pauses and tries again.
//!
//! The loop knows neither clap nor the terminal: it reports typed events to a
//! channel and to `events.jsonl`, and keeps `state.json` current. Blocking
//! work (gix, file parsing) runs off the async runtime, so a stop request is
//! seen at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::agent::{self, AgentEvent, AgentRun, Conclusion, ExitStatusKind};
use crate::contract::{self, Contract, Method, Verdict, VerifyContext};
use crate::events::{Event, Record, now_ms};
use crate::git::{ChangeName, Repo, ref_component};
use crate::presets::AgentSpec;
use crate::prompt::{self, PromptInput, RetryContext};
use crate::state::Guardrails;
use crate::state::{
    AttemptOutcome, AttemptRecord, EventsLog, RunDir, RunState, RunStatus, StopReason, StoryRecord,
    now,
};
use crate::stories::openspec_cli::{self, CrossCheck};
use crate::stories::{SourceKind, Story, StorySource};

/// Where the loop delivers events besides `events.jsonl`. It is called on
/// the loop's task for every event, agent output included, so it must not
/// block for long; a renderer that cannot keep up may drop agent output
/// (never milestones), since the log on disk has it all.
pub type EventSink = Arc<dyn Fn(Record) + Send + Sync>;

/// What the loop needs beyond the run's state.
pub struct LoopSettings {
    pub change: ChangeName,
    pub agent: AgentSpec,
    pub max_retries: u32,
    pub agent_timeout: Duration,
    pub command_timeout: Duration,
    pub template: String,
    /// The prompt itself in prompt mode.
    pub classic_prompt: Option<String>,
    pub contract: Contract,
    pub guardrails: Guardrails,
    /// One attempt per story, no interception, no retries.
    pub once: bool,
}

/// Longest single wait for a usage limit when the agent names no reset time.
const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// The first wait; it doubles with each pause in a row.
const FIRST_BACKOFF: Duration = Duration::from_secs(60);

/// How the loop ended.
#[derive(Debug)]
pub struct LoopEnd {
    pub reason: StopReason,
    pub message: String,
    pub state: RunState,
}

pub struct StoryLoop {
    repo: Arc<Mutex<Repo>>,
    source: Arc<dyn StorySource>,
    run_dir: RunDir,
    state: RunState,
    settings: LoopSettings,
    log: EventsLog,
    sink: EventSink,
    stop: watch::Receiver<bool>,
    session_started: Instant,
}

/// Why an attempt did not complete. The next prompt is built from the
/// recorded attempt (see [`StoryLoop::retry_context`]).
struct Failure {
    outcome: AttemptOutcome,
    reason: String,
    /// Failed checks as (name, output tail), for the next prompt.
    checks: Vec<(String, String)>,
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
            repo: Arc::new(Mutex::new(repo)),
            source: Arc::from(source),
            run_dir,
            state,
            settings,
            log,
            sink,
            stop,
            session_started: Instant::now(),
        })
    }

    /// Drive the run until it ends, and say why.
    pub async fn run(mut self, resumed: bool) -> LoopEnd {
        match self.drive(resumed).await {
            Ok((reason, message)) => self.end(reason, message),
            Err(message) => self.end(StopReason::Error, message),
        }
    }

    async fn drive(&mut self, resumed: bool) -> Result<(StopReason, String), String> {
        self.state.status = RunStatus::Running;
        self.state.reason = None;
        self.state.pid = Some(std::process::id());
        if resumed {
            self.recover().await?;
        }
        let stories = self.load_stories().await.map_err(|err| err.to_string())?;
        self.sync_stories(&stories);
        self.save()?;
        self.emit(Event::RunStarted {
            branch: self.state.branch.clone(),
            source: self.source.kind().to_string(),
            stories_total: stories.len(),
            stories_done: stories.iter().filter(|story| story.is_complete()).count(),
            resumed,
        });
        self.cross_check(&stories).await;

        loop {
            if self.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
            if let Some(paused) = self.wait_out_pause().await? {
                return Ok(paused);
            }
            let stories = self.load_stories().await.map_err(|err| err.to_string())?;
            self.sync_stories(&stories);
            let next = if self.settings.once {
                // A single pass visits each story once, done or not.
                stories.iter().find(|story| {
                    !story.is_complete()
                        && self
                            .state
                            .stories
                            .iter()
                            .all(|r| r.id != story.id || r.attempts.is_empty())
                })
            } else {
                self.source.next_story(&stories)
            };
            let Some(story) = next.cloned() else {
                self.state.current_story = None;
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
                return Ok((StopReason::Completed, "every story is done".into()));
            };
            if let Some(limit) = self.guardrail(&story) {
                self.state.current_story = Some(story.id.clone());
                return Ok(limit);
            }
            self.attempt(&story, &stories).await?;
            if self.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
            if self.state.current_story.as_deref() == Some(story.id.as_str())
                && self.source.kind() == SourceKind::Prompt
                && self.last_outcome(&story.id) == Some(AttemptOutcome::Complete)
            {
                return Ok((StopReason::Completed, "the contract is met".into()));
            }
        }
    }

    /// The first guardrail that stops the run before another attempt at
    /// `story`, with its reason.
    fn guardrail(&mut self, story: &Story) -> Option<(StopReason, String)> {
        let max_retries = if self.settings.once {
            0
        } else {
            self.settings.max_retries
        };
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let record = self.story_record(&story.id).clone();
        guardrail_hit(
            &self.settings.guardrails,
            &self.state,
            &record,
            (rules.max_cost, rules.max_tokens),
            max_retries,
            self.runtime_ms(),
        )
    }

    /// Time spent in loops, this one included.
    fn runtime_ms(&self) -> u64 {
        self.state.runtime_ms + self.session_started.elapsed().as_millis() as u64
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
    async fn wait_out_pause(&mut self) -> Result<Option<(StopReason, String)>, String> {
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

    /// One attempt at `story`, judged and recorded.
    async fn attempt(&mut self, story: &Story, stories: &[Story]) -> Result<(), String> {
        self.guard_head("before starting the agent").await?;
        let attempt = self.story_record(&story.id).attempts.len() as u32 + 1;
        let index = stories.iter().position(|s| s.id == story.id).unwrap_or(0) + 1;
        let retry = self.retry_context(&story.id);
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let token = rules.promise.clone();
        let prompt = match &self.settings.classic_prompt {
            Some(text) => prompt::render_classic(text, retry.as_ref(), token.as_deref()),
            None => {
                let context_files = {
                    let source = self.source.clone();
                    blocking(move || source.context_files())
                        .await
                        .map_err(|err| err.to_string())?
                };
                prompt::render(
                    &self.settings.template,
                    &PromptInput {
                        change: self.settings.change.as_str(),
                        story,
                        story_index: index,
                        story_total: stories.len(),
                        attempt,
                        source: self.source.as_ref(),
                        context_files: &context_files,
                        retry,
                        promise_token: token.as_deref().unwrap_or(agent::DEFAULT_TOKEN),
                    },
                )
                .map_err(|err| err.to_string())?
            }
        };
        let story_key = safe_component(&story.id);
        let prompt_path = self.run_dir.attempt_prompt(&story_key, attempt);
        let log_path = self.run_dir.attempt_log(&story_key, attempt);
        write_file(&prompt_path, prompt.as_bytes())?;

        self.state.current_story = Some(story.id.clone());
        self.state.current_attempt = attempt;
        let started_at = now();
        let log_name = log_path
            .strip_prefix(&self.run_dir.dir)
            .unwrap_or(&log_path)
            .to_string_lossy()
            .into_owned();
        self.story_record(&story.id).attempts.push(AttemptRecord {
            attempt,
            outcome: AttemptOutcome::Running,
            reason: None,
            preserved: None,
            checkpoint: None,
            started_at,
            duration_ms: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            log: log_name,
            failed_checks: Vec::new(),
            progress: true,
        });
        self.state.totals.attempts += 1;
        self.save()?;
        self.emit(Event::StoryProgress {
            story_id: story.id.clone(),
            title: story.title.clone(),
            index,
            total: stories.len(),
            attempt,
            max_attempts: if self.settings.once {
                1
            } else {
                self.settings.max_retries + 1
            },
        });

        let workdir = self.repo_lock().workdir().to_owned();
        let env = vec![
            ("RALPH_CHANGE".to_owned(), self.settings.change.to_string()),
            ("RALPH_STORY".to_owned(), story.id.clone()),
            ("RALPH_ATTEMPT".to_owned(), attempt.to_string()),
            (
                "RALPH_PROMPT_FILE".to_owned(),
                prompt_path.to_string_lossy().into_owned(),
            ),
        ];
        let mut invocation = self.settings.agent.invocation(
            &prompt,
            &prompt_path,
            &workdir,
            env,
            token.as_deref().unwrap_or(agent::DEFAULT_TOKEN),
        );
        invocation.pid_file = Some(self.run_dir.agent_pid_file());
        // The attempt may not outlive the run's runtime budget.
        let mut timeout = self.settings.agent_timeout;
        if let Some(max) = self.settings.guardrails.max_runtime_secs {
            let left = Duration::from_millis((max * 1000).saturating_sub(self.runtime_ms()));
            timeout = timeout.min(left.max(Duration::from_secs(1)));
        }
        let clock = Instant::now();
        let run = {
            let change = self.settings.change.to_string();
            let story_id = story.id.clone();
            let sink = self.sink.clone();
            let log = &mut self.log;
            let mut on_event = |event: AgentEvent| {
                let record = Record {
                    ts_ms: now_ms(),
                    change: change.clone(),
                    event: Event::StoryEvent {
                        story_id: story_id.clone(),
                        attempt,
                        event,
                    },
                };
                let _ = log.append(&record);
                sink(record);
            };
            agent::run(
                &invocation,
                &log_path,
                timeout,
                self.stop.clone(),
                &mut on_event,
            )
            .await
        };
        let run = match run {
            Ok(run) => run,
            Err(err) => {
                // The agent could not even be started: no attempt happened.
                self.story_record(&story.id).attempts.pop();
                self.state.totals.attempts -= 1;
                return Err(err.to_string());
            }
        };
        let duration_ms = clock.elapsed().as_millis() as u64;
        self.account(&story.id, &run, duration_ms);
        if let Some(limit) = run.done.as_ref().and_then(|done| done.rate_limit.clone()) {
            return self.pause_for_limit(story, attempt, limit).await;
        }
        self.judge(story, attempt, &story_key, run, timeout).await
    }

    /// A usage limit: record it, spend no retry, revert nothing, and pause.
    async fn pause_for_limit(
        &mut self,
        story: &Story,
        attempt: u32,
        limit: agent::RateLimit,
    ) -> Result<(), String> {
        let now_secs = now();
        let backoff = FIRST_BACKOFF
            .saturating_mul(2u32.saturating_pow(self.state.rate_limit_pauses.min(10)))
            .min(MAX_BACKOFF);
        let until = match limit.reset_at_unix {
            Some(reset) if reset > now_secs => reset + 5,
            _ => now_secs + backoff.as_secs(),
        };
        let cap = self.settings.guardrails.max_rate_limit_wait_secs;
        let reason = format!("usage limit: {}", limit.message.trim());
        self.finish_attempt(
            &story.id,
            attempt,
            AttemptOutcome::RateLimited,
            Some(reason.clone()),
            None,
            None,
        );
        self.state.rate_limit_pauses += 1;
        if self.state.rate_limit_wait_secs + (until - now_secs) > cap {
            self.save()?;
            return Err(format!(
                "{reason}; waiting until it resets would exceed --max-rate-limit-wait ({cap}s)"
            ));
        }
        self.state.paused_until = Some(until);
        self.state.pause_reason = Some(reason.clone());
        self.save()?;
        self.emit(Event::Paused {
            story_id: story.id.clone(),
            until_unix: until,
            message: reason,
        });
        Ok(())
    }

    /// Decide what the attempt amounted to, then checkpoint or preserve and
    /// revert.
    async fn judge(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: AgentRun,
        timeout: Duration,
    ) -> Result<(), String> {
        // Work the agent committed or moved elsewhere comes back first.
        if let Some(moved) = self.guard_head("after the attempt").await? {
            self.warn(format!(
                "during the attempt {moved}; its work was brought back onto {}",
                self.state.branch
            ));
        }
        let checkpoint = self.state.checkpoint;
        let (checkpoint_tree, worktree_tree) = self
            .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
            .await
            .map_err(|err| format!("could not read the worktree after the attempt: {err}"))?;
        let progress = checkpoint_tree != worktree_tree;
        let failure = if self.settings.once {
            self.single_pass_verdict(story, &run).await
        } else {
            self.verdict(
                story,
                attempt,
                story_key,
                &run,
                timeout,
                checkpoint_tree,
                worktree_tree,
            )
            .await?
        };
        if let Some(record) = self
            .story_record(&story.id)
            .attempts
            .iter_mut()
            .find(|a| a.attempt == attempt)
        {
            record.progress = progress;
        }
        let interrupted = matches!(&failure, Some(f) if f.outcome == AttemptOutcome::Interrupted);
        self.state.no_progress_streak = next_streak(
            self.state.no_progress_streak,
            progress,
            failure.is_none(),
            interrupted,
        );

        match failure {
            None => self.accept(story, attempt, "").await,
            Some(failure) if self.settings.once => {
                // No interception: keep whatever the single pass produced.
                let reason = failure.reason.clone();
                self.accept(story, attempt, " (single pass)").await?;
                self.finish_attempt(
                    &story.id,
                    attempt,
                    failure.outcome,
                    Some(reason),
                    None,
                    Some(self.state.checkpoint.to_string()),
                );
                self.save()
            }
            Some(failure) => self.reject(story, attempt, story_key, failure).await,
        }
    }

    /// The contract's verdict on a finished attempt: `None` when accepted.
    #[allow(clippy::too_many_arguments)]
    async fn verdict(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: &AgentRun,
        timeout: Duration,
        checkpoint_tree: gix::ObjectId,
        worktree_tree: gix::ObjectId,
    ) -> Result<Option<Failure>, String> {
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let early = match (&run.exit, &run.conclusion) {
            (ExitStatusKind::Stopped, _) => Some((
                AttemptOutcome::Interrupted,
                "stopped by the user".to_owned(),
            )),
            (ExitStatusKind::TimedOut, _) => Some((
                AttemptOutcome::TimedOut,
                format!(
                    "the agent ran past its time limit ({}s) and was stopped",
                    timeout.as_secs()
                ),
            )),
            (_, Conclusion::Failed { reason }) => Some((AttemptOutcome::Failed, reason.clone())),
            (_, Conclusion::AgentError { message }) => Some((
                AttemptOutcome::AgentError,
                format!("the agent failed: {message}"),
            )),
            (_, Conclusion::NoSignal) if rules.promise.is_some() && rules.verify.is_none() => {
                Some((
                    AttemptOutcome::NoSignal,
                    "the agent ended without a promise".to_owned(),
                ))
            }
            _ => None,
        };
        if let Some((outcome, reason)) = early {
            return Ok(Some(Failure {
                outcome,
                reason,
                checks: Vec::new(),
            }));
        }
        let rejected = |reason: String| {
            Ok(Some(Failure {
                outcome: AttemptOutcome::Rejected,
                reason,
                checks: Vec::new(),
            }))
        };

        // The story must be marked done in its own file.
        if self.source.kind() != SourceKind::Prompt {
            match self.load_stories().await {
                Err(err) => {
                    return rejected(format!(
                        "{} could not be read after the attempt: {err}",
                        self.tracking_file()
                    ));
                }
                Ok(stories) if !stories.iter().any(|s| s.id == story.id && s.is_complete()) => {
                    return rejected(format!(
                        "story {} is not marked done in {}",
                        story.id,
                        self.tracking_file()
                    ));
                }
                Ok(_) => {}
            }
        }

        // The contract itself, and the paths it protects, are off limits.
        let changed = {
            let (old, new) = (checkpoint_tree, worktree_tree);
            self.with_repo(move |repo| repo.changed_files(old, new))
                .await
                .map_err(|err| format!("could not list the attempt's changes: {err}"))?
        };
        let paths: Vec<String> = changed.into_iter().map(|file| file.path).collect();
        if let Some(violation) = self.settings.contract.violation(&rules, &paths) {
            return rejected(violation);
        }

        // The verification method, then every objective check.
        let workdir = self.repo_lock().workdir().to_owned();
        let method = rules
            .verify
            .clone()
            .unwrap_or(Method::StringMatch { token: None });
        let diff = if uses_diff(&method) {
            let (old, new) = (checkpoint_tree, worktree_tree);
            self.with_repo(move |repo| contract::describe_changes(repo, old, new))
                .await
        } else {
            String::new()
        };
        let final_text = run
            .done
            .as_ref()
            .map(|d| d.final_text.clone())
            .unwrap_or_default();
        let ctx = VerifyContext {
            workdir: &workdir,
            token: rules.promise.as_deref(),
            final_text: &final_text,
            promised: run.conclusion == Conclusion::Complete,
            story,
            criteria: &rules.acceptance_criteria,
            outcome: rules.outcome.as_deref(),
            diff: &diff,
            command_timeout: self.settings.command_timeout,
            verifier_log: self
                .run_dir
                .dir
                .join("attempts")
                .join(format!("{story_key}-{attempt}.verify.jsonl")),
            stop: self.stop.clone(),
        };
        let verdict = contract::verify(&method, &ctx).await;
        let (Verdict::Pass { warnings } | Verdict::Fail { warnings, .. }) = &verdict;
        for warning in warnings.clone() {
            self.warn(warning);
        }
        if let Verdict::Fail {
            stage,
            reason,
            output_tail,
            ..
        } = verdict
        {
            return Ok(Some(Failure {
                outcome: AttemptOutcome::Rejected,
                reason: format!("verification failed at {stage}: {reason}"),
                checks: output_tail
                    .map(|tail| vec![(stage, tail)])
                    .unwrap_or_default(),
            }));
        }
        let outcomes =
            contract::run_checks(&rules.checks, &workdir, self.settings.command_timeout).await;
        if !outcomes.is_empty() {
            self.emit(Event::Checks {
                story_id: story.id.clone(),
                attempt,
                passed: outcomes
                    .iter()
                    .filter(|o| o.passed)
                    .map(|o| o.name.clone())
                    .collect(),
                failed: outcomes
                    .iter()
                    .filter(|o| !o.passed)
                    .map(|o| o.name.clone())
                    .collect(),
            });
        }
        let failed: Vec<_> = outcomes.into_iter().filter(|o| !o.passed).collect();
        if !failed.is_empty() {
            let names: Vec<String> = failed
                .iter()
                .map(|o| format!("{} ({})", o.name, o.why.clone().unwrap_or_default()))
                .collect();
            return Ok(Some(Failure {
                outcome: AttemptOutcome::Rejected,
                reason: format!("checks failed: {}", names.join(", ")),
                checks: failed
                    .into_iter()
                    .map(|o| (o.name, o.output_tail))
                    .collect(),
            }));
        }
        Ok(None)
    }

    /// `--once`: the plain flow. Only a stop is special; nothing else is
    /// intercepted.
    async fn single_pass_verdict(&mut self, story: &Story, run: &AgentRun) -> Option<Failure> {
        let (outcome, reason) = match (&run.exit, &run.conclusion) {
            (ExitStatusKind::Stopped, _) => (
                AttemptOutcome::Interrupted,
                "stopped by the user".to_owned(),
            ),
            (ExitStatusKind::TimedOut, _) => (
                AttemptOutcome::TimedOut,
                "the agent ran out of time".to_owned(),
            ),
            (_, Conclusion::Failed { reason }) => (AttemptOutcome::Failed, reason.clone()),
            (_, Conclusion::AgentError { message }) => {
                (AttemptOutcome::AgentError, message.clone())
            }
            (_, Conclusion::NoSignal) => (
                AttemptOutcome::NoSignal,
                "the agent ended without a promise".to_owned(),
            ),
            (_, Conclusion::Complete) => {
                let done = self.load_stories().await.is_ok_and(|stories| {
                    stories.iter().any(|s| s.id == story.id && s.is_complete())
                });
                if done {
                    return None;
                }
                (
                    AttemptOutcome::Failed,
                    format!("story {} is not marked done", story.id),
                )
            }
        };
        Some(Failure {
            outcome,
            reason,
            checks: Vec::new(),
        })
    }

    /// Checkpoint the story.
    async fn accept(&mut self, story: &Story, attempt: u32, suffix: &str) -> Result<(), String> {
        let message = format!(
            "ralph({}): story {} {}{suffix}",
            self.settings.change, story.id, story.title
        );
        let checkpoint = self
            .with_repo(move |repo| repo.checkpoint(&message))
            .await
            .map_err(|err| format!("could not checkpoint story {}: {err}", story.id))?;
        self.state.checkpoint = checkpoint.commit;
        let commit = checkpoint.commit.to_string();
        self.finish_attempt(
            &story.id,
            attempt,
            AttemptOutcome::Complete,
            None,
            None,
            Some(commit.clone()),
        );
        self.state.last_failure = None;
        self.save()?;
        self.emit(Event::AttemptFinished {
            story_id: story.id.clone(),
            attempt,
            outcome: AttemptOutcome::Complete,
            reason: None,
            preserved: None,
            checkpoint: Some(commit),
        });
        Ok(())
    }

    /// Preserve the attempt under its ref and go back to the checkpoint.
    async fn reject(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        failure: Failure,
    ) -> Result<(), String> {
        let preserved = format!(
            "{}/attempts/{story_key}/{attempt}",
            self.settings.change.ref_namespace()
        );
        let message = format!(
            "ralph({}): attempt {attempt} at story {} ({})\n\n{}",
            self.settings.change, story.id, story.title, failure.reason
        );
        let refname = preserved.clone();
        self.with_repo(move |repo| -> Result<(), String> {
            repo.preserve(&refname, &message)
                .map_err(|err| format!("could not preserve the attempt: {err}"))?;
            repo.revert()
                .map_err(|err| format!("could not revert to the last checkpoint: {err}"))?;
            Ok(())
        })
        .await?;
        self.finish_attempt(
            &story.id,
            attempt,
            failure.outcome,
            Some(failure.reason.clone()),
            Some(preserved.clone()),
            None,
        );
        if let Some(record) = self
            .story_record(&story.id)
            .attempts
            .iter_mut()
            .find(|a| a.attempt == attempt)
        {
            record.failed_checks = failure.checks;
        }
        self.state.last_failure = Some(failure.reason.clone());
        self.save()?;
        self.emit(Event::AttemptFinished {
            story_id: story.id.clone(),
            attempt,
            outcome: failure.outcome,
            reason: Some(failure.reason),
            preserved: Some(preserved),
            checkpoint: None,
        });
        Ok(())
    }

    /// After a killed loop: the attempt that was running is preserved as
    /// interrupted and the worktree goes back to the last checkpoint.
    async fn recover(&mut self) -> Result<(), String> {
        // An agent whose loop was killed may still be writing: end it first.
        let pid_file = self.run_dir.agent_pid_file();
        if blocking(move || agent::end_orphaned_agent(&pid_file)).await {
            self.warn("stopped the agent the previous loop left running".into());
        }
        self.guard_head("on resume").await?;
        let running = self.state.stories.iter().find_map(|story| {
            story
                .attempts
                .iter()
                .find(|a| a.outcome == AttemptOutcome::Running)
                .map(|a| (story.id.clone(), a.attempt))
        });
        let checkpoint_tree = {
            let checkpoint = self.state.checkpoint;
            self.with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
                .await
                .map_err(|err| err.to_string())?
        };
        let dirty = checkpoint_tree.0 != checkpoint_tree.1;
        let refname = match &running {
            Some((story, attempt)) => format!(
                "{}/attempts/{}/{attempt}",
                self.settings.change.ref_namespace(),
                safe_component(story)
            ),
            None => format!(
                "{}/interrupted/{}",
                self.settings.change.ref_namespace(),
                now()
            ),
        };
        if dirty {
            let message = format!(
                "ralph({}): work left by an interrupted loop",
                self.settings.change
            );
            let target = refname.clone();
            self.with_repo(move |repo| -> Result<(), String> {
                repo.preserve(&target, &message)
                    .map_err(|err| err.to_string())?;
                repo.revert().map_err(|err| err.to_string())?;
                Ok(())
            })
            .await?;
            self.warn(format!(
                "the previous loop stopped mid-attempt; its work is kept at {refname} and the worktree is back at the last checkpoint"
            ));
        }
        if let Some((story, attempt)) = running {
            let preserved = dirty.then(|| refname.clone());
            self.finish_attempt(
                &story,
                attempt,
                AttemptOutcome::Interrupted,
                Some("the loop was stopped during this attempt".into()),
                preserved,
                None,
            );
        }
        Ok(())
    }

    /// HEAD must be on the run's branch at the last checkpoint. If the agent
    /// committed or switched branches, bring the work back; never lose it.
    async fn guard_head(&mut self, when: &str) -> Result<Option<String>, String> {
        let change = self.settings.change.clone();
        let checkpoint = self.state.checkpoint;
        let keep = format!("{}/strays/{}", change.ref_namespace(), now_ms());
        let found = self
            .with_repo(move |repo| repo.reattach(&change, checkpoint, &keep))
            .await
            .map_err(|err| format!("could not check HEAD {when}: {err}"))?;
        Ok(found.map(|found| match found.kept_at {
            Some(kept) => format!(
                "HEAD was found at {} (its commits are kept at {kept})",
                found.found
            ),
            None => format!("HEAD was found at {}", found.found),
        }))
    }

    async fn cross_check(&mut self, stories: &[Story]) {
        if self.source.kind() != SourceKind::OpenSpec {
            return;
        }
        let Ok(fenced) = self.source.fenced_checkboxes() else {
            return;
        };
        let workdir = self.repo_lock().workdir().to_owned();
        let check = openspec_cli::cross_check(
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

    fn retry_context(&self, story: &str) -> Option<RetryContext> {
        let record = self.state.stories.iter().find(|s| s.id == story)?;
        let last = record.attempts.iter().rev().find(|a| {
            !matches!(
                a.outcome,
                AttemptOutcome::Interrupted | AttemptOutcome::RateLimited
            )
        })?;
        match last.outcome {
            _ if !last.failed_checks.is_empty() => {
                Some(RetryContext::ChecksFailed(last.failed_checks.clone()))
            }
            AttemptOutcome::Failed => last.reason.clone().map(RetryContext::FailedReason),
            AttemptOutcome::Rejected => last.reason.clone().map(RetryContext::Rejected),
            AttemptOutcome::TimedOut => Some(RetryContext::TimedOut),
            _ => None,
        }
    }

    fn account(&mut self, story: &str, run: &AgentRun, duration_ms: u64) {
        let (input, output, cache_read, cache_creation, cost) = match &run.done {
            Some(done) => (
                done.usage.input_tokens,
                done.usage.output_tokens,
                done.usage.cache_read_input_tokens,
                done.usage.cache_creation_input_tokens,
                done.cost_usd.unwrap_or(0.0),
            ),
            None => (0, 0, 0, 0, 0.0),
        };
        let totals = &mut self.state.totals;
        totals.tokens_unknown |= run.done.as_ref().is_some_and(|done| done.tokens_unknown);
        totals.input_tokens += input;
        totals.output_tokens += output;
        totals.cache_read_tokens += cache_read;
        totals.cache_creation_tokens += cache_creation;
        totals.cost_usd += cost;
        if let Some(attempt) = self.story_record(story).attempts.last_mut() {
            attempt.duration_ms = duration_ms;
            attempt.input_tokens = input + cache_read + cache_creation;
            attempt.output_tokens = output;
            attempt.cost_usd = cost;
        }
    }

    fn finish_attempt(
        &mut self,
        story: &str,
        attempt: u32,
        outcome: AttemptOutcome,
        reason: Option<String>,
        preserved: Option<String>,
        checkpoint: Option<String>,
    ) {
        if let Some(record) = self
            .story_record(story)
            .attempts
            .iter_mut()
            .find(|a| a.attempt == attempt)
        {
            record.outcome = outcome;
            record.reason = reason;
            record.preserved = preserved;
            record.checkpoint = checkpoint;
        }
    }

    /// Bring the recorded stories in line with the file, keeping attempts.
    fn sync_stories(&mut self, stories: &[Story]) {
        let mut records = Vec::with_capacity(stories.len());
        for story in stories {
            let attempts = self
                .state
                .stories
                .iter()
                .find(|r| r.id == story.id)
                .map(|r| r.attempts.clone())
                .unwrap_or_default();
            records.push(StoryRecord {
                id: story.id.clone(),
                title: story.title.clone(),
                done: story.is_complete(),
                tasks_done: story.tasks.iter().filter(|t| t.done).count(),
                tasks_total: story.tasks.len(),
                attempts,
            });
        }
        self.state.stories = records;
    }

    fn story_record(&mut self, id: &str) -> &mut StoryRecord {
        if self.state.story_mut(id).is_none() {
            self.state.stories.push(StoryRecord {
                id: id.to_owned(),
                title: String::new(),
                done: false,
                tasks_done: 0,
                tasks_total: 0,
                attempts: Vec::new(),
            });
        }
        self.state.story_mut(id).expect("just inserted")
    }

    fn tracking_file(&self) -> String {
        self.source.tracking_file().to_string_lossy().into_owned()
    }

    async fn load_stories(&self) -> Result<Vec<Story>, crate::stories::StoriesError> {
        let source = self.source.clone();
        blocking(move || source.load()).await
    }

    async fn with_repo<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Repo) -> T + Send + 'static,
    ) -> T {
        let repo = self.repo.clone();
        blocking(move || {
            let mut repo = repo.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut repo)
        })
        .await
    }

    fn repo_lock(&self) -> std::sync::MutexGuard<'_, Repo> {
        self.repo
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn stop_requested(&self) -> bool {
        *self.stop.borrow()
    }

    fn warn(&mut self, message: String) {
        self.emit(Event::Warning { message });
    }

    fn emit(&mut self, event: Event) {
        let record = Record {
            ts_ms: now_ms(),
            change: self.settings.change.to_string(),
            event,
        };
        let _ = self.log.append(&record);
        (self.sink)(record);
    }

    fn save(&mut self) -> Result<(), String> {
        self.state.updated_at = now();
        self.run_dir
            .save(&self.state)
            .map_err(|err| err.to_string())
    }

    fn end(mut self, reason: StopReason, message: String) -> LoopEnd {
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
        LoopEnd {
            reason,
            message,
            state: self.state,
        }
    }
}

/// The first limit that stops the run before another attempt at the story
/// of `record`: retries, no progress, iterations, runtime, then budgets
/// (run-wide, then the story's own from its contract).
fn guardrail_hit(
    limits: &Guardrails,
    state: &RunState,
    record: &StoryRecord,
    (story_max_cost, story_max_tokens): (Option<f64>, Option<u64>),
    max_retries: u32,
    runtime_ms: u64,
) -> Option<(StopReason, String)> {
    let failures = record
        .attempts
        .iter()
        .filter(|a| counts_as_failure(a.outcome))
        .count() as u32;
    if failures > max_retries {
        let last = record
            .attempts
            .iter()
            .rev()
            .find_map(|a| a.reason.clone())
            .unwrap_or_default();
        return Some((
            StopReason::MaxRetries,
            format!(
                "story {} failed {failures} time(s), more than --max-retries {max_retries} allows; last reason: {last}",
                record.id
            ),
        ));
    }
    if limits.no_progress_limit > 0 && state.no_progress_streak >= limits.no_progress_limit {
        return Some((
            StopReason::NoProgress,
            format!(
                "{} attempts in a row changed nothing (--no-progress-limit {})",
                state.no_progress_streak, limits.no_progress_limit
            ),
        ));
    }
    if let Some(max) = limits.max_iterations
        && state.totals.attempts >= max
    {
        return Some((
            StopReason::MaxIters,
            format!(
                "{} attempts made, the --max-iterations limit",
                state.totals.attempts
            ),
        ));
    }
    if let Some(max) = limits.max_runtime_secs
        && runtime_ms / 1000 >= max
    {
        return Some((
            StopReason::Timeout,
            format!("the run has used its --max-runtime of {max}s"),
        ));
    }
    let totals = &state.totals;
    if let Some(max) = limits.max_cost
        && totals.cost_usd >= max
    {
        return Some((
            StopReason::Budget,
            format!(
                "${:.2} spent, the --max-cost limit is ${max:.2}",
                totals.cost_usd
            ),
        ));
    }
    if let Some(max) = limits.max_tokens
        && totals.tokens() >= max
    {
        return Some((
            StopReason::Budget,
            format!(
                "{} tokens used, the --max-tokens limit is {max}",
                totals.tokens()
            ),
        ));
    }
    let story_cost: f64 = record.attempts.iter().map(|a| a.cost_usd).sum();
    let story_tokens: u64 = record
        .attempts
        .iter()
        .map(|a| a.input_tokens + a.output_tokens)
        .sum();
    if let Some(max) = story_max_cost
        && story_cost >= max
    {
        return Some((
            StopReason::Budget,
            format!(
                "story {} has cost ${story_cost:.2}, its contract allows ${max:.2}",
                record.id
            ),
        ));
    }
    if let Some(max) = story_max_tokens
        && story_tokens >= max
    {
        return Some((
            StopReason::Budget,
            format!(
                "story {} has used {story_tokens} tokens, its contract allows {max}",
                record.id
            ),
        ));
    }
    None
}

/// The no-progress streak after an attempt: an accepted attempt or one that
/// changed the worktree resets it; a user's stop leaves it as it was.
fn next_streak(streak: u32, progress: bool, accepted: bool, interrupted: bool) -> u32 {
    if interrupted {
        streak
    } else if progress || accepted {
        0
    } else {
        streak + 1
    }
}

/// Attempts that spend the retry budget. A user's stop does not.
fn counts_as_failure(outcome: AttemptOutcome) -> bool {
    !matches!(
        outcome,
        AttemptOutcome::Complete
            | AttemptOutcome::Interrupted
            | AttemptOutcome::RateLimited
            | AttemptOutcome::Running
    )
}

/// Does verifying with `method` need the attempt's diff?
fn uses_diff(method: &Method) -> bool {
    match method {
        Method::Semantic { .. } => true,
        Method::MultiStage { stages, .. } => stages.iter().any(|stage| uses_diff(&stage.method)),
        _ => false,
    }
}

/// Story ids come from files the agent edits; make them safe as one ref and
/// path component.
fn safe_component(id: &str) -> String {
    if ref_component(id).is_some() {
        return id.to_owned();
    }
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches('-').to_owned();
    if cleaned.is_empty() {
        "story".into()
    } else {
        cleaned
    }
}

fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|err| format!("could not create {}: {err}", dir.display()))?;
    }
    std::fs::write(path, bytes).map_err(|err| format!("could not write {}: {err}", path.display()))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn story_ids_become_safe_ref_components() {
        assert_eq!(safe_component("1"), "1");
        assert_eq!(safe_component("US-001"), "US-001");
        assert_eq!(safe_component("../x y"), "x-y");
        assert_eq!(safe_component("::"), "story");
    }

    fn attempt(outcome: AttemptOutcome, cost: f64, tokens: u64) -> AttemptRecord {
        AttemptRecord {
            attempt: 1,
            outcome,
            reason: Some("why".into()),
            preserved: None,
            checkpoint: None,
            started_at: 0,
            duration_ms: 0,
            input_tokens: tokens,
            output_tokens: 0,
            cost_usd: cost,
            log: String::new(),
            failed_checks: Vec::new(),
            progress: true,
        }
    }

    fn state_with(totals: crate::state::Totals, streak: u32) -> RunState {
        let json = serde_json::json!({
            "version": 1, "change": "c", "branch": "ralph/c", "status": "running",
            "original": {"head": {"kind": "unborn", "name": "refs/heads/main"}, "index_tree": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"},
            "initial_commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "checkpoint": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "stories": [], "settings": {"agent": "claude", "max_retries": 3, "command_timeout_secs": 30,
            "agent_timeout_secs": 60, "on_finish": "keep", "source": "openspec"},
            "started_at": 0, "updated_at": 0
        });
        let mut state: RunState = serde_json::from_value(json).unwrap();
        state.totals = totals;
        state.no_progress_streak = streak;
        state
    }

    fn record(attempts: Vec<AttemptRecord>) -> StoryRecord {
        StoryRecord {
            id: "2".into(),
            title: "t".into(),
            done: false,
            tasks_done: 0,
            tasks_total: 1,
            attempts,
        }
    }

    #[test]
    fn retries_count_failures_but_not_stops_or_usage_limits() {
        let limits = Guardrails::default();
        let state = state_with(Default::default(), 0);
        let two_failures = record(vec![
            attempt(AttemptOutcome::Failed, 0.0, 0),
            attempt(AttemptOutcome::Interrupted, 0.0, 0),
            attempt(AttemptOutcome::RateLimited, 0.0, 0),
            attempt(AttemptOutcome::Rejected, 0.0, 0),
        ]);
        assert_eq!(
            guardrail_hit(&limits, &state, &two_failures, (None, None), 2, 0),
            None
        );
        let hit = guardrail_hit(&limits, &state, &two_failures, (None, None), 1, 0).unwrap();
        assert_eq!(hit.0, StopReason::MaxRetries);
    }

    #[test]
    fn budgets_are_reached_at_the_limit_globally_and_per_story() {
        let limits = Guardrails {
            max_cost: Some(1.0),
            max_tokens: Some(1000),
            ..Guardrails::default()
        };
        let spent = |cost, tokens| crate::state::Totals {
            cost_usd: cost,
            input_tokens: tokens,
            ..Default::default()
        };
        let empty = record(Vec::new());
        assert_eq!(
            guardrail_hit(
                &limits,
                &state_with(spent(0.99, 999), 0),
                &empty,
                (None, None),
                3,
                0
            ),
            None
        );
        let cost = guardrail_hit(
            &limits,
            &state_with(spent(1.0, 0), 0),
            &empty,
            (None, None),
            3,
            0,
        )
        .unwrap();
        assert_eq!(cost.0, StopReason::Budget);
        assert!(cost.1.contains("--max-cost"), "{}", cost.1);
        let tokens = guardrail_hit(
            &limits,
            &state_with(spent(0.0, 1000), 0),
            &empty,
            (None, None),
            3,
            0,
        )
        .unwrap();
        assert!(tokens.1.contains("--max-tokens"), "{}", tokens.1);
        let story = record(vec![
            attempt(AttemptOutcome::Failed, 0.3, 40),
            attempt(AttemptOutcome::Failed, 0.3, 70),
        ]);
        let free = Guardrails::default();
        assert_eq!(
            guardrail_hit(
                &free,
                &state_with(spent(0.6, 110), 0),
                &story,
                (Some(0.7), Some(111)),
                5,
                0
            ),
            None
        );
        let hit = guardrail_hit(
            &free,
            &state_with(spent(0.6, 110), 0),
            &story,
            (Some(0.6), None),
            5,
            0,
        )
        .unwrap();
        assert!(hit.1.contains("story 2"), "{}", hit.1);
        let hit = guardrail_hit(
            &free,
            &state_with(spent(0.6, 110), 0),
            &story,
            (None, Some(110)),
            5,
            0,
        )
        .unwrap();
        assert_eq!(hit.0, StopReason::Budget);
    }

    #[test]
    fn iterations_runtime_and_no_progress_limits() {
        let limits = Guardrails {
            max_iterations: Some(4),
            max_runtime_secs: Some(60),
            no_progress_limit: 3,
            ..Guardrails::default()
        };
        let empty = record(Vec::new());
        let attempts = |n| crate::state::Totals {
            attempts: n,
            ..Default::default()
        };
        assert_eq!(
            guardrail_hit(
                &limits,
                &state_with(attempts(3), 2),
                &empty,
                (None, None),
                9,
                59_999
            ),
            None
        );
        assert_eq!(
            guardrail_hit(
                &limits,
                &state_with(attempts(4), 0),
                &empty,
                (None, None),
                9,
                0
            )
            .unwrap()
            .0,
            StopReason::MaxIters
        );
        assert_eq!(
            guardrail_hit(
                &limits,
                &state_with(attempts(0), 0),
                &empty,
                (None, None),
                9,
                60_000
            )
            .unwrap()
            .0,
            StopReason::Timeout
        );
        assert_eq!(
            guardrail_hit(
                &limits,
                &state_with(attempts(0), 3),
                &empty,
                (None, None),
                9,
                0
            )
            .unwrap()
            .0,
            StopReason::NoProgress
        );
        let off = Guardrails::default();
        assert_eq!(
            guardrail_hit(
                &off,
                &state_with(attempts(0), 50),
                &empty,
                (None, None),
                9,
                0
            ),
            None
        );
    }

    #[test]
    fn the_no_progress_streak_survives_a_stop_and_a_resume() {
        // Two empty attempts, a user stop (the state is saved and the run
        // resumed), then a third empty attempt reaches a limit of 3.
        let mut streak = next_streak(0, false, false, false);
        streak = next_streak(streak, false, false, false);
        streak = next_streak(streak, false, false, true);
        let resumed: RunState = serde_json::from_value(
            serde_json::to_value(state_with(Default::default(), streak)).unwrap(),
        )
        .unwrap();
        assert_eq!(resumed.no_progress_streak, 2);
        assert_eq!(
            next_streak(resumed.no_progress_streak, false, false, false),
            3
        );
        assert_eq!(next_streak(2, true, false, false), 0, "a change resets it");
        assert_eq!(
            next_streak(2, false, true, false),
            0,
            "an accepted attempt resets it"
        );
    }

    #[test]
    fn a_user_stop_does_not_spend_a_retry() {
        assert!(!counts_as_failure(AttemptOutcome::Interrupted));
        assert!(counts_as_failure(AttemptOutcome::NoSignal));
        assert!(counts_as_failure(AttemptOutcome::TimedOut));
    }
}
