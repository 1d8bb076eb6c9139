//! opencode's `opencode run --format json` stream.
//!
//! opencode prints one event per finished part of the session: `text`,
//! `tool_use` (a tool call with its outcome), and `step_start`/`step_finish`
//! around each model call, the latter with that call's tokens and cost. No
//! event restates the final message, so it is rebuilt here as the text parts
//! after the last tool call: anything said before a tool ran was an
//! intermediate message. Usage and cost are the sums over all steps. An
//! `error` event fails the run unless a later step finishes, which means
//! opencode got past it; a 429 is a rate limit, which opencode reports only
//! after retrying by itself for about a minute.
//!
//! Checked against transcripts recorded from opencode 1.18.33. A tool run
//! that printed nothing reports `(no output)`. Without `--auto`, a tool
//! call that needs a permission is rejected and the run ends with exit 0 and
//! no final text, which is no signal; the preset passes `--auto`.

use serde_json::Value;

use super::events::{AgentEvent, Done, RateLimit, ToolUse, Usage};
use super::plain::TextTail;
use super::{StreamParser, mentions_rate_limit};

/// The most of the final message kept for the promise check.
const FINAL_MESSAGE_BYTES: usize = 1024 * 1024;

/// Parses opencode JSON events.
pub(super) struct OpencodeParser {
    final_message: TextTail,
    usage: Usage,
    cost_usd: Option<f64>,
    steps: u64,
    first_timestamp: Option<u64>,
    last_timestamp: Option<u64>,
    unresolved_error: Option<ErrorReport>,
    saw_event: bool,
}

struct ErrorReport {
    message: String,
    rate_limited: bool,
}

