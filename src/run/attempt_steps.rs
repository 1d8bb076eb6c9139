//! One attempt at a story: render its prompt, start a fresh agent with it,
//! forward what the agent says as events, and account for its time, tokens
//! and money. A usage limit ends the attempt as a pause, not a failure: no
//! retry is spent and nothing is reverted.

use super::containment;
use super::context::Run;
use super::evidence;
use super::fallback;
use super::hooks;
use super::notifications;
use super::prompting;
use super::settle;
use super::submodules;
use std::path::Path;
use std::time::{Duration, Instant};

use super::attempt::{Activity, Attempt, Parts, Ran, Tried, Turn};
use super::error::RunError;
use super::prompting::Place;
use super::runtime::blocking;
use super::watching;
use crate::agent::setup::{self, SetupError, SetupKind};
use crate::agent::{self, AgentEvent, AgentRun, AgentSpec, Invocation};

use crate::contract::prices;
use crate::events::{Event, Record, now_ms};
use crate::git::RefSnapshot;
use crate::state::{AttemptOutcome, AttemptRecord, Change, Usage, learnings, now};
use crate::stories::Story;

/// Longest single wait for a usage limit when the agent names no reset time.
const MAX_BACKOFF: Duration = Duration::from_secs(30 * 60);
/// The first wait; it doubles with each pause in a row.
const FIRST_BACKOFF: Duration = Duration::from_secs(60);

/// One attempt at `story`, judged and recorded. Returns what became of
/// it.
pub(super) async fn attempt(
    run: &mut Run,
    story: &Story,
    stories: &[Story],
    turn: Option<Turn>,
) -> Result<Tried, RunError> {
    settle::guard_head(run, "before starting the agent").await?;
    let attempt = prepare(run, story, stories, turn).await?;
    if !hooks::hooks_let_agent_start(run, story, attempt.number).await? {
        return Ok(Tried::NotStarted);
    }
    let invocation = containment::sandboxed(run, invocation(run, &attempt));
    let timeout = attempt_timeout(run);
    let learnings_before = learnings::len(&run.run_dir.learnings_path());
    // The agent may only touch its own branch: the others are noted now
    // and put back after the attempt; likewise the git directory.
    let branches = run.settings.run_branches();
    let refs_before = run
        .with_repo(move |repo| repo.snapshot_user_refs(&branches))
        .await
        .map_err(|err| RunError::git("list the branches and tags", err))?;
    let refs_before = super::kept_refs::under_way_beside(&run.run_dir, refs_before);
    let kept = run.run_dir.refs_before_path();
    crate::state::write_atomically(&kept, &refs_before.to_json())
        .map_err(|err| RunError::io(format!("write {}", kept.display()), err))?;
    watching::watch_worktree(run).await;
    let git_dir_before = containment::snapshot_git_dir(run).await?;
    let submodules_before = submodules::heads_before(run).await?;
    let clock = Instant::now();
    let (agent_run, mut activity) = run_agent(run, &attempt, &invocation, timeout).await?;
    let git_dir = containment::contain_git_dir(run, &attempt, git_dir_before).await?;
    let submodules = submodules::set_aside(run, &attempt, submodules_before).await?;
    account(
        run,
        &attempt,
        &agent_run,
        clock.elapsed().as_millis() as u64,
    );
    label_learnings(run, &attempt, learnings_before).await;
    bring_back(run, refs_before, &attempt).await?;
    // A write the sandbox refused was the agent at work. Without a
    // sandbox there is nothing to look for, and the log is not read.
    activity.model_turned |= run.settings.sandbox()
        && containment::note_sandbox_refusal(run, &agent_run, &log_tail(&attempt.log_path));
    let ran = Ran {
        run: agent_run,
        activity,
        git_dir,
        submodules,
        timeout,
    };
    let outcome = route(run, &attempt, stories, ran).await?;
    Ok(Tried::Ended(outcome))
}

/// The attempt: its number, prompt and files, and its record begun and
/// saved before the agent starts.
async fn prepare(
    run: &mut Run,
    story: &Story,
    stories: &[Story],
    turn: Option<Turn>,
) -> Result<Attempt, RunError> {
    let agent = fallback::attempt_agent(run, story, turn.as_ref())?;
    let number = run.story_record(&story.id).attempts.len() as u32 + 1;
    let index = stories.iter().position(|s| s.id == story.id).unwrap_or(0) + 1;
    let token = match &turn {
        Some(turn) => Some(turn.rules.promise.clone()),
        None => promise_token(run, story),
    };
    let place = Place {
        index,
        total: stories.len(),
        attempt: number,
    };
    let prompt =
        prompting::render_prompt(run, story, place, token.as_deref(), turn.as_ref()).await?;
    let parts = Parts {
        story: story.clone(),
        number,
        turn,
        agent,
        token,
        refs: run.settings.refs(),
    };
    let attempt = Attempt::new(parts, prompt, &run.run_dir);
    write_file(&attempt.prompt_path, attempt.prompt.as_bytes())?;
    begin_record(run, &attempt);
    let max_attempts = max_attempts(run, &attempt);
    run.commit(Change::telling(Event::StoryProgress {
        story_id: story.id.clone(),
        title: story.title.clone(),
        index,
        total: stories.len(),
        attempt: number,
        max_attempts,
        role: attempt.role(),
        role_iteration: attempt.turn.as_ref().map(|turn| turn.iteration),
        role_max_iterations: attempt.turn.as_ref().map(|turn| turn.rules.max_iterations),
    }))?;
    Ok(attempt)
}

