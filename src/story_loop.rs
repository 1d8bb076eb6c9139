//! The Ralph loop, as one state machine: pick the first incomplete story,
//! spawn a fresh agent with a story-specific prompt, and judge the attempt.
//! A story is done only when the agent promised COMPLETE *and* the story is
//! marked done in its file; then it is checkpointed. Any other ending is a
//! failed attempt: its work is preserved under a ref, the worktree goes back
//! to the last checkpoint, and the story is retried, up to a limit. Every run
//! ends with exactly one [`StopReason`].
//!
//! The loop knows neither clap nor the terminal: it reports typed events to a
//! channel and to `events.jsonl`, and keeps `state.json` current. Blocking
//! work (gix, file parsing) runs off the async runtime, so a stop request is
//! seen at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::agent::{self, AgentEvent, AgentRun, Conclusion, ExitStatusKind};
use crate::events::{Event, Record, now_ms};
use crate::git::{ChangeName, Repo, ref_component};
use crate::presets::AgentSpec;
use crate::prompt::{self, PromptInput, RetryContext};
use crate::state::{
    AttemptOutcome, AttemptRecord, EventsLog, RunDir, RunState, RunStatus, StopReason, StoryRecord,
    now,
};
use crate::stories::openspec_cli::{self, CrossCheck};
use crate::stories::{SourceKind, Story, StorySource};

/// What the loop needs beyond the run's state.
pub struct LoopSettings {
    pub change: ChangeName,
    pub agent: AgentSpec,
    pub max_retries: u32,
    pub agent_timeout: Duration,
    pub command_timeout: Duration,
    pub template: String,
    pub promise_token: String,
}

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
    sink: mpsc::UnboundedSender<Record>,
    stop: watch::Receiver<bool>,
}

/// Why an attempt did not complete. The next prompt is built from the
/// recorded attempt (see [`StoryLoop::retry_context`]).
struct Failure {
    outcome: AttemptOutcome,
    reason: String,
}

