//! Gemini CLI: its preset, how it is pointed at the stand-in, and its
//! `--output-format stream-json` stream.
//!
//! Gemini streams an assistant message as many `message` chunks and never
//! restates it, so the final message is rebuilt here: the chunks after the
//! last tool event, concatenated. Anything said before a tool ran is an
//! intermediate message and can never carry the promise. The closing
//! `result` event says whether the run succeeded and carries the usage.

use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, rate_limit_in};
use crate::agent::{AgentEvent, Done, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "gemini",
    title: "Gemini CLI",
    program: "gemini",
    verified: Some("0.61.0"),
    oldest: None,
    // Headless Gemini refuses a directory the user never trusted in
    // its interactive mode (exit 55); `--skip-trust` runs it anyway.
    lead: &["--output-format", "stream-json", "--yolo", "--skip-trust"],
    model_flag: Some("-m"),
    tail: &["-p"],
    prompt: PromptPassing::Argument,
    env: &[],
    scratch: &[],
    parser: || Box::new(Json::new(GeminiParser::new())),
    first_event: Some(|kind, event| kind == "init" && event.contains_key("session_id")),
    standin: Some(StandinSetup::with_tools(
        Protocol::GeminiGenerateContent,
        point,
    )),
};

/// An API key, the base URL the Gemini CLI reads, and settings that keep
/// it from updating or reporting.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    at.config_file(
        ".gemini/settings.json",
        &serde_json::json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
        })
        .to_string(),
    )?;
    Ok(vars(&[
        ("GEMINI_API_KEY", STANDIN_KEY),
        ("GOOGLE_GEMINI_BASE_URL", at.base),
        ("GOOGLE_GENAI_USE_VERTEXAI", "false"),
    ]))
}

/// Parses Gemini CLI stream-json output.
pub(super) struct GeminiParser {
    final_message: TextTail,
    result: Option<Value>,
    last_error: Option<String>,
}

impl GeminiParser {
    pub(super) fn new() -> Self {
        GeminiParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            result: None,
            last_error: None,
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
        let rate_limit = rate_limit_in(error.as_deref());

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

impl JsonEvents for GeminiParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        match kind.as_str() {
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

    fn close(&mut self, lines: &JsonLines) -> Option<Done> {
        match self.result.take() {
            Some(result) => Some(self.done_from_result(&result)),
            // The process was cut short: what was said last is reported,
            // and the exit status decides.
            None => lines.cut_short(&self.final_message),
        }
    }
}