/// The agent's command line for the attempt, and what its environment
/// tells it.
fn invocation(run: &Run, attempt: &Attempt) -> Invocation {
    let workdir = run.repo_lock().workdir().to_owned();
    let mut env = vec![
        (
            "RALPH_CHANGE".to_owned(),
            run.settings.change_shown().to_string(),
        ),
        ("RALPH_STORY".to_owned(), attempt.id().to_owned()),
        ("RALPH_ATTEMPT".to_owned(), attempt.number.to_string()),
        (
            "RALPH_PROMPT_FILE".to_owned(),
            attempt.prompt_path.to_string_lossy().into_owned(),
        ),
    ];
    if run.settings.learnings() {
        env.push((
            "RALPH_LEARNINGS_FILE".to_owned(),
            run.run_dir.learnings_path().to_string_lossy().into_owned(),
        ));
    }
    if let Some(role) = attempt.role() {
        env.push(("RALPH_ROLE".to_owned(), role.to_string()));
    }
    let mut invocation = attempt.agent.spec.invocation(
        &attempt.prompt,
        &attempt.prompt_path,
        &workdir,
        env,
        attempt.token.as_deref().unwrap_or(agent::DEFAULT_TOKEN),
    );
    invocation.pid_file = Some(run.run_dir.agent_pid_file());
    invocation.idle = run.settings.idle_timeout();
    invocation
}

/// Run the agent, forwarding what it says as events. An agent that
/// could not even be started made no attempt: its record is taken
/// back. One that started and was cut short by git-ralph's own error (a
/// log it could not write on a full disk) made one: its record stays, for
/// the end of the run to say so.
async fn run_agent(
    run: &mut Run,
    attempt: &Attempt,
    invocation: &Invocation,
    timeout: Duration,
) -> Result<(AgentRun, Activity), RunError> {
    let mut activity = Activity::default();
    let agent_run = {
        let stop = run.stop.clone();
        let change = run.settings.change().to_string();
        let (story_id, number) = (attempt.id().to_owned(), attempt.number);
        let mut on_event = |event: AgentEvent| {
            activity.events += 1;
            activity.model_turned |= matches!(event, AgentEvent::Message { .. });
            run.deliver(Record {
                ts_ms: now_ms(),
                change: change.clone(),
                event: Event::StoryEvent {
                    story_id: story_id.clone(),
                    attempt: number,
                    event,
                },
            });
        };
        agent::run(invocation, &attempt.log_path, timeout, stop, &mut on_event).await
    };
    agent_run
        .map(|agent_run| (agent_run, activity))
        .map_err(|err| {
            if err.is_setup() {
                run.state.attempt_taken_back(attempt.id(), attempt.number);
            }
            err.into()
        })
}

/// Head what the agent appended to the learnings file with its story
/// and attempt; a failure is only worth a warning.
async fn label_learnings(run: &mut Run, attempt: &Attempt, before: u64) {
    if !run.settings.learnings() {
        return;
    }
    let learnings_path = run.run_dir.learnings_path();
    let (path, id, number) = (
        learnings_path.clone(),
        attempt.id().to_owned(),
        attempt.number,
    );
    let labelled = blocking(move || learnings::label(&path, before, &id, number)).await;
    if let Err(err) = labelled {
        run.warn(format!(
            "could not head this attempt's learnings in {}: {err}",
            learnings_path.display()
        ));
    }
}

/// Work the agent committed or moved elsewhere comes back first, then
/// every other branch and tag goes back where it was.
async fn bring_back(
    run: &mut Run,
    refs_before: RefSnapshot,
    attempt: &Attempt,
) -> Result<(), RunError> {
    if let Some(found) = settle::guard_head(run, "after the attempt").await? {
        let done = match found.commit {
            Some(commit) => settle::carry_work(run, commit, attempt.id()).await?,
            None => format!("its work was brought back onto {}", run.state.branch()),
        };
        let found = super::settle::found_words(&found);
        run.warn(format!("during the attempt {found}; {done}"));
    }
    restore_user_refs(run, refs_before, attempt).await
}

