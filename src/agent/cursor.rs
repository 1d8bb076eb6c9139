//! Cursor CLI's `cursor-agent -p --output-format stream-json` stream.
//!
//! The events look like Claude Code's (`system`, `user`, `assistant`, a
//! closing `result`), but tools are reported as separate `tool_call` events
//! (`started`, then `completed` with the outcome), and the `result` text is
//! the run's assistant text as a whole, which may include what was said
//! before a tool ran. So the final message is rebuilt here: the assistant
//! text after the last tool call. The `result` event only says whether the
//! run failed and how long it took; Cursor reports no tokens or cost.
//!
//! Built from Cursor's documented output format, not from a recorded
//! transcript.

use serde_json::Value;

use super::events::{AgentEvent, Done, RateLimit, ToolUse};
use super::plain::TextTail;
use super::{StreamParser, mentions_rate_limit};

/// The most of the final message kept for the promise check.
const FINAL_MESSAGE_BYTES: usize = 1024 * 1024;

/// Parses Cursor CLI stream-json output.
pub(super) struct CursorParser {
    final_message: TextTail,
    saw_assistant_text: bool,
    result: Option<Value>,
    saw_event: bool,
}

impl CursorParser {
    pub(super) fn new() -> Self {
        CursorParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            saw_assistant_text: false,
            result: None,
            saw_event: false,
        }
    }

    fn on_assistant(&mut self, event: &Value) -> Vec<AgentEvent> {
        let text: String = event["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect();
        if text.is_empty() {
            return Vec::new();
        }
        self.saw_assistant_text = true;
        // Consecutive assistant events are pieces of one message.
        self.final_message.push_str(&text);
        vec![AgentEvent::Message {
            text,
            tool_uses: Vec::new(),
        }]
    }

    fn on_tool_call(&mut self, event: &Value) -> Vec<AgentEvent> {
        self.final_message.clear();
        let id = event["call_id"].as_str().unwrap_or_default().to_owned();
        // `tool_call` holds one key naming the tool, e.g. `shellToolCall`.
        let (name, call) = match event["tool_call"].as_object().and_then(|c| c.iter().next()) {
            Some((name, call)) => (name.clone(), call),
            None => (String::new(), &Value::Null),
        };
        match event["subtype"].as_str() {
            Some("started") => vec![AgentEvent::Message {
                text: String::new(),
                tool_uses: vec![ToolUse {
                    id,
                    name,
                    input: call["args"].clone(),
                }],
            }],
            Some("completed") => {
                let result = &call["result"];
                let (output, is_error) = tool_outcome(result);
                vec![AgentEvent::ToolResult {
                    tool_use_id: Some(id),
                    output,
                    is_error,
                }]
            }
            _ => Vec::new(),
        }
    }

    fn done_from_result(&self, result: &Value) -> Done {
        let subtype = result["subtype"].as_str().map(str::to_owned);
        let is_error = result["is_error"].as_bool().unwrap_or(false)
            || subtype
                .as_deref()
                .is_some_and(|subtype| subtype != "success");
        let result_text = result["result"].as_str().unwrap_or_default();
        let final_text = if self.saw_assistant_text {
            self.final_message.as_str().to_owned()
        } else {
            result_text.to_owned()
        };
        let error = is_error.then(|| match result_text.trim() {
            "" => format!(
                "the run ended with {}",
                subtype.as_deref().unwrap_or("an error")
            ),
            text => text.to_owned(),
        });
        let rate_limit = error
            .as_deref()
            .filter(|error| mentions_rate_limit(error))
            .map(|error| RateLimit {
                reset_at_unix: None,
                message: error.to_owned(),
            });
        Done {
            final_text,
            is_error,
            subtype,
            duration_ms: result["duration_ms"].as_u64(),
            error,
            rate_limit,
            ..Done::default()
        }
    }
}

