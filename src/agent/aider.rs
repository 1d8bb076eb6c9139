//! Aider's plain-text output (`--no-stream --no-pretty`).
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
//! promise may span lines (see [`super::parse_promise_on_last_line`]).
//! Checked against transcripts recorded from Aider 0.86.2.

use super::events::{AgentEvent, Done, RateLimit, Usage};
use super::plain::TextTail;
use super::promise::PromiseScope;
use super::{StreamParser, mentions_rate_limit};

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
            .map(|error| RateLimit {
                reset_at_unix: None,
                message: error.to_owned(),
            });
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
    //! Conclusions of the recorded transcripts are checked with every other
    //! format's (see `transcripts.rs`); these tests check the rest.

    use super::*;
    use crate::agent::ExitStatusKind;
    use crate::agent::promise::{Conclusion, DEFAULT_TOKEN, conclude};

    crate::agent::transcripts::parser_tests!(AiderParser::new(), "aider");

    #[test]
    fn the_reply_is_what_came_before_the_last_usage_report() {
        let (transcript, _) = fixture("complete");
        assert!(transcript.trim_end().ends_with("Applied edit to hello.txt"));
        let (events, done) = parse(&transcript);
        let done = done.expect("plain output always yields a done");
        assert!(
            done.final_text
                .ends_with("Created hello.txt.\n<promise>COMPLETE</promise>"),
            "{}",
            done.final_text
        );
        assert!(!done.is_error);
        let shown = |text: &str| {
            events
                .iter()
                .any(|event| matches!(event, AgentEvent::Message { text: t, .. } if t == text))
        };
        assert!(
            shown("Applied edit to hello.txt"),
            "Aider's own lines are shown"
        );
        assert!(!shown(""), "blank lines are not");
    }

    #[test]
    fn usage_reports_add_up_and_the_session_cost_is_the_last_one() {
        let (transcript, _) = fixture("multi-message");
        let (_, done) = parse(&transcript);
        let done = done.expect("a done");
        assert_eq!(done.turns, Some(2));
        assert_eq!(done.usage.input_tokens, 2000);
        assert_eq!(done.usage.output_tokens, 50 + 51);
        assert_eq!(done.cost_usd, Some(0.0075));
        assert!(
            done.final_text
                .ends_with("Both steps are done.\n<promise>COMPLETE</promise>"),
            "{}",
            done.final_text
        );
        assert!(!done.final_text.contains("Step one"), "{}", done.final_text);
    }

    #[test]
    fn cache_figures_are_read_from_the_report() {
        let transcript = "Done.\n<promise>COMPLETE</promise>\n\nTokens: 2.6k sent, 1.2k cache write, 3.4k cache hit, 80 received. Cost: $0.0090 message, $0.02 session.\n";
        let (_, done) = parse(transcript);
        let done = done.expect("a done");
        assert_eq!(done.usage.input_tokens, 2600);
        assert_eq!(done.usage.cache_creation_input_tokens, 1200);
        assert_eq!(done.usage.cache_read_input_tokens, 3400);
        assert_eq!(done.usage.output_tokens, 80);
        assert_eq!(done.cost_usd, Some(0.02));
    }

    #[test]
    fn older_report_formats_are_read_too() {
        let transcript = "Done.\n<promise>COMPLETE</promise>\n\nTokens: 12,345 sent, 1.5M received. Cost: $0.05 request, $0.31 session.\n";
        let (_, done) = parse(transcript);
        let done = done.expect("a done");
        assert_eq!(done.usage.input_tokens, 12_345);
        assert_eq!(done.usage.output_tokens, 1_500_000);
        assert_eq!(done.cost_usd, Some(0.31));
        assert_eq!(
            conclude(
                Some(&done),
                ExitStatusKind::Exited(0),
                DEFAULT_TOKEN,
                PromiseScope::LastLine
            ),
            Conclusion::Complete
        );
    }

    /// Issue 14: at 80 columns the error's JSON and `rate_limit_error` fall
    /// on the next line.
    #[test]
    fn a_wrapped_provider_error_is_read_whole() {
        let (transcript, exit) = fixture("rate-limit");
        assert_eq!(exit.trim(), "0", "Aider exits cleanly after giving up");
        assert!(transcript.contains("{\"type\":\n\"rate_limit_error\""));
        let (_, done) = parse(&transcript);
        let done = done.expect("a done");
        assert!(done.is_error);
        assert_eq!(done.error, done.rate_limit.map(|limit| limit.message));
    }

    #[test]
    fn a_rate_limit_is_recognised_by_its_name_or_by_aiders_notice() {
        let by_name = "litellm.RateLimitError: AnthropicException - overloaded\n";
        let by_notice = "litellm.APIError: AnthropicException - busy\nThe API provider has rate limited you. Try again later or check your quotas.\n";
        let other = "litellm.APIError: AnthropicException - busy\n";
        for (transcript, limited) in [(by_name, true), (by_notice, true), (other, false)] {
            let (_, done) = parse(transcript);
            let done = done.expect("a done");
            assert!(done.is_error, "{transcript}");
            assert_eq!(done.rate_limit.is_some(), limited, "{transcript}");
        }
    }

    #[test]
    fn an_error_continues_only_while_its_brackets_are_open() {
        let transcript = "litellm.BadRequestError: AnthropicException - {\"error\": \n{\"message\": \"bad\"}}\nRetrying in 0.2 seconds...\n";
        let (_, done) = parse(transcript);
        assert_eq!(
            done.and_then(|done| done.error).as_deref(),
            Some(
                "litellm.BadRequestError: AnthropicException - {\"error\": {\"message\": \"bad\"}}"
            )
        );
        let unbalanced = "litellm.APIError: AnthropicException - {oops\n\nAll done.\n";
        let (_, done) = parse(unbalanced);
        assert_eq!(
            done.and_then(|done| done.error).as_deref(),
            Some("litellm.APIError: AnthropicException - {oops"),
            "a blank line ends the error"
        );
    }

    #[test]
    fn an_error_retried_into_a_reply_is_forgotten() {
        let transcript = "litellm.RateLimitError: AnthropicException - {\"type\":\n\"rate_limit_error\"}\nThe API provider has rate limited you.\nRetrying in 0.2 seconds...\nAll done.\n<promise>COMPLETE</promise>\n\nTokens: 10 sent, 5 received.\n";
        assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
    }

    #[test]
    fn without_a_usage_report_the_last_line_of_output_decides() {
        assert_eq!(
            conclusion_of("thinking\n<promise>COMPLETE</promise>\n", "0"),
            Conclusion::Complete
        );
        assert_eq!(
            conclusion_of("<promise>COMPLETE</promise>\nApplied edit to a.txt\n", "0"),
            Conclusion::NoSignal
        );
    }

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
