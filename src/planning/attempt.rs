//! One try at a plan: its prompt, a fresh agent run in the user's
//! worktree through the one agent runner, what it did outside the plan
//! undone, and its time, tokens and cost recorded. An agent that cannot
//! work at all, or that hits its usage limit, ends the plan: no try fixes
//! that.

use std::time::Instant;

use tokio::sync::watch;

use super::contain::Noted;
use super::error::PlanError;
use super::events::PlanEvent;
use super::prompt::{self, PromptInput};
use super::record::{PlanAttempt, Record};
use super::{Prepared, write_file};
use crate::agent::setup::{self, SetupError, SetupKind};
use crate::agent::{self, AgentEvent, AgentRun, ExitStatusKind, Invocation};
use crate::git::Repo;
use crate::state::now;

/// A try about to run.
pub(super) struct Try<'a> {
    pub prepared: &'a Prepared,
    pub attempt: u32,
    pub tries: u32,
    /// What the last try was sent back for.
    pub findings: &'a [String],
}

impl Try<'_> {
    /// Run the try's agent and contain it; returns whether the user
    /// stopped it.
    pub async fn run(
        self,
        repo: &mut Repo,
        record: &mut Record,
        on_event: &mut (dyn FnMut(PlanEvent) + Send),
        stop: watch::Receiver<bool>,
    ) -> Result<bool, PlanError> {
        let request = &self.prepared.request;
        let invocation = self.invocation(repo, record)?;
        let log_path = record.log_path(self.attempt);
        let noted = Noted::take(repo)?;
        let clock = Instant::now();
        let attempt = self.attempt;
        let (mut model_turned, mut spoke) = (false, false);
        let ran = {
            let mut forward = |event: AgentEvent| {
                spoke = true;
                model_turned |= matches!(event, AgentEvent::Message { .. });
                on_event(PlanEvent::Agent { attempt, event });
            };
            agent::run(
                &invocation,
                &log_path,
                request.agent_timeout,
                stop,
                &mut forward,
            )
            .await
        };
        let contained = noted.contain(repo, &self.prepared.target, &self.ref_base(record))?;
        for what in &contained.undone {
            on_event(PlanEvent::Undone {
                attempt,
                what: what.clone(),
            });
        }
        let run = ran?;
        account(
            record,
            &run,
            clock.elapsed().as_millis() as u64,
            contained.undone,
        );
        record.save()?;
        let ending = setup::Ending {
            failed: run.failed_on_its_own(),
            changed: contained.changed,
            model_turned,
            spoke,
            error: run.done.as_ref().and_then(|done| done.error.as_deref()),
            stderr_tail: &run.stderr_tail,
        };
        judge_ending(&run, &ending, request)?;
        Ok(run.exit == ExitStatusKind::Stopped)
    }

    /// The try's prompt, written, and the agent's invocation with it; the
    /// try is recorded as begun.
    fn invocation(&self, repo: &Repo, record: &mut Record) -> Result<Invocation, PlanError> {
        let prepared = self.prepared;
        let request = &prepared.request;
        let (prompt_path, log_path) = (
            record.prompt_path(self.attempt),
            record.log_path(self.attempt),
        );
        let prompt = prompt::render(&PromptInput {
            target: &prepared.target,
            brief: prepared.brief.as_ref(),
            attempt: self.attempt,
            attempts: self.tries,
            max_tasks: request.max_tasks,
            refine: request.refine,
            findings: self.findings,
            workdir: repo.workdir(),
        });
        write_file(&prompt_path, prompt.as_bytes())?;
        let env = vec![
            ("RALPH_CHANGE".to_owned(), request.change.to_string()),
            ("RALPH_PLAN".to_owned(), prepared.target.shown()),
            ("RALPH_ATTEMPT".to_owned(), self.attempt.to_string()),
            (
                "RALPH_PROMPT_FILE".to_owned(),
                prompt_path.to_string_lossy().into_owned(),
            ),
        ];
        let mut invocation = request.agent.invocation(
            &prompt,
            &prompt_path,
            repo.workdir(),
            env,
            agent::DEFAULT_TOKEN,
        );
        invocation.idle = request.idle_timeout;
        invocation.pid_file = Some(record.dir.join(super::cut_short::AGENT_PID));
        record.plan.attempts.push(PlanAttempt {
            attempt: self.attempt,
            started_at: now(),
            prompt: record.relative(&prompt_path),
            log: record.relative(&log_path),
            ..PlanAttempt::default()
        });
        record.plan.totals.attempts += 1;
        record.save()?;
        Ok(invocation)
    }

    /// `refs/ralph/<change>/plan/<n>/<try>`: where what the agent left
    /// where it must not is kept.
    fn ref_base(&self, record: &Record) -> String {
        let session = record
            .dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!(
            "{}/plan/{session}/{}",
            self.prepared.request.change.ref_namespace(),
            self.attempt
        )
    }
}

/// An agent that could not work, or hit its usage limit, ends the plan.
fn judge_ending(
    run: &AgentRun,
    ending: &setup::Ending<'_>,
    request: &super::Request,
) -> Result<(), PlanError> {
    let command = match (request.agent.name.as_str(), request.agent.args.last()) {
        ("command", Some(script)) => script.clone(),
        _ => request.agent.program.clone(),
    };
    if let Some(code @ (126 | 127)) = run.exit.code() {
        let words = run
            .stderr_tail
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .unwrap_or("not found");
        return Err(PlanError::AgentSetup {
            command,
            setup: SetupError {
                kind: SetupKind::NotRunnable(code),
                words: words.to_owned(),
            },
        });
    }
    if let Some(limit) = run.done.as_ref().and_then(|done| done.rate_limit.as_ref()) {
        return Err(PlanError::UsageLimit(limit.message.trim().to_owned()));
    }
    if ending.failed
        && let Some(setup) = setup::recognise(ending)
    {
        return Err(PlanError::AgentSetup { command, setup });
    }
    Ok(())
}

/// The try's time, tokens and cost, into its record and the totals.
fn account(record: &mut Record, run: &AgentRun, duration_ms: u64, undone: Vec<String>) {
    let (usage, cost) = match &run.done {
        Some(done) => (done.usage, done.cost_usd.unwrap_or(0.0)),
        None => (agent::Usage::default(), 0.0),
    };
    let totals = &mut record.plan.totals;
    totals.add_tokens(
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
    );
    totals.cost_usd += cost;
    totals.tokens_unknown |= run.done.as_ref().is_some_and(|done| done.tokens_unknown);
    if let Some(attempt) = record.plan.attempts.last_mut() {
        attempt.duration_ms = duration_ms;
        attempt.input_tokens = usage
            .input_tokens
            .saturating_add(usage.cache_read_input_tokens)
            .saturating_add(usage.cache_creation_input_tokens);
        attempt.output_tokens = usage.output_tokens;
        attempt.cost_usd = cost;
        attempt.undone = undone;
    }
}
