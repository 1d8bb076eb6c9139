//! The completion contract: what must hold before a story counts as done.
//!
//! Objective checks are authoritative. A contract is assembled from git
//! config (`ralph.check`), `--check` flags and two optional TOML files —
//! `ralph.toml` at the repository root and `<change dir>/ralph.toml` — with
//! per-story sections. It is snapshotted into the run's directory at start,
//! so an agent that edits the files cannot change the rules it is judged by;
//! an attempt that touches a contract file or a protected path is refused.
//!
//! File format (every key optional):
//!
//! ```toml
//! promise = "COMPLETE"            # the string_match token; "none" turns it off
//! protected = ["tests/**"]        # paths an attempt may not change
//! max_cost = 5.0                  # USD for the whole run
//! max_tokens = 2000000            # tokens for the whole run
//! require_change = true           # refuse a claim that only ticks boxes
//!
//! [[check]]                       # objective checks, all must pass
//! name = "tests"
//! command = "cargo test"
//! success_exit_code = 0
//! output_contains = "test result: ok"
//! output_not_contains = "FAILED"
//! timeout = 600                   # seconds; default --command-timeout
//! working_dir = "."               # relative to the worktree
//!
//! [verify]                        # the verification method (default: string_match)
//! method = "multi_stage"
//! require_all = true
//! [[verify.stages]]
//! method = "external"
//! command = "cargo clippy -- -D warnings"
//! [[verify.stages]]
//! method = "semantic"
//! required = false
//! negative_patterns = ["TODO", "FIXME"]
//! criteria = ["the greeting is friendly"]
//! agent = "claude"                # or: command = "my-verifier"
//!
//! [stories]                       # how task files are read
//! skip = ["Rollout"]              # more headings that are not work
//! keep = ["Optional"]             # built-in non-work headings that are work here
//!
//! [story."2"]                     # per-story additions
//! outcome = "bye.txt says goodbye"
//! acceptance_criteria = ["..."]
//! max_cost = 1.0
//! max_tokens = 300000
//! require_change = false          # this story may legitimately change nothing
//! [[story."2".check]]
//! command = "test -s bye.txt"
//! ```
//!
//! The same files hold the role pipeline (`[roles]`, see [`roles`]), the
//! user's lifecycle hooks (`[hooks]`, see [`hooks`]) and the webhook told
//! when a run ends (`[notify]`, see [`crate::notify`]); all are part of the
//! snapshot, so none can be changed by an agent mid-run.

mod checks;
mod error;
pub(crate) mod hooks;
mod method;
pub(crate) mod prices;
pub(crate) mod roles;
mod verify;
mod zero_timeout;

/// The contract file format, as documented in the man page and README.
pub const FORMAT_EXAMPLE: &str = r#"promise = "COMPLETE"            # the string_match token; "none" turns it off
protected = ["tests/**"]        # paths an attempt may not change
max_cost = 5.0                  # USD for the whole run
max_tokens = 2000000            # tokens for the whole run
require_change = true           # refuse a claim that only ticks boxes (default: flag it)

[[check]]                       # objective checks: all must pass
name = "tests"
command = "cargo test"          # run through sh -c in the worktree
success_exit_code = 0
output_contains = "test result: ok"
output_not_contains = "FAILED"
timeout = 600                   # seconds; default --command-timeout
working_dir = "."               # relative to the worktree

[verify]                        # the verification method (default: string_match)
method = "multi_stage"          # string_match | external | semantic | multi_stage
require_all = true
[[verify.stages]]
method = "external"
command = "cargo clippy -- -D warnings"
[[verify.stages]]
method = "semantic"
required = false                # an optional stage only warns
negative_patterns = ["TODO", "FIXME"]
criteria = ["errors are reported, not swallowed"]
agent = "claude"                # or: command = "my-verifier"

