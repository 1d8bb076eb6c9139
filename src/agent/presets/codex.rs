//! OpenAI's Codex CLI: its preset, how it is pointed at the stand-in, and
//! its `codex exec --json` stream.
//!
//! Codex has no single closing event that restates the final text: the final
//! message is the last `agent_message` item, and the turn ends with either
//! `turn.completed` (carrying usage) or `turn.failed`. Its `error` events are
//! not all fatal: Codex also reports stream retries that way, so an `error`
//! only fails the run if no `turn.completed` follows it. An `item.completed`
//! of type `error` is a warning (such as unknown model metadata) and never
//! fails the run.

use std::collections::HashSet;
use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{
    FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, rate_limit_in, string_at,
};
use crate::agent::{AgentEvent, Done, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "codex",
    title: "OpenAI Codex CLI",
    program: "codex",
    verified: Some("0.169.0"),
    oldest: None,
    lead: &[
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
    ],
    model_flag: Some("--model"),
    // `-` as the prompt makes `codex exec` read it from stdin.
    tail: &["-"],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(Json::new(CodexParser::new())),
    first_event: Some(|kind, _| kind == "thread.started"),
    standin: Some(StandinSetup::with_tools(Protocol::OpenAiResponses, point)),
};

/// A model provider of Codex's own in `$CODEX_HOME/config.toml`.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    at.config_file(
        ".codex/config.toml",
        &format!(
            "model = \"gpt-5.1-codex\"\nmodel_provider = \"standin\"\ncheck_for_update_on_startup = false\n\n\
             [model_providers.standin]\nname = \"git-ralph stand-in\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"GIT_RALPH_STANDIN_KEY\"\n",
            at.base
        ),
    )?;
    let mut pairs = vars(&[
        ("GIT_RALPH_STANDIN_KEY", STANDIN_KEY),
        ("OPENAI_API_KEY", STANDIN_KEY),
    ]);
    let codex_home = at.home.join(".codex");
    pairs.push((
        "CODEX_HOME".to_owned(),
        codex_home.to_string_lossy().into_owned(),
    ));
    Ok(pairs)
}

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
}

impl CodexParser {
    pub(super) fn new() -> Self {
        CodexParser {
            last_message: TextTail::new(FINAL_MESSAGE_BYTES),
            usage: Usage::default(),
            running_commands: HashSet::new(),
            unresolved_error: None,
            turn_failure: None,
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

impl JsonEvents for CodexParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        match kind.as_str() {
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

    fn close(&mut self, lines: &JsonLines) -> Option<Done> {
        if !lines.saw_event() {
            return None;
        }
        let error = self
            .turn_failure
            .take()
            .or_else(|| self.unresolved_error.take());
        let rate_limit = rate_limit_in(error.as_deref());
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
