//! The `ralph.*` git config keys, read and validated.
//!
//! Git resolves the layers (local > global > system); this module reads the
//! result through gix with the strict getters, so a malformed value is an
//! error that names its key instead of a silent default. How config ranks
//! against flags and a run's stored settings is [`crate::settings`]'s job.

use crate::contract::Role;
use crate::git::Repo;

/// A git config value git-ralph cannot use.
#[derive(Debug, thiserror::Error)]
#[error("bad value '{value}' for git config key '{key}': expected {expected}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub expected: String,
    #[source]
    pub source: Option<crate::git::GitFailure>,
}

impl ConfigError {
    fn new(key: &str, value: &str, expected: &str) -> ConfigError {
        ConfigError {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
            source: None,
        }
    }

    pub fn hint(&self) -> Option<String> {
        let key = &self.key;
        Some(format!(
            "fix it with 'git config {key} <value>' or remove it with 'git config --unset {key}'"
        ))
    }
}

/// A duration that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a duration (try 90s, 15m, 2h or 1h30m)")]
pub struct DurationError(String);

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
        "ralph.planMaxTasks",
        "the most tasks a story of a plan may have (default: 12); plan --max-tasks",
    ),
    (
        "ralph.onFinish",
        "ask, keep, cleanup, push or pr (default: ask); --on-finish",
    ),
    (
        "ralph.remote",
        "the remote finish --push and --pr push to (default: the upstream remote of the branch the run started from, else origin); --remote",
    ),
    (
        "ralph.prBase",
        "the branch a pull request asks to merge into (default: the branch the run started from); --base",
    ),
    (
        "ralph.prDraft",
        "open pull requests as drafts (default: false); --draft",
    ),
    (
        "ralph.forge",
        "github or gitlab: whose CLI finish --pr runs, gh or glab (default: gitlab when the remote's host names GitLab, else github)",
    ),
    (
        "ralph.ui",
        "screen or plain: how start shows a run on a terminal (default: screen); --plain",
    ),
    (
        "ralph.hook.<event>",
        "a command run at that moment of a run (multi-valued; onRunStart, onStoryStart, onStoryDone, onAttemptFailed or onRunEnd), before the hooks of ralph.toml; its failure is reported and the run goes on",
    ),
    (
        "ralph.<agent>.args",
        "extra arguments for that preset, split on whitespace",
    ),
    (
        "ralph.check",
        "a check every story must pass (multi-valued); --check",
    ),
    (
        "ralph.promise",
        "the promise token, or none (default: COMPLETE); --promise",
    ),
    (
        "ralph.maxIterations",
        "attempts across the whole run (default: no limit); --max-iterations",
    ),
    (
        "ralph.noProgressLimit",
        "attempts in a row that change nothing (default: 3, 0 = off); --no-progress-limit",
    ),
    (
        "ralph.maxRuntime",
        "total run time, e.g. 2h (default: no limit); --max-runtime",
    ),
    (
        "ralph.maxCost",
        "USD the agents may spend (default: no limit); --max-cost",
    ),
    (
        "ralph.maxTokens",
        "tokens the agents may use (default: no limit); --max-tokens",
    ),
    (
        "ralph.maxRateLimitWait",
        "total wait for usage limits (default: 6h); --max-rate-limit-wait",
    ),
    (
        "ralph.fallbackAgents",
        "agent presets, e.g. codex,gemini, a story goes to in turn when the agent's usage limit resets later than ralph.maxRateLimitWait allows (default: none); --fallback-agent",
    ),
    (
        "ralph.idleTimeout",
        "how long an agent may print nothing before it is stopped, e.g. 15m (default: 15m, 0 = off); --idle-timeout",
    ),
    (
        "ralph.requireChange",
        "refuse a claim that changes nothing besides ticking boxes (default: false, it is only flagged); --require-change",
    ),
    (
        "ralph.learnings",
        "keep a learnings file the agents read and append to (default: true); --no-learnings",
    ),
    (
        "ralph.questions",
        "a story whose agent ends with a question waits for an answer while the rest goes on (default: true); --no-questions",
    ),
    (
        "ralph.fullScan",
        "look at every file after each attempt instead of what the agent touched (default: false); --full-scan",
    ),
    (
        "ralph.roles",
        "the role pipeline, e.g. coder,reviewer,tester (default: none, one agent per story); --roles",
    ),
    (
        "ralph.sandbox",
        "run the agent under bubblewrap with the git directory read-only (default: false); --sandbox",
    ),
    (
        "ralph.notify",
        "a desktop notification (notify-send, osascript) and the bell when a run ends, done or stopped for you, or waits out a usage limit (default: false); --notify",
    ),
    (
        "ralph.notifyWebhook",
        "an http:// or https:// address told by a JSON POST when a run ends or waits out a usage limit, over [notify] webhook in ralph.toml",
    ),
    (
        "ralph.notifyPayload",
        "the webhook's body: json (default) or slack, a Slack-compatible {\"text\": ...}",
    ),
    (
        "ralph.worktree",
        "true to run in a worktree of its own beside yours (<worktree>.ralph/<change>), or a directory to make run worktrees in (<dir>/<change>) (default: false); --worktree",
    ),
    (
        "ralph.parallel",
        "how many independent stories run at once, each in a worktree of its own (default: one at a time); --parallel",
    ),
];

