//! What a run would do, in one glance, before it starts: the stories as
//! read, the first prompt exactly as the agent would get it, the agent's
//! command line, the contract and the guardrails. `start --dry-run` prints
//! it and the preview screen shows it. Nothing is written.

use serde::Serialize;

use super::error::RunError;
use super::opening::{Found, Named};
use super::sources::source_for;
use crate::contract::{Contract, Method, RoleRules, StoryRules};
use crate::git::{ChangeName, Repo};
use crate::preview::{Preview, RolePreview};
use crate::prompt;
use crate::settings::{Requested, Settings};
use crate::state::RunDir;

/// A run before it starts. Serialises as the [`Preview`]'s object with
/// `"agent"`, `"contract"`, `"guardrails"` and `"resumes"` added.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    #[serde(flatten)]
    pub preview: Preview,
    pub agent: AgentPlan,
    /// The contract as lines: the promise, the checks, what is protected.
    pub contract: Vec<String>,
    /// The limits the run ends within, as lines.
    pub guardrails: Vec<String>,
    /// A stopped run of this change exists: starting resumes it, with the
    /// settings it began with.
    pub resumes: bool,
    /// The worktree of its own the run works in, beside the user's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// With `--parallel`: what starts at once, and what waits for what.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<super::parallel::Schedule>,
    /// For a CI matrix, one job per story (`start --story`): each open
    /// story, whether it may run now, and the waves; whenever the stories
    /// could run side by side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<super::matrix::Matrix>,
}

/// The agent a run would start.
#[derive(Debug, Clone, Serialize)]
pub struct AgentPlan {
    pub name: String,
    /// As a person would type it, the prompt shown as `<prompt>`.
    pub command: String,
    /// Whether its program is on PATH.
    pub installed: bool,
}

/// The plan of a run of `change` with the flags in `req`.
pub fn plan(repo: &Repo, change: &ChangeName, req: &Requested) -> Result<Plan, RunError> {
    let found = Found::look(repo, change)?;
    let settings = found.settings(repo, req)?;
    let worktree = match found.stopped() {
        Some(state) => state
            .worktree()
            .as_ref()
            .map(|record| record.linked.path.clone()),
        None => super::beside::place(repo, change, req, settings.parallel.is_some())?,
    };
    let source = source_for(repo, change, &settings, found.begin())?;
    let named = Named::resolve(repo, &settings, None)?;
    let contract = found.contract(repo, change, &settings, source.as_ref())?;
    let roles = super::mode::roles_of(&settings, &contract);
    let mode = super::mode::Mode::of(&settings, &roles);
    // The run-wide promise (the first role's, with roles); a story's own
    // contract may name another.
    let first_role = contract
        .pipeline_for("", &roles, &settings.role_agents)?
        .into_iter()
        .next();
    let token = match &first_role {
        Some(rules) => Some(rules.promise.clone()),
        None => contract.rules_for("", &[]).promise,
    };
    let learnings = (!settings.no_learnings).then(|| learnings_of(&found.run_dir));
    let options = crate::preview::PreviewOptions {
        template: Some(&named.template),
        promise_token: token.as_deref(),
        learnings: learnings.as_ref(),
        questions: !settings.no_questions,
    };
    let mut preview = crate::preview::preview_source(source.as_ref(), change.as_str(), options)?;
    for story in &mut preview.stories {
        let pipeline = contract.pipeline_for(&story.id, &roles, &settings.role_agents)?;
        let rules = contract.rules_for(&story.id, &[]);
        story.pipeline = pipeline
            .iter()
            .map(|role| role_preview(role, &rules))
            .collect();
    }
    let schedule = schedule(&settings, &contract, source.as_ref())?;
    let matrix = matrix(mode, &contract, source.as_ref());
    let spec = named.agent;
    Ok(Plan {
        preview,
        agent: AgentPlan {
            installed: crate::process::is_runnable(&spec.program),
            command: spec.command_line(),
            name: spec.name,
        },
        contract: contract_lines(&contract, &settings, mode),
        guardrails: guardrail_lines(&settings, !roles.is_empty()),
        resumes: found.resumes,
        worktree: worktree.map(|path| path.display().to_string()),
        schedule,
        matrix,
    })
}

