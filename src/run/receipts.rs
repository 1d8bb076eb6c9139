//! Receipts: the trailers each checkpoint commit carries, so that `git log`
//! alone is an audit trail of who did what for how much
//! (`git interpret-trailers --parse` reads them). A cleanup squashes the
//! checkpoints away, so every receipt is also appended to the run's
//! `receipts.txt`, which moves to history with the rest of the run.

use super::context::Run;
use std::io::Write;

use super::context::AgentVersion;
use super::mode::Attempts;
use crate::contract::Role;
use crate::state::AttemptOutcome;

/// The agent CLI's version, waiting for the question asked at the
/// start if it is still out.
async fn agent_version(run: &mut Run) -> Option<String> {
    if let AgentVersion::Asking(task) = &mut run.agent_version {
        run.agent_version = AgentVersion::Known(task.await.ok().flatten());
    }
    match &run.agent_version {
        AgentVersion::Known(version) => version.clone(),
        AgentVersion::Asking(_) => None,
    }
}

/// The agent recorded as running `attempt` at `story`.
fn ran_by_agent(run: &Run, story: &str, attempt: u32) -> Option<String> {
    let record = run.state.stories().iter().find(|s| s.id == story)?;
    let attempt = record.attempts.iter().find(|a| a.attempt == attempt)?;
    attempt.agent.clone()
}

/// `Ralph-Answered: <n>`: the story waited for answers to `n` questions.
fn answered(run: &Run, story: &str) -> Option<(&'static str, String)> {
    let answered = super::asked::exchange(&run.state, story).len();
    (answered > 0).then(|| ("Ralph-Answered", answered.to_string()))
}

/// How many attempts a story outside a pipeline may have, as its
/// attempts are shown and its checkpoint's `Ralph-Attempt` trailer says:
/// one plus the retries, plus the attempts that spent no retry.
pub(super) fn most_attempts(run: &mut Run, story: &str) -> u32 {
    let retries = match run.settings.policy().attempts {
        Attempts::One => return 1,
        Attempts::Retried(retries) => retries,
    };
    let free = run
        .story_record(story)
        .attempts
        .iter()
        .filter(|a| {
            matches!(
                a.outcome,
                AttemptOutcome::Interrupted
                    | AttemptOutcome::RateLimited
                    | AttemptOutcome::Question
            )
        })
        .count() as u32;
    retries.saturating_add(1).saturating_add(free)
}

/// The trailer block of the checkpoint for `attempt` at `story`.
pub(super) async fn receipt(run: &mut Run, story: &str, attempt: u32) -> String {
    let version = agent_version(run).await;
    let max = most_attempts(run, story);
    let pipeline = pipeline_receipt(run, story);
    let settings = run.settings.recorded();
    let agent = match (&settings.agent_command, &version) {
        (Some(command), _) => format!("command {command}"),
        (None, Some(version)) => format!("{} {version}", settings.agent),
        (None, None) => settings.agent.clone(),
    };
    // A command is what it runs; a model is said only when one was set.
    let mut ran_by = match (&settings.agent_command, settings.model.as_deref()) {
        (Some(_), None) => agent,
        (_, model) => format!("{agent} ({})", model.unwrap_or("default model")),
    };
    // A story handed to a fallback agent says so, and who it stood in for.
    let fallback = run
        .state
        .fallback()
        .as_ref()
        .filter(|fallback| fallback.story == story)
        .map(|fallback| fallback.agent.clone());
    let handed = fallback.as_ref().map(|to| {
        let from = super::attempt::label(run.settings.agent());
        format!("{to}, for {from} (usage limit)")
    });
    let ran = ran_by_agent(run, story, attempt);
    if let Some(to) = fallback.filter(|to| ran.as_ref() == Some(to)) {
        ran_by = format!("{to} (default model)");
    }
    let change = run.settings.change_shown().to_string();
    let mut trailers = vec![
        ("Ralph-Change", change),
        ("Ralph-Story", story.to_owned()),
        ("Ralph-Attempt", format!("{attempt} of {max}")),
        ("Ralph-Agent", ran_by.clone()),
    ];
    if let Some(handed) = handed {
        trailers.push(("Ralph-Fallback", handed));
    }
    trailers.extend(answered(run, story));
    if let Some(pipeline) = pipeline {
        trailers.retain(|(key, _)| *key != "Ralph-Attempt");
        trailers.insert(2, ("Ralph-Attempt", attempt.to_string()));
        trailers.extend(pipeline);
    } else if let Some(record) = run.attempt_record(story, attempt) {
        let record = record.clone();
        // Tokens the agent did not report are not counted as none.
        if record.tokens() > 0 {
            trailers.push(("Ralph-Tokens", record.tokens().to_string()));
        }
        if record.cost_usd > 0.0 {
            trailers.push(("Ralph-Cost", format!("{:.4}", record.cost_usd)));
        }
        if !record.passed_checks.is_empty() {
            let passed: Vec<String> = record
                .passed_checks
                .iter()
                .map(|name| format!("{name} passed"))
                .collect();
            trailers.push(("Ralph-Checks", passed.join(", ")));
        }
        if let Some(flag) = record.flag {
            trailers.push(("Ralph-Flag", flag.to_string()));
        }
    }
    trailers
        .into_iter()
        .map(|(key, value)| format!("{key}: {}\n", one_line(&value)))
        .collect()
}

