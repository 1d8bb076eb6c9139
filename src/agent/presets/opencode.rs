//! opencode: its preset, how it is pointed at the stand-in, and its
//! `opencode run --format json` stream.
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

use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup};
use crate::agent::plain::TextTail;
use crate::agent::stream::{
    ErrorReport, FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, mentions_rate_limit,
};
use crate::agent::{AgentEvent, Done, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "opencode",
    title: "opencode",
    program: "opencode",
    verified: Some("1.18.33"),
    oldest: None,
    // Without `--auto`, `opencode run` rejects every permission it would
    // have asked for, and the run ends there with exit 0 and no answer.
    lead: &["run", "--auto", "--format", "json"],
    // opencode names models `provider/model`.
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::Argument,
    env: &[],
    // Sessions and snapshots live under $XDG_DATA_HOME, not here.
    scratch: &[],
    parser: || Box::new(Json::new(OpencodeParser::new())),
    first_event: Some(|kind, event| {
        matches!(kind, "step_start" | "text" | "tool_use") && event.contains_key("part")
    }),
    standin: Some(StandinSetup::with_tools(Protocol::AnthropicMessages, point)),
};

/// opencode's anthropic provider, given the stand-in's URL in its config.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    point_fork(at, "opencode", "https://opencode.ai/config.json")
}

/// Points opencode, or a fork of it that keeps its configuration under its
/// own `name` (`~/.config/<name>/<name>.json`, `<NAME>_*` variables), at
/// the stand-in through its anthropic provider, with updates, model
/// downloads, sharing and language-server downloads off.
pub(super) fn point_fork(
    at: &Pointing,
    name: &str,
    schema: &str,
) -> io::Result<Vec<(String, String)>> {
    at.config_file(
        &format!(".config/{name}/{name}.json"),
        &serde_json::json!({
            "$schema": schema,
            "model": "anthropic/claude-sonnet-4-5",
            "small_model": "anthropic/claude-sonnet-4-5",
            "autoupdate": false,
            "share": "disabled",
            "provider": {"anthropic": {"options": {"baseURL": format!("{}/v1", at.base), "apiKey": STANDIN_KEY}}},
        })
        .to_string(),
    )?;
    let prefix = name.to_uppercase();
    let off = ["AUTOUPDATE", "MODELS_FETCH", "SHARE", "LSP_DOWNLOAD"];
    Ok(off
        .iter()
        .map(|what| (format!("{prefix}_DISABLE_{what}"), "1".to_owned()))
        .collect())
}

/// Parses opencode JSON events.
pub(super) struct OpencodeParser {
    final_message: TextTail,
    usage: Usage,
    cost_usd: Option<f64>,
    steps: u64,
    first_timestamp: Option<u64>,
    last_timestamp: Option<u64>,
    unresolved_error: Option<ErrorReport>,
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
        self.usage.add(Usage {
            input_tokens: count(&tokens["input"]),
            output_tokens: count(&tokens["output"]).saturating_add(count(&tokens["reasoning"])),
            cache_read_input_tokens: count(&tokens["cache"]["read"]),
            cache_creation_input_tokens: count(&tokens["cache"]["write"]),
        });
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

impl JsonEvents for OpencodeParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        if let Some(timestamp) = event["timestamp"].as_u64() {
            self.first_timestamp.get_or_insert(timestamp);
            self.last_timestamp = Some(timestamp);
        }
        match kind.as_str() {
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

    fn close(&mut self, lines: &JsonLines) -> Option<Done> {
        let duration_ms = match (self.first_timestamp, self.last_timestamp) {
            (Some(first), Some(last)) => Some(last.saturating_sub(first)),
            _ => None,
        };
        let done = Done {
            turns: (self.steps > 0).then_some(self.steps),
            usage: self.usage,
            cost_usd: self.cost_usd,
            duration_ms,
            ..lines.cut_short(&self.final_message)?
        };
        Some(ErrorReport::settle(self.unresolved_error.take(), done))
    }
}
