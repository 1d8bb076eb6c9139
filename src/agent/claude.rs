//! Claude Code's `--output-format stream-json --verbose` stream.
//!
//! Claude Code ends every run with one `result` event that states the final
//! text and whether the run failed, so that event is authoritative. Its
//! `subtype` alone is not: an API error reports `success` with `is_error`
//! set. Assistant and user events are turned into messages and tool results
//! as they arrive; the last assistant message is only remembered as a
//! fallback for a stream that was cut before its `result`.

use super::events::string_at;
use serde_json::Value;

use super::StreamParser;
use super::events::{AgentEvent, Done, RateLimit, ToolUse, Usage};
use super::plain::TextTail;

/// The most of the last assistant message kept in case `result` never comes.
const LAST_MESSAGE_BYTES: usize = 1024 * 1024;

/// Event types that only Claude Code's stream-json output starts with.
pub(super) const CLAUDE_EVENT_TYPES: &[&str] = &[
    "system",
    "assistant",
    "user",
    "result",
    "stream_event",
    "rate_limit_event",
];

/// Parses Claude Code stream-json output.
pub(super) struct ClaudeParser {
    last_message: TextTail,
    last_message_id: Option<String>,
    result: Option<Done>,
    saw_event: bool,
}

impl ClaudeParser {
    pub(super) fn new() -> Self {
        ClaudeParser {
            last_message: TextTail::new(LAST_MESSAGE_BYTES),
            last_message_id: None,
            result: None,
            saw_event: false,
        }
    }

    fn on_assistant(&mut self, event: &Value) -> Vec<AgentEvent> {
        let message = &event["message"];
        let mut texts = Vec::new();
        let mut tool_uses = Vec::new();
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => {
                    if let Some(text) = block["text"].as_str() {
                        texts.push(text);
                    }
                }
                Some("tool_use") => tool_uses.push(ToolUse {
                    id: string_at(block, "id"),
                    name: string_at(block, "name"),
                    input: block["input"].clone(),
                }),
                _ => {}
            }
        }
        let text = texts.join("\n");

        // A sub-agent's messages are not the run's final word.
        if event["parent_tool_use_id"].is_null() {
            let id = message["id"].as_str().map(str::to_owned);
            let continues_message = id.is_some() && id == self.last_message_id;
            if !continues_message {
                self.last_message.clear();
                self.last_message_id = id;
            }
            if !text.is_empty() {
                if continues_message && !self.last_message.as_str().is_empty() {
                    self.last_message.push_str("\n");
                }
                self.last_message.push_str(&text);
            }
        }

        if text.is_empty() && tool_uses.is_empty() {
            return Vec::new();
        }
        vec![AgentEvent::Message { text, tool_uses }]
    }

    fn on_result(&mut self, event: &Value) {
        let final_text = match event["result"].as_str() {
            Some(text) => text.to_owned(),
            None => self.last_message.as_str().to_owned(),
        };
        let subtype = event["subtype"].as_str().map(str::to_owned);
        let failed_subtype = subtype
            .as_deref()
            .is_some_and(|subtype| subtype.starts_with("error"));
        let mut is_error = event["is_error"].as_bool().unwrap_or(false) || failed_subtype;

        let rate_limit = rate_limit(event, &final_text, is_error);
        is_error |= rate_limit.is_some();

        let error = if is_error {
            error_text(event, subtype.as_deref())
        } else {
            None
        };

        let usage = &event["usage"];
        self.result = Some(Done {
            final_text,
            is_error,
            subtype,
            turns: event["num_turns"].as_u64(),
            usage: Usage {
                input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
                cache_creation_input_tokens: usage["cache_creation_input_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                cache_read_input_tokens: usage["cache_read_input_tokens"].as_u64().unwrap_or(0),
            },
            tokens_unknown: false,
            cost_usd: event["total_cost_usd"].as_f64(),
            duration_ms: event["duration_ms"].as_u64(),
            error,
            rate_limit,
        });
    }
}

