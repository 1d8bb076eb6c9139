//! Cursor CLI: its preset (it cannot be pointed at the stand-in) and its
//! `cursor-agent -p --output-format stream-json` stream.
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

use super::{Preset, PromptPassing};
use crate::agent::plain::TextTail;
use crate::agent::stream::{FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, rate_limit_in};
use crate::agent::{AgentEvent, Done, ToolUse};

/// Cursor's CLI talks only to Cursor's service, so `agents --verify` cannot
/// point it at the stand-in; its stream starts like Claude Code's, so
/// auto-detection reads it as that.
pub const PRESET: Preset = Preset {
    name: "cursor",
    title: "Cursor CLI",
    program: "cursor-agent",
    verified: None,
    oldest: None,
    lead: &["-p", "--output-format", "stream-json", "--force"],
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(Json::new(CursorParser::new())),
    first_event: None,
    standin: None,
};

/// Parses Cursor CLI stream-json output.
pub(super) struct CursorParser {
    final_message: TextTail,
    saw_assistant_text: bool,
    result: Option<Value>,
}

impl CursorParser {
    pub(super) fn new() -> Self {
        CursorParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            saw_assistant_text: false,
            result: None,
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
        let rate_limit = rate_limit_in(error.as_deref());
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

impl JsonEvents for CursorParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        match kind.as_str() {
            "assistant" => self.on_assistant(&event),
            "tool_call" => self.on_tool_call(&event),
            "result" => {
                self.result = Some(event);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn close(&mut self, lines: &JsonLines) -> Option<Done> {
        match self.result.take() {
            Some(result) => Some(self.done_from_result(&result)),
            // The process was cut short or failed before it began: what was
            // said last is reported, and the exit status decides.
            None => lines.cut_short(&self.final_message),
        }
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
