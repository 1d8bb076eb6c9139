//! GitHub Copilot CLI: its preset, how it is pointed at the stand-in, and
//! its `copilot -p … --output-format json` stream.
//!
//! Copilot prints its session events, one per line, each with a `type` and
//! a `data` payload: `assistant.message` (a complete reply, with the tools
//! it asks for in `toolRequests`), `tool.execution_start`/`_complete`,
//! `session.error`, and a closing `result` with the process's `exitCode`.
//! The final message is the last reply that asked for no tool and came after
//! every tool run; a reply that goes on to call tools is intermediate.
//! Sub-agents' events carry an `agentId` and never give the final word.
//! Copilot 1.0.102 prints no token counts at all: its `result.usage` holds
//! premium requests and durations. Tokens are then reported as unknown
//! ([`Done::tokens_unknown`]), never as 0. Documented fields that do carry
//! them (`outputTokens` on a reply, `assistant.usage`) are still read when
//! present. Copilot reports no cost in money.
//!
//! Checked against transcripts recorded from Copilot CLI 1.0.102 with its
//! anthropic provider pointed at git-ralph's stand-in; besides the events
//! above it prints many ephemeral ones (`session.background_tasks_changed`,
//! `model.call_start`, `assistant.tool_call_delta`, …), all ignored.

use std::collections::HashSet;
use std::io;

use serde_json::Value;

use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::plain::TextTail;
use crate::agent::stream::{
    ErrorReport, FINAL_MESSAGE_BYTES, Json, JsonEvents, JsonLines, mentions_rate_limit, string_at,
};
use crate::agent::{AgentEvent, Done, ToolUse, Usage};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "copilot",
    title: "GitHub Copilot CLI",
    program: "copilot",
    verified: Some("1.0.102"),
    oldest: None,
    // `--allow-all-tools` alone still denies, unattended, any path
    // outside the repository ("Permission denied because no interactive
    // user response was available"); paths and URLs are allowed too, as
    // every other preset runs unattended.
    lead: &[
        "--allow-all-tools",
        "--allow-all-paths",
        "--allow-all-urls",
        "--output-format",
        "json",
    ],
    model_flag: Some("--model"),
    tail: &["-p"],
    prompt: PromptPassing::Argument,
    env: &[],
    scratch: &[],
    parser: || Box::new(Json::new(CopilotParser::new())),
    first_event: Some(|kind, event| {
        event.contains_key("data")
            && ["user.", "assistant.", "session.", "tool."]
                .iter()
                .any(|prefix| kind.starts_with(prefix))
    }),
    standin: Some(StandinSetup::with_tools(Protocol::AnthropicMessages, point)),
};

/// Copilot's own provider settings, offline, with the anthropic provider.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    Ok(vars(&[
        ("COPILOT_OFFLINE", "true"),
        ("COPILOT_PROVIDER_BASE_URL", at.base),
        ("COPILOT_PROVIDER_TYPE", "anthropic"),
        ("COPILOT_PROVIDER_API_KEY", STANDIN_KEY),
        ("COPILOT_MODEL", "claude-sonnet-4.5"),
    ]))
}

/// Parses Copilot CLI JSON events.
pub(super) struct CopilotParser {
    final_message: TextTail,
    /// Tool calls already reported from a reply's `toolRequests`.
    announced_tools: HashSet<String>,
    /// Output tokens as stated on each reply, if any reply stated them.
    reply_output_tokens: Option<u64>,
    /// The full split, when `assistant.usage` events were printed.
    usage: Option<Usage>,
    turns: u64,
    unresolved_error: Option<ErrorReport>,
    result: Option<Value>,
}

impl CopilotParser {
    pub(super) fn new() -> Self {
        CopilotParser {
            final_message: TextTail::new(FINAL_MESSAGE_BYTES),
            announced_tools: HashSet::new(),
            reply_output_tokens: None,
            usage: None,
            turns: 0,
            unresolved_error: None,
            result: None,
        }
    }

    fn on_message(&mut self, event: &Value, top_level: bool) -> Vec<AgentEvent> {
        let data = &event["data"];
        let text = data["content"].as_str().unwrap_or_default().to_owned();
        let tool_uses: Vec<ToolUse> = data["toolRequests"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|request| ToolUse {
                id: string_at(request, "toolCallId"),
                name: string_at(request, "name"),
                input: request["arguments"].clone(),
            })
            .collect();
        self.announced_tools
            .extend(tool_uses.iter().map(|tool| tool.id.clone()));
        if let Some(tokens) = data["outputTokens"].as_u64() {
            let total = self.reply_output_tokens.get_or_insert(0);
            *total = total.saturating_add(tokens);
        }
        if top_level {
            // A reply that got this far means any earlier error was retried away.
            self.unresolved_error = None;
            self.final_message.clear();
            if tool_uses.is_empty() {
                self.final_message.push_str(&text);
            }
        }
        if text.is_empty() && tool_uses.is_empty() {
            return Vec::new();
        }
        vec![AgentEvent::Message { text, tool_uses }]
    }

