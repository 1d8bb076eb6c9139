//! The completion protocol between git-ralph and the agent.
//!
//! The agent is told to end its final message with `<promise>COMPLETE</promise>`
//! when a story is done, or `<promise>FAILED: reason</promise>` when it cannot
//! be done. Agents echo prompts, quote instructions in plans and run tools
//! whose output contains the very same tag, so only the last tag of the
//! final message counts, and only when the process itself ended cleanly.
//! Anything else is "no signal": the attempt is retried, never mistaken for
//! success.

use serde::{Deserialize, Serialize};

use super::events::{Done, ExitStatusKind};

/// The promise token used when the configuration does not name another.
pub const DEFAULT_TOKEN: &str = "COMPLETE";

const OPEN_TAG: &str = "<promise>";
const CLOSE_TAG: &str = "</promise>";
const FAILED_WORD: &str = "FAILED";

/// What the final message promised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The agent declared the story done.
    Complete,
    /// The agent declared the story impossible, with its reason.
    Failed(String),
    /// No promise, or one git-ralph does not understand.
    None,
}

/// Which part of the final text may hold the promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromiseScope {
    /// The final message is known exactly (structured formats): its last tag counts.
    #[default]
    FinalMessage,
    /// The final text is a tail of raw output that may include an echoed
    /// prompt: only a promise on the last non-empty line counts.
    LastLine,
}

/// What git-ralph makes of one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Conclusion {
    /// The agent promised completion and exited cleanly.
    Complete,
    /// The agent gave up on the story and said why.
    Failed { reason: String },
    /// The agent ended without a usable promise.
    NoSignal,
    /// The agent or its process failed; its words, if any, are not a signal.
    AgentError { message: String },
}

/// Reads the promise in the last `<promise>…</promise>` tag of `final_text`.
///
/// `token` is the word that means completion (see [`DEFAULT_TOKEN`]); a blank
/// token falls back to the default so that an empty tag never counts.
pub fn parse_promise(final_text: &str, token: &str) -> Signal {
    let Some(close) = final_text.rfind(CLOSE_TAG) else {
        return Signal::None;
    };
    let Some(open) = final_text[..close].rfind(OPEN_TAG) else {
        return Signal::None;
    };
    let inner = final_text[open + OPEN_TAG.len()..close].trim();
    let token = match token.trim() {
        "" => DEFAULT_TOKEN,
        token => token,
    };
    if inner == token {
        return Signal::Complete;
    }
    match inner.strip_prefix(FAILED_WORD) {
        Some("") => Signal::Failed(String::new()),
        Some(rest) => match rest.strip_prefix(':') {
            Some(reason) => Signal::Failed(reason.trim().to_owned()),
            None => Signal::None,
        },
        None => Signal::None,
    }
}

/// The word of the last promise in `final_text` when it is neither `token`
/// nor a failure: the agent meant to promise, in words this attempt does
/// not take (`COMPLETE` from a coder whose promise is another).
pub fn other_promise(final_text: &str, token: &str) -> Option<String> {
    if parse_promise(final_text, token) != Signal::None {
        return None;
    }
    let close = final_text.rfind(CLOSE_TAG)?;
    let open = final_text[..close].rfind(OPEN_TAG)?;
    let inner = final_text[open + OPEN_TAG.len()..close].trim();
    (!inner.is_empty() && !inner.starts_with(FAILED_WORD)).then(|| inner.to_owned())
}

/// How many lines a promise may span when the agent's console wrapped it.
const WRAPPED_PROMISE_LINES: usize = 16;

/// Like [`parse_promise`], but only a promise on the last non-empty line counts.
///
/// A console that wraps long lines (Aider's, 80 columns wide without a
/// terminal) can split one promise over several lines: when the last line
/// closes a tag opened on an earlier line, with no blank line and no other
/// closing tag between, the lines are joined as the console split them.
pub fn parse_promise_on_last_line(text: &str, token: &str) -> Signal {
    let mut lines = text.lines().rev().skip_while(|line| line.trim().is_empty());
    let Some(last) = lines.next() else {
        return Signal::None;
    };
    let opened_here = last
        .rfind(CLOSE_TAG)
        .is_none_or(|close| last[..close].contains(OPEN_TAG));
    if opened_here {
        return parse_promise(last, token);
    }
    let mut pieces = vec![last];
    for line in lines.take(WRAPPED_PROMISE_LINES - 1) {
        if line.trim().is_empty() {
            break;
        }
        let after_close = line
            .rfind(CLOSE_TAG)
            .map_or(0, |close| close + CLOSE_TAG.len());
        match line[after_close..].rfind(OPEN_TAG) {
            Some(open) => {
                pieces.push(&line[after_close + open..]);
                pieces.reverse();
                return parse_promise(&unwrap_lines(&pieces), token);
            }
            None if after_close > 0 => break,
            None => pieces.push(line),
        }
    }
    Signal::None
}