impl StreamParser for ClaudeParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some((event, kind)) = super::events::typed_event(line) else {
            return Vec::new();
        };
        let kind = kind.as_str();
        self.saw_event = true;
        match kind {
            "assistant" => self.on_assistant(&event),
            "user" => tool_results(&event),
            "result" => {
                self.on_result(&event);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Option<Done> {
        if let Some(done) = self.result.take() {
            return Some(done);
        }
        // No `result`: the process was cut short. Report what was said and
        // let the exit status decide.
        self.saw_event.then(|| Done {
            final_text: self.last_message.as_str().to_owned(),
            ..Done::default()
        })
    }
}

fn tool_results(event: &Value) -> Vec<AgentEvent> {
    event["message"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .map(|block| AgentEvent::ToolResult {
            tool_use_id: block["tool_use_id"].as_str().map(str::to_owned),
            output: tool_output(&block["content"]),
            is_error: block["is_error"].as_bool().unwrap_or(false),
        })
        .collect()
}

/// Tool output is either a plain string or a list of content blocks.
fn tool_output(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The agent's own account of a failed run: its `errors`, else the result
/// text (never the fallback message, which was not written as an error).
fn error_text(event: &Value, subtype: Option<&str>) -> Option<String> {
    let errors: Vec<&str> = event["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !errors.is_empty() {
        return Some(errors.join("; "));
    }
    if let Some(text) = event["result"]
        .as_str()
        .filter(|text| !text.trim().is_empty())
    {
        return Some(text.trim().to_owned());
    }
    subtype.map(|subtype| format!("the run ended with {subtype}"))
}

/// HTTP 429 (rate limited) and 529 (overloaded) both mean "come back later".
fn rate_limit(event: &Value, final_text: &str, is_error: bool) -> Option<RateLimit> {
    let status = event["api_error_status"].as_u64();
    if matches!(status, Some(429 | 529)) || is_usage_limit_message(final_text, is_error) {
        let message = match final_text.trim() {
            "" => format!(
                "the provider refused the request (HTTP {})",
                status.unwrap_or(429)
            ),
            text => text.to_owned(),
        };
        return Some(RateLimit {
            reset_at_unix: reset_time(final_text),
            message,
        });
    }
    None
}

/// Claude Code reports an exhausted plan as the final text, e.g.
/// `Claude AI usage limit reached|1750000000` or `5-hour limit reached ∙ resets 3pm`.
/// A successful run's message may well talk about limits, so without the
/// error flag only a short text shaped like such a notice counts.
fn is_usage_limit_message(text: &str, is_error: bool) -> bool {
    let text = text.trim().to_lowercase();
    if text.contains("<promise>") {
        return false;
    }
    let shaped_like_notice = text.len() <= 400
        && (text.starts_with("claude ai usage limit reached")
            || (text.contains("limit reached")
                && (text.contains("resets") || text.contains("reset at") || text.contains('|'))));
    let error_about_limits = is_error
        && (text.contains("usage limit")
            || text.contains("rate limit")
            || text.contains("limit reached"));
    shaped_like_notice || error_about_limits
}

/// The unix time after the last `|` of a usage-limit notice, if any.
fn reset_time(text: &str) -> Option<u64> {
    let (_, after) = text.trim().rsplit_once('|')?;
    after
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|&time| time > 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ExitStatusKind;
    use crate::agent::promise::{Conclusion, DEFAULT_TOKEN, PromiseScope, conclude};

    crate::agent::transcripts::parser_tests!(ClaudeParser::new(), "claude-code");

    #[test]
    fn an_echoed_promise_is_reported_as_a_tool_result() {
        let (transcript, _) = fixture("echoed-promise");
        let (events, _) = parse(&transcript);
        let echoed = events.iter().any(|event| {
            matches!(event, AgentEvent::ToolResult { output, .. }
                if output.contains("<promise>COMPLETE</promise>"))
        });
        assert!(echoed, "the echo is reported as a tool result");
    }

    #[test]
    fn an_api_error_is_flagged_despite_its_success_subtype() {
        let (transcript, _) = fixture("api-error");
        let (_, done) = parse(&transcript);
        let done = done.expect("result seen");
        assert_eq!(done.subtype.as_deref(), Some("success"));
        assert!(done.is_error, "is_error wins over a success subtype");
        assert_eq!(done.rate_limit, None, "a 400 is not a rate limit");
    }

    #[test]
    fn result_event_fills_usage_cost_and_turns() {
        let (transcript, _) = fixture("multi-message");
        let (events, done) = parse(&transcript);
        let done = done.expect("result seen");
        assert_eq!(
            done.final_text,
            "Both steps are done.\n<promise>COMPLETE</promise>"
        );
        assert_eq!(done.turns, Some(3));
        assert_eq!(done.duration_ms, Some(208));
        assert_eq!(done.cost_usd, Some(0.01884));
        assert_eq!(done.usage.input_tokens, 3003);
        assert_eq!(done.usage.output_tokens, 153);
        assert_eq!(done.usage.total(), 3156);
        assert!(!done.is_error);
        assert_eq!(done.error, None);

        let messages: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::Message { text, tool_uses } => Some((text.as_str(), tool_uses.len())),
                _ => None,
            })
            .collect();
        assert_eq!(
            messages,
            [
                ("Step one: write the file.", 0),
                ("", 1),
                ("The file is written; checking it.", 0),
                ("", 1),
                ("Both steps are done.\n<promise>COMPLETE</promise>", 0),
            ]
        );
        let outputs: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolResult {
                    tool_use_id,
                    output,
                    is_error,
                } => Some((tool_use_id.as_deref(), output.as_str(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(
            outputs,
            [
                (
                    Some("toolu_0_1795262605930"),
                    "(Bash completed with no output)",
                    false
                ),
                (Some("toolu_1_1795262605990"), "hi", false),
            ]
        );
    }

    #[test]
    fn tool_use_carries_its_input() {
        let (transcript, _) = fixture("complete");
        let (events, _) = parse(&transcript);
        let tool_use = events
            .iter()
            .find_map(|event| match event {
                AgentEvent::Message { tool_uses, .. } => tool_uses.first(),
                _ => None,
            })
            .expect("a tool use");
        assert_eq!(tool_use.name, "Bash");
        assert_eq!(tool_use.id, "toolu_0_1795262602517");
        assert_eq!(tool_use.input["command"], "echo hello > hello.txt");
    }

    #[test]
    fn unknown_events_and_garbage_lines_are_ignored() {
        let transcript = concat!(
            "not json at all\n",
            "{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"allowed\"}}\n",
            "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\"}}\n",
            "{\"type\":\"system\",\"subtype\":\"compact_boundary\"}\n",
            "[1,2,3]\n",
            "{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},{\"type\":\"text\",\"text\":\"done <promise>COMPLETE</promise>\"}]},\"parent_tool_use_id\":null}\n",
            "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done <promise>COMPLETE</promise>\"}\n",
        );
        let (events, done) = parse(transcript);
        assert_eq!(
            events,
            [AgentEvent::Message {
                text: "done <promise>COMPLETE</promise>".into(),
                tool_uses: Vec::new()
            }]
        );
        assert_eq!(
            conclude(
                done.as_ref(),
                ExitStatusKind::Exited(0),
                DEFAULT_TOKEN,
                PromiseScope::FinalMessage
            ),
            Conclusion::Complete
        );
    }

    #[test]
    fn tool_result_content_may_be_a_block_list() {
        let line = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"one"},{"type":"image"},{"type":"text","text":"two"}]}]}}"#;
        let (events, _) = parse(line);
        assert_eq!(
            events,
            [AgentEvent::ToolResult {
                tool_use_id: Some("t".into()),
                output: "one\ntwo".into(),
                is_error: true
            }]
        );
    }

    #[test]
    fn a_cut_stream_falls_back_to_the_last_top_level_message() {
        let transcript = concat!(
            r#"{"type":"assistant","message":{"id":"a","content":[{"type":"text","text":"first"}]},"parent_tool_use_id":null}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"b","content":[{"type":"text","text":"part one"}]},"parent_tool_use_id":null}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"b","content":[{"type":"text","text":"<promise>COMPLETE</promise>"}]},"parent_tool_use_id":null}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"c","content":[{"type":"text","text":"sub-agent chatter"}]},"parent_tool_use_id":"toolu_9"}"#,
            "\n",
        );
        let (events, done) = parse(transcript);
        assert_eq!(events.len(), 4);
        let done = done.expect("events were seen");
        assert_eq!(done.final_text, "part one\n<promise>COMPLETE</promise>");
        assert!(!done.is_error);
        assert_eq!(
            conclude(
                Some(&done),
                ExitStatusKind::TimedOut,
                DEFAULT_TOKEN,
                PromiseScope::FinalMessage
            ),
            Conclusion::AgentError {
                message: "the agent timed out".into()
            }
        );
    }

    #[test]
    fn an_error_result_without_text_is_explained_by_its_subtype() {
        let transcript = concat!(
            r#"{"type":"assistant","message":{"id":"a","content":[{"type":"text","text":"Running the tests now."}]},"parent_tool_use_id":null}"#,
            "\n",
            r#"{"type":"result","subtype":"error_during_execution","is_error":false,"num_turns":4}"#,
            "\n",
        );
        let (_, done) = parse(transcript);
        let done = done.expect("result seen");
        assert!(done.is_error, "an error subtype fails the run");
        assert_eq!(done.final_text, "Running the tests now.");
        assert_eq!(
            done.error.as_deref(),
            Some("the run ended with error_during_execution")
        );
    }

    #[test]
    fn empty_output_yields_no_done() {
        let (events, done) = parse("");
        assert!(events.is_empty());
        assert_eq!(done, None);
    }

    #[test]
    fn usage_limit_result_is_a_rate_limit_with_its_reset_time() {
        let line = r#"{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1750000000"}"#;
        let (_, done) = parse(line);
        let done = done.expect("result seen");
        assert!(done.is_error);
        assert_eq!(
            done.rate_limit,
            Some(RateLimit {
                reset_at_unix: Some(1_750_000_000),
                message: "Claude AI usage limit reached|1750000000".into()
            })
        );

        let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"5-hour limit reached ∙ resets 3pm"}"#;
        let (_, done) = parse(line);
        let done = done.expect("result seen");
        assert!(done.is_error, "a usage-limit notice is never a success");
        let limit = done.rate_limit.expect("rate limited");
        assert_eq!(limit.reset_at_unix, None);
        assert_eq!(limit.message, "5-hour limit reached ∙ resets 3pm");
    }

    #[test]
    fn overload_and_429_statuses_are_rate_limits() {
        for status in [429, 529] {
            let line = format!(
                r#"{{"type":"result","subtype":"success","is_error":true,"api_error_status":{status},"result":"API Error: {status}"}}"#
            );
            let (_, done) = parse(&line);
            let limit = done.and_then(|done| done.rate_limit);
            assert!(limit.is_some(), "status {status}");
        }
    }

    #[test]
    fn a_successful_message_about_limits_is_not_a_rate_limit() {
        let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"Added a usage limit check to the API.\n<promise>COMPLETE</promise>"}"#;
        let (_, done) = parse(line);
        let done = done.expect("result seen");
        assert_eq!(done.rate_limit, None);
        assert!(!done.is_error);
    }
}
