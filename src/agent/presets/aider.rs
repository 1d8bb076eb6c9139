//! Aider: its preset, with the stand-in reached through litellm's Anthropic
//! variables, and its plain-text output (`--no-stream --no-pretty`).
//!
//! Aider has no machine-readable stream. After each model reply it prints a
//! usage report (`Tokens: … sent, … received. Cost: $… message, $… session.`)
//! and then its own handling of the reply: the names of files it edited,
//! `Applied edit to …`, linter output, and possibly another round with the
//! model. So the model's last reply is the text before the last usage
//! report, and, as for any plain text, a promise counts only on its last
//! line. Whatever follows that report is Aider's, never a promise.
//!
//! Aider exits with 0 even when the provider failed, so its error lines are
//! the only sign: a provider error (`litellm.…Error: …`) after the last
//! reply ends the run without a usable reply, and a rate limit (the error's
//! name, its text, or Aider's own "rate limited you" notice) pauses the run
//! instead of spending a retry.
//!
//! Without a terminal Aider wraps every line at 80 columns (or `$COLUMNS`).
//! The preset widens the console, but the parser does not rely on it: an
//! error whose brackets are still open continues on the next lines, and a
//! promise may span lines (see [`crate::agent::parse_promise_on_last_line`]).
//! Checked against transcripts recorded from Aider 0.86.2.

use std::io;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{mentions_rate_limit, reset_from_words};
use crate::agent::{AgentEvent, Done, PromiseScope, StreamParser, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "aider",
    title: "Aider",
    program: "aider",
    verified: Some("0.86.2"),
    oldest: None,
    // Aider commits every edit by default; the loop decides what is
    // committed, so auto-commits are off. It would also add `.aider*` to
    // .gitignore, a change of the user's files that no story asked for.
    // Pretty output renders the reply as markdown, which would swallow
    // the `<promise>` tags.
    lead: &[
        "--yes-always",
        "--no-auto-commits",
        "--no-gitignore",
        "--no-stream",
        "--no-pretty",
    ],
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::FileFlag("--message-file"),
    // Without a terminal Aider wraps every line at $COLUMNS, 80 when
    // unset, splitting promises and error lines.
    env: &[("COLUMNS", "10000")],
    scratch: &[
        ".aider.chat.history.md",
        ".aider.input.history",
        ".aider.llm.history",
        ".aider.tags.cache.v*",
    ],
    parser: || Box::new(AiderParser::new()),
    // Plain text: no first event to recognise.
    first_event: None,
    standin: Some(StandinSetup {
        protocol: Protocol::AnthropicMessages,
        // Aider offers the model no tools; it reads edit blocks instead.
        offers_tools: false,
        point,
    }),
};

/// litellm's variables for the Anthropic endpoint, and Aider's own
/// settings that keep it from checking for updates or reporting.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    Ok(vars(&[
        ("ANTHROPIC_API_BASE", at.base),
        ("ANTHROPIC_API_KEY", STANDIN_KEY),
        ("AIDER_MODEL", "anthropic/claude-sonnet-4-20250514"),
        ("AIDER_CHECK_UPDATE", "false"),
        ("AIDER_ANALYTICS", "false"),
        ("AIDER_SHOW_RELEASE_NOTES", "false"),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
    ]))
}

/// How much of each round's output is kept.
const ROUND_TAIL_BYTES: usize = 64 * 1024;

/// How many wrapped lines one provider error may continue over.
const ERROR_CONTINUATION_LINES: usize = 32;

/// Aider's own notice after a rate-limited request.
const RATE_LIMIT_NOTICE: &str = "The API provider has rate limited you";

/// Parses Aider's console output.
pub(super) struct AiderParser {
    /// Output since the last usage report.
    round: TextTail,
    /// The output that the last usage report closed: the model's last reply.
    last_reply: Option<String>,
    /// The last provider error printed since the last usage report.
    error: Option<String>,
    /// How many more lines the error may continue over, while its brackets
    /// are open.
    error_continues: usize,
    /// Aider said it was rate limited since the last usage report.
    rate_limit_notice: bool,
    usage: Usage,
    cost_usd: Option<f64>,
    replies: u64,
}

impl AiderParser {
    pub(super) fn new() -> Self {
        AiderParser {
            round: TextTail::new(ROUND_TAIL_BYTES),
            last_reply: None,
            error: None,
            error_continues: 0,
            rate_limit_notice: false,
            usage: Usage::default(),
            cost_usd: None,
            replies: 0,
        }
    }

    fn on_report(&mut self, line: &str) {
        let (tokens, cost) = match line.find("Cost:") {
            Some(at) => (&line[..at], Some(&line[at..])),
            None => (line, None),
        };
        if let Some(tokens) = tokens.trim().strip_prefix("Tokens:") {
            self.replies += 1;
            self.last_reply = Some(self.round.as_str().to_owned());
            self.round.clear();
            self.error = None;
            self.error_continues = 0;
            self.rate_limit_notice = false;
            self.add_tokens(tokens);
        }
        if let Some(session) = cost.and_then(session_cost) {
            self.cost_usd = Some(session);
        }
    }