/// Lines a console wrapped, joined back into one: the break stood for one
/// space, which the console may have kept at the end of the line.
fn unwrap_lines(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|line| line.trim_end())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Combines what the agent reported with how its process ended.
///
/// A run git-ralph ended itself (timeout, stop) is an agent error, and so is
/// an error the agent reported, so a promise in an error message never
/// counts. A process that did not exit with 0 is an agent error unless it
/// named its ending: a promised completion is not trusted (no signal), a
/// named failure keeps its reason. Completion requires exit 0.
pub fn conclude(
    done: Option<&Done>,
    exit: ExitStatusKind,
    token: &str,
    scope: PromiseScope,
) -> Conclusion {
    if matches!(
        exit,
        ExitStatusKind::TimedOut | ExitStatusKind::Stopped | ExitStatusKind::Idle
    ) {
        return Conclusion::AgentError {
            message: format!("the agent {exit}"),
        };
    }
    if let Some(done) = done.filter(|done| done.is_error || done.rate_limit.is_some()) {
        return Conclusion::AgentError {
            message: agent_error_message(done),
        };
    }
    let signal = match done {
        Some(done) => match scope {
            PromiseScope::FinalMessage => parse_promise(&done.final_text, token),
            PromiseScope::LastLine => parse_promise_on_last_line(&done.final_text, token),
        },
        None => Signal::None,
    };
    // A failure the agent named is its reason, whatever its exit status
    // adds: wrappers report a failure both ways.
    if !exit.is_success() && matches!(signal, Signal::None) {
        return Conclusion::AgentError {
            message: format!("the agent {exit}"),
        };
    }
    match signal {
        Signal::Complete if exit.is_success() => Conclusion::Complete,
        Signal::Failed(reason) => Conclusion::Failed { reason },
        Signal::Complete | Signal::None => Conclusion::NoSignal,
    }
}