/// Parse a duration: `90` (seconds), `45s`, `15m`, `2h`, `1h30m`, `1d`.
pub fn parse_duration(text: &str) -> Result<u64, DurationError> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(secs);
    }
    let invalid = || DurationError(text.to_owned());
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            _ => return Err(invalid()),
        };
        let value: u64 = number.parse().map_err(|_| invalid())?;
        total = total.saturating_add(value.saturating_mul(unit));
        number.clear();
    }
    if !number.is_empty() || text.is_empty() {
        return Err(invalid());
    }
    Ok(total)
}

/// A duration as people write it, the way [`parse_duration`] reads it:
/// `15m`, `1h30m`, `90s` is `1m30s`, `0s`.
pub fn format_duration(secs: u64) -> String {
    if secs == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    let mut left = secs;
    for (unit, size) in [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)] {
        if left >= size {
            out.push_str(&format!("{}{unit}", left / size));
            left %= size;
        }
    }
    out
}

/// A duration from git config, or an error naming the key.
pub fn duration(repo: &Repo, key: &str) -> Result<Option<u64>, ConfigError> {
    match repo.config_string(key) {
        None => Ok(None),
        Some(value) => parse_duration(&value)
            .map(Some)
            .map_err(|_| bad_value(key, &value, "a duration such as 90m or 2h")),
    }
}

/// An amount of money (USD) from git config, or an error naming the key.
pub fn money(repo: &Repo, key: &str) -> Result<Option<f64>, ConfigError> {
    match repo.config_string(key) {
        None => Ok(None),
        Some(value) => match value.trim().trim_start_matches('$').parse::<f64>() {
            Ok(amount) if amount >= 0.0 && amount.is_finite() => Ok(Some(amount)),
            _ => Err(bad_value(key, &value, "an amount in USD such as 5 or 2.50")),
        },
    }
}

/// A positive integer from git config, or an error naming the key.
pub fn integer(repo: &Repo, key: &str) -> Result<Option<u64>, ConfigError> {
    match repo.config_integer(key) {
        Ok(None) => Ok(None),
        Ok(Some(value)) if value >= 0 => Ok(Some(value as u64)),
        Ok(Some(value)) => Err(bad_value(key, &value.to_string(), "a non-negative integer")),
        Err(err) => Err(ConfigError {
            source: Some(err),
            ..bad_value(
                key,
                &repo.config_string(key).unwrap_or_default(),
                "an integer",
            )
        }),
    }
}