/// The learnings file of the run in `run_dir` as the first prompt would
/// quote it.
fn learnings_of(run_dir: &RunDir) -> prompt::Learnings {
    let path = run_dir.learnings_path();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    prompt::Learnings {
        path: path.to_string_lossy().into_owned(),
        excerpt: crate::state::learnings::excerpt(&text, crate::state::learnings::CAP),
    }
}

/// A role of a story's pipeline as the plan shows it.
fn role_preview(role: &RoleRules, story: &StoryRules) -> RolePreview {
    let agent = match (&role.agent_command, &role.agent) {
        (Some(command), _) => format!("command {command}"),
        (None, Some(preset)) => preset.clone(),
        (None, None) => "the run's agent".to_owned(),
    };
    let agent = match &role.model {
        Some(model) => format!("{agent} (model {model})"),
        None => agent,
    };
    let verification = match &role.verification {
        Some(method) => describe_method(method),
        None => {
            let checks: Vec<String> = story.checks.iter().map(|check| check.label()).collect();
            let contract = match (&story.verify, checks.is_empty()) {
                (Some(method), _) if !matches!(method, Method::StringMatch { .. }) => {
                    describe_method(method)
                }
                (_, false) => format!("checks {}", checks.join(", ")),
                (_, true) => "the promise alone".to_owned(),
            };
            format!("nothing of its own to run: falls back to the story's contract ({contract})")
        }
    };
    RolePreview {
        role: role.role,
        agent,
        promise: role.promise.clone(),
        max_iterations: role.max_iterations,
        verification,
    }
}

/// A verification method in words.
fn describe_method(method: &Method) -> String {
    match method {
        Method::StringMatch { .. } => "string_match: the promise".to_owned(),
        Method::External { command, .. } => format!("external: {command}"),
        Method::Semantic {
            agent,
            command,
            negative_patterns,
            ..
        } => {
            let mut parts = Vec::new();
            if !negative_patterns.is_empty() {
                parts.push(format!("patterns {}", negative_patterns.join(", ")));
            }
            if let Some(agent) = agent {
                parts.push(format!("verifier {agent}"));
            }
            if let Some(command) = command {
                parts.push(format!("verifier command {command}"));
            }
            format!("semantic: {}", parts.join(", "))
        }
        Method::MultiStage { stages, .. } => {
            let stages: Vec<String> = stages
                .iter()
                .map(|stage| describe_method(&stage.method))
                .collect();
            format!("multi_stage: {}", stages.join("; "))
        }
    }
}

fn contract_lines(
    contract: &Contract,
    settings: &Settings,
    mode: super::mode::Mode,
) -> Vec<String> {
    let rules = contract.rules_for("", &[]);
    let mut lines = vec![match (&rules.verify, &rules.promise) {
        (Some(method), _) if !matches!(method, Method::StringMatch { .. }) => {
            format!("verified by: {}", method.name())
        }
        (_, Some(token)) => format!("promise: <promise>{token}</promise>"),
        (_, None) => "promise: none (the checks decide)".to_owned(),
    }];
    lines.extend(mode.shown().map(str::to_owned));
    lines.extend(
        rules
            .checks
            .iter()
            .map(|check| format!("check: {}", check.label())),
    );
    lines.extend(
        rules
            .protected
            .iter()
            .map(|path| format!("protected: {path}")),
    );
    lines.extend(
        contract
            .files
            .iter()
            .map(|file| format!("protected: {file}")),
    );
    for (story, extra) in &contract.story {
        let more = extra.checks.len() + extra.acceptance_criteria.len() + extra.protected.len();
        if more > 0 {
            lines.push(format!(
                "story {story}: {more} more rule{}",
                if more == 1 { "" } else { "s" }
            ));
        }
    }
    for event in crate::contract::HookEvent::ALL {
        for hook in contract.hooks.of(event) {
            let stops = match hook.on_error {
                crate::contract::OnError::Stop => " (a failure stops the run)",
                crate::contract::OnError::Report => "",
            };
            lines.push(format!("hook {event}: {}{stops}", hook.command));
        }
    }
    let webhook = contract.notify.webhook().ok().flatten();
    let mut told = Vec::new();
    if settings.notify {
        told.push("a desktop notification and the bell".to_owned());
    }
    if let Some(webhook) = webhook {
        told.push(format!("the webhook {}", webhook.url()));
    }
    if !told.is_empty() {
        lines.push(format!("when the run ends: {}", told.join(", ")));
    }
    let require_change = rules.require_change.unwrap_or(settings.require_change);
    lines.push(if require_change {
        "ticking boxes alone: refused".to_owned()
    } else {
        "ticking boxes alone: accepted and flagged".to_owned()
    });
    lines
}

