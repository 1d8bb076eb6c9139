//! Every setting of a run, resolved in one place and into typed values.
//!
//! A setting comes from four layers: a flag beats the run's own stored
//! setting (on resume), which beats git config (local > global > system),
//! which beats the default. Resolving them here, once, keeps `start`, the
//! demo and the tests from each growing their own precedence rules. This
//! module knows neither clap nor the command layer's errors: the command
//! line hands it a [`Requested`] of plain values, and it answers with
//! [`Settings`] (stored in `state.json`) or a [`SettingsError`] that names
//! the key or flag at fault.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod configured;
mod handoff;
mod job;
mod source_setting;

pub use configured::{Configured, WorktreeChoice};
pub use handoff::{Forge, Handoff, ReviewRequest};
pub use job::StoryJob;

use crate::config::{self, ConfigError};
use crate::contract::{Role, RoleAgent};
use crate::git::Repo;
use crate::stories::SourceKind;
pub use crate::stories::trackers::TrackerQuery;

/// What to do when a loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFinish {
    /// Ask with a menu on a terminal; without one, keep and say how to finish.
    #[default]
    Ask,
    /// Stay on `ralph/<change>`.
    Keep,
    /// Back to the original branch with all the work uncommitted.
    Cleanup,
    /// Keep, then push `ralph/<change>` to the remote.
    Push,
    /// Keep, push, and open (or update) a pull request.
    Pr,
}

impl OnFinish {
    pub fn as_str(self) -> &'static str {
        match self {
            OnFinish::Ask => "ask",
            OnFinish::Keep => "keep",
            OnFinish::Cleanup => "cleanup",
            OnFinish::Push => "push",
            OnFinish::Pr => "pr",
        }
    }

    pub fn parse(value: &str) -> Option<OnFinish> {
        match value {
            "ask" => Some(OnFinish::Ask),
            "keep" => Some(OnFinish::Keep),
            "cleanup" => Some(OnFinish::Cleanup),
            "push" => Some(OnFinish::Push),
            "pr" => Some(OnFinish::Pr),
            _ => None,
        }
    }
}

/// Every value of `--on-finish` and `ralph.onFinish`.
const ON_FINISH: &[&str] = &["ask", "keep", "cleanup", "push", "pr"];

/// The defaults the man page documents.
pub const DEFAULT_AGENT: &str = "claude";
pub const DEFAULT_MAX_RETRIES: u32 = 3;
pub const DEFAULT_COMMAND_TIMEOUT: u64 = 30;
pub const DEFAULT_AGENT_TIMEOUT: u64 = 3600;
pub const DEFAULT_NO_PROGRESS_LIMIT: u32 = 3;
/// Six hours: long enough for a five-hour usage window to reset.
pub const DEFAULT_MAX_RATE_LIMIT_WAIT: u64 = 6 * 3600;
/// Fifteen minutes: longer than a quiet build or test run, shorter than
/// an hour of nothing.
pub const DEFAULT_IDLE_TIMEOUT: u64 = 15 * 60;