impl StoryLoop {
    pub fn new(
        repo: Repo,
        source: Box<dyn StorySource>,
        run_dir: RunDir,
        state: RunState,
        settings: LoopSettings,
        sink: mpsc::UnboundedSender<Record>,
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
        })
    }

    /// Drive the run until it ends, and say why.
    pub async fn run(mut self, resumed: bool) -> LoopEnd {
        match self.drive(resumed).await {
            Ok((reason, message)) => self.end(reason, message, None),
            Err(message) => {
                let story = self.state.current_story.clone();
                self.end(StopReason::Error, message, story)
            }
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
            let stories = self.load_stories().await.map_err(|err| err.to_string())?;
            self.sync_stories(&stories);
            let Some(story) = self.source.next_story(&stories).cloned() else {
                self.state.current_story = None;
                return Ok((StopReason::Completed, "every story is done".into()));
            };
            let max_retries = self.settings.max_retries;
            let record = self.story_record(&story.id);
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
                self.state.current_story = Some(story.id.clone());
                return Ok((
                    StopReason::MaxRetries,
                    format!(
                        "story {} failed {failures} time(s), more than --max-retries {} allows; last reason: {last}",
                        story.id, max_retries
                    ),
                ));
            }
            self.attempt(&story, &stories).await?;
            if self.stop_requested() {
                return Ok((StopReason::Stopped, "stopped by the user".into()));
            }
        }
    }

    /// One attempt at `story`, judged and recorded.
    async fn attempt(&mut self, story: &Story, stories: &[Story]) -> Result<(), String> {
        self.guard_head("before starting the agent").await?;
        let attempt = self.story_record(&story.id).attempts.len() as u32 + 1;
        let index = stories.iter().position(|s| s.id == story.id).unwrap_or(0) + 1;
        let retry = self.retry_context(&story.id);
        let context_files = {
            let source = self.source.clone();
            blocking(move || source.context_files())
                .await
                .map_err(|err| err.to_string())?
        };
        let prompt = prompt::render(
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
                promise_token: &self.settings.promise_token,
            },
        )
        .map_err(|err| err.to_string())?;
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
        });
        self.state.totals.attempts += 1;
        self.save()?;
        self.emit(Event::StoryProgress {
            story_id: story.id.clone(),
            title: story.title.clone(),
            index,
            total: stories.len(),
            attempt,
            max_attempts: self.settings.max_retries + 1,
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
        let invocation = self.settings.agent.invocation(
            &prompt,
            &prompt_path,
            &workdir,
            env,
            &self.settings.promise_token,
        );
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
                let _ = sink.send(record);
            };
            agent::run(
                &invocation,
                &log_path,
                self.settings.agent_timeout,
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
        self.judge(story, attempt, &story_key, run).await
    }

    /// Decide what the attempt amounted to, then checkpoint or preserve and
    /// revert.
    async fn judge(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: AgentRun,
    ) -> Result<(), String> {
        // Work the agent committed or moved elsewhere comes back first.
        let moved = self.guard_head("after the attempt").await?;
        let refreshed = self.load_stories().await;
        let marked_done = match &refreshed {
            Ok(stories) => stories.iter().any(|s| s.id == story.id && s.is_complete()),
            Err(_) => false,
        };
        let failure = match (&run.exit, &run.conclusion) {
            (ExitStatusKind::Stopped, _) => Some(Failure {
                outcome: AttemptOutcome::Interrupted,
                reason: "stopped by the user".into(),
            }),
            (ExitStatusKind::TimedOut, _) => Some(Failure {
                outcome: AttemptOutcome::TimedOut,
                reason: format!(
                    "the agent ran past --agent-timeout ({}s) and was stopped",
                    self.settings.agent_timeout.as_secs()
                ),
            }),
            (_, Conclusion::Complete) if marked_done => None,
            (_, Conclusion::Complete) => {
                let reason = match &refreshed {
                    Err(err) => format!(
                        "{} could not be read after the attempt: {err}",
                        self.tracking_file()
                    ),
                    Ok(_) => format!(
                        "story {} is not marked done in {}",
                        story.id,
                        self.tracking_file()
                    ),
                };
                Some(Failure {
                    outcome: AttemptOutcome::Failed,
                    reason,
                })
            }
            (_, Conclusion::Failed { reason }) => Some(Failure {
                outcome: AttemptOutcome::Failed,
                reason: reason.clone(),
            }),
            (_, Conclusion::NoSignal) => Some(Failure {
                outcome: AttemptOutcome::NoSignal,
                reason: "the agent ended without a promise".into(),
            }),
            (_, Conclusion::AgentError { message }) => Some(Failure {
                outcome: AttemptOutcome::AgentError,
                reason: format!("the agent failed: {message}"),
            }),
        };
        if let Some(moved) = moved {
            self.warn(format!(
                "during the attempt {moved}; its work was brought back onto {}",
                self.state.branch
            ));
        }

        match failure {
            None => {
                let message = format!(
                    "ralph({}): story {} {}",
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
            }
            Some(failure) => {
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
            }
        }
        Ok(())
    }

    /// After a killed loop: the attempt that was running is preserved as
    /// interrupted and the worktree goes back to the last checkpoint.
    async fn recover(&mut self) -> Result<(), String> {
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
        let last = record
            .attempts
            .iter()
            .rev()
            .find(|a| a.outcome != AttemptOutcome::Interrupted)?;
        match last.outcome {
            AttemptOutcome::Failed => last.reason.clone().map(RetryContext::FailedReason),
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
        let _ = self.sink.send(record);
    }

    fn save(&mut self) -> Result<(), String> {
        self.state.updated_at = now();
        self.run_dir
            .save(&self.state)
            .map_err(|err| err.to_string())
    }

    fn end(mut self, reason: StopReason, message: String, story_id: Option<String>) -> LoopEnd {
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

/// Attempts that spend the retry budget. A user's stop does not.
fn counts_as_failure(outcome: AttemptOutcome) -> bool {
    !matches!(
        outcome,
        AttemptOutcome::Complete | AttemptOutcome::Interrupted | AttemptOutcome::Running
    )
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

    #[test]
    fn a_user_stop_does_not_spend_a_retry() {
        assert!(!counts_as_failure(AttemptOutcome::Interrupted));
        assert!(counts_as_failure(AttemptOutcome::NoSignal));
        assert!(counts_as_failure(AttemptOutcome::TimedOut));
    }
}
