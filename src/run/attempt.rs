//! One attempt at a story: render its prompt, start a fresh agent with it,
//! forward what the agent says as events, and account for its time, tokens
//! and money. A usage limit ends the attempt as a pause, not a failure: no
//! retry is spent and nothing is reverted.

use super::containment;
use super::evidence;
use super::fallback;
use super::hooks;
use super::notifications;
use super::prompting;
use super::settle;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::blocking;
use super::error::RunError;
use super::fallback::AttemptAgent;
use super::pipeline::Turn;
use super::prompting::Place;
use super::story_loop::StoryLoop;
use super::watching;
use crate::agent::setup::{self, SetupError, SetupKind};
use crate::agent::{self, AgentEvent, AgentRun, AgentSpec, Conclusion, ExitStatusKind, Invocation};

use crate::events::{Event, Record, now_ms};
use crate::git::{GitDirChange, RefSnapshot};
use crate::state::{AttemptOutcome, AttemptRecord, learnings, now};
use crate::stories::Story;

/// Longest single wait for a usage limit when the agent names no reset time.
const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// The first wait; it doubles with each pause in a row.
const FIRST_BACKOFF: Duration = Duration::from_secs(60);

/// What the agent's run left for the rest of the attempt to weigh.
pub(super) struct Ran {
    pub run: AgentRun,
    pub activity: Activity,
    /// What it changed in the git directory, already undone.
    pub git_dir: Vec<GitDirChange>,
    /// The role it played, in a role pipeline.
    pub turn: Option<Turn>,
}

/// What the agent said while it ran, as far as telling a set-up error
/// from work goes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Activity {
    /// Events its output held.
    pub events: usize,
    /// It said something as the model (an assistant message).
    pub model_turned: bool,
}

/// What an attempt is given before its agent starts.
struct Prepared {
    attempt: u32,
    /// The story's id, safe as a ref and path component.
    story_key: String,
    prompt: String,
    prompt_path: PathBuf,
    /// Where the agent's raw output goes.
    log_path: PathBuf,
    /// The promise token the story's contract asks for, if any.
    token: Option<String>,
    /// The agent that runs it.
    agent: AttemptAgent,
}

impl StoryLoop {
    /// One attempt at `story`, judged and recorded.
    pub(super) async fn attempt(
        &mut self,
        story: &Story,
        stories: &[Story],
        turn: Option<Turn>,
    ) -> Result<(), RunError> {
        settle::guard_head(self, "before starting the agent").await?;
        let prepared = self.prepare(story, stories, turn.as_ref()).await?;
        if !hooks::hooks_let_agent_start(self, story, prepared.attempt).await? {
            return Ok(());
        }
        let invocation =
            containment::sandboxed(self, self.invocation(story, &prepared, turn.as_ref())?);
        let timeout = self.attempt_timeout();
        let learnings_before = learnings::len(&self.run_dir.learnings_path());
        // The agent may only touch its own branch: the others are noted now
        // and put back after the attempt; likewise the git directory.
        let branches = self.settings.run_branches();
        let refs_before = self
            .with_repo(move |repo| repo.snapshot_user_refs(&branches))
            .await
            .map_err(|err| RunError::git("list the branches and tags", err))?;
        let kept = self.run_dir.refs_before_path();
        crate::state::write_atomically(&kept, &refs_before.to_json())
            .map_err(|err| RunError::io(format!("write {}", kept.display()), err))?;
        watching::watch_worktree(self).await;
        let git_dir_before = containment::snapshot_git_dir(self).await?;
        let clock = Instant::now();
        let (run, mut activity) = self
            .run_agent(story, &prepared, &invocation, timeout)
            .await?;
        let git_dir =
            containment::contain_git_dir(self, &story.id, prepared.attempt, git_dir_before).await?;
        self.account(&story.id, &run, clock.elapsed().as_millis() as u64);
        self.label_learnings(story, prepared.attempt, learnings_before)
            .await;
        self.bring_back(refs_before, story, &prepared).await?;
        // A write the sandbox refused was the agent at work.
        activity.model_turned |=
            containment::note_sandbox_refusal(self, &run, &log_tail(&prepared.log_path));
        let ran = Ran {
            run,
            activity,
            git_dir,
            turn,
        };
        self.route(story, stories, &prepared, ran, timeout).await
    }