[stories]                       # which sections of the task file are work
skip = ["Rollout"]              # headings that are not work, besides the built-in ones
keep = ["Optional"]             # built-in non-work headings that are work here

[story."2"]                     # per-story additions, keyed by story id
outcome = "bye.txt says goodbye"
acceptance_criteria = ["the farewell is polite"]
max_cost = 1.0
max_tokens = 300000
require_change = false          # this story may legitimately change nothing
[[story."2".check]]
command = "test -s bye.txt"

[roles]                         # a role pipeline per story (or: roles = ["coder", ...])
pipeline = ["coder", "reviewer", "tester", "qa"]   # any of these, in this order
[roles.reviewer]                # every key optional; the defaults per role:
agent = "codex"                 #   the run's agent; or agent_command = "..."
model = "gpt-5"                 #   the agent's default model
promise = "REVIEW_PASSED"       #   IMPLEMENTATION_COMPLETE, REVIEW_PASSED, TESTS_PASSED, QA_PASSED
max_iterations = 5              #   coder 15, reviewer 5, tester 10, qa 5
description = "Check error handling first."   # said to the role's agent
prompt = "prompts/reviewer.md"  #   the role's built-in prompt
enabled = true                  #   false leaves the role out
verification = "semantic"       #   coder/tester external, reviewer semantic, qa multi_stage;
                                #   with nothing to run, the story's contract decides
[roles.tester.verification]     # or a method with its settings, as [verify] takes them
method = "external"
command = "cargo test"          # also success_exit_code, output_contains,
timeout = 900                   # output_not_contains, working_dir
[roles.qa.verification]
method = "multi_stage"
require_all = true
[[roles.qa.verification.stages]]
method = "semantic"             # check_for, negative_patterns, agent, command, model
check_for = ["a user can say goodbye"]
agent = "claude"
[[roles.qa.verification.stages]]
method = "external"
command = "./scripts/smoke.sh"
required = false

[story."3".roles.tester]        # one story's roles, over [roles.*]
enabled = false

[hooks]                         # commands run around the run, the event as JSON on stdin
on_run_start = "./notify.sh started"       # a command, or a list of them
on_attempt_failed = ["./log.sh", "./page.sh"]
on_run_end = "./notify.sh \"$RALPH_OUTCOME\""
[hooks.on_story_done]           # or a table
command = "./deploy-preview.sh"
on_error = "stop"               # report (default: the run goes on) or stop (resumable)
timeout = 120                   # seconds; default --command-timeout

[notify]                        # told when a run ends, done or stopped for you
webhook = "https://hooks.slack.com/services/..."  # a JSON POST (https:// through curl)
payload = "slack"               # json (default) or slack: {"text": ...}

[prices.codex]                  # USD per million tokens, for agents that report no cost
input = 1.25                    # by the --model named, else the agent, else [prices.default]
output = 10.0                   # a cost worked out from it is shown as an estimate
cache_read = 0.125              # cached input tokens (default: input)
"#;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::notify::NotifySettings;
pub use checks::{CheckOutcome, any_stopped, run_check, run_checks, run_checks_until_stopped};
pub use error::ContractError;
pub(crate) use error::first_bad_byte;
use error::read_file;
pub use hooks::{Hook, HookEvent, Hooks, OnError};
pub use method::{Method, Stage};
pub use roles::{Role, RoleAgent, RoleError, RoleRules, RolesField};
pub use verify::{Verdict, VerifyContext, describe_changes, verify};

/// The token that turns string matching off.
pub const NO_PROMISE: &str = "none";

/// One objective check: a command run through `sh -c` in the worktree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_contains: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_not_contains: Option<String>,
    /// Seconds; the run's command timeout when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
}

impl CheckSpec {
    pub fn from_command(command: &str) -> CheckSpec {
        CheckSpec {
            name: None,
            command: command.to_owned(),
            success_exit_code: None,
            output_contains: None,
            output_not_contains: None,
            timeout: None,
            working_dir: None,
        }
    }