/// A run's settings, as stored in `state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The agent preset name, or `command` for `--agent-command`.
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub max_retries: u32,
    pub command_timeout_secs: u64,
    pub agent_timeout_secs: u64,
    /// `--idle-timeout`: seconds an agent may print nothing before it is
    /// stopped; 0 lets it be silent (and is what runs of earlier releases
    /// read as).
    #[serde(default)]
    pub idle_timeout_secs: u64,
    pub on_finish: OnFinish,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_template: Option<String>,
    /// Where the stories come from; `None` until detected ("auto").
    #[serde(with = "source_setting")]
    pub source: Option<SourceKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prd_file: Option<String>,
    /// `--issues`: the file the issues were read from, absolute, instead of
    /// `gh` (GitHub) or `.beads/issues.jsonl` (beads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues_file: Option<String>,
    /// `--label`: the GitHub label whose open issues are the work; `None`
    /// is [`crate::stories::github::DEFAULT_LABEL`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `--comment`: a comment on each GitHub issue whose story is finished.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub comment: bool,
    /// Which issues of GitLab, Linear or Jira, and `--close`.
    #[serde(default, skip_serializing_if = "TrackerQuery::is_empty")]
    pub tracker: TrackerQuery,
    /// Guardrails; `None` or 0 means no limit.
    #[serde(default)]
    pub guardrails: Guardrails,
    /// One attempt per story, no interception, no retries.
    #[serde(default)]
    pub once: bool,
    /// Prompt mode: the prompt file repeated until the contract passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_file: Option<String>,
    /// Prompt mode: revert an iteration the contract does not accept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub revert_failed: bool,
    /// `--check` commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// `--promise`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<String>,
    /// `--require-change`: a claim that changes nothing besides ticking
    /// boxes is refused rather than flagged.
    #[serde(default)]
    pub require_change: bool,
    /// `--no-learnings`: no learnings file, and no word of one in prompts.
    #[serde(default)]
    pub no_learnings: bool,
    /// `--no-questions` or `ralph.questions = false`: a question ends the
    /// attempt as no signal, as before questions reached a person.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_questions: bool,
    /// `--answer-timeout`: how long a run with only stories waiting for an
    /// answer left waits for one before it stops; `None` stops at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_timeout_secs: Option<u64>,
    /// `--full-scan`: every checkpoint and revert looks at every file,
    /// none only at what a watch of the worktree saw touched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full_scan: bool,
    /// `--sandbox`: the agent runs under bubblewrap, the git directory
    /// read-only to it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
    /// `--parallel N` or `ralph.parallel`: up to N independent stories at
    /// once, each in a worktree of its own; `None` for one at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u32>,
    /// `--notify` or `ralph.notify`: a desktop notification and the bell
    /// when the run ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify: bool,
    /// `--roles` or `ralph.roles`: the role pipeline; `None` leaves it to
    /// the contract (`roles` in ralph.toml), which may give none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Vec<Role>>,
    /// `--role-agent`, `--role-agent-command`, `--role-model`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub role_agents: BTreeMap<Role, RoleAgent>,
    /// `--fallback-agent` or `ralph.fallbackAgents`: the presets a story
    /// goes to, in order, when the agent's usage limit outlasts
    /// `--max-rate-limit-wait`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_agents: Vec<String>,
    /// `--push-each`: after each checkpoint the branch is pushed with the
    /// run's record and refs, so that another machine can take it up.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub push_each: bool,
    /// `--story ID`: the run works on that one story of another change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<StoryJob>,
}

impl Settings {
    /// The source as status shows it: the detected kind, or `auto`.
    pub fn source_name(&self) -> &'static str {
        self.source.map_or("auto", SourceKind::as_str)
    }
}

/// The limits every run ends within.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Guardrails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// Consecutive attempts that change nothing; 0 turns the limit off.
    #[serde(default)]
    pub no_progress_limit: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runtime_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The most a run waits out usage limits, in total.
    #[serde(default)]
    pub max_rate_limit_wait_secs: u64,
    /// `--pace`, as given (`$20/5h`): see [`crate::pace`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<String>,
}

