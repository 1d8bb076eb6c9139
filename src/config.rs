//! Settings from three layers: a flag beats git config (local > global >
//! system, as git resolves it), which beats the default. Config is read
//! through gix with the strict getters, so a malformed value is an error that
//! names its key instead of a silent default.

use crate::exit::CommandError;
use crate::git::Repo;

/// `--on-finish`: what to do when a loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnFinish {
    /// Ask with a menu on a terminal; without one, keep and say how to finish.
    Ask,
    /// Stay on `ralph/<change>`.
    Keep,
    /// Back to the original branch with all the work uncommitted.
    Cleanup,
}

impl OnFinish {
    pub fn as_str(self) -> &'static str {
        match self {
            OnFinish::Ask => "ask",
            OnFinish::Keep => "keep",
            OnFinish::Cleanup => "cleanup",
        }
    }

    pub fn parse(value: &str) -> Option<OnFinish> {
        match value {
            "ask" => Some(OnFinish::Ask),
            "keep" => Some(OnFinish::Keep),
            "cleanup" => Some(OnFinish::Cleanup),
            _ => None,
        }
    }
}

/// The defaults the man page documents.
pub const DEFAULT_AGENT: &str = "claude";
pub const DEFAULT_MAX_RETRIES: u32 = 3;
pub const DEFAULT_COMMAND_TIMEOUT: u64 = 30;
pub const DEFAULT_AGENT_TIMEOUT: u64 = 3600;

/// Every git config key git-ralph reads, with what it sets.
pub const KEYS: &[(&str, &str)] = &[
    ("ralph.agent", "agent preset (default: claude); --agent"),
    (
        "ralph.agentCommand",
        "command run through sh -c instead of a preset; --agent-command",
    ),
    (
        "ralph.maxRetries",
        "retries per story after its first attempt (default: 3); --max-retries",
    ),
    (
        "ralph.commandTimeout",
        "seconds an external command may run (default: 30); --command-timeout",
    ),
    (
        "ralph.agentTimeout",
        "seconds one agent attempt may run (default: 3600); --agent-timeout",
    ),
    (
        "ralph.onFinish",
        "ask, keep or cleanup (default: ask); --on-finish",
    ),
    (
        "ralph.<agent>.args",
        "extra arguments for that preset, split on whitespace",
    ),
];

/// A positive integer from git config, or an error naming the key.
pub fn integer(repo: &Repo, key: &str) -> Result<Option<u64>, CommandError> {
    match repo.config_integer(key) {
        Ok(None) => Ok(None),
        Ok(Some(value)) if value >= 0 => Ok(Some(value as u64)),
        Ok(Some(value)) => Err(bad_value(key, &value.to_string(), "a non-negative integer")),
        Err(err) => Err(bad_value(
            key,
            &repo.config_string(key).unwrap_or_default(),
            "an integer",
        )
        .hint(err)),
    }
}

/// `ralph.onFinish`, validated.
pub fn on_finish(repo: &Repo) -> Result<Option<OnFinish>, CommandError> {
    match repo.config_string("ralph.onFinish") {
        None => Ok(None),
        Some(value) => OnFinish::parse(value.trim())
            .map(Some)
            .ok_or_else(|| bad_value("ralph.onFinish", &value, "one of ask, keep, cleanup")),
    }
}

/// `ralph.<agent>.args`, split on whitespace.
pub fn agent_args(repo: &Repo, agent: &str) -> Vec<String> {
    repo.config_string(&format!("ralph.{agent}.args"))
        .map(|value| value.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn bad_value(key: &str, value: &str, expected: &str) -> CommandError {
    CommandError::user(format!(
        "bad value '{value}' for git config key '{key}': expected {expected}"
    ))
    .hint(format!(
        "fix it with 'git config {key} <value>' or remove it with 'git config --unset {key}'"
    ))
}