/// Where a finished attempt goes: an agent command that could not run
/// stops the run, a usage limit pauses it, anything else is judged.
async fn route(
    run: &mut Run,
    attempt: &Attempt,
    before: &[Story],
    ran: Ran,
) -> Result<AttemptOutcome, RunError> {
    let agent = attempt.agent.spec.clone();
    let story = &attempt.story;
    if let Some(code @ (126 | 127)) = ran.run.exit.code() {
        let words = last_line(&ran.run.stderr_tail).unwrap_or("not found");
        let setup = SetupError {
            kind: SetupKind::NotRunnable(code),
            words: words.to_owned(),
        };
        return Err(setup_failure(run, story, setup, &agent).await);
    }
    if let Some(limit) = ran
        .run
        .done
        .as_ref()
        .and_then(|done| done.rate_limit.clone())
    {
        pause_for_limit(run, attempt, limit).await?;
        return Ok(AttemptOutcome::RateLimited);
    }
    if let Some(setup) = setup_error(run, &ran).await? {
        return Err(setup_failure(run, story, setup, &agent).await);
    }
    evidence::judge_attempt(run, attempt, before, ran).await
}

/// The set-up error the attempt's ending amounts to, if any. Only a
/// failed run is looked at, and the worktree read only then.
async fn setup_error(run: &Run, ran: &Ran) -> Result<Option<SetupError>, RunError> {
    if !ran.run.failed_on_its_own() {
        return Ok(None);
    }
    let checkpoint = run.state.checkpoint();
    let (old, new) = run
        .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
        .await
        .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
    Ok(setup::recognise(&setup::Ending {
        failed: true,
        changed: old != new || !ran.submodules.is_empty(),
        model_turned: ran.activity.model_turned,
        spoke: ran.activity.events > 0,
        error: ran.run.done.as_ref().and_then(|done| done.error.as_deref()),
        stderr_tail: &ran.run.stderr_tail,
    }))
}

/// Put back every branch and tag the agent moved, created or deleted;
/// what it left there stays reachable beside the attempt's ref.
async fn restore_user_refs(
    run: &mut Run,
    before: RefSnapshot,
    attempt: &Attempt,
) -> Result<(), RunError> {
    let branches = run.settings.run_branches();
    let keep = attempt.refs_kept_at();
    let restored = run
        .with_repo(move |repo| repo.restore_user_refs(&before, &branches, &keep))
        .await
        .map_err(|err| RunError::git("put back the branches and tags", err))?;
    let _ = std::fs::remove_file(run.run_dir.refs_before_path());
    for moved in restored {
        run.warn(format!("the agent {}", super::kept_refs::words(&moved)));
    }
    Ok(())
}

/// The agent could not work at all (its command not found or not
/// executable, a root refusal, no API key, an unknown option): a
/// set-up error, not a failed story. The run stops at once and no
/// retry is spent; anything the attempt left is set aside first.
async fn setup_failure(
    run: &mut Run,
    story: &Story,
    setup: SetupError,
    agent: &AgentSpec,
) -> RunError {
    if let Err(err) = set_aside_setup_work(run, story).await {
        return err;
    }
    // `--agent-command` runs through `sh -c`: name the user's command.
    let command = match (agent.name.as_str(), agent.args.last()) {
        ("command", Some(script)) => script.clone(),
        _ => agent.program.clone(),
    };
    RunError::AgentSetup {
        command,
        change: run.settings.change_shown().to_string(),
        setup,
    }
}