impl StreamParser for CursorParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some((event, kind)) = super::events::typed_event(line) else {
            return Vec::new();
        };
        let kind = kind.as_str();
        self.saw_event = true;
        match kind {
            "assistant" => self.on_assistant(&event),
            "tool_call" => self.on_tool_call(&event),
            "result" => {
                self.result = Some(event);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Option<Done> {
        if let Some(result) = self.result.take() {
            return Some(self.done_from_result(&result));
        }
        // No `result`: the process was cut short or failed before it began;
        // the exit status decides.
        self.saw_event.then(|| Done {
            final_text: self.final_message.as_str().to_owned(),
            ..Done::default()
        })
    }
}

/// A tool's outcome: `{"success": {...}}`, or any other key for a failure
/// (`error`, `failure`, `rejected`, …).
fn tool_outcome(result: &Value) -> (String, bool) {
    let Some((key, body)) = result.as_object().and_then(|r| r.iter().next()) else {
        return (String::new(), false);
    };
    let is_error = key != "success";
    let text = ["stdout", "content", "output", "message", "error"]
        .iter()
        .find_map(|field| body[*field].as_str());
    let mut output = match (text, body) {
        (Some(text), _) => text.to_owned(),
        (None, Value::String(text)) => text.clone(),
        (None, Value::Null) => String::new(),
        (None, other) => other.to_string(),
    };
    if let Some(stderr) = body["stderr"].as_str().filter(|s| !s.is_empty()) {
        output.push_str(stderr);
    }
    (output, is_error)
}

#[cfg(test)]
mod tests {
    //! The fixtures are documentation-based: built from Cursor's documented
    //! stream-json format, not recorded from the CLI.

    use super::*;
    use crate::agent::promise::Conclusion;
    use crate::agent::transcripts;

    crate::agent::transcripts::parser_tests!(CursorParser::new(), "cursor");

    #[test]
    fn the_whole_run_text_in_result_cannot_smuggle_in_an_earlier_promise() {
        let (transcript, _) = fixture("intermediate-promise");
        assert!(transcript.contains(
            r#""result":"Plan: when all is done I will say <promise>COMPLETE</promise>."#
        ));
        let (_, done) = parse(&transcript);
        assert_eq!(
            done.expect("result seen").final_text,
            "I wrote the file but the tests still fail; stopping here."
        );
    }

    #[test]
    fn tool_calls_become_tool_uses_and_results() {
        let (transcript, _) = fixture("multi-message");
        let (events, done) = parse(&transcript);
        let done = done.expect("result seen");
        assert_eq!(done.duration_ms, Some(2180));
        assert_eq!(done.usage.total(), 0, "Cursor reports no tokens");
        assert_eq!(done.cost_usd, None);
        assert_eq!(done.subtype.as_deref(), Some("success"));
        assert_eq!(transcripts::kinds(&events), transcripts::TWO_TOOL_ROUNDS);
        let tool =
            transcripts::assert_tool_round(&events, 4, "toolu_0d0c0002", "cat hello.txt", "hi\n");
        assert_eq!(tool.name, "shellToolCall");
    }

    #[test]
    fn an_error_result_is_an_agent_error_with_its_text() {
        let line = r#"{"type":"result","subtype":"error","is_error":true,"result":"API Error: 400 scripted bad request"}"#;
        assert_eq!(
            conclusion_of(line, "0"),
            Conclusion::AgentError {
                message: "API Error: 400 scripted bad request".into()
            }
        );
        let line = r#"{"type":"result","subtype":"error","is_error":true,"result":"You've hit your usage limit"}"#;
        let (_, done) = parse(line);
        assert!(done.and_then(|done| done.rate_limit).is_some());
    }

    #[test]
    fn a_result_without_assistant_events_supplies_the_text() {
        let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"done <promise>COMPLETE</promise>"}"#;
        assert_eq!(conclusion_of(line, "0"), Conclusion::Complete);
    }

    #[test]
    fn a_rejected_tool_is_an_error_and_unknown_events_are_ignored() {
        let transcript = concat!(
            "warning: something\n",
            r#"{"type":"thinking","subtype":"delta","text":"hmm"}"#,
            "\n",
            r#"{"type":"tool_call","subtype":"completed","call_id":"w","tool_call":{"writeToolCall":{"args":{"path":"a"},"result":{"rejected":{"message":"not allowed"}}}}}"#,
            "\n",
        );
        let (events, done) = parse(transcript);
        assert_eq!(
            events,
            [AgentEvent::ToolResult {
                tool_use_id: Some("w".into()),
                output: "not allowed".into(),
                is_error: true
            }]
        );
        assert!(!done.expect("events seen").is_error);
        assert_eq!(parse("").1, None);
    }
}
