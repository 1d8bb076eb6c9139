//! Aider's plain-text output (`--no-stream --no-pretty`).
//!
//! Aider has no machine-readable stream. After each model reply it prints a
//! usage report (`Tokens: … sent, … received. Cost: $… message, $… session.`)
//! and then its own handling of the reply: confirmations it answered itself,
//! `Applied edit to …`, linter output, and possibly another round with the
//! model. So the model's last reply is the text before the last usage
//! report, and, as for any plain text, a promise counts only on its last
//! line. Whatever follows that report is Aider's, never a promise. A
//! provider error (`litellm.…Error: …`) printed after the last reply ends
//! the run without a usable reply.
//!
//! Built from Aider's documented behaviour and output, not from a recorded
//! transcript.

use super::events::{AgentEvent, Done, RateLimit, Usage};
use super::plain::TextTail;
use super::promise::PromiseScope;
use super::{StreamParser, mentions_rate_limit};

/// How much of each round's output is kept.
const ROUND_TAIL_BYTES: usize = 64 * 1024;

/// Parses Aider's console output.
pub(super) struct AiderParser {
    /// Output since the last usage report.
    round: TextTail,
    /// The output that the last usage report closed: the model's last reply.
    last_reply: Option<String>,
    /// The last provider error printed since the last usage report.
    error: Option<String>,
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
            self.add_tokens(tokens);
        }
        if let Some(session) = cost.and_then(session_cost) {
            self.cost_usd = Some(session);
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
            match what.trim() {
                "sent" => self.usage.input_tokens += count,
                "received" => self.usage.output_tokens += count,
                "cache write" => self.usage.cache_creation_input_tokens += count,
                "cache hit" => self.usage.cache_read_input_tokens += count,
                _ => {}
            }
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
        if is_provider_error(trimmed) {
            self.error = Some(trimmed.to_owned());
        }
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
        let rate_limit = error
            .as_deref()
            .filter(|error| mentions_rate_limit(error))
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
    //! The fixtures are documentation-based: built from Aider's documented
    //! behaviour and console output, not recorded from the CLI.

    use super::*;
    use crate::agent::ExitStatusKind;
    use crate::agent::promise::{Conclusion, DEFAULT_TOKEN, conclude};

    fn parse(transcript: &str) -> (Vec<AgentEvent>, Option<Done>) {
        crate::agent::transcripts::parse(&mut AiderParser::new(), transcript)
    }

    fn conclusion_of(transcript: &str, exit_file: &str) -> Conclusion {
        crate::agent::transcripts::conclusion(&mut AiderParser::new(), transcript, exit_file)
    }

    macro_rules! fixture {
        ($name:literal) => {
            (
                include_str!(concat!("../../tests/fixtures/aider/", $name, ".doc.txt")),
                include_str!(concat!("../../tests/fixtures/aider/", $name, ".doc.exit")),
            )
        };
    }

    #[test]
    fn documentation_based_fixtures_reach_their_conclusions() {
        let bad_request = r#"litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":"invalid_request_error","message":"scripted bad request"}}"#;
        let cases = [
            (fixture!("complete"), Conclusion::Complete),
            (
                fixture!("failed"),
                Conclusion::Failed {
                    reason: "tests need a running database".into(),
                },
            ),
            (fixture!("no-promise"), Conclusion::NoSignal),
            (fixture!("echoed-promise"), Conclusion::NoSignal),
            (fixture!("intermediate-promise"), Conclusion::NoSignal),
            (fixture!("multi-message"), Conclusion::Complete),
            (
                fixture!("api-error"),
                Conclusion::AgentError {
                    message: bad_request.into(),
                },
            ),
        ];
        for ((transcript, exit), expected) in cases {
            assert_eq!(conclusion_of(transcript, exit), expected, "{transcript}");
        }
    }

    #[test]
    fn the_reply_is_what_came_before_the_last_usage_report() {
        let (transcript, _) = fixture!("complete");
        assert!(transcript.trim_end().ends_with("Applied edit to hello.txt"));
        let (events, done) = parse(transcript);
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
        let (transcript, _) = fixture!("multi-message");
        let (_, done) = parse(transcript);
        let done = done.expect("a done");
        assert_eq!(done.turns, Some(2));
        assert_eq!(done.usage.input_tokens, 2000 + 2600);
        assert_eq!(done.usage.output_tokens, 120 + 80);
        assert_eq!(done.usage.cache_creation_input_tokens, 1200);
        assert_eq!(done.usage.cache_read_input_tokens, 3400);
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

    #[test]
    fn a_rate_limited_run_is_a_rate_limit() {
        let (transcript, exit) = fixture!("rate-limit");
        assert_eq!(exit.trim(), "0", "Aider exits cleanly after giving up");
        let (_, done) = parse(transcript);
        let done = done.expect("a done");
        assert!(done.is_error);
        let limit = done.rate_limit.expect("rate limited");
        assert!(limit.message.starts_with("litellm.RateLimitError:"));
    }

    #[test]
    fn an_error_retried_into_a_reply_is_forgotten() {
        let transcript = "litellm.APIConnectionError: connection reset\nRetrying in 0.2 seconds...\nAll done.\n<promise>COMPLETE</promise>\n\nTokens: 10 sent, 5 received.\n";
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
    }
}
