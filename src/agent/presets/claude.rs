//! Claude Code: its preset, how it is pointed at the stand-in, and its
//! `--output-format stream-json --verbose` stream with its usage-limit
//! notices.
//!
//! Claude Code ends every run with one `result` event that states the final
//! text and whether the run failed, so that event is authoritative. Its
//! `subtype` alone is not: an API error reports `success` with `is_error`
//! set. Assistant and user events are turned into messages and tool results
//! as they arrive; the last assistant message is only remembered as a
//! fallback for a stream that was cut before its `result`.

use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{
    FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, mentions_rate_limit, reset_from_words,
    string_at,
};
use crate::agent::{AgentEvent, Done, RateLimit, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "claude",
    title: "Claude Code",
    program: "claude",
    verified: Some("2.1.332"),
    oldest: Some("2.1.197"),
    lead: &[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ],
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(Json::new(ClaudeParser::new())),
    first_event: Some(|kind, _| CLAUDE_EVENT_TYPES.contains(&kind)),
    standin: Some(StandinSetup::with_tools(Protocol::AnthropicMessages, point)),
};

/// Claude Code's documented variables for a custom Anthropic endpoint.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    Ok(vars(&[
        ("ANTHROPIC_BASE_URL", at.base),
        ("ANTHROPIC_API_KEY", STANDIN_KEY),
        ("ANTHROPIC_MODEL", "claude-sonnet-4-5"),
        ("ANTHROPIC_SMALL_FAST_MODEL", "claude-haiku-4-5"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        // Two retries of a 429 instead of ten: the same final report,
        // minutes sooner.
        ("CLAUDE_CODE_MAX_RETRIES", "2"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
    ]))
}

/// Event types that only Claude Code's stream-json output starts with.
const CLAUDE_EVENT_TYPES: &[&str] = &[
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
}

impl ClaudeParser {
    pub(super) fn new() -> Self {
        ClaudeParser {
            last_message: TextTail::new(FINAL_MESSAGE_BYTES),
            last_message_id: None,
            result: None,
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

        self.result = Some(Done {
            final_text,
            is_error,
            subtype,
            turns: event["num_turns"].as_u64(),
            usage: Usage::from_anthropic(&event["usage"]),
            tokens_unknown: false,
            cost_usd: event["total_cost_usd"].as_f64(),
            duration_ms: event["duration_ms"].as_u64(),
            error,
            rate_limit,
        });
    }
}

impl JsonEvents for ClaudeParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        match kind.as_str() {
            "assistant" => self.on_assistant(&event),
            "user" => tool_results(&event),
            "result" => {
                self.on_result(&event);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn close(&mut self, lines: &JsonLines) -> Option<Done> {
        // Without `result` the process was cut short: what was said last
        // is reported, and the exit status decides.
        self.result
            .take()
            .or_else(|| lines.cut_short(&self.last_message))
    }
}

/// Puts into a failed run's `done` the reason its `result` gave in a field
/// the Claude parser does not read (Amp's `error`, Qwen Code's
/// `error.message`), with the usage limit that reason names.
pub(super) fn with_result_error(mut done: Done, error: Option<String>) -> Done {
    if done.is_error
        && let Some(error) = error
    {
        if done.rate_limit.is_none() && mentions_rate_limit(&error) {
            done.rate_limit = Some(reset_from_words(&error));
        }
        done.error = Some(error);
    }
    done
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