/// What the command line asked for: every field is a flag, `None` (or
/// empty, or false) when not given. Paths are as typed; they are made
/// absolute against `cwd`.
#[derive(Debug, Clone, Default)]
pub struct Requested {
    pub cwd: PathBuf,
    pub agent: Option<String>,
    pub agent_command: Option<String>,
    pub model: Option<String>,
    pub max_retries: Option<u32>,
    pub command_timeout: Option<u64>,
    pub agent_timeout: Option<u64>,
    pub idle_timeout: Option<u64>,
    pub on_finish: Option<OnFinish>,
    pub prompt_template: Option<PathBuf>,
    pub source: Option<SourceKind>,
    pub prd: Option<PathBuf>,
    pub tasks: Option<PathBuf>,
    pub issues: Option<PathBuf>,
    pub label: Option<String>,
    pub comment: bool,
    pub tracker: TrackerQuery,
    pub prompt: Option<PathBuf>,
    pub once: bool,
    pub revert_failed: bool,
    pub checks: Vec<String>,
    pub promise: Option<String>,
    pub max_iterations: Option<u32>,
    pub no_progress_limit: Option<u32>,
    pub max_runtime: Option<u64>,
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_rate_limit_wait: Option<u64>,
    pub pace: Option<String>,
    pub require_change: bool,
    pub no_learnings: bool,
    pub no_questions: bool,
    pub answer_timeout: Option<u64>,
    pub full_scan: bool,
    pub push_each: bool,
    pub sandbox: bool,
    pub notify: bool,
    pub roles: Option<Vec<Role>>,
    pub role_agents: BTreeMap<Role, RoleAgent>,
    pub fallback_agents: Vec<String>,
    /// `--worktree [PATH]`: `Some(None)` for the default place beside the
    /// user's worktree.
    pub worktree: Option<Option<PathBuf>>,
    /// `--parallel N`: up to N stories at once.
    pub parallel: Option<u32>,
    /// `--story ID`: one story of a change, in a run of its own.
    pub job: Option<StoryJob>,
}

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("timeouts must be at least one second")]
    ZeroTimeout,
    #[error("the promise token '{0}' must be letters, digits, '-' and '_'")]
    PromiseToken(String),
}

impl SettingsError {
    /// Whether the command line itself is at fault (a usage error).
    pub fn is_usage(&self) -> bool {
        !matches!(self, SettingsError::Config(_))
    }

    pub fn hint(&self) -> Option<String> {
        match self {
            SettingsError::Config(err) => err.hint(),
            SettingsError::ZeroTimeout => None,
            SettingsError::PromiseToken(_) => Some(
                "e.g. --promise AUTH_IMPLEMENTED, or --promise none to rely on checks alone".into(),
            ),
        }
    }
}

/// Settings for this start: flags, then (on resume) the run's own settings,
/// then git config, then defaults.
pub fn resolve(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Settings>,
) -> Result<Settings, SettingsError> {
    let (agent, agent_command) = resolve_agent(repo, req, stored)?;
    let limits = resolve_limits(repo, req, stored)?;
    let switches = resolve_switches(repo, req, stored)?;
    let team = resolve_team(repo, req, stored)?;
    let promise = resolve_promise(repo, req, stored)?;
    let mut checks = stored.map(|s| s.checks.clone()).unwrap_or_default();
    checks.extend(req.checks.iter().cloned());
    let source = if req.prompt.is_some() {
        Some(SourceKind::Prompt)
    } else {
        req.source.or(stored.and_then(|s| s.source))
    };
    let absolute = |path: &Option<PathBuf>| {
        path.as_ref()
            .map(|p| req.cwd.join(p).to_string_lossy().into_owned())
    };
    let as_typed = |path: &Option<PathBuf>| path.as_ref().map(|p| p.to_string_lossy().into_owned());
    let kept = |field: fn(&Settings) -> Option<String>| stored.and_then(field);
    Ok(Settings {
        require_change: switches.require_change,
        no_learnings: switches.no_learnings,
        no_questions: switches.no_questions,
        answer_timeout_secs: req
            .answer_timeout
            .or_else(|| stored.and_then(|s| s.answer_timeout_secs)),
        full_scan: switches.full_scan,
        sandbox: switches.sandbox,
        parallel: switches.parallel,
        notify: switches.notify,
        roles: team.roles,
        role_agents: team.role_agents,
        fallback_agents: team.fallback_agents,
        guardrails: resolve_guardrails(repo, req, stored.map(|s| &s.guardrails))?,
        once: req.once || stored.is_some_and(|s| s.once),
        revert_failed: req.revert_failed || stored.is_some_and(|s| s.revert_failed),
        prompt_file: absolute(&req.prompt).or_else(|| kept(|s| s.prompt_file.clone())),
        checks,
        promise,
        agent,
        agent_command,
        model: req.model.clone().or_else(|| kept(|s| s.model.clone())),
        max_retries: limits.max_retries,
        command_timeout_secs: limits.command_timeout,
        agent_timeout_secs: limits.agent_timeout,
        idle_timeout_secs: limits.idle_timeout,
        on_finish: limits.on_finish,
        prompt_template: absolute(&req.prompt_template)
            .or_else(|| kept(|s| s.prompt_template.clone())),
        source,
        tasks_file: as_typed(&req.tasks).or_else(|| kept(|s| s.tasks_file.clone())),
        prd_file: as_typed(&req.prd).or_else(|| kept(|s| s.prd_file.clone())),
        issues_file: absolute(&req.issues).or_else(|| kept(|s| s.issues_file.clone())),
        label: req.label.clone().or_else(|| kept(|s| s.label.clone())),
        comment: req.comment || stored.is_some_and(|s| s.comment),
        tracker: tracker_query(&req.tracker, stored),
        push_each: req.push_each || stored.is_some_and(|s| s.push_each),
        job: req
            .job
            .clone()
            .or_else(|| stored.and_then(|s| s.job.clone())),
    })
}