    /// The attempt's number, prompt and files, and its record begun and
    /// saved before the agent starts.
    async fn prepare(
        &mut self,
        story: &Story,
        stories: &[Story],
        turn: Option<&Turn>,
    ) -> Result<Prepared, RunError> {
        let agent = fallback::attempt_agent(self, story, turn)?;
        let attempt = self.story_record(&story.id).attempts.len() as u32 + 1;
        let index = stories.iter().position(|s| s.id == story.id).unwrap_or(0) + 1;
        let token = match turn {
            Some(turn) => Some(turn.rules.promise.clone()),
            None => self.promise_token(story),
        };
        let place = Place {
            index,
            total: stories.len(),
            attempt,
        };
        let prompt = prompting::render_prompt(self, story, place, token.as_deref(), turn).await?;
        let story_key = crate::git::ref_key(&story.id);
        let prompt_path = self.run_dir.attempt_prompt(&story_key, attempt);
        let log_path = self.run_dir.attempt_log(&story_key, attempt);
        write_file(&prompt_path, prompt.as_bytes())?;

        self.begin_record(story, attempt, &log_path, turn.map(Turn::role));
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.agent = Some(agent.label());
        }
        self.save()?;
        // In a pipeline, each role has its own bound; the story's is theirs
        // together.
        let max_attempts = match turn {
            Some(turn) => turn
                .pipeline
                .iter()
                .map(|role| role.max_iterations)
                .fold(0u32, u32::saturating_add),
            None => self.max_attempts(&story.id),
        };
        self.emit(Event::StoryProgress {
            story_id: story.id.clone(),
            title: story.title.clone(),
            index,
            total: stories.len(),
            attempt,
            max_attempts,
            role: turn.map(Turn::role),
            role_iteration: turn.map(|turn| turn.iteration),
            role_max_iterations: turn.map(|turn| turn.rules.max_iterations),
        });
        Ok(Prepared {
            attempt,
            story_key,
            prompt,
            prompt_path,
            log_path,
            token,
            agent,
        })
    }

    /// The agent's command line for the attempt, and what its environment
    /// tells it.
    fn invocation(
        &self,
        story: &Story,
        prepared: &Prepared,
        turn: Option<&Turn>,
    ) -> Result<Invocation, RunError> {
        let workdir = self.repo_lock().workdir().to_owned();
        let mut env = vec![
            (
                "RALPH_CHANGE".to_owned(),
                self.settings.change_shown().to_string(),
            ),
            ("RALPH_STORY".to_owned(), story.id.clone()),
            ("RALPH_ATTEMPT".to_owned(), prepared.attempt.to_string()),
            (
                "RALPH_PROMPT_FILE".to_owned(),
                prepared.prompt_path.to_string_lossy().into_owned(),
            ),
        ];
        if self.settings.learnings {
            env.push((
                "RALPH_LEARNINGS_FILE".to_owned(),
                self.run_dir.learnings_path().to_string_lossy().into_owned(),
            ));
        }
        if let Some(turn) = turn {
            env.push(("RALPH_ROLE".to_owned(), turn.role().to_string()));
        }
        let mut invocation = prepared.agent.spec.invocation(
            &prepared.prompt,
            &prepared.prompt_path,
            &workdir,
            env,
            prepared.token.as_deref().unwrap_or(agent::DEFAULT_TOKEN),
        );
        invocation.pid_file = Some(self.run_dir.agent_pid_file());
        invocation.idle = self.settings.idle_timeout;
        Ok(invocation)
    }

    /// Run the agent, forwarding what it says as events. An agent that
    /// could not even be started made no attempt: its record is taken
    /// back.
    async fn run_agent(
        &mut self,
        story: &Story,
        prepared: &Prepared,
        invocation: &Invocation,
        timeout: Duration,
    ) -> Result<(AgentRun, Activity), RunError> {
        let mut activity = Activity::default();
        let run = {
            let stop = self.stop.clone();
            let change = self.settings.change.to_string();
            let (story_id, attempt) = (story.id.clone(), prepared.attempt);
            let mut on_event = |event: AgentEvent| {
                activity.events += 1;
                activity.model_turned |= matches!(event, AgentEvent::Message { .. });
                self.deliver(Record {
                    ts_ms: now_ms(),
                    change: change.clone(),
                    event: Event::StoryEvent {
                        story_id: story_id.clone(),
                        attempt,
                        event,
                    },
                });
            };
            agent::run(invocation, &prepared.log_path, timeout, stop, &mut on_event).await
        };
        run.map(|run| (run, activity)).map_err(|err| {
            self.story_record(&story.id).attempts.pop();
            self.state.totals.attempts -= 1;
            err.into()
        })
    }

    /// Head what the agent appended to the learnings file with its story
    /// and attempt; a failure is only worth a warning.
    async fn label_learnings(&mut self, story: &Story, attempt: u32, before: u64) {
        if !self.settings.learnings {
            return;
        }
        let learnings_path = self.run_dir.learnings_path();
        let (path, id) = (learnings_path.clone(), story.id.clone());
        let labelled = blocking(move || learnings::label(&path, before, &id, attempt)).await;
        if let Err(err) = labelled {
            self.warn(format!(
                "could not head this attempt's learnings in {}: {err}",
                learnings_path.display()
            ));
        }
    }

    /// Work the agent committed or moved elsewhere comes back first, then
    /// every other branch and tag goes back where it was.
    async fn bring_back(
        &mut self,
        refs_before: RefSnapshot,
        story: &Story,
        prepared: &Prepared,
    ) -> Result<(), RunError> {
        if let Some(found) = settle::guard_head(self, "after the attempt").await? {
            let done = match found.commit {
                Some(commit) => settle::carry_work(self, commit, &story.id).await?,
                None => format!("its work was brought back onto {}", self.state.branch),
            };
            let found = super::settle::found_words(&found);
            self.warn(format!("during the attempt {found}; {done}"));
        }
        self.restore_user_refs(refs_before, &prepared.story_key, prepared.attempt)
            .await
    }

    /// Where a finished attempt goes: an agent command that could not run
    /// stops the run, a usage limit pauses it, anything else is judged.
    async fn route(
        &mut self,
        story: &Story,
        before: &[Story],
        prepared: &Prepared,
        ran: Ran,
        timeout: Duration,
    ) -> Result<(), RunError> {
        let agent = prepared.agent.spec.clone();
        if let Some(code @ (126 | 127)) = ran.run.exit.code() {
            let words = last_line(&ran.run.stderr_tail).unwrap_or("not found");
            let setup = SetupError {
                kind: SetupKind::NotRunnable(code),
                words: words.to_owned(),
            };
            return self.setup_failure(story, setup, &agent).await;
        }
        if let Some(limit) = ran
            .run
            .done
            .as_ref()
            .and_then(|done| done.rate_limit.clone())
        {
            return self
                .pause_for_limit(story, prepared.attempt, limit, &prepared.agent)
                .await;
        }
        if let Some(setup) = self.setup_error(&ran).await? {
            return self.setup_failure(story, setup, &agent).await;
        }
        evidence::judge_attempt(
            self,
            story,
            before,
            prepared.attempt,
            &prepared.story_key,
            ran,
            timeout,
        )
        .await
    }

    /// The set-up error the attempt's ending amounts to, if any. Only a
    /// failed run is looked at, and the worktree read only then.
    async fn setup_error(&self, ran: &Ran) -> Result<Option<SetupError>, RunError> {
        if !failed(&ran.run) {
            return Ok(None);
        }
        let checkpoint = self.state.checkpoint;
        let (old, new) = self
            .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
            .await
            .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
        Ok(setup::recognise(&setup::Ending {
            failed: true,
            changed: old != new,
            model_turned: ran.activity.model_turned,
            spoke: ran.activity.events > 0,
            error: ran.run.done.as_ref().and_then(|done| done.error.as_deref()),
            stderr_tail: &ran.run.stderr_tail,
        }))
    }

    /// Put back every branch and tag the agent moved, created or deleted;
    /// what it left there stays reachable beside the attempt's ref.
    async fn restore_user_refs(
        &mut self,
        before: RefSnapshot,
        story_key: &str,
        attempt: u32,
    ) -> Result<(), RunError> {
        let branches = self.settings.run_branches();
        let keep = self.settings.refs().attempt_refs(story_key, attempt);
        let restored = self
            .with_repo(move |repo| repo.restore_user_refs(&before, &branches, &keep))
            .await
            .map_err(|err| RunError::git("put back the branches and tags", err))?;
        let _ = std::fs::remove_file(self.run_dir.refs_before_path());
        for moved in restored {
            self.warn(format!("the agent {}", super::kept_refs::words(&moved)));
        }
        Ok(())
    }

    /// The agent could not work at all (its command not found or not
    /// executable, a root refusal, no API key, an unknown option): a
    /// set-up error, not a failed story. The run stops at once and no
    /// retry is spent; anything the attempt left is set aside first.
    async fn setup_failure(
        &mut self,
        story: &Story,
        setup: SetupError,
        agent: &AgentSpec,
    ) -> Result<(), RunError> {
        let checkpoint = self.state.checkpoint;
        let (old, new) = self
            .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
            .await
            .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
        if old != new {
            let base = self.settings.refs().setup_failure(now_ms());
            let message = format!(
                "ralph({}): work left by an agent that could not work",
                self.settings.change
            );
            self.with_repo(move |repo| -> Result<(), RunError> {
                let refname = repo
                    .unused_ref(&base)
                    .map_err(|err| RunError::git("name a ref", err))?;
                repo.preserve(&refname, &message)
                    .map_err(|err| RunError::git("set the work aside", err))?;
                repo.revert()
                    .map_err(|err| RunError::git("revert to the last checkpoint", err))?;
                Ok(())
            })
            .await?;
        }
        settle::tracking_reverted(self).await?;
        self.story_record(&story.id).attempts.pop();
        self.state.totals.attempts = self.state.totals.attempts.saturating_sub(1);
        self.save()?;
        // `--agent-command` runs through `sh -c`: name the user's command.
        let command = match (agent.name.as_str(), agent.args.last()) {
            ("command", Some(script)) => script.clone(),
            _ => agent.program.clone(),
        };
        Err(RunError::AgentSetup {
            command,
            change: self.settings.change_shown().to_string(),
            setup,
        })
    }

    /// How many attempts the story may have: one plus the retries, plus
    /// the attempts that spent no retry (stops, usage limits).
    fn max_attempts(&mut self, story: &str) -> u32 {
        if self.settings.once {
            return 1;
        }
        let free = self
            .story_record(story)
            .attempts
            .iter()
            .filter(|a| {
                matches!(
                    a.outcome,
                    AttemptOutcome::Interrupted | AttemptOutcome::RateLimited
                )
            })
            .count() as u32;
        self.settings
            .max_retries
            .saturating_add(1)
            .saturating_add(free)
    }

    /// The promise token the story's contract asks for, if any.
    pub(super) fn promise_token(&self, story: &Story) -> Option<String> {
        self.settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria)
            .promise
    }

    /// The attempt may not outlive the run's runtime budget.
    fn attempt_timeout(&self) -> Duration {
        let timeout = self.settings.agent_timeout;
        match self.settings.guardrails.max_runtime_secs {
            Some(max) => {
                let left = Duration::from_millis((max * 1000).saturating_sub(self.runtime_ms()));
                timeout.min(left.max(Duration::from_secs(1)))
            }
            None => timeout,
        }
    }

    /// Record the attempt as running, so that a killed loop is known to
    /// have stopped mid-attempt.
    fn begin_record(
        &mut self,
        story: &Story,
        attempt: u32,
        log_path: &Path,
        role: Option<crate::contract::Role>,
    ) {
        self.state.current_story = Some(story.id.clone());
        self.state.current_attempt = attempt;
        let log = log_path
            .strip_prefix(&self.run_dir.dir)
            .unwrap_or(log_path)
            .to_string_lossy()
            .into_owned();
        self.story_record(&story.id).attempts.push(AttemptRecord {
            log,
            role,
            ..AttemptRecord::new(attempt, AttemptOutcome::Running, now())
        });
        self.state.totals.attempts += 1;
    }

    /// A usage limit: record it, spend no retry, revert nothing, and pause;
    /// or, when it outlasts the wait, hand the story to a fallback agent.
    async fn pause_for_limit(
        &mut self,
        story: &Story,
        attempt: u32,
        limit: agent::RateLimit,
        agent: &AttemptAgent,
    ) -> Result<(), RunError> {
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
            if fallback::hand_to_fallback(self, story, attempt, agent, &reason)? {
                return Ok(());
            }
            self.save()?;
            return Err(RunError::RateLimitCap { reason, cap });
        }
        self.state.paused_until = Some(until);
        self.state.pause_reason = Some(reason.clone());
        self.save()?;
        self.emit(Event::Paused {
            story_id: story.id.clone(),
            until_unix: until,
            message: reason.clone(),
        });
        notifications::notify_pause(self, until, reason);
        Ok(())
    }

    /// Add the attempt's time, tokens and cost to the run's totals and to
    /// its own record.
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
        totals.add_tokens(input, output, cache_read, cache_creation);
        totals.cost_usd += cost;
        totals.tokens_unknown |= run.done.as_ref().is_some_and(|done| done.tokens_unknown);
        if let Some(attempt) = self.story_record(story).attempts.last_mut() {
            attempt.duration_ms = duration_ms;
            attempt.input_tokens = input
                .saturating_add(cache_read)
                .saturating_add(cache_creation);
            attempt.output_tokens = output;
            attempt.cost_usd = cost;
        }
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, bytes)
    };
    write().map_err(|err| RunError::io(format!("write {}", path.display()), err))
}

/// The last line of `text` that holds anything.
fn last_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .rev()
        .find(|line| !line.is_empty())
}

/// Whether the agent exited on its own and failed: an error status, or an
/// error it reported. A run stopped, timed out or killed by a signal is
/// judged as an attempt, never taken for a set-up error.
fn failed(run: &AgentRun) -> bool {
    let ExitStatusKind::Exited(code) = run.exit else {
        return false;
    };
    code != 0
        || matches!(run.conclusion, Conclusion::AgentError { .. })
        || run.done.as_ref().is_some_and(|done| done.is_error)
}

/// The end of the agent's output log, where a refusal by the sandbox
/// shows when the agent reports tool results there.
fn log_tail(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(TAIL)));
    let mut bytes = Vec::new();
    let _ = file.take(TAIL).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