    fn on_tool_start(&mut self, data: &Value, top_level: bool) -> Vec<AgentEvent> {
        if top_level {
            self.final_message.clear();
        }
        let id = string_at(data, "toolCallId");
        if self.announced_tools.contains(&id) {
            return Vec::new();
        }
        self.announced_tools.insert(id.clone());
        vec![AgentEvent::Message {
            text: String::new(),
            tool_uses: vec![ToolUse {
                id,
                name: string_at(data, "toolName"),
                input: data["arguments"].clone(),
            }],
        }]
    }

    fn on_tool_complete(&mut self, data: &Value, top_level: bool) -> Vec<AgentEvent> {
        if top_level {
            self.final_message.clear();
        }
        let output = match (
            data["result"]["content"].as_str(),
            data["error"]["message"].as_str(),
        ) {
            (Some(content), _) => content.to_owned(),
            (None, Some(error)) => error.to_owned(),
            (None, None) => String::new(),
        };
        vec![AgentEvent::ToolResult {
            tool_use_id: data["toolCallId"].as_str().map(str::to_owned),
            output,
            is_error: data["success"] != true,
        }]
    }

    fn on_usage(&mut self, data: &Value) {
        let count = |key: &str| data[key].as_u64().unwrap_or(0);
        let cache_read = count("cacheReadTokens");
        let cache_write = count("cacheWriteTokens");
        let usage = self.usage.get_or_insert_with(Usage::default);
        // `inputTokens` counts the cached prompt too; split it out. Counts
        // come from the agent: a wrong one saturates, never overflows.
        let uncached = count("inputTokens").saturating_sub(cache_read.saturating_add(cache_write));
        usage.input_tokens = usage.input_tokens.saturating_add(uncached);
        usage.cache_read_input_tokens = usage.cache_read_input_tokens.saturating_add(cache_read);
        usage.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .saturating_add(cache_write);
        usage.output_tokens = usage.output_tokens.saturating_add(count("outputTokens"));
    }

    fn on_session_error(&mut self, data: &Value) {
        let message = data["message"]
            .as_str()
            .unwrap_or("the session failed")
            .to_owned();
        let rate_limited = matches!(data["errorType"].as_str(), Some("rate_limit" | "quota"))
            || data["statusCode"].as_u64() == Some(429)
            || mentions_rate_limit(&message);
        self.unresolved_error = Some(ErrorReport {
            message,
            rate_limited,
        });
    }

    /// The tokens, or `None` when Copilot printed no count at all.
    fn usage(&self) -> Option<Usage> {
        self.usage.or_else(|| {
            self.reply_output_tokens.map(|output_tokens| Usage {
                output_tokens,
                ..Usage::default()
            })
        })
    }
}

impl JsonEvents for CopilotParser {
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent> {
        let data = &event["data"];
        let top_level = event["agentId"].is_null() && data["parentToolCallId"].is_null();
        match kind.as_str() {
            "assistant.message" => self.on_message(&event, top_level),
            "tool.execution_start" => self.on_tool_start(data, top_level),
            "tool.execution_complete" => self.on_tool_complete(data, top_level),
            "assistant.usage" => {
                self.on_usage(data);
                Vec::new()
            }
            "assistant.turn_start" if top_level => {
                self.turns += 1;
                Vec::new()
            }
            "session.error" => {
                self.on_session_error(data);
                Vec::new()
            }
            "abort" => {
                let reason = data["reason"].as_str().unwrap_or("no reason given");
                self.unresolved_error = Some(ErrorReport {
                    message: format!("the run was aborted: {reason}"),
                    rate_limited: false,
                });
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
        if !lines.saw_event() {
            return None;
        }
        let result = self.result.take();
        let exit_code = result
            .as_ref()
            .and_then(|result| result["exitCode"].as_i64());
        let failed_exit = exit_code.is_some_and(|code| code != 0);
        let error = self.unresolved_error.take();
        let rate_limit = error.as_ref().and_then(ErrorReport::rate_limit);
        let message = match (error, exit_code) {
            (Some(error), _) => Some(error.message),
            (None, Some(code)) if failed_exit => Some(format!("copilot reported exit code {code}")),
            _ => None,
        };
        let duration_ms = result
            .as_ref()
            .and_then(|result| result["usage"]["sessionDurationMs"].as_u64());
        let usage = self.usage();
        Some(Done {
            final_text: self.final_message.as_str().to_owned(),
            is_error: message.is_some(),
            subtype: None,
            turns: (self.turns > 0).then_some(self.turns),
            tokens_unknown: usage.is_none(),
            usage: usage.unwrap_or_default(),
            cost_usd: None,
            duration_ms,
            error: message,
            rate_limit,
        })
    }
}
