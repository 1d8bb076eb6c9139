//! An agent that cannot work at all: it refuses to run as root, has no API
//! key, is not logged in, was given an option it does not know. No retry
//! fixes that, and spending the retries on it ends a run as "no progress"
//! with the user none the wiser. This module tells such an ending from an
//! agent that worked and then failed, and says what to do, in the agent's
//! own words first.

/// How an attempt's agent ended, as far as telling set-up from work goes.
#[derive(Debug, Clone, Copy)]
pub struct Ending<'a> {
    /// It exited with an error status or reported an error.
    pub failed: bool,
    /// It changed the worktree: it got to work, whatever it said.
    pub changed: bool,
    /// It produced at least one assistant message (a model turn).
    pub model_turned: bool,
    /// Its output held at least one event git-ralph could read.
    pub spoke: bool,
    /// The error the agent reported, if any.
    pub error: Option<&'a str>,
    /// The end of what it wrote on stderr.
    pub stderr_tail: &'a str,
}

/// What kind of set-up problem it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupKind {
    /// The command could not be run at all: the shell's 127 (not found) or
    /// 126 (not executable).
    NotRunnable(i32),
    RootRefused,
    MissingKey,
    NotLoggedIn,
    UnknownOption,
    /// It failed before any model turn, for a reason not recognised here.
    NoModelTurn,
}

/// A set-up error: the agent's own words and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    pub kind: SetupKind,
    /// The line in which the agent said what is wrong.
    pub words: String,
}

impl SetupError {
    /// What the user can do, for the kind of problem.
    pub fn advice(&self) -> &'static str {
        match self.kind {
            SetupKind::NotRunnable(_) => {
                "check that the agent's command exists and is executable (--agent, --agent-command or ralph.agentCommand)"
            }
            SetupKind::RootRefused => {
                "run git-ralph as a normal user; only inside a throwaway container, set IS_SANDBOX=1 to let the agent run as root"
            }
            SetupKind::MissingKey => {
                "set the agent's API key (for example ANTHROPIC_API_KEY or OPENAI_API_KEY) in the environment git-ralph runs in, or log the agent in"
            }
            SetupKind::NotLoggedIn => {
                "log the agent in once by hand (for example 'claude', then /login), then resume"
            }
            SetupKind::UnknownOption => {
                "the agent does not know an option it was given: check ralph.agentArgs and --agent-command, or update the agent (see 'git ralph agents')"
            }
            SetupKind::NoModelTurn => {
                "the agent stopped before doing any work: run its command by hand to see why (see 'git ralph agents' for the exact command)"
            }
        }
    }
}

/// Phrases that name a set-up problem, lower case.
const PATTERNS: &[(SetupKind, &[&str])] = &[
    (
        SetupKind::RootRefused,
        &[
            "cannot be used with root",
            "root/sudo privileges",
            "running as root is not",
            "refusing to run as root",
        ],
    ),
    (
        SetupKind::MissingKey,
        &[
            "invalid api key",
            "incorrect api key",
            "missing api key",
            "no api key",
            "api key not found",
            "api key is not set",
            "api_key environment variable",
            "x-api-key header is required",
            "authentication_error",
            "invalid x-api-key",
        ],
    ),
    (
        SetupKind::NotLoggedIn,
        &[
            "not logged in",
            "please run /login",
            "please log in",
            "login required",
            "not authenticated",
            "authentication required",
            "no authentication",
        ],
    ),
    (
        SetupKind::UnknownOption,
        &[
            "unknown option",
            "unrecognized option",
            "unrecognised option",
            "unrecognized arguments",
            "unexpected argument",
            "unknown argument",
            "invalid option",
        ],
    ),
];

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            SetupKind::NotRunnable(code) => {
                write!(
                    f,
                    "the agent command could not be run (exit {code}): {}",
                    self.words
                )
            }
            _ => write!(f, "the agent could not start working: {}", self.words),
        }
    }
}

/// Whether the ending is a set-up error rather than a failed attempt: it
/// failed without changing anything, and either said what is wrong in
/// words recognised here (even after a synthetic turn, the way an API
/// error is reported), or said nothing at all before it stopped.
pub fn recognise(ending: &Ending<'_>) -> Option<SetupError> {
    if !ending.failed || ending.changed {
        return None;
    }
    let lines = ending
        .error
        .into_iter()
        .flat_map(str::lines)
        .chain(ending.stderr_tail.lines())
        .map(str::trim)
        .filter(|line| !line.is_empty());
    for line in lines {
        let lower = line.to_lowercase();
        for (kind, phrases) in PATTERNS {
            if phrases.iter().any(|phrase| lower.contains(phrase)) {
                return Some(SetupError {
                    kind: *kind,
                    words: line.to_owned(),
                });
            }
        }
    }
    if ending.model_turned || ending.spoke {
        return None;
    }
    let words = ending
        .error
        .and_then(|error| error.lines().map(str::trim).find(|l| !l.is_empty()))
        .or_else(|| {
            ending
                .stderr_tail
                .lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty())
        })
        .unwrap_or("it exited with an error and said nothing");
    Some(SetupError {
        kind: SetupKind::NoModelTurn,
        words: words.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ending(
        model_turned: bool,
        error: Option<&'static str>,
        stderr: &'static str,
    ) -> Ending<'static> {
        Ending {
            failed: true,
            changed: false,
            model_turned,
            spoke: model_turned,
            error,
            stderr_tail: stderr,
        }
    }

    #[test]
    fn claude_refusing_root_is_recognised_with_its_words() {
        let found = recognise(&ending(
            false,
            None,
            "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n",
        ))
        .expect("a set-up error");
        assert_eq!(found.kind, SetupKind::RootRefused);
        assert!(found.words.starts_with("--dangerously-skip-permissions"));
        assert!(found.advice().contains("IS_SANDBOX=1"));
    }

    #[test]
    fn an_api_key_error_counts_even_after_a_synthetic_turn() {
        let found = recognise(&ending(
            true,
            Some("Invalid API key · Please run /login"),
            "",
        ));
        assert_eq!(found.map(|f| f.kind), Some(SetupKind::MissingKey));
    }

    #[test]
    fn any_error_before_a_model_turn_is_set_up_and_after_one_is_work() {
        let found = recognise(&ending(
            false,
            None,
            "something odd\nsession store locked\n\n",
        ));
        assert_eq!(
            found,
            Some(SetupError {
                kind: SetupKind::NoModelTurn,
                words: "session store locked".into()
            })
        );
        assert_eq!(recognise(&ending(true, Some("Overloaded"), "")), None);
    }

    #[test]
    fn an_agent_that_changed_the_worktree_or_spoke_got_to_work() {
        let mut worked = ending(false, None, "Invalid API key");
        worked.changed = true;
        assert_eq!(recognise(&worked), None);
        let mut spoke = ending(false, Some("bad request"), "");
        spoke.spoke = true;
        assert_eq!(recognise(&spoke), None);
    }

    #[test]
    fn an_agent_that_did_not_fail_is_never_a_set_up_error() {
        let mut fine = ending(false, None, "unknown option --x");
        fine.failed = false;
        assert_eq!(recognise(&fine), None);
    }

    #[test]
    fn unknown_options_and_logins_are_recognised() {
        assert_eq!(
            recognise(&ending(
                false,
                None,
                "error: unexpected argument '--yolo' found"
            ))
            .map(|f| f.kind),
            Some(SetupKind::UnknownOption)
        );
        assert_eq!(
            recognise(&ending(false, None, "Not logged in. Run codex login.")).map(|f| f.kind),
            Some(SetupKind::NotLoggedIn)
        );
    }
}