/// A non-negative integer that fits in 32 bits, or an error naming the key.
pub fn small_integer(repo: &Repo, key: &str) -> Result<Option<u32>, ConfigError> {
    match integer(repo, key)? {
        None => Ok(None),
        Some(n) => u32::try_from(n)
            .map(Some)
            .map_err(|_| bad_value(key, &n.to_string(), "a smaller integer")),
    }
}

/// A boolean from git config (`true`/`false`, `yes`/`no`, `on`/`off`,
/// `1`/`0`), or an error naming the key.
pub fn boolean(repo: &Repo, key: &str) -> Result<Option<bool>, ConfigError> {
    match repo.config_string(key) {
        None => Ok(None),
        Some(value) => match value.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Ok(Some(true)),
            "false" | "no" | "off" | "0" | "" => Ok(Some(false)),
            _ => Err(bad_value(key, &value, "true or false")),
        },
    }
}

/// A key whose value must be one of `choices` (compared without case),
/// returned as the choice spells it.
pub fn one_of(
    repo: &Repo,
    key: &str,
    choices: &[&'static str],
) -> Result<Option<&'static str>, ConfigError> {
    let Some(value) = repo.config_string(key) else {
        return Ok(None);
    };
    choices
        .iter()
        .find(|choice| choice.eq_ignore_ascii_case(value.trim()))
        .map(|choice| Some(*choice))
        .ok_or_else(|| bad_value(key, &value, &format!("one of {}", choices.join(", "))))
}

/// `ralph.agent`, checked against the presets so a typo names the key.
pub fn agent(repo: &Repo) -> Result<Option<String>, ConfigError> {
    let Some(name) = repo.config_string("ralph.agent") else {
        return Ok(None);
    };
    let name = name.trim().to_owned();
    if crate::agent::presets::preset(&name, None, &[]).is_err() {
        return Err(bad_value(
            "ralph.agent",
            &name,
            &format!("one of {}", crate::agent::presets::PRESETS.join(", ")),
        ));
    }
    Ok(Some(name))
}

/// `ralph.fallbackAgents`: presets, separated by commas, each checked.
pub fn fallback_agents(repo: &Repo) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(value) = repo.config_string("ralph.fallbackAgents") else {
        return Ok(None);
    };
    let names: Vec<String> = value
        .split([',', ' '])
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect();
    if names
        .iter()
        .any(|name| crate::agent::presets::lookup(name).is_none())
    {
        return Err(bad_value(
            "ralph.fallbackAgents",
            &value,
            &format!(
                "agent presets separated by commas, among {}",
                crate::agent::presets::PRESETS.join(", ")
            ),
        ));
    }
    Ok(Some(names))
}

/// `ralph.roles`: a comma-separated pipeline of roles.
pub fn roles(repo: &Repo) -> Result<Option<Vec<Role>>, ConfigError> {
    let Some(value) = repo.config_string("ralph.roles") else {
        return Ok(None);
    };
    parse_roles(&value).map(Some).map_err(|_| {
        bad_value(
            "ralph.roles",
            &value,
            "roles among coder, reviewer, tester, qa, separated by commas",
        )
    })
}

/// `coder,reviewer,tester`: roles, in the order they run, each once.
pub fn parse_roles(text: &str) -> Result<Vec<Role>, crate::contract::roles::UnknownRole> {
    let roles = text
        .split(',')
        .filter(|name| !name.trim().is_empty())
        .map(str::parse)
        .collect::<Result<Vec<Role>, _>>()?;
    Ok(crate::contract::roles::in_order(&roles))
}

/// `ralph.worktree`: whether a run works in a worktree of its own, and
/// where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeChoice {
    /// In the user's worktree.
    Off,
    /// Beside it, in the default place.
    Beside,
    /// In `<dir>/<change>`.
    Under(std::path::PathBuf),
}