impl OpencodeParser {
    pub(super) fn new() -> Self {
        OpencodeParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            usage: Usage::default(),
            cost_usd: None,
            steps: 0,
            first_timestamp: None,
            last_timestamp: None,
            unresolved_error: None,
            saw_event: false,
        }
    }

    fn on_text(&mut self, part: &Value) -> Vec<AgentEvent> {
        // Parts marked synthetic would be opencode's own additions, not the
        // model's words (none were seen in recorded runs).
        if part["synthetic"] == true {
            return Vec::new();
        }
        let text = part["text"].as_str().unwrap_or_default();
        if text.is_empty() {
            return Vec::new();
        }
        if !self.final_message.as_str().is_empty() {
            self.final_message.push_str("\n");
        }
        self.final_message.push_str(text);
        vec![AgentEvent::Message {
            text: text.to_owned(),
            tool_uses: Vec::new(),
        }]
    }

    fn on_tool_use(&mut self, part: &Value) -> Vec<AgentEvent> {
        self.final_message.clear();
        let id = part["callID"]
            .as_str()
            .or_else(|| part["id"].as_str())
            .unwrap_or_default()
            .to_owned();
        let state = &part["state"];
        let failed = state["status"] == "error";
        let output = match (&state["output"], &state["error"]) {
            (Value::String(output), _) => output.clone(),
            (_, Value::String(error)) => error.clone(),
            (_, Value::Null) => String::new(),
            (_, error) => error.to_string(),
        };
        vec![
            AgentEvent::Message {
                text: String::new(),
                tool_uses: vec![ToolUse {
                    id: id.clone(),
                    name: part["tool"].as_str().unwrap_or_default().to_owned(),
                    input: state["input"].clone(),
                }],
            },
            AgentEvent::ToolResult {
                tool_use_id: Some(id),
                output,
                is_error: failed,
            },
        ]
    }

    fn on_step_finish(&mut self, part: &Value) {
        self.unresolved_error = None;
        self.steps += 1;
        let tokens = &part["tokens"];
        let count = |value: &Value| value.as_u64().unwrap_or(0);
        // opencode reports input without the cached part, and reasoning
        // apart from output; reasoning is billed as output.
        // Counts come from the agent: a wrong one saturates, never overflows.
        let usage = &mut self.usage;
        usage.input_tokens = usage.input_tokens.saturating_add(count(&tokens["input"]));
        usage.output_tokens = usage
            .output_tokens
            .saturating_add(count(&tokens["output"]))
            .saturating_add(count(&tokens["reasoning"]));
        usage.cache_read_input_tokens = usage
            .cache_read_input_tokens
            .saturating_add(count(&tokens["cache"]["read"]));
        usage.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .saturating_add(count(&tokens["cache"]["write"]));
        if let Some(cost) = part["cost"].as_f64() {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    fn on_error(&mut self, event: &Value) {
        let error = &event["error"];
        let data = &error["data"];
        let message = data["message"]
            .as_str()
            .or_else(|| error["message"].as_str())
            .or_else(|| error["name"].as_str())
            .unwrap_or("unknown error")
            .to_owned();
        let rate_limited = data["statusCode"].as_u64() == Some(429)
            || error["name"]
                .as_str()
                .is_some_and(|name| name.contains("RateLimit"))
            || mentions_rate_limit(&message);
        self.unresolved_error = Some(ErrorReport {
            message,
            rate_limited,
        });
    }
}

impl StreamParser for OpencodeParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some((event, kind)) = super::events::typed_event(line) else {
            return Vec::new();
        };
        let kind = kind.as_str();
        self.saw_event = true;
        if let Some(timestamp) = event["timestamp"].as_u64() {
            self.first_timestamp.get_or_insert(timestamp);
            self.last_timestamp = Some(timestamp);
        }
        match kind {
            "text" => self.on_text(&event["part"]),
            "tool_use" => self.on_tool_use(&event["part"]),
            "step_finish" => {
                self.on_step_finish(&event["part"]);
                Vec::new()
            }
            "error" => {
                self.on_error(&event);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Option<Done> {
        if !self.saw_event {
            return None;
        }
        let error = self.unresolved_error.take();
        let rate_limit = error
            .as_ref()
            .filter(|error| error.rate_limited)
            .map(|error| RateLimit {
                reset_at_unix: None,
                message: error.message.clone(),
            });
        let duration_ms = match (self.first_timestamp, self.last_timestamp) {
            (Some(first), Some(last)) => Some(last.saturating_sub(first)),
            _ => None,
        };
        Some(Done {
            final_text: self.final_message.as_str().to_owned(),
            is_error: error.is_some(),
            subtype: None,
            turns: (self.steps > 0).then_some(self.steps),
            usage: self.usage,
            tokens_unknown: false,
            cost_usd: self.cost_usd,
            duration_ms,
            error: error.map(|error| error.message),
            rate_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Conclusions of the recorded transcripts are checked with every other
    //! format's (see `transcripts.rs`); these tests check the rest.

    use super::*;
    use crate::agent::promise::Conclusion;
    use crate::agent::transcripts;

    crate::agent::transcripts::parser_tests!(OpencodeParser::new(), "opencode");

    #[test]
    fn steps_sum_tokens_and_cost() {
        let (transcript, _) = fixture("multi-message");
        let (events, done) = parse(&transcript);
        let done = done.expect("events seen");
        assert_eq!(
            done.final_text,
            "Both steps are done.\n<promise>COMPLETE</promise>"
        );
        assert_eq!(done.turns, Some(3));
        assert_eq!(done.usage.input_tokens, 1000 + 1001 + 1002);
        assert_eq!(done.usage.output_tokens, 50 + 51 + 52);
        assert_eq!(done.usage.cache_read_input_tokens, 0);
        let cost = done.cost_usd.expect("cost reported");
        assert!(
            (cost - (0.00375 + 0.003768 + 0.003786)).abs() < 1e-9,
            "{cost}"
        );
        assert_eq!(done.duration_ms, Some(1795419377781 - 1795419376651));

        assert_eq!(transcripts::kinds(&events), transcripts::TWO_TOOL_ROUNDS);
        let tool = transcripts::assert_tool_round(
            &events,
            4,
            "toolu_1_1795419377229",
            "cat hello.txt",
            "hi\n",
        );
        assert_eq!(tool.name, "bash");
    }

    #[test]
    fn a_silent_command_reports_no_output() {
        let (transcript, _) = fixture("complete");
        let (events, _) = parse(&transcript);
        assert!(events.contains(&AgentEvent::ToolResult {
            tool_use_id: Some("toolu_0_1795419256195".into()),
            output: "(no output)".into(),
            is_error: false
        }));
    }

    /// Issue 14: without `--auto` the call is rejected and the run ends
    /// there, with exit 0 and nothing said.
    #[test]
    fn a_rejected_permission_is_a_failed_tool_and_the_end_of_the_run() {
        let (transcript, _) = fixture("permission-rejected");
        let (events, done) = parse(&transcript);
        assert_eq!(
            events.last(),
            Some(&AgentEvent::ToolResult {
                tool_use_id: Some("toolu_0_1795419365002".into()),
                output: "The user rejected permission to use this specific tool call.".into(),
                is_error: true
            })
        );
        let done = done.expect("events seen");
        assert_eq!(done.final_text, "");
        assert!(!done.is_error);
    }

    #[test]
    fn a_429_after_opencodes_own_retries_is_a_rate_limit() {
        let (transcript, exit) = fixture("rate-limit");
        assert_eq!(exit.trim(), "1");
        let (_, done) = parse(&transcript);
        let done = done.expect("events seen");
        assert_eq!(done.turns, None, "no step ran");
        assert_eq!(
            done.rate_limit.map(|limit| limit.message),
            Some("scripted rate limit".to_owned())
        );
    }

    #[test]
    fn a_failed_tool_reports_its_error() {
        let line = r#"{"type":"tool_use","part":{"type":"tool","callID":"c1","tool":"bash","state":{"status":"error","input":{"command":"false"},"error":"exit status 1"}}}"#;
        let (events, _) = parse(line);
        assert_eq!(
            events[1],
            AgentEvent::ToolResult {
                tool_use_id: Some("c1".into()),
                output: "exit status 1".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn a_step_after_an_error_means_it_was_overcome() {
        let transcript = concat!(
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"overloaded","statusCode":529}}}"#,
            "\n",
            r#"{"type":"text","part":{"type":"text","text":"<promise>COMPLETE</promise>"}}"#,
            "\n",
            r#"{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":1,"output":1}}}"#,
            "\n",
        );
        assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
    }

    #[test]
    fn unknown_events_synthetic_text_and_garbage_are_ignored() {
        let transcript = concat!(
            "opencode: warming up\n",
            r#"{"type":"session.status","properties":{"status":{"type":"busy"}}}"#,
            "\n",
            r#"{"type":"text","part":{"type":"text","synthetic":true,"text":"<promise>COMPLETE</promise>"}}"#,
            "\n",
            r#"{"type":"reasoning","part":{"type":"reasoning","text":"thinking"}}"#,
            "\n",
        );
        let (events, done) = parse(transcript);
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(done.expect("events seen").final_text, "");
        assert_eq!(parse("").1, None);
    }
}
