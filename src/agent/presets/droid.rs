//! Factory Droid (`@factory/cli`): its preset, how it is pointed at the
//! stand-in, and its `droid exec --output-format stream-json` stream.
//!
//! Droid's stream starts like Claude Code's, with a `system` init, and then
//! goes its own way: `message` events (the user's and the assistant's, each
//! a whole `text`), `tool_call` and `tool_result` events, and one closing
//! `completion` that restates the final text and carries the usage. A
//! failure is an `error` event instead, from the agent loop, followed by a
//! generic one from the CLI (`Exec failed`), and exit code 1.
//!
//! Checked against transcripts recorded from Droid 0.225.2 (see
//! `tests/fixtures/droid/README.md`). Its traps:
//! - `droid exec` is read-only unless told otherwise, and even `--auto
//!   high` blocks some commands (its help says so), so the preset passes
//!   `--skip-permissions-unsafe`;
//! - it needs no Factory account when its model is one of the user's own
//!   (`customModels` in `~/.factory/settings.json`); the model is named
//!   `custom:<model>`;
//! - its shell tool is `Execute`, and it wants a `summary` of 3 to 8
//!   sentence-cased words beside the command;
//! - it retries a 429 four times by itself, ignoring `retry-after`, over
//!   about 80 s;
//! - the npm package `@factory/cli` takes its binary from a platform
//!   package of the same version (`@factory/cli-linux-x64`); the registry
//!   held the platform package only for 0.225.2 while `@factory/cli` was at
//!   0.225.1, so the platform package is installed on its own and its
//!   `bin/droid` linked onto PATH.

use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{
    ErrorReport, FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, mentions_rate_limit,
};
use crate::agent::{AgentEvent, Done, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "droid",
    title: "Factory Droid",
    program: "droid",
    verified: Some("0.225.2"),
    oldest: None,
    lead: &[
        "exec",
        "--output-format",
        "stream-json",
        "--skip-permissions-unsafe",
    ],
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(Json::new(DroidParser::new())),
    first_event: Some(|kind, event| {
        kind == "system"
            && event.contains_key("reasoning_effort")
            && !event.contains_key("claude_code_version")
    }),
    standin: Some(StandinSetup::with_tools(
        Protocol::OpenAiChatCompletions,
        point,
    )),
};

/// A model of the user's own (`customModels`) speaking OpenAI Chat
/// Completions, made the default, with cloud sync off.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    at.config_file(
        ".factory/settings.json",
        &serde_json::json!({
            "model": "custom:standin-model",
            "customModels": [{
                "model": "standin-model",
                "displayName": "git-ralph stand-in",
                "baseUrl": format!("{}/v1", at.base),
                "apiKey": STANDIN_KEY,
                "provider": "generic-chat-completion-api",
                "maxOutputTokens": 8192,
            }],
            "cloudSessionSync": false,
        })
        .to_string(),
    )?;
    Ok(vars(&[("FACTORY_DROID_AUTO_UPDATE_ENABLED", "false")]))
}

/// Parses Droid's stream-json output.
pub(super) struct DroidParser {
    final_message: TextTail,
    completion: Option<Done>,
    /// The first error of the run: the agent loop's own words, before the
    /// CLI's generic `Exec failed`.
    error: Option<ErrorReport>,
}

impl DroidParser {
    pub(super) fn new() -> Self {
        DroidParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            completion: None,
            error: None,
        }
    }

    fn on_message(&mut self, event: &Value) -> Vec<AgentEvent> {
        if event["role"] != "assistant" {
            return Vec::new();
        }
        let text = event["text"].as_str().unwrap_or_default().to_owned();
        self.final_message.clear();
        self.final_message.push_str(&text);
        if text.is_empty() {
            return Vec::new();
        }
        vec![AgentEvent::Message {
            text,
            tool_uses: Vec::new(),
        }]
    }

    fn on_completion(&mut self, event: &Value) {
        let usage = &event["usage"];
        let count = |key: &str| usage[key].as_u64().unwrap_or(0);
        let final_text = match event["finalText"].as_str() {
            Some(text) => text.to_owned(),
            None => self.final_message.as_str().to_owned(),
        };
        self.completion = Some(Done {
            final_text,
            turns: event["numTurns"].as_u64(),
            duration_ms: event["durationMs"].as_u64(),
            usage: Usage {
                input_tokens: count("input_tokens"),
                output_tokens: count("output_tokens"),
                cache_creation_input_tokens: count("cache_creation_input_tokens"),
                cache_read_input_tokens: count("cache_read_input_tokens"),
            },
            ..Done::default()
        });
    }
}

impl JsonEvents for DroidParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        match kind.as_str() {
            "message" => self.on_message(&event),
            "tool_call" => {
                // What was said before a tool ran is not the final word.
                self.final_message.clear();
                vec![AgentEvent::Message {
                    text: String::new(),
                    tool_uses: vec![ToolUse {
                        id: event["id"].as_str().unwrap_or_default().to_owned(),
                        name: event["toolName"].as_str().unwrap_or_default().to_owned(),
                        input: event["parameters"].clone(),
                    }],
                }]
            }
            "tool_result" => vec![AgentEvent::ToolResult {
                tool_use_id: event["id"].as_str().map(str::to_owned),
                output: match &event["value"] {
                    Value::String(text) => text.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                },
                is_error: event["isError"] == true,
            }],
            "completion" => {
                self.error = None;
                self.on_completion(&event);
                Vec::new()
            }
            "error" => {
                if self.error.is_none() {
                    let message = event["message"]
                        .as_str()
                        .unwrap_or("unknown error")
                        .to_owned();
                    self.error = Some(ErrorReport {
                        rate_limited: mentions_rate_limit(&message),
                        message,
                    });
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn close(&mut self, lines: &JsonLines) -> Option<Done> {
        if let Some(error) = self.error.take() {
            return Some(Done {
                final_text: self.final_message.as_str().to_owned(),
                is_error: true,
                rate_limit: error.rate_limit(),
                error: Some(error.message),
                ..Done::default()
            });
        }
        self.completion
            .take()
            .or_else(|| lines.cut_short(&self.final_message))
    }
}
