//! opencode's `opencode run --format json` stream.
//!
//! opencode prints one event per finished part of the session: `text`,
//! `tool_use` (a tool call with its outcome), and `step_start`/`step_finish`
//! around each model call, the latter with that call's tokens and cost. No
//! event restates the final message, so it is rebuilt here as the text parts
//! after the last tool call: anything said before a tool ran was an
//! intermediate message. Usage and cost are the sums over all steps. An
//! `error` event fails the run unless a later step finishes, which means
//! opencode got past it.
//!
//! Built from opencode's documented output, not from a recorded transcript.

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
        // Synthetic parts are opencode's own additions, not the model's words.
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
        self.usage.input_tokens += count(&tokens["input"]);
        self.usage.output_tokens += count(&tokens["output"]) + count(&tokens["reasoning"]);
        self.usage.cache_read_input_tokens += count(&tokens["cache"]["read"]);
        self.usage.cache_creation_input_tokens += count(&tokens["cache"]["write"]);
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
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let Some(kind) = event["type"].as_str() else {
            return Vec::new();
        };
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
    //! The fixtures are documentation-based: built from opencode's documented
    //! event format, not recorded from the CLI.

    use super::*;
    use crate::agent::promise::Conclusion;

    fn parse(transcript: &str) -> (Vec<AgentEvent>, Option<Done>) {
        crate::agent::transcripts::parse(&mut OpencodeParser::new(), transcript)
    }

    fn conclusion_of(transcript: &str, exit_file: &str) -> Conclusion {
        crate::agent::transcripts::conclusion(&mut OpencodeParser::new(), transcript, exit_file)
    }

    macro_rules! fixture {
        ($name:literal) => {
            (
                include_str!(concat!(
                    "../../tests/fixtures/opencode/",
                    $name,
                    ".doc.jsonl"
                )),
                include_str!(concat!(
                    "../../tests/fixtures/opencode/",
                    $name,
                    ".doc.exit"
                )),
            )
        };
    }

    #[test]
    fn documentation_based_fixtures_reach_their_conclusions() {
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
                    message: "scripted bad request".into(),
                },
            ),
        ];
        for ((transcript, exit), expected) in cases {
            assert_eq!(conclusion_of(transcript, exit), expected, "{transcript}");
        }
    }

    #[test]
    fn an_error_fails_the_run_even_with_a_clean_exit() {
        let (transcript, _) = fixture!("api-error");
        assert!(matches!(
            conclusion_of(transcript, "0"),
            Conclusion::AgentError { .. }
        ));
        let (_, done) = parse(transcript);
        assert_eq!(done.expect("events seen").rate_limit, None);
    }

    #[test]
    fn a_429_is_a_rate_limit() {
        let (transcript, _) = fixture!("rate-limit");
        let (_, done) = parse(transcript);
        let done = done.expect("events seen");
        assert!(done.is_error);
        assert_eq!(
            done.rate_limit.map(|limit| limit.message),
            Some("Rate limit reached for requests".to_owned())
        );
    }

    #[test]
    fn steps_sum_tokens_and_cost() {
        let (transcript, _) = fixture!("multi-message");
        let (events, done) = parse(transcript);
        let done = done.expect("events seen");
        assert_eq!(
            done.final_text,
            "Both steps are done.\n<promise>COMPLETE</promise>"
        );
        assert_eq!(done.turns, Some(3));
        assert_eq!(done.usage.input_tokens, 3000);
        assert_eq!(done.usage.output_tokens, 150);
        assert_eq!(done.usage.cache_read_input_tokens, 800);
        let cost = done.cost_usd.expect("cost reported");
        assert!((cost - (2.0 * 0.00325 + 0.0041)).abs() < 1e-9, "{cost}");
        assert!(done.duration_ms.is_some_and(|ms| ms > 0));

        let kinds: Vec<&str> = events
            .iter()
            .map(|event| match event {
                AgentEvent::Message { tool_uses, .. } if tool_uses.is_empty() => "message",
                AgentEvent::Message { .. } => "tool_use",
                AgentEvent::ToolResult { .. } => "tool_result",
                AgentEvent::Done(_) => "done",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "message",
                "tool_use",
                "tool_result",
                "message",
                "tool_use",
                "tool_result",
                "message"
            ]
        );
        let AgentEvent::Message { tool_uses, .. } = &events[4] else {
            panic!("expected a tool use, got {:?}", events[4]);
        };
        assert_eq!(tool_uses[0].id, "call_0d0c0002");
        assert_eq!(tool_uses[0].name, "bash");
        assert_eq!(tool_uses[0].input["command"], "cat hello.txt");
        assert_eq!(
            events[5],
            AgentEvent::ToolResult {
                tool_use_id: Some("call_0d0c0002".into()),
                output: "hi\n".into(),
                is_error: false
            }
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
