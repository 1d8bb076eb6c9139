//! Fallback agents (`--fallback-agent`, `ralph.fallbackAgents`): when the
//! agent hits a usage limit that resets later than `--max-rate-limit-wait`
//! allows, the story goes to the next fallback in the list, with the same
//! prompt, instead of ending the run; the run's own agent is tried again at
//! the next story. Which agent ran each attempt is recorded, for status,
//! log and the checkpoint's trailers.
//!
//! In a role pipeline the fallbacks stand in for the run's agent alone: a
//! role that runs it (no agent of its own) falls back with it, while a role
//! given an agent of its own (`--role-agent`, `agent` or `agent_command` in
//! `[roles.<role>]`) keeps it, since that agent was chosen for a second
//! opinion a stand-in could not give; its usage limit ends the run as
//! without fallbacks.

use super::attempt::{Attempt, AttemptAgent, Turn};
use super::context::Run;
use super::error::RunError;
use super::start_error::StartError;
use crate::agent::AgentSpec;
use crate::contract::RoleRules;
use crate::events::Event;
use crate::state::Change;
use crate::stories::Story;

/// Every fallback must be installed before a run begins on them.
pub(super) fn check_installed(specs: &[AgentSpec]) -> Result<(), StartError> {
    match specs
        .iter()
        .find(|spec| !crate::process::is_runnable(&spec.program))
    {
        Some(spec) => Err(StartError::AgentMissing {
            name: format!("{} (a fallback agent)", spec.name),
            program: spec.program.clone(),
        }),
        None => Ok(()),
    }
}

/// The agent of the next attempt at `story`, playing `turn`'s role: a
/// role's agent of its own, the fallback the story was handed to, or
/// the run's agent.
pub(super) fn attempt_agent(
    run: &Run,
    story: &Story,
    turn: Option<&Turn>,
) -> Result<AttemptAgent, RunError> {
    if let Some(turn) = turn
        && (turn.rules.agent.is_some() || turn.rules.agent_command.is_some())
    {
        return Ok(AttemptAgent {
            spec: role_agent(run, &turn.rules)?,
            falls_back: false,
        });
    }
    let handed = run
        .state
        .fallback()
        .as_ref()
        .filter(|fallback| fallback.story == story.id)
        .and_then(|fallback| {
            run.settings
                .fallback_agents()
                .iter()
                .find(|spec| spec.name == fallback.agent)
        });
    let spec = match (handed, turn) {
        (Some(spec), _) => spec.clone(),
        (None, Some(turn)) => role_agent(run, &turn.rules)?,
        (None, None) => run.settings.agent().clone(),
    };
    Ok(AttemptAgent {
        spec,
        falls_back: true,
    })
}

/// `agent` hit a usage limit at `story` that resets later than the
/// wait allows: hand the story to the next fallback, if there is one.
/// Returns whether one took it.
pub(super) fn hand_to_fallback(
    run: &mut Run,
    attempt: &Attempt,
    reason: &str,
) -> Result<bool, RunError> {
    let (story, agent) = (&attempt.story, &attempt.agent);
    if !agent.falls_back {
        return Ok(false);
    }
    let fallbacks = &run.settings.fallback_agents();
    let next = match &run.state.fallback() {
        Some(fallback) if fallback.story == story.id => fallbacks
            .iter()
            .position(|spec| spec.name == fallback.agent)
            .map_or(0, |at| at + 1),
        _ => 0,
    };
    let Some(to) = fallbacks.get(next).map(|spec| spec.name.clone()) else {
        return Ok(false);
    };
    let from = agent.label();
    run.state.fell_back(&story.id, to.clone());
    run.commit(Change::telling(Event::AgentFallback {
        story_id: story.id.clone(),
        attempt: attempt.number,
        message: format!(
            "{from} hit a usage limit that resets later than --max-rate-limit-wait allows ({reason}); story {} goes to {to}",
            story.id
        ),
        from,
        to,
    }))?;
    Ok(true)
}

/// The agent a role runs (see [`super::run_settings::RunSettings::role_agent`]).
pub(super) fn role_agent(run: &Run, rules: &RoleRules) -> Result<AgentSpec, RunError> {
    Ok(run.settings.role_agent(rules)?)
}
