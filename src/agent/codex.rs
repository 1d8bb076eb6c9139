//! Codex's `codex exec --json` stream.
//!
//! Codex has no single closing event that restates the final text: the final
//! message is the last `agent_message` item, and the turn ends with either
//! `turn.completed` (carrying usage) or `turn.failed`. Its `error` events are
//! not all fatal: Codex also reports stream retries that way, so an `error`
//! only fails the run if no `turn.completed` follows it. An `item.completed`
//! of type `error` is a warning (such as unknown model metadata) and never
//! fails the run.

use super::events::string_at;
use std::collections::HashSet;

use serde_json::Value;

use super::events::{AgentEvent, Done, RateLimit, ToolUse, Usage};
use super::plain::TextTail;
use super::{StreamParser, mentions_rate_limit};

/// The most of the last agent message kept for the promise check.
const LAST_MESSAGE_BYTES: usize = 1024 * 1024;

/// Item types reported as tool uses, besides shell commands.
const TOOL_ITEM_TYPES: &[&str] = &["file_change", "mcp_tool_call", "web_search"];

/// Parses Codex exec JSONL output.
pub(super) struct CodexParser {
    last_message: TextTail,
    usage: Usage,
    /// Commands whose start was already reported, so completion adds only the result.
    running_commands: HashSet<String>,
    unresolved_error: Option<String>,
    turn_failure: Option<String>,
    saw_event: bool,
}

impl CodexParser {
    pub(super) fn new() -> Self {
        CodexParser {
            last_message: TextTail::new(LAST_MESSAGE_BYTES),
            usage: Usage::default(),
            running_commands: HashSet::new(),
            unresolved_error: None,
            turn_failure: None,
            saw_event: false,
        }
    }

    fn on_item_started(&mut self, item: &Value) -> Vec<AgentEvent> {
        if item["type"] != "command_execution" {
            return Vec::new();
        }
        let id = string_at(item, "id");
        self.running_commands.insert(id.clone());
        vec![command_use(item, id)]
    }

    fn on_item_completed(&mut self, item: &Value) -> Vec<AgentEvent> {
        let id = string_at(item, "id");
        match item["type"].as_str().unwrap_or_default() {
            "agent_message" => {
                let text = string_at(item, "text");
                self.last_message.clear();
                self.last_message.push_str(&text);
                vec![AgentEvent::Message {
                    text,
                    tool_uses: Vec::new(),
                }]
            }
            "command_execution" => {
                let mut events = Vec::new();
                if !self.running_commands.remove(&id) {
                    events.push(command_use(item, id.clone()));
                }
                let failed = item["status"] == "failed"
                    || item["exit_code"].as_i64().is_some_and(|code| code != 0);
                events.push(AgentEvent::ToolResult {
                    tool_use_id: Some(id),
                    output: string_at(item, "aggregated_output"),
                    is_error: failed,
                });
                events
            }
            kind if TOOL_ITEM_TYPES.contains(&kind) => {
                let failed = item["status"] == "failed" || !item["error"].is_null();
                vec![
                    AgentEvent::Message {
                        text: String::new(),
                        tool_uses: vec![ToolUse {
                            id: id.clone(),
                            name: kind.to_owned(),
                            input: item.clone(),
                        }],
                    },
                    AgentEvent::ToolResult {
                        tool_use_id: Some(id),
                        output: item_outcome(item),
                        is_error: failed,
                    },
                ]
            }
            _ => Vec::new(),
        }
    }

    fn on_turn_completed(&mut self, event: &Value) {
        self.unresolved_error = None;
        let usage = &event["usage"];
        let input = usage["input_tokens"].as_u64().unwrap_or(0);
        let cached = usage["cached_input_tokens"].as_u64().unwrap_or(0);
        // OpenAI counts cached input inside input_tokens and reasoning inside
        // output_tokens; split the cache out so that no token is counted twice.
        // Counts come from the agent: a wrong one saturates, never overflows.
        let usage_out = usage["output_tokens"].as_u64().unwrap_or(0);
        let total = &mut self.usage;
        total.input_tokens = total
            .input_tokens
            .saturating_add(input.saturating_sub(cached));
        total.cache_read_input_tokens = total.cache_read_input_tokens.saturating_add(cached);
        total.output_tokens = total.output_tokens.saturating_add(usage_out);
    }
}

