//! GitHub Copilot CLI's `copilot -p … --output-format json` stream.
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

use super::events::string_at;
use std::collections::HashSet;

use serde_json::Value;

use super::events::{AgentEvent, Done, RateLimit, ToolUse, Usage};
use super::plain::TextTail;
use super::{StreamParser, mentions_rate_limit};

/// The most of the final message kept for the promise check.
const FINAL_MESSAGE_BYTES: usize = 1024 * 1024;

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
    saw_event: bool,
}

struct ErrorReport {
    message: String,
    rate_limited: bool,
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
            saw_event: false,
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

impl StreamParser for CopilotParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some((event, kind)) = super::events::typed_event(line) else {
            return Vec::new();
        };
        let kind = kind.as_str();
        self.saw_event = true;
        let data = &event["data"];
        let top_level = event["agentId"].is_null() && data["parentToolCallId"].is_null();
        match kind {
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

    fn finish(&mut self) -> Option<Done> {
        if !self.saw_event {
            return None;
        }
        let result = self.result.take();
        let exit_code = result
            .as_ref()
            .and_then(|result| result["exitCode"].as_i64());
        let failed_exit = exit_code.is_some_and(|code| code != 0);
        let error = self.unresolved_error.take();
        let rate_limit = error
            .as_ref()
            .filter(|error| error.rate_limited)
            .map(|error| RateLimit {
                reset_at_unix: None,
                message: error.message.clone(),
            });
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

#[cfg(test)]
mod tests {
    //! The fixtures were recorded from Copilot CLI 1.0.102 (see the README
    //! beside them).

    use super::*;
    use crate::agent::promise::Conclusion;

    crate::agent::transcripts::parser_tests!(CopilotParser::new(), "copilot");

    #[test]
    fn a_session_error_fails_the_run_even_with_a_clean_exit() {
        let (transcript, _) = &fixture("api-error");
        assert!(matches!(
            conclusion_of(transcript, "0"),
            Conclusion::AgentError { .. }
        ));
        let (_, done) = parse(transcript);
        assert_eq!(done.expect("events seen").rate_limit, None);
    }

    #[test]
    fn a_rate_limit_error_is_a_rate_limit() {
        let (transcript, exit) = &fixture("rate-limit");
        assert_eq!(exit.trim(), "1");
        let (_, done) = parse(transcript);
        let done = done.expect("events seen");
        assert!(done.is_error);
        let limit = done.rate_limit.expect("rate limited");
        assert!(limit.message.contains("429"), "{}", limit.message);
    }

    #[test]
    fn replies_tools_and_the_result_fill_the_done() {
        let (transcript, _) = fixture("multi-message");
        let (events, done) = parse(&transcript);
        let done = done.expect("events seen");
        assert_eq!(done.final_text, "All done.\n\n<promise>COMPLETE</promise>");
        assert_eq!(done.turns, Some(3));
        // Copilot 1.0.102 prints no token counts: unknown, not 0.
        assert!(done.tokens_unknown);
        assert_eq!(done.usage, Usage::default());
        assert_eq!(done.duration_ms, Some(2315));
        assert_eq!(done.cost_usd, None);
        assert!(!done.is_error);

        let summary: Vec<(String, usize)> = events
            .iter()
            .filter(|event| !matches!(event, AgentEvent::Message { text, tool_uses } if text.is_empty() && tool_uses.is_empty()))
            .map(|event| match event {
                AgentEvent::Message { text, tool_uses } => (text.clone(), tool_uses.len()),
                AgentEvent::ToolResult { output, .. } => (format!("result: {output}"), 0),
                AgentEvent::Done(_) => ("done".into(), 0),
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("First, the file.".to_owned(), 1),
                (
                    "result: \n<shellId: 0 completed with exit code 0>".to_owned(),
                    0
                ),
                ("Now I check it.".to_owned(), 1),
                (
                    "result: hello\n<shellId: 1 completed with exit code 0>".to_owned(),
                    0
                ),
                ("All done.\n\n<promise>COMPLETE</promise>".to_owned(), 0),
            ]
        );
        let AgentEvent::Message { tool_uses, .. } = &events[2] else {
            panic!("expected a reply, got {:?}", events[2]);
        };
        assert_eq!(tool_uses[0].id, "toolu_standin_1");
        assert_eq!(tool_uses[0].name, "bash");
        assert_eq!(tool_uses[0].input["command"], "cat hello.txt");
    }

    #[test]
    fn usage_events_give_the_full_split() {
        let transcript = concat!(
            r#"{"type":"assistant.usage","data":{"model":"m","inputTokens":1000,"outputTokens":30,"cacheReadTokens":600,"cacheWriteTokens":100}}"#,
            "\n",
            r#"{"type":"assistant.message","data":{"messageId":"a","content":"done","outputTokens":30}}"#,
            "\n",
        );
        let (_, done) = parse(transcript);
        let usage = done.expect("events seen").usage;
        assert_eq!(usage.input_tokens, 300);
        assert_eq!(usage.cache_read_input_tokens, 600);
        assert_eq!(usage.cache_creation_input_tokens, 100);
        assert_eq!(usage.output_tokens, 30);
        assert!(!done_of(transcript).tokens_unknown);
    }

    fn done_of(transcript: &str) -> Done {
        parse(transcript).1.expect("events seen")
    }

    #[test]
    fn a_tool_started_without_a_request_is_still_reported() {
        let transcript = concat!(
            r#"{"type":"tool.execution_start","data":{"toolCallId":"t","toolName":"grep","arguments":{"pattern":"x"}}}"#,
            "\n",
            r#"{"type":"tool.execution_complete","data":{"toolCallId":"t","success":false,"error":{"message":"no such file"}}}"#,
            "\n",
        );
        let (events, _) = parse(transcript);
        assert!(
            matches!(&events[0], AgentEvent::Message { tool_uses, .. } if tool_uses[0].name == "grep")
        );
        assert_eq!(
            events[1],
            AgentEvent::ToolResult {
                tool_use_id: Some("t".into()),
                output: "no such file".into(),
                is_error: true
            }
        );
    }

    #[test]
    fn sub_agent_replies_and_unknown_events_never_give_the_final_word() {
        let transcript = concat!(
            "not json\n",
            r#"{"type":"session.info","data":{"infoType":"model","message":"Using m"}}"#,
            "\n",
            r#"{"type":"assistant.message","data":{"messageId":"a","content":"<promise>COMPLETE</promise>"}}"#,
            "\n",
            r#"{"type":"assistant.message","agentId":"sub-1","data":{"messageId":"b","content":"sub-agent chatter"}}"#,
            "\n",
            r#"{"type":"assistant.message_delta","data":{"messageId":"c","deltaContent":"late"}}"#,
            "\n",
            r#"{"type":"result","exitCode":0,"usage":{"premiumRequests":1}}"#,
            "\n",
        );
        assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
    }

    #[test]
    fn a_reply_after_an_error_means_it_was_overcome_but_a_failed_exit_code_is_not() {
        let recovered = concat!(
            r#"{"type":"session.error","data":{"errorType":"network","message":"socket hang up"}}"#,
            "\n",
            r#"{"type":"assistant.message","data":{"messageId":"a","content":"<promise>COMPLETE</promise>"}}"#,
            "\n",
            r#"{"type":"result","exitCode":0}"#,
            "\n",
        );
        assert_eq!(conclusion_of(recovered, "0"), Conclusion::Complete);
        let failed = recovered.replace(r#""exitCode":0"#, r#""exitCode":2"#);
        assert_eq!(
            conclusion_of(&failed, "0"),
            Conclusion::AgentError {
                message: "copilot reported exit code 2".into()
            }
        );
    }

    #[test]
    fn empty_output_yields_no_done() {
        assert_eq!(parse("").1, None);
    }
}
