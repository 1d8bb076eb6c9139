//! The role pipeline's part of the contract. A story can go through roles
//! in a fixed order (coder, reviewer, tester, qa), each a Ralph loop of its
//! own: a fresh agent per iteration, its own promise, its own verification
//! and its own bound. This module holds the roles, what `ralph.toml` may
//! say of them, and how a story's pipeline is resolved: a story's settings
//! over the role's, the role's over the defaults.
//!
//! ```toml
//! roles = ["coder", "reviewer"]          # the pipeline, in this order
//!
//! # or, with settings, as a table:
//! [roles]
//! pipeline = ["coder", "reviewer", "tester"]
//! [roles.reviewer]
//! agent = "codex"                        # another CLI (or agent_command)
//! model = "gpt-5"
//! promise = "REVIEW_PASSED"
//! description = "Check error handling above all."
//! max_iterations = 5
//! prompt = "prompts/reviewer.md"         # replaces the built-in role prompt
//! [roles.tester.verification]            # one of the four methods
//! method = "external"
//! command = "cargo test"
//!
//! [story."3".roles.tester]               # for one story
//! enabled = false
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::Method;

/// A role a story's pipeline can hold, in the order roles run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Coder,
    Reviewer,
    Tester,
    Qa,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Coder, Role::Reviewer, Role::Tester, Role::Qa];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Coder => "coder",
            Role::Reviewer => "reviewer",
            Role::Tester => "tester",
            Role::Qa => "qa",
        }
    }

    /// How many iterations the role gets by default.
    pub fn default_max_iterations(self) -> u32 {
        match self {
            Role::Coder => 15,
            Role::Reviewer | Role::Qa => 5,
            Role::Tester => 10,
        }
    }

    /// The promise that ends a passing iteration, by default.
    pub fn default_promise(self) -> &'static str {
        match self {
            Role::Coder => "IMPLEMENTATION_COMPLETE",
            Role::Reviewer => "REVIEW_PASSED",
            Role::Tester => "TESTS_PASSED",
            Role::Qa => "QA_PASSED",
        }
    }

    /// The verification method the role uses by default; with nothing to
    /// run, it leaves the decision to the story's contract.
    pub fn default_method(self) -> Method {
        match self {
            Role::Coder | Role::Tester => Method::External {
                name: None,
                command: String::new(),
                success_exit_code: None,
                output_contains: None,
                output_not_contains: None,
                timeout: None,
                working_dir: None,
            },
            Role::Reviewer => Method::Semantic {
                criteria: Vec::new(),
                negative_patterns: Vec::new(),
                agent: None,
                command: None,
                model: None,
                timeout: None,
            },
            Role::Qa => Method::MultiStage {
                stages: Vec::new(),
                require_all: true,
            },
        }
    }

    /// Whether the role's work is files: the coder's, and the tester's
    /// tests. A reviewer's or qa's edits are undone.
    pub fn edits(self) -> bool {
        matches!(self, Role::Coder | Role::Tester)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?} (the roles are coder, reviewer, tester and qa)")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(text: &str) -> Result<Role, UnknownRole> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| UnknownRole(text.trim().to_owned()))
    }
}

/// A pipeline as given, put in the order roles run, each role once.
pub fn in_order(roles: &[Role]) -> Vec<Role> {
    Role::ALL
        .into_iter()
        .filter(|role| roles.contains(role))
        .collect()
}

/// `roles` in `ralph.toml`: the pipeline alone, or a table of the roles'
/// settings with the pipeline under `pipeline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RolesField {
    List(Vec<Role>),
    Table(RolesTable),
}

/// `[roles]` with `pipeline = [...]` and `[roles.<role>]` tables.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RolesTable {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Vec<Role>>,
    #[serde(flatten)]
    pub settings: BTreeMap<Role, RoleSettings>,
}

impl RolesField {
    /// The pipeline, if this file gives one.
    pub fn pipeline(&self) -> Option<&[Role]> {
        match self {
            RolesField::List(roles) => Some(roles),
            RolesField::Table(table) => table.pipeline.as_deref(),
        }
    }

    /// The roles' settings this file gives.
    pub fn settings(&self) -> Option<&BTreeMap<Role, RoleSettings>> {
        match self {
            RolesField::List(_) => None,
            RolesField::Table(table) => Some(&table.settings),
        }
    }

    /// Later files refine earlier ones: a pipeline replaces the earlier
    /// one, settings are merged key by key.
    pub fn merge(self, later: RolesField) -> RolesField {
        let mut table = match self {
            RolesField::List(roles) => RolesTable {
                pipeline: Some(roles),
                settings: BTreeMap::new(),
            },
            RolesField::Table(table) => table,
        };
        if let Some(pipeline) = later.pipeline() {
            table.pipeline = Some(pipeline.to_vec());
        }
        for (role, settings) in later.settings().cloned().unwrap_or_default() {
            let entry = table.settings.entry(role).or_default();
            *entry = entry.clone().over(settings);
        }
        RolesField::Table(table)
    }
}

