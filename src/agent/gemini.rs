//! Gemini CLI's `--output-format stream-json` stream.
//!
//! Gemini streams an assistant message as many `message` chunks and never
//! restates it, so the final message is rebuilt here: the chunks after the
//! last tool event, concatenated. Anything said before a tool ran is an
//! intermediate message and can never carry the promise. The closing
//! `result` event says whether the run succeeded and carries the usage.

use serde_json::Value;

use super::events::{AgentEvent, Done, RateLimit, ToolUse, Usage};
use super::plain::TextTail;
use super::{StreamParser, mentions_rate_limit};

/// The most of the final message kept for the promise check.
const FINAL_MESSAGE_BYTES: usize = 1024 * 1024;

/// Parses Gemini CLI stream-json output.
pub(super) struct GeminiParser {
    final_message: TextTail,
    result: Option<Value>,
    last_error: Option<String>,
    saw_event: bool,
}

impl GeminiParser {
    pub(super) fn new() -> Self {
        GeminiParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            result: None,
            last_error: None,
            saw_event: false,
        }
    }

    fn done_from_result(&self, result: &Value) -> Done {
        let is_error = result["status"] != "success";
        let error = is_error.then(|| {
            result["error"]["message"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| self.last_error.clone())
                .unwrap_or_else(|| "the run ended with an error".to_owned())
        });
        let rate_limit = error
            .as_deref()
            .filter(|error| mentions_rate_limit(error))
            .map(|error| RateLimit {
                reset_at_unix: None,
                message: error.to_owned(),
            });

        let stats = &result["stats"];
        let input = stats["input_tokens"].as_u64().unwrap_or(0);
        let cached = stats["cached"].as_u64().unwrap_or(0);
        Done {
            final_text: self.final_message.as_str().to_owned(),
            is_error,
            usage: Usage {
                // `input` is the uncached part; older versions only give the total.
                input_tokens: stats["input"]
                    .as_u64()
                    .unwrap_or_else(|| input.saturating_sub(cached)),
                output_tokens: stats["output_tokens"].as_u64().unwrap_or(0),
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: cached,
            },
            duration_ms: stats["duration_ms"].as_u64(),
            error,
            rate_limit,
            ..Done::default()
        }
    }
}

impl StreamParser for GeminiParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some((event, kind)) = super::events::typed_event(line) else {
            return Vec::new();
        };
        let kind = kind.as_str();
        self.saw_event = true;
        match kind {
            "message" if event["role"] == "assistant" => {
                let text = event["content"].as_str().unwrap_or_default().to_owned();
                self.final_message.push_str(&text);
                vec![AgentEvent::Message {
                    text,
                    tool_uses: Vec::new(),
                }]
            }
            "tool_use" => {
                self.final_message.clear();
                vec![AgentEvent::Message {
                    text: String::new(),
                    tool_uses: vec![ToolUse {
                        id: event["tool_id"].as_str().unwrap_or_default().to_owned(),
                        name: event["tool_name"].as_str().unwrap_or_default().to_owned(),
                        input: event["parameters"].clone(),
                    }],
                }]
            }
            "tool_result" => {
                self.final_message.clear();
                let output = match event["output"].as_str() {
                    Some(output) => output.to_owned(),
                    None => event["error"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                };
                vec![AgentEvent::ToolResult {
                    tool_use_id: event["tool_id"].as_str().map(str::to_owned),
                    output,
                    is_error: event["status"] != "success",
                }]
            }
            "error" => {
                if let Some(message) = event["message"].as_str() {
                    self.last_error = Some(message.to_owned());
                }
                Vec::new()
            }
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
        // No `result`: the process was cut short. Report what was said and
        // let the exit status decide.
        self.saw_event.then(|| Done {
            final_text: self.final_message.as_str().to_owned(),
            ..Done::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ExitStatusKind;
    use crate::agent::promise::{Conclusion, DEFAULT_TOKEN, PromiseScope, conclude};

    crate::agent::transcripts::parser_tests!(GeminiParser::new(), "gemini");

    #[test]
    fn final_message_is_the_chunks_after_the_last_tool_event() {
        let transcript = concat!(
            r#"{"type":"message","role":"user","content":"say <promise>COMPLETE</promise> when done"}"#,
            "\n",
            r#"{"type":"message","role":"assistant","content":"Plan: ","delta":true}"#,
            "\n",
            r#"{"type":"tool_use","tool_name":"shell","tool_id":"t1","parameters":{"command":"ls"}}"#,
            "\n",
            r#"{"type":"tool_result","tool_id":"t1","status":"error","error":{"message":"denied"}}"#,
            "\n",
            r#"{"type":"message","role":"assistant","content":"All good.\n<prom","delta":true}"#,
            "\n",
            r#"{"type":"message","role":"assistant","content":"ise>COMPLETE</promise>","delta":true}"#,
            "\n",
            r#"{"type":"result","status":"success","stats":{"input_tokens":100,"cached":40,"output_tokens":7,"duration_ms":5}}"#,
            "\n",
        );
        let (events, done) = parse(transcript);
        assert_eq!(
            events[2],
            AgentEvent::ToolResult {
                tool_use_id: Some("t1".into()),
                output: "denied".into(),
                is_error: true
            }
        );
        let done = done.expect("result seen");
        assert_eq!(done.final_text, "All good.\n<promise>COMPLETE</promise>");
        assert_eq!(done.usage.input_tokens, 60);
        assert_eq!(done.usage.cache_read_input_tokens, 40);
        assert_eq!(done.usage.output_tokens, 7);
        assert_eq!(done.duration_ms, Some(5));
        assert_eq!(done.turns, None);
        assert_eq!(
            conclude(
                Some(&done),
                ExitStatusKind::Exited(0),
                DEFAULT_TOKEN,
                PromiseScope::FinalMessage
            ),
            Conclusion::Complete
        );
    }

    #[test]
    fn stats_fill_usage() {
        let (transcript, _) = fixture("multi-message");
        let (_, done) = parse(&transcript);
        let done = done.expect("result seen");
        assert_eq!(done.usage.input_tokens, 4003);
        assert_eq!(done.usage.output_tokens, 203);
        assert_eq!(done.usage.total(), 4206);
        assert_eq!(done.duration_ms, Some(168));
        assert_eq!(done.cost_usd, None);
    }

    #[test]
    fn quota_errors_are_rate_limits() {
        for message in [
            "[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted\",\"status\":\"RESOURCE_EXHAUSTED\"}}]",
            "Quota exceeded for quota metric 'Generate Content API requests per minute'",
        ] {
            let line = serde_json::json!({
                "type": "result",
                "status": "error",
                "error": {"type": "unknown", "message": message},
                "stats": {}
            });
            let (_, done) = parse(&line.to_string());
            let done = done.expect("result seen");
            assert_eq!(
                done.rate_limit.map(|limit| limit.message),
                Some(message.to_owned())
            );
        }
    }
}