impl StreamParser for CodexParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some((event, kind)) = super::events::typed_event(line) else {
            return Vec::new();
        };
        let kind = kind.as_str();
        self.saw_event = true;
        match kind {
            "item.started" => self.on_item_started(&event["item"]),
            "item.completed" => self.on_item_completed(&event["item"]),
            "turn.completed" => {
                self.on_turn_completed(&event);
                Vec::new()
            }
            "turn.failed" => {
                let message = event["error"]["message"]
                    .as_str()
                    .map(readable_error)
                    .or_else(|| self.unresolved_error.clone())
                    .unwrap_or_else(|| "the turn failed".to_owned());
                self.turn_failure = Some(message);
                Vec::new()
            }
            "error" => {
                self.unresolved_error = Some(readable_error(
                    event["message"].as_str().unwrap_or("unknown error"),
                ));
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Option<Done> {
        if !self.saw_event {
            return None;
        }
        let error = self
            .turn_failure
            .take()
            .or_else(|| self.unresolved_error.take());
        let rate_limit = error
            .as_deref()
            .filter(|error| mentions_rate_limit(error))
            .map(|error| RateLimit {
                reset_at_unix: None,
                message: error.to_owned(),
            });
        Some(Done {
            final_text: self.last_message.as_str().to_owned(),
            is_error: error.is_some(),
            usage: self.usage,
            error,
            rate_limit,
            ..Done::default()
        })
    }
}

fn command_use(item: &Value, id: String) -> AgentEvent {
    AgentEvent::Message {
        text: String::new(),
        tool_uses: vec![ToolUse {
            id,
            name: "command_execution".to_owned(),
            input: serde_json::json!({ "command": item["command"] }),
        }],
    }
}

/// What a non-shell tool item produced, as text.
fn item_outcome(item: &Value) -> String {
    if let Some(message) = item["error"]["message"].as_str() {
        return message.to_owned();
    }
    match &item["result"] {
        Value::Null => item["status"].as_str().unwrap_or_default().to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Codex often passes the provider's JSON error body through as the message;
/// the human-readable part is its `error.message`.
fn readable_error(message: &str) -> String {
    serde_json::from_str::<Value>(message)
        .ok()
        .and_then(|body| body["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::promise::Conclusion;
    use crate::agent::transcripts;

    crate::agent::transcripts::parser_tests!(CodexParser::new(), "codex");

    #[test]
    fn an_error_item_in_a_healthy_run_is_only_a_warning() {
        let (transcript, _) = fixture("complete");
        assert!(transcript.contains(r#""type":"error""#));
        let (_, done) = parse(&transcript);
        let done = done.expect("events seen");
        assert!(!done.is_error);
        assert_eq!(done.error, None);
    }

    #[test]
    fn commands_become_tool_uses_and_results() {
        let (transcript, _) = fixture("multi-message");
        let (events, done) = parse(&transcript);
        assert_eq!(transcripts::kinds(&events), transcripts::TWO_TOOL_ROUNDS);
        transcripts::assert_tool_round(
            &events,
            4,
            "item_4",
            "/bin/bash -lc 'cat hello.txt'",
            "hi\n",
        );

        let done = done.expect("events seen");
        assert_eq!(
            done.final_text,
            "Both steps are done.\n<promise>COMPLETE</promise>"
        );
        assert_eq!(done.usage.input_tokens, 3003);
        assert_eq!(done.usage.output_tokens, 153);
        assert_eq!(done.cost_usd, None);
        assert_eq!(done.turns, None);
    }

    #[test]
    fn cached_input_is_not_counted_twice() {
        let line = r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":50,"reasoning_output_tokens":20}}"#;
        let (_, done) = parse(line);
        let usage = done.expect("events seen").usage;
        assert_eq!(usage.input_tokens, 400);
        assert_eq!(usage.cache_read_input_tokens, 600);
        assert_eq!(usage.output_tokens, 50);
        assert_eq!(usage.total(), 1050);
    }

    #[test]
    fn a_retried_stream_error_does_not_fail_the_run() {
        let transcript = concat!(
            r#"{"type":"turn.started"}"#,
            "\n",
            r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"<promise>COMPLETE</promise>"}}"#,
            "\n",
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
            "\n",
        );
        assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
    }

    #[test]
    fn an_error_without_recovery_fails_the_run() {
        let transcript = concat!(
            r#"{"type":"turn.started"}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"<promise>COMPLETE</promise>"}}"#,
            "\n",
            r#"{"type":"error","message":"stream disconnected"}"#,
            "\n",
        );
        assert_eq!(
            conclusion_of(transcript, "0"),
            Conclusion::AgentError {
                message: "stream disconnected".into()
            }
        );
    }

    #[test]
    fn usage_limit_errors_are_rate_limits() {
        for message in [
            "You've hit your usage limit. Try again later.",
            "exceeded retry limit, last status: 429 Too Many Requests",
            "Rate limit reached for gpt-5",
        ] {
            let line = serde_json::json!({"type": "turn.failed", "error": {"message": message}});
            let (_, done) = parse(&line.to_string());
            let done = done.expect("events seen");
            assert!(done.is_error);
            assert_eq!(
                done.rate_limit.map(|limit| limit.message),
                Some(message.to_owned())
            );
        }
    }

    #[test]
    fn a_completed_command_without_start_still_reports_its_use() {
        let line = r#"{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}"#;
        let (events, _) = parse(line);
        assert_eq!(events.len(), 2);
        assert!(
            matches!(&events[0], AgentEvent::Message { tool_uses, .. } if tool_uses.len() == 1)
        );
        assert!(matches!(
            &events[1],
            AgentEvent::ToolResult { is_error: true, .. }
        ));
    }
}