/// The tracker's query: the command line's, each flag over the run's own.
fn tracker_query(given: &TrackerQuery, stored: Option<&Settings>) -> TrackerQuery {
    let Some(kept) = stored.map(|s| &s.tracker) else {
        return given.clone();
    };
    TrackerQuery {
        project: given.project.clone().or_else(|| kept.project.clone()),
        milestone: given.milestone.clone().or_else(|| kept.milestone.clone()),
        team: given.team.clone().or_else(|| kept.team.clone()),
        cycle: given.cycle.clone().or_else(|| kept.cycle.clone()),
        jql: given.jql.clone().or_else(|| kept.jql.clone()),
        close: given.close || kept.close,
    }
}

/// The agent: the command line's preset or command, the run's own, then
/// git config's, then the default preset.
fn resolve_agent(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Settings>,
) -> Result<(String, Option<String>), SettingsError> {
    Ok(match (&req.agent, &req.agent_command, stored) {
        (Some(agent), _, _) => (agent.clone(), None),
        (None, Some(command), _) => ("command".to_owned(), Some(command.clone())),
        (None, None, Some(stored)) => (stored.agent.clone(), stored.agent_command.clone()),
        (None, None, None) => match repo.config_string("ralph.agentCommand") {
            Some(command) => ("command".to_owned(), Some(command)),
            None => (
                config::agent(repo)?.unwrap_or_else(|| DEFAULT_AGENT.to_owned()),
                None,
            ),
        },
    })
}

/// How long and how often: retries, timeouts, and how the run ends.
struct Limits {
    max_retries: u32,
    command_timeout: u64,
    agent_timeout: u64,
    idle_timeout: u64,
    on_finish: OnFinish,
}

fn resolve_limits(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Settings>,
) -> Result<Limits, SettingsError> {
    let limits = Limits {
        max_retries: layer(
            req.max_retries,
            stored.map(|s| s.max_retries),
            || config::small_integer(repo, "ralph.maxRetries"),
            DEFAULT_MAX_RETRIES,
        )?,
        command_timeout: layer(
            req.command_timeout,
            stored.map(|s| s.command_timeout_secs),
            || config::integer(repo, "ralph.commandTimeout"),
            DEFAULT_COMMAND_TIMEOUT,
        )?,
        agent_timeout: layer(
            req.agent_timeout,
            stored.map(|s| s.agent_timeout_secs),
            || config::integer(repo, "ralph.agentTimeout"),
            DEFAULT_AGENT_TIMEOUT,
        )?,
        idle_timeout: layer(
            req.idle_timeout,
            stored.map(|s| s.idle_timeout_secs),
            || config::duration(repo, "ralph.idleTimeout"),
            DEFAULT_IDLE_TIMEOUT,
        )?,
        on_finish: layer(
            req.on_finish,
            stored.map(|s| s.on_finish),
            || {
                let choice = config::one_of(repo, "ralph.onFinish", ON_FINISH)?;
                Ok(choice.and_then(OnFinish::parse))
            },
            OnFinish::Ask,
        )?,
    };
    if matches!(limits.on_finish, OnFinish::Push | OnFinish::Pr) {
        // Read when the loop ends; a malformed value is said now.
        config::boolean(repo, "ralph.prDraft")?;
        config::one_of(repo, "ralph.forge", &["github", "gitlab"])?;
    }
    if limits.command_timeout == 0 || limits.agent_timeout == 0 {
        return Err(SettingsError::ZeroTimeout);
    }
    Ok(limits)
}