/// What `ralph.toml` may say of one role, for all stories or one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSettings {
    /// `false` leaves the role out (of one story's pipeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<String>,
    /// Said to the role's agent in its prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<RoleVerification>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// An agent preset for the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Or any command, as `--agent-command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A prompt template (repository-relative path) replacing the role's
    /// built-in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl RoleSettings {
    /// These settings with `later`'s given keys over them.
    pub fn over(self, later: RoleSettings) -> RoleSettings {
        RoleSettings {
            enabled: later.enabled.or(self.enabled),
            promise: later.promise.or(self.promise),
            description: later.description.or(self.description),
            verification: later.verification.or(self.verification),
            max_iterations: later.max_iterations.or(self.max_iterations),
            agent: later.agent.or(self.agent),
            agent_command: later.agent_command.or(self.agent_command),
            model: later.model.or(self.model),
            prompt: later.prompt.or(self.prompt),
        }
    }
}

/// A role's verification: a method's name alone (`"semantic"`), or a
/// method with its settings, as `[verify]` takes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RoleVerification {
    Name(String),
    Method(Method),
}

/// How a role's agent is chosen from the command line
/// (`--role-agent`, `--role-agent-command`, `--role-model`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleAgent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One role of a story's pipeline, resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleRules {
    pub role: Role,
    pub promise: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The role's own verification; `None` when it has nothing to run,
    /// and the story's contract decides (its checks, or the promise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<Method>,
    pub max_iterations: u32,
    /// The agent: a preset, or a command; neither means the run's agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// The problem with a role's settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    #[error(
        "the {role} role's verification {name:?} is not one of string_match, external, semantic, multi_stage"
    )]
    UnknownMethod { role: Role, name: String },
    #[error("the {role} role's promise {promise:?} must be letters, digits, '-' and '_'")]
    Promise { role: Role, promise: String },
    #[error("the {role} role may not have 0 iterations")]
    ZeroIterations { role: Role },
}

/// Resolve one role for one story: `story` over `role`, `role` over the
/// defaults, then the command line's agent choice over all.
pub fn resolve(
    role: Role,
    configured: Option<&RoleSettings>,
    story: Option<&RoleSettings>,
    command_line: Option<&RoleAgent>,
) -> Result<Option<RoleRules>, RoleError> {
    let settings = configured
        .cloned()
        .unwrap_or_default()
        .over(story.cloned().unwrap_or_default());
    if settings.enabled == Some(false) {
        return Ok(None);
    }
    let promise = settings
        .promise
        .unwrap_or_else(|| role.default_promise().to_owned());
    let valid = !promise.is_empty()
        && promise
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(RoleError::Promise { role, promise });
    }
    let method = match settings.verification {
        None => role.default_method(),
        Some(RoleVerification::Method(method)) => method,
        Some(RoleVerification::Name(name)) => {
            method_named(&name).ok_or(RoleError::UnknownMethod { role, name })?
        }
    };
    let max_iterations = settings
        .max_iterations
        .unwrap_or_else(|| role.default_max_iterations());
    if max_iterations == 0 {
        return Err(RoleError::ZeroIterations { role });
    }
    let mut rules = RoleRules {
        role,
        promise,
        description: settings.description,
        verification: runnable(&method).then_some(method),
        max_iterations,
        agent: settings.agent,
        agent_command: settings.agent_command,
        model: settings.model,
        prompt: settings.prompt,
    };
    if let Some(choice) = command_line {
        if choice.agent_command.is_some() || choice.agent.is_some() {
            rules.agent = choice.agent.clone();
            rules.agent_command = choice.agent_command.clone();
        }
        if choice.model.is_some() {
            rules.model = choice.model.clone();
        }
    }
    Ok(Some(rules))
}

/// A method of this name with no settings.
fn method_named(name: &str) -> Option<Method> {
    let role = match name.trim() {
        "string_match" => return Some(Method::StringMatch { token: None }),
        "external" => Role::Coder,
        "semantic" => Role::Reviewer,
        "multi_stage" => Role::Qa,
        _ => return None,
    };
    Some(role.default_method())
}

/// Whether verifying with `method` runs anything: a command, a verifier,
/// a pattern, a stage that does.
pub fn runnable(method: &Method) -> bool {
    match method {
        Method::StringMatch { .. } => true,
        Method::External { command, .. } => !command.trim().is_empty(),
        Method::Semantic {
            negative_patterns,
            agent,
            command,
            ..
        } => !negative_patterns.is_empty() || agent.is_some() || command.is_some(),
        Method::MultiStage { stages, .. } => stages.iter().any(|stage| runnable(&stage.method)),
    }
}

#[cfg(test)]
mod tests;
