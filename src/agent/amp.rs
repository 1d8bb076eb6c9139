//! Amp's `amp -x --stream-json` stream.
//!
//! Amp writes Claude Code's stream-json format, so the Claude parser reads
//! it, with two differences made up for here: Amp states token usage on
//! each assistant message rather than on the closing `result`, and a failed
//! run's `result` carries its reason in an `error` string.
//!
//! Built from Amp's documented output, not from a recorded transcript.

use serde_json::Value;

use super::claude::ClaudeParser;
use super::events::{AgentEvent, Done, RateLimit, Usage};
use super::{StreamParser, mentions_rate_limit};

/// Parses Amp stream-json output.
pub(super) struct AmpParser {
    claude: ClaudeParser,
    message_usage: Usage,
    result_error: Option<String>,
}

impl AmpParser {
    pub(super) fn new() -> Self {
        AmpParser {
            claude: ClaudeParser::new(),
            message_usage: Usage::default(),
            result_error: None,
        }
    }

    fn note(&mut self, event: &Value) {
        match event["type"].as_str() {
            Some("assistant") => {
                let usage = &event["message"]["usage"];
                let count = |key: &str| usage[key].as_u64().unwrap_or(0);
                // Counts come from the agent: a wrong one saturates.
                let total = &mut self.message_usage;
                total.input_tokens = total.input_tokens.saturating_add(count("input_tokens"));
                total.output_tokens = total.output_tokens.saturating_add(count("output_tokens"));
                total.cache_creation_input_tokens = total
                    .cache_creation_input_tokens
                    .saturating_add(count("cache_creation_input_tokens"));
                total.cache_read_input_tokens = total
                    .cache_read_input_tokens
                    .saturating_add(count("cache_read_input_tokens"));
            }
            Some("result") => {
                self.result_error = event["error"]
                    .as_str()
                    .map(str::trim)
                    .filter(|error| !error.is_empty())
                    .map(str::to_owned);
            }
            _ => {}
        }
    }
}

impl StreamParser for AmpParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if let Ok(event) = serde_json::from_str::<Value>(line) {
            self.note(&event);
        }
        self.claude.feed_line(line)
    }

    fn finish(&mut self) -> Option<Done> {
        let mut done = self.claude.finish()?;
        if done.usage == Usage::default() {
            done.usage = self.message_usage;
        }
        if done.is_error
            && let Some(error) = self.result_error.take()
        {
            if done.rate_limit.is_none() && mentions_rate_limit(&error) {
                done.rate_limit = Some(RateLimit {
                    reset_at_unix: None,
                    message: error.clone(),
                });
            }
            done.error = Some(error);
        }
        Some(done)
    }
}

#[cfg(test)]
mod tests {
    //! The fixtures are documentation-based: built from Amp's documented
    //! stream-json output, not recorded from the CLI.

    use super::*;
    use crate::agent::promise::Conclusion;

    crate::agent::transcripts::parser_tests!(AmpParser::new(), "amp");

    #[test]
    fn usage_is_summed_over_assistant_messages() {
        let (transcript, _) = fixture("multi-message");
        let (events, done) = parse(&transcript);
        let done = done.expect("result seen");
        assert_eq!(done.usage.input_tokens, 2200);
        assert_eq!(done.usage.output_tokens, 105);
        assert_eq!(done.usage.cache_read_input_tokens, 1000);
        assert_eq!(done.turns, Some(3));
        assert_eq!(done.duration_ms, Some(2906));
        let tool_results = events
            .iter()
            .filter(|event| matches!(event, AgentEvent::ToolResult { .. }))
            .count();
        assert_eq!(tool_results, 2);
    }

    #[test]
    fn usage_on_the_result_wins_when_amp_gives_it() {
        let transcript = concat!(
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"x"}],"usage":{"input_tokens":5,"output_tokens":5}},"parent_tool_use_id":null}"#,
            "\n",
            r#"{"type":"result","subtype":"success","is_error":false,"result":"x","usage":{"input_tokens":70,"output_tokens":7}}"#,
            "\n",
        );
        let (_, done) = parse(transcript);
        let usage = done.expect("result seen").usage;
        assert_eq!((usage.input_tokens, usage.output_tokens), (70, 7));
    }

    #[test]
    fn a_rate_limit_error_is_a_rate_limit() {
        let line = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"error":"429 Too Many Requests: rate limit exceeded"}"#;
        let (_, done) = parse(line);
        let done = done.expect("result seen");
        assert!(done.is_error);
        assert_eq!(
            done.rate_limit.map(|limit| limit.message),
            Some("429 Too Many Requests: rate limit exceeded".to_owned())
        );
    }

    #[test]
    fn an_error_string_on_a_successful_result_changes_nothing() {
        let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"<promise>COMPLETE</promise>","error":"stale"}"#;
        assert_eq!(conclusion_of(line, "0"), Conclusion::Complete);
    }
}