/// What the run does besides the work: checks on empty claims, learnings,
/// questions for a person, scanning, the sandbox, width, notifications.
struct Switches {
    require_change: bool,
    no_learnings: bool,
    no_questions: bool,
    full_scan: bool,
    sandbox: bool,
    parallel: Option<u32>,
    notify: bool,
}

fn resolve_switches(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Settings>,
) -> Result<Switches, SettingsError> {
    let switch = |flag: bool, kept: fn(&Settings) -> bool, key: &str| {
        layer(
            flag.then_some(true),
            stored.map(kept),
            || config::boolean(repo, key),
            false,
        )
    };
    Ok(Switches {
        require_change: switch(
            req.require_change,
            |s| s.require_change,
            "ralph.requireChange",
        )?,
        no_learnings: layer(
            req.no_learnings.then_some(true),
            stored.map(|s| s.no_learnings),
            || Ok(config::boolean(repo, "ralph.learnings")?.map(|keep| !keep)),
            false,
        )?,
        no_questions: layer(
            req.no_questions.then_some(true),
            stored.map(|s| s.no_questions),
            || Ok(config::boolean(repo, "ralph.questions")?.map(|ask| !ask)),
            false,
        )?,
        full_scan: switch(req.full_scan, |s| s.full_scan, "ralph.fullScan")?,
        sandbox: switch(req.sandbox, |s| s.sandbox, "ralph.sandbox")?,
        parallel: match (req.parallel, stored) {
            (Some(width), _) => Some(width),
            (None, Some(stored)) => stored.parallel,
            (None, None) => config::integer(repo, "ralph.parallel")?
                .map(|width| u32::try_from(width.clamp(1, 32)).unwrap_or(1)),
        },
        notify: switch(req.notify, |s| s.notify, "ralph.notify")?,
    })
}

/// Who works: the role pipeline, each role's agent, and the fallbacks.
struct Team {
    roles: Option<Vec<Role>>,
    role_agents: BTreeMap<Role, RoleAgent>,
    fallback_agents: Vec<String>,
}

fn resolve_team(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Settings>,
) -> Result<Team, SettingsError> {
    let roles = match (&req.roles, stored.and_then(|s| s.roles.clone())) {
        (Some(roles), _) => Some(roles.clone()),
        (None, Some(stored)) => Some(stored),
        (None, None) if stored.is_none() => config::roles(repo)?,
        (None, None) => None,
    };
    let fallback_agents = match (req.fallback_agents.is_empty(), stored) {
        (false, _) => req.fallback_agents.clone(),
        (true, Some(stored)) => stored.fallback_agents.clone(),
        (true, None) => config::fallback_agents(repo)?.unwrap_or_default(),
    };
    let mut role_agents = stored.map(|s| s.role_agents.clone()).unwrap_or_default();
    for (role, choice) in &req.role_agents {
        let entry = role_agents.entry(*role).or_default();
        if choice.agent.is_some() || choice.agent_command.is_some() {
            entry.agent = choice.agent.clone();
            entry.agent_command = choice.agent_command.clone();
        }
        if choice.model.is_some() {
            entry.model = choice.model.clone();
        }
    }
    Ok(Team {
        roles,
        role_agents,
        fallback_agents,
    })
}