    /// The name shown in reports: the given one, or the command.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.command.clone())
    }
}

/// Per-story additions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoryContract {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_criteria: Vec<String>,
    #[serde(default, rename = "check", skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Method>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Refuse (or, when false, only flag) a claim that changes nothing
    /// besides ticking boxes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_change: Option<bool>,
    /// The story's own settings of its roles (`[story."2".roles.tester]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<Role, roles::RoleSettings>,
    /// The stories this one builds on (`after = ["1"]`): in a parallel
    /// run it starts only once they are done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// `[stories]`: which sections of a task file are work. Headings are
/// matched by how their title (without its label) starts, ignoring case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoriesSettings {
    /// Headings that are not work, on top of the built-in ones (Success
    /// Criteria, Notes, Completed, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// Built-in non-work headings that are work in this repository.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<String>,
    /// A checklist's or OpenSpec change's stories do not build on each
    /// other: a parallel run may do them at once. Without it they run in
    /// order, unless a story names what it comes `after`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub independent: bool,
}

impl StoriesSettings {
    fn is_empty(&self) -> bool {
        self.skip.is_empty() && self.keep.is_empty() && !self.independent
    }
}

/// The `[stories]` settings of `ralph.toml` at the root and, when given, in
/// the change's directory; lists from both files are joined.
pub fn stories_settings(
    workdir: &Path,
    change_dir: Option<&Path>,
) -> Result<StoriesSettings, ContractError> {
    let mut settings = StoriesSettings::default();
    let mut paths = vec![workdir.join("ralph.toml")];
    paths.extend(change_dir.map(|dir| dir.join("ralph.toml")));
    for path in paths {
        let Some(text) = read_file(&path)? else {
            continue;
        };
        let file = Contract::parse(&path, &text)?;
        settings.skip.extend(file.stories.skip);
        settings.keep.extend(file.stories.keep);
        settings.independent |= file.stories.independent;
    }
    Ok(settings)
}

/// A contract file, or the merged contract of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    #[serde(default, rename = "check", skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<Method>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_change: Option<bool>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub story: BTreeMap<String, StoryContract>,
    #[serde(default, skip_serializing_if = "StoriesSettings::is_empty")]
    pub stories: StoriesSettings,
    /// The role pipeline and the roles' settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<RolesField>,
    /// Commands run at the moments of the run they name.
    #[serde(default, skip_serializing_if = "Hooks::is_empty")]
    pub hooks: Hooks,
    /// Where the end of a run is told: the webhook.
    #[serde(default, skip_serializing_if = "NotifySettings::is_empty")]
    pub notify: NotifySettings,
    /// What tokens cost, for agents that report no cost (see [`prices`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, prices::Price>,
    /// The contract files this contract was read from, repo-relative; an
    /// attempt may not edit them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// The contract for one story, with everything merged.
#[derive(Debug, Clone, PartialEq)]
pub struct StoryRules {
    /// `None` when string matching is off.
    pub promise: Option<String>,
    pub checks: Vec<CheckSpec>,
    /// The verification method; `None` means string_match on `promise`.
    pub verify: Option<Method>,
    pub protected: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub outcome: Option<String>,
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
    /// `None` leaves it to `--require-change` / `ralph.requireChange`.
    pub require_change: Option<bool>,
}

impl Contract {
    /// Parse one contract file; errors carry line and column and say which
    /// key has which wrong type.
    pub fn parse(path: &Path, text: &str) -> Result<Contract, ContractError> {
        let contract = toml::from_str(text).map_err(|err| ContractError::Invalid {
            path: path.to_owned(),
            message: err.to_string().trim_end().to_owned(),
        })?;
        match zero_timeout::find(path, text) {
            Some(err) => Err(err),
            None => Ok(contract),
        }
    }