fn agent_error_message(done: &Done) -> String {
    if let Some(error) = done.error.as_deref().filter(|e| !e.trim().is_empty()) {
        return error.to_owned();
    }
    if let Some(limit) = &done.rate_limit {
        return limit.message.clone();
    }
    match &done.subtype {
        Some(subtype) => format!("the agent reported an error ({subtype})"),
        None => "the agent reported an error".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::events::RateLimit;

    fn done(text: &str) -> Done {
        Done {
            final_text: text.to_owned(),
            ..Done::default()
        }
    }

    #[test]
    fn complete_tag_is_complete() {
        assert_eq!(
            parse_promise("All done.\n<promise>COMPLETE</promise>", DEFAULT_TOKEN),
            Signal::Complete
        );
        assert_eq!(
            parse_promise("<promise> COMPLETE </promise>\n", DEFAULT_TOKEN),
            Signal::Complete
        );
    }

    #[test]
    fn failed_tag_carries_its_trimmed_reason() {
        assert_eq!(
            parse_promise(
                "nope <promise>FAILED:   tests need a running database </promise>",
                DEFAULT_TOKEN
            ),
            Signal::Failed("tests need a running database".into())
        );
        assert_eq!(
            parse_promise("<promise>FAILED</promise>", DEFAULT_TOKEN),
            Signal::Failed(String::new())
        );
        assert_eq!(
            parse_promise("<promise>FAILEDX</promise>", DEFAULT_TOKEN),
            Signal::None
        );
    }

    #[test]
    fn only_the_last_tag_counts() {
        let text = "<promise>COMPLETE</promise> then <promise>FAILED: later</promise>";
        assert_eq!(
            parse_promise(text, DEFAULT_TOKEN),
            Signal::Failed("later".into())
        );
        let text = "<promise>FAILED: early</promise> then <promise>COMPLETE</promise>";
        assert_eq!(parse_promise(text, DEFAULT_TOKEN), Signal::Complete);
        let text = "<promise>COMPLETE</promise> then <promise>maybe</promise>";
        assert_eq!(parse_promise(text, DEFAULT_TOKEN), Signal::None);
    }

    #[test]
    fn unknown_or_malformed_tags_are_no_signal() {
        for text in [
            "",
            "COMPLETE",
            "<promise>COMPLETE",
            "COMPLETE</promise>",
            "</promise>COMPLETE<promise>",
            "<promise>complete</promise>",
            "<promise></promise>",
        ] {
            assert_eq!(parse_promise(text, DEFAULT_TOKEN), Signal::None, "{text:?}");
        }
    }

    #[test]
    fn the_token_is_configurable() {
        let text = "<promise>STORY-DONE</promise>";
        assert_eq!(parse_promise(text, "STORY-DONE"), Signal::Complete);
        assert_eq!(parse_promise(text, DEFAULT_TOKEN), Signal::None);
        assert_eq!(
            parse_promise("<promise>COMPLETE</promise>", "STORY-DONE"),
            Signal::None
        );
        assert_eq!(
            parse_promise("<promise>COMPLETE</promise>", "  "),
            Signal::Complete
        );
    }

    #[test]
    fn last_line_scope_ignores_an_echoed_prompt() {
        let echoed = "When done, print <promise>COMPLETE</promise>\nworking...\nstill going\n\n";
        assert_eq!(
            parse_promise_on_last_line(echoed, DEFAULT_TOKEN),
            Signal::None
        );
        let finished =
            "When done, print <promise>COMPLETE</promise>\nok\n<promise>COMPLETE</promise>\n\n  \n";
        assert_eq!(
            parse_promise_on_last_line(finished, DEFAULT_TOKEN),
            Signal::Complete
        );
        assert_eq!(parse_promise_on_last_line("", DEFAULT_TOKEN), Signal::None);
    }

    #[test]
    fn last_line_scope_joins_a_promise_the_console_wrapped() {
        let wrapped = "I could not finish.\n<promise>FAILED: the tests need a running \ndatabase and none is here</promise>\n\n";
        assert_eq!(
            parse_promise_on_last_line(wrapped, DEFAULT_TOKEN),
            Signal::Failed("the tests need a running database and none is here".into())
        );
        let split_tag = "done\n<promise>\nCOMPLETE\n</promise>";
        assert_eq!(
            parse_promise_on_last_line(split_tag, DEFAULT_TOKEN),
            Signal::Complete
        );
        let quoted_then_said = "say <promise>COMPLETE</promise> or <promise>FAILED: a\nb</promise>";
        assert_eq!(
            parse_promise_on_last_line(quoted_then_said, DEFAULT_TOKEN),
            Signal::Failed("a b".into())
        );
    }

    #[test]
    fn a_tag_opened_before_a_blank_line_or_another_tag_is_not_joined() {
        for text in [
            "<promise>FAILED: a\n\nb</promise>",
            "<promise>FAILED: a</promise>\nb</promise>",
            "just words</promise>",
        ] {
            assert_eq!(
                parse_promise_on_last_line(text, DEFAULT_TOKEN),
                Signal::None,
                "{text:?}"
            );
        }
        let far = format!(
            "<promise>FAILED: a\n{}b</promise>",
            "more\n".repeat(WRAPPED_PROMISE_LINES)
        );
        assert_eq!(
            parse_promise_on_last_line(&far, DEFAULT_TOKEN),
            Signal::None
        );
    }

    #[test]
    fn a_promise_in_other_words_is_named() {
        let coder = "IMPLEMENTATION_COMPLETE";
        assert_eq!(
            other_promise("done\n<promise>COMPLETE</promise>", coder).as_deref(),
            Some("COMPLETE")
        );
        assert_eq!(
            other_promise("<promise>IMPLEMENTATION_COMPLETE</promise>", coder),
            None
        );
        assert_eq!(
            other_promise("<promise>FAILED: no db</promise>", coder),
            None
        );
        assert_eq!(other_promise("no promise at all", coder), None);
    }

    #[test]
    fn conclusion_table() {
        let ok = ExitStatusKind::Exited(0);
        let complete = done("x <promise>COMPLETE</promise>");
        let failed = done("<promise>FAILED: no db</promise>");
        let silent = done("just words");
        let scope = PromiseScope::FinalMessage;

        assert_eq!(
            conclude(Some(&complete), ok, DEFAULT_TOKEN, scope),
            Conclusion::Complete
        );
        assert_eq!(
            conclude(Some(&failed), ok, DEFAULT_TOKEN, scope),
            Conclusion::Failed {
                reason: "no db".into()
            }
        );
        assert_eq!(
            conclude(Some(&silent), ok, DEFAULT_TOKEN, scope),
            Conclusion::NoSignal
        );
        assert_eq!(
            conclude(None, ok, DEFAULT_TOKEN, scope),
            Conclusion::NoSignal
        );
    }

    #[test]
    fn an_unclean_exit_is_an_agent_error_unless_the_agent_named_its_ending() {
        let scope = PromiseScope::FinalMessage;
        let failed = done("<promise>FAILED: no db</promise>");
        assert_eq!(
            conclude(
                Some(&failed),
                ExitStatusKind::Exited(2),
                DEFAULT_TOKEN,
                scope
            ),
            Conclusion::Failed {
                reason: "no db".into()
            },
            "a failure named in the promise keeps its reason"
        );
        assert_eq!(
            conclude(None, ExitStatusKind::Exited(2), DEFAULT_TOKEN, scope),
            Conclusion::AgentError {
                message: "the agent exited with code 2".into()
            }
        );
        assert_eq!(
            conclude(None, ExitStatusKind::TimedOut, DEFAULT_TOKEN, scope),
            Conclusion::AgentError {
                message: "the agent timed out".into()
            }
        );
        let complete = done("<promise>COMPLETE</promise>");
        for exit in [ExitStatusKind::Exited(1), ExitStatusKind::Signaled(9)] {
            assert_eq!(
                conclude(Some(&complete), exit, DEFAULT_TOKEN, scope),
                Conclusion::NoSignal,
                "{exit:?}"
            );
        }
    }

    #[test]
    fn a_run_ended_by_git_ralph_is_an_agent_error_whatever_it_said() {
        let scope = PromiseScope::FinalMessage;
        let complete = done("<promise>COMPLETE</promise>");
        let errored = Done {
            is_error: true,
            error: Some("Reconnecting... 3/5".into()),
            ..Done::default()
        };
        for done in [None, Some(&complete), Some(&errored)] {
            assert_eq!(
                conclude(done, ExitStatusKind::TimedOut, DEFAULT_TOKEN, scope),
                Conclusion::AgentError {
                    message: "the agent timed out".into()
                }
            );
            assert_eq!(
                conclude(done, ExitStatusKind::Stopped, DEFAULT_TOKEN, scope),
                Conclusion::AgentError {
                    message: "the agent was stopped".into()
                }
            );
        }
    }

    #[test]
    fn an_agent_error_wins_over_any_promise() {
        let errored = Done {
            final_text: "<promise>COMPLETE</promise>".into(),
            is_error: true,
            subtype: Some("error_during_execution".into()),
            ..Done::default()
        };
        assert_eq!(
            conclude(
                Some(&errored),
                ExitStatusKind::Exited(0),
                DEFAULT_TOKEN,
                PromiseScope::FinalMessage
            ),
            Conclusion::AgentError {
                message: "the agent reported an error (error_during_execution)".into()
            }
        );
        let limited = Done {
            final_text: "<promise>COMPLETE</promise>".into(),
            rate_limit: Some(RateLimit {
                reset_at_unix: None,
                message: "usage limit reached".into(),
            }),
            ..Done::default()
        };
        assert_eq!(
            conclude(
                Some(&limited),
                ExitStatusKind::Exited(0),
                DEFAULT_TOKEN,
                PromiseScope::FinalMessage
            ),
            Conclusion::AgentError {
                message: "usage limit reached".into()
            }
        );
    }

    #[test]
    fn scope_decides_where_the_promise_may_be() {
        let echoed = done("prompt: say <promise>COMPLETE</promise>\nI am still working");
        let ok = ExitStatusKind::Exited(0);
        assert_eq!(
            conclude(Some(&echoed), ok, DEFAULT_TOKEN, PromiseScope::FinalMessage),
            Conclusion::Complete
        );
        assert_eq!(
            conclude(Some(&echoed), ok, DEFAULT_TOKEN, PromiseScope::LastLine),
            Conclusion::NoSignal
        );
    }
}