/// The trailers of a story that went through a role pipeline: each
/// role with its iterations and its agent, and what the whole pipeline
/// spent; the checks and the flag of the coder's last pass. `None` for
/// a story without roles.
fn pipeline_receipt(run: &Run, story: &str) -> Option<Vec<(&'static str, String)>> {
    let record = run.state.stories().iter().find(|s| s.id == story)?.clone();
    let roles: Vec<Role> = record.attempts.iter().filter_map(|a| a.role).collect();
    if roles.is_empty() {
        return None;
    }
    let mut trailers = Vec::new();
    for role in crate::contract::roles::in_order(&roles) {
        // The attempt being checkpointed counts too: it still runs.
        let running = record
            .attempts
            .iter()
            .any(|a| a.role == Some(role) && a.outcome == AttemptOutcome::Running);
        let n = record.iterations(role) + u32::from(running);
        let agent = role_agent_name(run, role);
        let plural = if n == 1 { "" } else { "s" };
        trailers.push((
            "Ralph-Role",
            format!("{role}, {n} iteration{plural} ({agent})"),
        ));
    }
    let tokens = record
        .attempts
        .iter()
        .map(crate::state::AttemptRecord::tokens)
        .fold(0, u64::saturating_add);
    if tokens > 0 {
        trailers.push(("Ralph-Tokens", tokens.to_string()));
    }
    let cost: f64 = record.attempts.iter().map(|a| a.cost_usd).sum();
    if cost > 0.0 {
        trailers.push(("Ralph-Cost", format!("{cost:.4}")));
    }
    let passes: Vec<&crate::state::AttemptRecord> = record
        .attempts
        .iter()
        .filter(|a| a.role == Some(Role::Coder) && a.outcome == AttemptOutcome::Passed)
        .collect();
    if let Some(last) = passes.last()
        && !last.passed_checks.is_empty()
    {
        let passed: Vec<String> = last
            .passed_checks
            .iter()
            .map(|name| format!("{name} passed"))
            .collect();
        trailers.push(("Ralph-Checks", passed.join(", ")));
    }
    // The coder's first pass is measured against the checkpoint: its
    // flag is about the story's work; later passes build on it.
    if let Some(flag) = passes.first().and_then(|first| first.flag) {
        trailers.push(("Ralph-Flag", flag.to_string()));
    }
    Some(trailers)
}

/// Who plays `role`: its command, its preset, or the run's agent.
fn role_agent_name(run: &Run, role: Role) -> String {
    let choice = run.settings.role_agents().get(&role);
    let configured = run
        .settings
        .contract()
        .pipeline_for("", &[role], run.settings.role_agents())
        .ok()
        .and_then(|rules| rules.into_iter().next());
    let command = choice
        .and_then(|c| c.agent_command.clone())
        .or_else(|| configured.as_ref().and_then(|r| r.agent_command.clone()));
    let preset = choice
        .and_then(|c| c.agent.clone())
        .or_else(|| configured.as_ref().and_then(|r| r.agent.clone()));
    match (command, preset) {
        (Some(_), _) => "its own command".to_owned(),
        (None, Some(preset)) => preset,
        (None, None) => "the run's agent".to_owned(),
    }
}

/// Keep `receipt` of `commit` in the run's directory.
pub(super) fn keep_receipt(run: &mut Run, commit: &str, subject: &str, receipt: &str) {
    let path = run.run_dir.receipts_path();
    let entry = format!("commit {commit}\n{subject}\n\n{receipt}\n");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(entry.as_bytes()));
    if let Err(err) = written {
        run.warn(format!(
            "could not keep the receipt in {}: {err}",
            path.display()
        ));
    }
}

/// A trailer value is one line: commands and flags may hold newlines.
fn one_line(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn trailer_values_are_one_line() {
        assert_eq!(one_line("sh -c 'a\n  b'"), "sh -c 'a b'");
    }
}