    /// Read the contract files of a run (`ralph.toml` at the root, then the
    /// change's `ralph.toml` when `change_dir` is given) and add checks from
    /// git config and flags, and the `--promise` token.
    pub fn assemble(
        workdir: &Path,
        change_dir: Option<&Path>,
        config_checks: &[String],
        flag_checks: &[String],
        flag_promise: Option<&str>,
    ) -> Result<Contract, ContractError> {
        let mut contract = Contract {
            checks: config_checks
                .iter()
                .map(|c| CheckSpec::from_command(c))
                .collect(),
            ..Contract::default()
        };
        let mut paths = vec![workdir.join("ralph.toml")];
        if let Some(dir) = change_dir {
            paths.push(dir.join("ralph.toml"));
        }
        for path in paths {
            let Some(text) = read_file(&path)? else {
                continue;
            };
            let file = Contract::parse(&path, &text)?;
            let relative = path.strip_prefix(workdir).unwrap_or(&path);
            contract
                .files
                .push(relative.to_string_lossy().replace('\\', "/"));
            contract.merge(file);
        }
        contract
            .checks
            .extend(flag_checks.iter().map(|c| CheckSpec::from_command(c)));
        if let Some(token) = flag_promise {
            contract.promise = Some(token.to_owned());
        }
        Ok(contract)
    }

    /// Later files refine earlier ones: lists are appended, values replaced.
    fn merge(&mut self, other: Contract) {
        if other.promise.is_some() {
            self.promise = other.promise;
        }
        self.protected.extend(other.protected);
        self.checks.extend(other.checks);
        if other.verify.is_some() {
            self.verify = other.verify;
        }
        if other.max_cost.is_some() {
            self.max_cost = other.max_cost;
        }
        if other.max_tokens.is_some() {
            self.max_tokens = other.max_tokens;
        }
        if other.require_change.is_some() {
            self.require_change = other.require_change;
        }
        self.prices.extend(other.prices);
        self.roles = match (self.roles.take(), other.roles) {
            (Some(earlier), Some(later)) => Some(earlier.merge(later)),
            (earlier, later) => later.or(earlier),
        };
        self.stories.skip.extend(other.stories.skip);
        self.stories.keep.extend(other.stories.keep);
        self.stories.independent |= other.stories.independent;
        self.hooks = std::mem::take(&mut self.hooks).then(other.hooks);
        self.notify = std::mem::take(&mut self.notify).then(other.notify);
        for (id, story) in other.story {
            let entry = self.story.entry(id).or_default();
            if story.outcome.is_some() {
                entry.outcome = story.outcome;
            }
            entry.acceptance_criteria.extend(story.acceptance_criteria);
            entry.checks.extend(story.checks);
            entry.protected.extend(story.protected);
            entry.after.extend(story.after);
            if story.verify.is_some() {
                entry.verify = story.verify;
            }
            if story.max_cost.is_some() {
                entry.max_cost = story.max_cost;
            }
            if story.max_tokens.is_some() {
                entry.max_tokens = story.max_tokens;
            }
            if story.require_change.is_some() {
                entry.require_change = story.require_change;
            }
            for (role, settings) in story.roles {
                let merged = entry.roles.remove(&role).unwrap_or_default().over(settings);
                entry.roles.insert(role, merged);
            }
        }
    }

    /// The role pipeline the contract files give, if they give one.
    pub fn pipeline(&self) -> Option<Vec<Role>> {
        self.roles
            .as_ref()
            .and_then(RolesField::pipeline)
            .map(roles::in_order)
    }

