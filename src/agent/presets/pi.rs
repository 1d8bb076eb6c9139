//! pi (`@mariozechner/pi-coding-agent`): its preset, how it is pointed at
//! the stand-in, and its `--mode json` stream.
//!
//! pi prints its session header, then every event of its agent loop: each
//! message's start, its streamed updates and its end, and each tool run's
//! start and end. A `message_end` states the whole message, so the final
//! message is the last assistant `message_end`'s text; the updates before it
//! repeat the message so far on every delta and are skipped unread. There is
//! no closing summary: usage is summed over the assistant messages, and a
//! failed model call is an assistant message with `stopReason: "error"`
//! and an `errorMessage`.
//!
//! Checked against transcripts recorded from pi 0.73.1 (see
//! `tests/fixtures/pi/README.md`). Its traps:
//! - it exits 0 whatever happened, API errors and rate limits included:
//!   only the last assistant message's `stopReason` tells;
//! - it retries a failed call by itself (three times, 2, 4 and 8 s apart),
//!   each retry a new `agent_start` … `agent_end` round after an
//!   `auto_retry_start`, and gives up with `auto_retry_end`;
//! - it has no permission prompts: every tool runs, unattended or not;
//! - without `--no-session` it keeps every run under `~/.pi/agent/sessions`.

use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{ErrorReport, FINAL_MESSAGE_BYTES, JsonLines, mentions_rate_limit};
use crate::agent::{AgentEvent, Done, StreamParser, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "pi",
    title: "pi",
    program: "pi",
    verified: Some("0.73.1"),
    oldest: None,
    lead: &["-p", "--mode", "json", "--no-session"],
    // pi names models `provider/id`, or an id with `--provider`.
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(PiParser::new()),
    first_event: Some(|kind, event| {
        kind == "session" && event.contains_key("cwd") && event.contains_key("version")
    }),
    standin: Some(StandinSetup::with_tools(
        Protocol::OpenAiChatCompletions,
        point,
    )),
};

/// A provider of pi's own in `~/.pi/agent/models.json`, speaking OpenAI
/// Chat Completions, chosen as the default in its settings; retries a
/// tenth as far apart.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    at.config_file(
        ".pi/agent/models.json",
        &serde_json::json!({
            "providers": {"standin": {
                "baseUrl": format!("{}/v1", at.base),
                "api": "openai-completions",
                "apiKey": STANDIN_KEY,
                "models": [{"id": "standin-model"}],
            }},
        })
        .to_string(),
    )?;
    at.config_file(
        ".pi/agent/settings.json",
        &serde_json::json!({
            "defaultProvider": "standin",
            "defaultModel": "standin-model",
            "retry": {"baseDelayMs": 200},
        })
        .to_string(),
    )?;
    Ok(vars(&[("PI_OFFLINE", "1"), ("PI_TELEMETRY", "0")]))
}

/// Parses pi's JSON event stream.
pub(super) struct PiParser {
    final_message: TextTail,
    usage: Usage,
    cost_usd: Option<f64>,
    turns: u64,
    unresolved_error: Option<ErrorReport>,
    stream: JsonLines,
}

impl PiParser {
    pub(super) fn new() -> Self {
        PiParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            usage: Usage::default(),
            cost_usd: None,
            turns: 0,
            unresolved_error: None,
            stream: JsonLines::default(),
        }
    }

    fn on_assistant(&mut self, message: &Value) -> Vec<AgentEvent> {
        self.turns += 1;
        self.add_usage(&message["usage"]);
        let mut texts = Vec::new();
        let mut tool_uses = Vec::new();
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => texts.extend(block["text"].as_str()),
                Some("toolCall") => tool_uses.push(ToolUse {
                    id: block["id"].as_str().unwrap_or_default().to_owned(),
                    name: block["name"].as_str().unwrap_or_default().to_owned(),
                    input: block["arguments"].clone(),
                }),
                _ => {}
            }
        }
        let text = texts.join("\n");
        self.final_message.clear();
        self.final_message.push_str(&text);
        self.unresolved_error = match message["stopReason"].as_str() {
            Some("error" | "aborted") => {
                let error = message["errorMessage"]
                    .as_str()
                    .filter(|error| !error.trim().is_empty())
                    .unwrap_or("the model call failed")
                    .to_owned();
                Some(ErrorReport {
                    rate_limited: mentions_rate_limit(&error),
                    message: error,
                })
            }
            _ => None,
        };
        if text.is_empty() && tool_uses.is_empty() {
            return Vec::new();
        }
        vec![AgentEvent::Message { text, tool_uses }]
    }

    fn add_usage(&mut self, usage: &Value) {
        let count = |key: &str| usage[key].as_u64().unwrap_or(0);
        // pi reports input without the cached part, as Anthropic does.
        self.usage.add(Usage {
            input_tokens: count("input"),
            output_tokens: count("output"),
            cache_read_input_tokens: count("cacheRead"),
            cache_creation_input_tokens: count("cacheWrite"),
        });
        if let Some(cost) = usage["cost"]["total"].as_f64() {
            *self.cost_usd.get_or_insert(0.0) += cost;
        }
    }

    /// What one event of the stream, of type `kind`, holds.
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        match kind.as_str() {
            "message_end" if event["message"]["role"] == "assistant" => {
                self.on_assistant(&event["message"])
            }
            "tool_execution_end" => vec![AgentEvent::ToolResult {
                tool_use_id: event["toolCallId"].as_str().map(str::to_owned),
                output: tool_output(&event["result"]),
                is_error: event["isError"] == true,
            }],
            "auto_retry_end" if event["success"] == false => {
                if let Some(error) = event["finalError"].as_str() {
                    self.unresolved_error = Some(ErrorReport {
                        rate_limited: mentions_rate_limit(error),
                        message: error.to_owned(),
                    });
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

impl StreamParser for PiParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        // Each update restates the message so far: reading them all would
        // cost the square of a long message's length, and the message's
        // end says it all again.
        if line.starts_with(r#"{"type":"message_update""#) {
            return Vec::new();
        }
        self.stream
            .event(line)
            .map_or_else(Vec::new, |(event, kind)| self.on_event(event, kind))
    }

    fn finish(&mut self) -> Option<Done> {
        let done = Done {
            turns: (self.turns > 0).then_some(self.turns),
            usage: self.usage,
            cost_usd: self.cost_usd,
            ..self.stream.cut_short(&self.final_message)?
        };
        Some(ErrorReport::settle(self.unresolved_error.take(), done))
    }
}

/// A tool's result: its text blocks, one after the other.
fn tool_output(result: &Value) -> String {
    match &result["content"] {
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::String(text) => text.clone(),
        _ => String::new(),
    }
}