/// `ralph.worktree`: a boolean, or a directory (`~/` is the home
/// directory; a relative one is taken from the top of the worktree).
pub fn worktree(repo: &Repo) -> Result<Option<WorktreeChoice>, ConfigError> {
    let Some(value) = repo.config_string("ralph.worktree") else {
        return Ok(None);
    };
    let text = value.trim();
    Ok(Some(match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => WorktreeChoice::Beside,
        "false" | "no" | "off" | "0" => WorktreeChoice::Off,
        "" => {
            return Err(bad_value(
                "ralph.worktree",
                &value,
                "true, false or a directory",
            ));
        }
        _ => {
            let dir = match text.strip_prefix("~/") {
                Some(rest) => match std::env::var_os("HOME") {
                    Some(home) => std::path::PathBuf::from(home).join(rest),
                    None => {
                        return Err(bad_value(
                            "ralph.worktree",
                            &value,
                            "a directory (HOME is not set for ~/)",
                        ));
                    }
                },
                None => repo.workdir().join(text),
            };
            WorktreeChoice::Under(dir)
        }
    }))
}

/// How `start` shows a run on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiChoice {
    /// The loop screen.
    Screen,
    /// The one-line progress view.
    Plain,
}

/// `ralph.ui`: `screen` or `plain`.
pub fn ui(repo: &Repo) -> Result<Option<UiChoice>, ConfigError> {
    match repo.config_string("ralph.ui").as_deref().map(str::trim) {
        None => Ok(None),
        Some("screen") => Ok(Some(UiChoice::Screen)),
        Some("plain") => Ok(Some(UiChoice::Plain)),
        Some(other) => Err(bad_value("ralph.ui", other, "screen or plain")),
    }
}

/// `ralph.notifyWebhook` and `ralph.notifyPayload`: the user's own
/// webhook, over the repository's.
pub fn notify(repo: &Repo) -> Result<crate::notify::NotifySettings, ConfigError> {
    let payload = match repo.config_string("ralph.notifyPayload") {
        None => None,
        Some(value) => Some(match value.trim().to_ascii_lowercase().as_str() {
            "json" => crate::notify::Payload::Json,
            "slack" => crate::notify::Payload::Slack,
            _ => return Err(bad_value("ralph.notifyPayload", &value, "json or slack")),
        }),
    };
    Ok(crate::notify::NotifySettings {
        webhook: repo.config_string("ralph.notifyWebhook"),
        payload,
    })
}

/// `ralph.hook.<event>` (multi-valued): hooks that report their failures.
pub fn hooks(repo: &Repo) -> crate::contract::Hooks {
    use crate::contract::{Hook, HookEvent, Hooks};
    let mut hooks = Hooks::default();
    for event in HookEvent::ALL {
        for command in repo.config_strings(&format!("ralph.hook.{}", event.config_name())) {
            if !command.trim().is_empty() {
                hooks.push(event, Hook::command(&command));
            }
        }
    }
    hooks
}

/// `ralph.<agent>.args`, split on whitespace.
pub fn agent_args(repo: &Repo, agent: &str) -> Vec<String> {
    repo.config_string(&format!("ralph.{agent}.args"))
        .map(|value| value.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn bad_value(key: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::new(key, value, expected)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_are_written_as_they_are_read() {
        use super::format_duration;
        for (secs, text) in [
            (0, "0s"),
            (2, "2s"),
            (90, "1m30s"),
            (900, "15m"),
            (5400, "1h30m"),
            (90000, "1d1h"),
        ] {
            assert_eq!(format_duration(secs), text);
            assert_eq!(parse_duration(text), Ok(secs));
        }
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert!(
            parse_duration("2x")
                .unwrap_err()
                .to_string()
                .contains("not a duration")
        );
        assert_eq!(parse_duration("45s"), Ok(45));
        assert_eq!(parse_duration("15m"), Ok(900));
        assert_eq!(parse_duration("2h"), Ok(7200));
        assert_eq!(parse_duration("1h30m"), Ok(5400));
        assert_eq!(parse_duration("1d"), Ok(86400));
        for bad in ["", "h", "2x", "1h30", "-5m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