    /// Story `story`'s pipeline of `roles`, each role resolved: the story's
    /// settings over the role's, over the defaults, and the command line's
    /// choice of agent (`agents`) over all. Roles turned off for the story
    /// are left out.
    pub fn pipeline_for(
        &self,
        story: &str,
        roles: &[Role],
        agents: &BTreeMap<Role, RoleAgent>,
    ) -> Result<Vec<RoleRules>, RoleError> {
        let configured = self.roles.as_ref().and_then(RolesField::settings);
        let for_story = self.story.get(story).map(|story| &story.roles);
        let mut pipeline = Vec::new();
        for role in roles::in_order(roles) {
            let resolved = roles::resolve(
                role,
                configured.and_then(|settings| settings.get(&role)),
                for_story.and_then(|settings| settings.get(&role)),
                agents.get(&role),
            )?;
            pipeline.extend(resolved);
        }
        Ok(pipeline)
    }

    /// The rules for `story` (with criteria from the story source, e.g. a
    /// prd.json's `acceptanceCriteria`).
    pub fn rules_for(&self, story: &str, source_criteria: &[String]) -> StoryRules {
        let extra = self.story.get(story).cloned().unwrap_or_default();
        let promise = match self.promise.as_deref() {
            Some(token) if token.eq_ignore_ascii_case(NO_PROMISE) => None,
            Some(token) => Some(token.to_owned()),
            None => Some(crate::agent::DEFAULT_TOKEN.to_owned()),
        };
        let mut criteria = source_criteria.to_vec();
        criteria.extend(extra.acceptance_criteria.iter().cloned());
        let mut checks = self.checks.clone();
        checks.extend(extra.checks);
        let mut protected = self.protected.clone();
        protected.extend(extra.protected);
        StoryRules {
            promise,
            checks,
            verify: extra.verify.or_else(|| self.verify.clone()),
            protected,
            acceptance_criteria: criteria,
            outcome: extra.outcome,
            max_cost: extra.max_cost,
            max_tokens: extra.max_tokens,
            require_change: extra.require_change.or(self.require_change),
        }
    }

    /// Save the contract (and copies of its files) into the run directory.
    pub fn snapshot(&self, workdir: &Path, run_dir: &Path) -> Result<(), ContractError> {
        let target = run_dir.join("contract.json");
        let json = serde_json::to_vec_pretty(self).map_err(|err| ContractError::Snapshot {
            path: target.clone(),
            source: std::io::Error::other(err),
        })?;
        crate::state::write_atomically(&target, &json).map_err(|source| {
            ContractError::Snapshot {
                path: target.clone(),
                source,
            }
        })?;
        for file in &self.files {
            let copy = run_dir.join("contract").join(file);
            if let Some(dir) = copy.parent() {
                std::fs::create_dir_all(dir).map_err(|source| ContractError::Snapshot {
                    path: dir.to_owned(),
                    source,
                })?;
            }
            std::fs::copy(workdir.join(file), &copy)
                .map_err(|source| ContractError::Snapshot { path: copy, source })?;
        }
        Ok(())
    }

    /// The snapshot taken at start, if any.
    pub fn load_snapshot(run_dir: &Path) -> Result<Option<Contract>, ContractError> {
        let path = run_dir.join("contract.json");
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|err| ContractError::Invalid {
                        path,
                        message: err.to_string(),
                    })
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ContractError::Read { path, source }),
        }
    }

    /// The first changed path an attempt may not touch, with why.
    pub fn violation(&self, rules: &StoryRules, changed: &[String]) -> Option<String> {
        for path in changed {
            if self.files.iter().any(|file| file == path) {
                return Some(format!("the attempt edited the contract file {path}"));
            }
            if let Some(pattern) = rules
                .protected
                .iter()
                .find(|pattern| protects(pattern, path))
            {
                return Some(format!(
                    "the attempt changed {path}, which the contract protects ({pattern})"
                ));
            }
        }
        None
    }
}

/// Does `pattern` (a glob, or a directory prefix) cover `path`?
pub fn protects(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_start_matches("./");
    let dir = pattern.trim_end_matches('/');
    if !dir.is_empty() && (path == dir || path.starts_with(&format!("{dir}/"))) {
        return true;
    }
    crate::git::glob_matches(pattern, path)
}

#[cfg(test)]
mod tests;