    /// Starts, continues or ends the provider error being printed.
    fn on_error_line(&mut self, trimmed: &str) {
        if self.error_continues > 0
            && !trimmed.is_empty()
            && let Some(error) = self.error.as_mut()
        {
            // The console broke the line where a space was.
            error.truncate(error.trim_end().len());
            error.push(' ');
            error.push_str(trimmed);
            self.error_continues -= 1;
            if brackets_open(error) <= 0 {
                self.error_continues = 0;
            }
            return;
        }
        self.error_continues = 0;
        if is_provider_error(trimmed) {
            self.error = Some(trimmed.to_owned());
            if brackets_open(trimmed) > 0 {
                self.error_continues = ERROR_CONTINUATION_LINES;
            }
        } else if trimmed.starts_with(RATE_LIMIT_NOTICE) {
            self.rate_limit_notice = true;
        }
    }

    /// `2.6k sent, 1.2k cache write, 3.4k cache hit, 80 received.`
    fn add_tokens(&mut self, report: &str) {
        for item in report.trim().trim_end_matches('.').split(", ") {
            let Some((count, what)) = item.trim().split_once(' ') else {
                continue;
            };
            let Some(count) = token_count(count) else {
                continue;
            };
            // A count Aider printed wrong (`1e400`) saturates, never overflows.
            let total = match what.trim() {
                "sent" => &mut self.usage.input_tokens,
                "received" => &mut self.usage.output_tokens,
                "cache write" => &mut self.usage.cache_creation_input_tokens,
                "cache hit" => &mut self.usage.cache_read_input_tokens,
                _ => continue,
            };
            *total = total.saturating_add(count);
        }
    }
}

impl StreamParser for AiderParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let trimmed = line.trim();
        if trimmed.starts_with("Tokens:") || trimmed.starts_with("Cost:") {
            self.on_report(trimmed);
            return Vec::new();
        }
        self.on_error_line(trimmed);
        self.round.push_str(line);
        self.round.push_str("\n");
        if trimmed.is_empty() {
            return Vec::new();
        }
        vec![AgentEvent::Message {
            text: line.to_owned(),
            tool_uses: Vec::new(),
        }]
    }

    fn finish(&mut self) -> Option<Done> {
        let final_text = match self.last_reply.take() {
            Some(reply) => reply,
            None => self.round.as_str().to_owned(),
        };
        let error = self.error.take();
        let rate_limited = self.rate_limit_notice;
        let rate_limit = error
            .as_deref()
            .filter(|error| {
                rate_limited || error.contains("RateLimitError") || mentions_rate_limit(error)
            })
            .map(reset_from_words);
        Some(Done {
            final_text: final_text.trim_end().to_owned(),
            is_error: error.is_some(),
            turns: (self.replies > 0).then_some(self.replies),
            usage: self.usage,
            cost_usd: self.cost_usd,
            error,
            rate_limit,
            ..Done::default()
        })
    }

    fn promise_scope(&self) -> PromiseScope {
        PromiseScope::LastLine
    }
}

/// An exception from the provider library, as Aider prints it.
fn is_provider_error(line: &str) -> bool {
    line.strip_prefix("litellm.").is_some_and(|rest| {
        rest.split_once(':')
            .is_some_and(|(name, _)| name.ends_with("Error") || name.ends_with("Exception"))
    })
}

/// Brackets opened and not yet closed in `text`: a provider error carries
/// the provider's JSON answer, so an open bracket means the console wrapped
/// the line.
fn brackets_open(text: &str) -> i64 {
    text.chars()
        .map(|c| match c {
            '{' | '[' | '(' => 1,
            '}' | ']' | ')' => -1,
            _ => 0,
        })
        .sum()
}

/// `2.6k`, `1.2M`, `1,234` or `80` as a number of tokens.
fn token_count(text: &str) -> Option<u64> {
    let text = text.replace(',', "");
    let (number, scale) = match text.chars().last()? {
        'k' => (&text[..text.len() - 1], 1_000.0),
        'M' => (&text[..text.len() - 1], 1_000_000.0),
        _ => (text.as_str(), 1.0),
    };
    let value: f64 = number.parse().ok()?;
    (value >= 0.0).then(|| (value * scale).round() as u64)
}

/// The session total of `Cost: $0.0090 message, $0.02 session.`
fn session_cost(report: &str) -> Option<f64> {
    report
        .split(',')
        .find(|item| item.contains("session"))?
        .trim()
        .trim_start_matches("Cost:")
        .trim()
        .strip_prefix('$')?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_and_costs_parse_leniently() {
        assert_eq!(token_count("80"), Some(80));
        assert_eq!(token_count("2.6k"), Some(2600));
        assert_eq!(token_count("1,234"), Some(1234));
        assert_eq!(token_count("lots"), None);
        assert_eq!(
            session_cost("Cost: $0.0090 message, $0.02 session."),
            Some(0.02)
        );
        assert_eq!(session_cost("Cost: unknown"), None);
        assert!(is_provider_error("litellm.RateLimitError: slow down"));
        assert!(!is_provider_error("litellm.is great: really"));
        assert!(!is_provider_error("I fixed the RateLimitError: done"));
        assert_eq!(brackets_open("{\"a\": [1, (2)"), 2);
    }
}