/// The promise token: the command line's, the run's own, or (for a new
/// run) git config's; checked.
fn resolve_promise(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Settings>,
) -> Result<Option<String>, SettingsError> {
    let promise = req
        .promise
        .clone()
        .or_else(|| stored.and_then(|s| s.promise.clone()))
        .or_else(|| {
            stored
                .is_none()
                .then(|| repo.config_string("ralph.promise"))
                .flatten()
        });
    if let Some(token) = &promise {
        validate_promise(token)?;
    }
    Ok(promise)
}

/// A promise token is letters, digits, `-` and `_`, or `none`.
fn validate_promise(token: &str) -> Result<(), SettingsError> {
    let valid = token.eq_ignore_ascii_case(crate::contract::NO_PROMISE)
        || (!token.is_empty()
            && token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    if valid {
        Ok(())
    } else {
        Err(SettingsError::PromiseToken(token.to_owned()))
    }
}

/// One setting through the layers: the flag, the stored value, git config
/// (read only when needed, so a bad key that is overridden does not
/// matter), the default.
fn layer<T>(
    flag: Option<T>,
    stored: Option<T>,
    config: impl FnOnce() -> Result<Option<T>, ConfigError>,
    default: T,
) -> Result<T, ConfigError> {
    if let Some(value) = flag.or(stored) {
        return Ok(value);
    }
    Ok(config()?.unwrap_or(default))
}

/// Guardrails: flag > git config (for a new run) > the run's own (on
/// resume) > default.
fn resolve_guardrails(
    repo: &Repo,
    req: &Requested,
    stored: Option<&Guardrails>,
) -> Result<Guardrails, ConfigError> {
    let fresh = stored.is_none();
    let stored = stored.cloned().unwrap_or_default();
    let max_iterations = match req.max_iterations {
        Some(n) => Some(n),
        None => when_fresh(fresh, || config::small_integer(repo, "ralph.maxIterations"))?
            .or(stored.max_iterations),
    };
    let no_progress_limit = match req.no_progress_limit {
        Some(n) => n,
        None => match when_fresh(fresh, || {
            config::small_integer(repo, "ralph.noProgressLimit")
        })? {
            Some(n) => n,
            None if fresh => DEFAULT_NO_PROGRESS_LIMIT,
            None => stored.no_progress_limit,
        },
    };
    let max_rate_limit_wait_secs = match req.max_rate_limit_wait {
        Some(n) => n,
        None => match when_fresh(fresh, || config::duration(repo, "ralph.maxRateLimitWait"))? {
            Some(n) => n,
            None if fresh => DEFAULT_MAX_RATE_LIMIT_WAIT,
            None => stored.max_rate_limit_wait_secs,
        },
    };
    Ok(Guardrails {
        max_iterations,
        no_progress_limit,
        max_runtime_secs: req
            .max_runtime
            .or(when_fresh(fresh, || {
                config::duration(repo, "ralph.maxRuntime")
            })?)
            .or(stored.max_runtime_secs),
        max_cost: req
            .max_cost
            .or(when_fresh(fresh, || config::money(repo, "ralph.maxCost"))?)
            .or(stored.max_cost),
        max_tokens: req
            .max_tokens
            .or(when_fresh(fresh, || {
                config::integer(repo, "ralph.maxTokens")
            })?)
            .or(stored.max_tokens),
        max_rate_limit_wait_secs,
        pace: req.pace.clone().or(stored.pace),
    })
}

/// Git config, read only for a new run: on resume, it does not override
/// what the run started with.
fn when_fresh<T>(
    fresh: bool,
    read: impl FnOnce() -> Result<Option<T>, ConfigError>,
) -> Result<Option<T>, ConfigError> {
    if fresh { read() } else { Ok(None) }
}

#[cfg(test)]
mod tests;