fn guardrail_lines(settings: &Settings, roles: bool) -> Vec<String> {
    let limits = &settings.guardrails;
    let none = || "no limit".to_owned();
    let per_story = if !roles {
        format!(
            "attempts per story: {} ({} retries)",
            settings.max_retries.saturating_add(1),
            settings.max_retries
        )
    } else {
        // A pipeline's roles are bound by their own iterations.
        format!(
            "attempts per story: each role's own iterations, as its pipeline shows; {} for a story without roles",
            settings.max_retries.saturating_add(1)
        )
    };
    let mut lines = vec![
        per_story,
        format!(
            "attempts in all: {}",
            limits.max_iterations.map_or_else(none, |n| n.to_string())
        ),
        format!(
            "no progress: {}",
            match limits.no_progress_limit {
                0 => none(),
                n => format!("stop after {n} attempts that change nothing"),
            }
        ),
        format!(
            "runtime: {}",
            limits.max_runtime_secs.map_or_else(none, clock)
        ),
        format!(
            "cost: {}",
            limits
                .max_cost
                .map_or_else(none, |usd| format!("${usd:.2}"))
        ),
        format!(
            "tokens: {}",
            limits.max_tokens.map_or_else(none, |n| n.to_string())
        ),
        format!("one attempt: {}", clock(settings.agent_timeout_secs)),
    ];
    if settings.idle_timeout_secs > 0 {
        lines.push(format!(
            "silence: an agent that prints nothing for {} is stopped",
            clock(settings.idle_timeout_secs)
        ));
    }
    if limits.max_rate_limit_wait_secs > 0 {
        lines.push(format!(
            "usage-limit waits: {}",
            clock(limits.max_rate_limit_wait_secs)
        ));
    }
    if !settings.fallback_agents.is_empty() {
        lines.push(format!(
            "usage limits past the wait: the story goes to {}",
            settings.fallback_agents.join(", then ")
        ));
    }
    lines
}

/// `1h30m`, `45m`, `30s`.
fn clock(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// With `--parallel N`: what the run would start with, and what would
/// wait for what.
fn schedule(
    settings: &Settings,
    contract: &Contract,
    source: &dyn crate::stories::StorySource,
) -> Result<Option<super::parallel::Schedule>, RunError> {
    let Some(width) = settings.parallel else {
        return Ok(None);
    };
    let stories = source.load()?;
    Ok(Some(super::parallel::schedule(
        contract,
        source.kind(),
        &stories,
        width as usize,
    )))
}

/// The matrix of a run whose stories could run side by side: story by
/// story, with their marks in the worktree.
fn matrix(
    mode: super::mode::Mode,
    contract: &Contract,
    source: &dyn crate::stories::StorySource,
) -> Option<super::matrix::Matrix> {
    use crate::stories::SourceKind;
    mode.side_by_side().ok()?;
    let kind = source.kind();
    if !matches!(
        kind,
        SourceKind::OpenSpec | SourceKind::Markdown | SourceKind::Prd
    ) {
        return None;
    }
    let stories = source.load().ok()?;
    Some(super::matrix::matrix(contract, kind, &stories))
}

#[cfg(test)]
mod tests {
    use super::clock;

    #[test]
    fn clocks() {
        assert_eq!(clock(30), "30s");
        assert_eq!(clock(2700), "45m");
        assert_eq!(clock(90), "1m30s");
        assert_eq!(clock(3600), "1h");
        assert_eq!(clock(5400), "1h30m");
    }
}