/// What the agent that could not work left, set aside, and its attempt
/// taken back: it spent no retry.
async fn set_aside_setup_work(run: &mut Run, story: &Story) -> Result<(), RunError> {
    let checkpoint = run.state.checkpoint();
    let (old, new) = run
        .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
        .await
        .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
    if old != new {
        let base = run.settings.refs().setup_failure(now_ms());
        let message = format!(
            "ralph({}): work left by an agent that could not work",
            run.settings.change()
        );
        run.with_repo(move |repo| -> Result<(), RunError> {
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
    settle::tracking_reverted(run).await?;
    if let Some(last) = run.story_record(&story.id).attempts.last() {
        let number = last.attempt;
        run.state.attempt_taken_back(&story.id, number);
    }
    run.save()
}

/// How many attempts the story may have: one plus the retries, plus
/// the attempts that spent no retry (stops, usage limits, questions).
fn max_attempts(run: &mut Run, attempt: &Attempt) -> u32 {
    // In a pipeline, each role has its own bound; the story's is theirs
    // together.
    if let Some(turn) = &attempt.turn {
        return turn
            .pipeline
            .iter()
            .map(|role| role.max_iterations)
            .fold(0u32, u32::saturating_add);
    }
    super::receipts::most_attempts(run, attempt.id())
}

/// The promise token the story's contract asks for, if any.
pub(super) fn promise_token(run: &Run, story: &Story) -> Option<String> {
    run.settings
        .contract()
        .rules_for(&story.id, &story.acceptance_criteria)
        .promise
}

/// The attempt may not outlive the run's runtime budget.
fn attempt_timeout(run: &Run) -> Duration {
    let timeout = run.settings.agent_timeout();
    match run.settings.guardrails().max_runtime_secs {
        Some(max) => {
            let left = Duration::from_millis((max * 1000).saturating_sub(run.runtime_ms()));
            timeout.min(left.max(Duration::from_secs(1)))
        }
        None => timeout,
    }
}

/// Record the attempt as running, so that a killed loop is known to
/// have stopped mid-attempt.
fn begin_record(run: &mut Run, attempt: &Attempt) {
    let log = attempt
        .log_path
        .strip_prefix(&run.run_dir.dir)
        .unwrap_or(&attempt.log_path)
        .to_string_lossy()
        .into_owned();
    run.state.attempt_begun(
        attempt.id(),
        AttemptRecord {
            log,
            role: attempt.role(),
            agent: Some(attempt.agent.label()),
            ..AttemptRecord::new(attempt.number, AttemptOutcome::Running, now())
        },
    );
}

/// A usage limit: record it, spend no retry, revert nothing, and pause;
/// or, when it outlasts the wait, hand the story to a fallback agent.
async fn pause_for_limit(
    run: &mut Run,
    attempt: &Attempt,
    limit: agent::RateLimit,
) -> Result<(), RunError> {
    let story = &attempt.story;
    let now_secs = now();
    let backoff = FIRST_BACKOFF
        .saturating_mul(2u32.saturating_pow(run.state.rate_limit_pauses().min(10)))
        .min(MAX_BACKOFF);
    let until = match limit.reset_at_unix {
        Some(reset) if reset > now_secs => reset + 5,
        _ => now_secs + backoff.as_secs(),
    };
    let cap = run.settings.guardrails().max_rate_limit_wait_secs;
    let reason = format!("usage limit: {}", limit.message.trim());
    run.state
        .usage_limited(&story.id, attempt.number, reason.clone());
    if run.state.rate_limit_wait_secs() + (until - now_secs) > cap {
        if fallback::hand_to_fallback(run, attempt, &reason)? {
            return Ok(());
        }
        run.save()?;
        return Err(RunError::RateLimitCap { reason, cap });
    }
    let paused = run.state.paused(&story.id, until, reason.clone());
    run.commit(paused)?;
    notifications::notify_pause(run, until, reason);
    Ok(())
}

/// Add the attempt's time, tokens and cost to the run's totals and to
/// its own record.
fn account(run: &mut Run, attempt: &Attempt, agent_run: &AgentRun, duration_ms: u64) {
    let (input, output, cache_read, cache_creation, cost) = match &agent_run.done {
        Some(done) => (
            done.usage.input_tokens,
            done.usage.output_tokens,
            done.usage.cache_read_input_tokens,
            done.usage.cache_creation_input_tokens,
            done.cost_usd.unwrap_or(0.0),
        ),
        None => (0, 0, 0, 0, 0.0),
    };
    let tokens = prices::Tokens {
        input,
        output,
        cache_read,
        cache_write: cache_creation,
    };
    let reported = agent_run
        .done
        .as_ref()
        .is_some_and(|d| d.cost_usd.is_some());
    let estimate = (!reported)
        .then(|| estimated_cost(run, attempt, tokens))
        .flatten();
    let usage = Usage {
        duration_ms,
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_creation_tokens: cache_creation,
        cost_usd: estimate.unwrap_or(cost),
        cost_estimated: estimate.is_some(),
        tokens_unknown: agent_run
            .done
            .as_ref()
            .is_some_and(|done| done.tokens_unknown),
    };
    run.state
        .attempt_spent(attempt.id(), attempt.number, &usage);
}

/// What `tokens` cost by the contract's price table, for an agent that
/// reported tokens but no cost; `None` when it used none or none is priced.
fn estimated_cost(run: &Run, attempt: &Attempt, tokens: prices::Tokens) -> Option<f64> {
    let used = [
        tokens.input,
        tokens.output,
        tokens.cache_read,
        tokens.cache_write,
    ]
    .iter()
    .any(|&count| count > 0);
    let spec = &attempt.agent.spec;
    let label = attempt.agent.label();
    let mut names: Vec<&str> = prices::model_in(&spec.args).into_iter().collect();
    names.extend([label.as_str(), spec.name.as_str()]);
    let table = &run.settings.contract().prices;
    used.then(|| prices::estimate(table, &names, tokens))?
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
