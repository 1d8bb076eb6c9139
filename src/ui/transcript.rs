//! An attempt's agent events as lines of text, for `show --transcript` and
//! the terminal UI's Output tab alike: messages in full, each tool call with
//! its input, each tool result with its output, and the closing summary.

use crate::agent::AgentEvent;

/// What a line of a transcript shows, so a view can style it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Message,
    ToolCall,
    ToolOutput,
    ToolError,
    Summary,
}

/// The lines of one event, untruncated.
pub fn event_lines(event: &AgentEvent) -> Vec<(LineKind, String)> {
    let mut lines = Vec::new();
    match event {
        AgentEvent::Message { text, tool_uses } => {
            for line in text.trim_end().lines() {
                lines.push((LineKind::Message, line.to_owned()));
            }
            for tool in tool_uses {
                let input = match &tool.input {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                let mut input_lines = input.lines();
                lines.push((
                    LineKind::ToolCall,
                    format!("▸ {} {}", tool.name, input_lines.next().unwrap_or_default())
                        .trim_end()
                        .to_owned(),
                ));
                for line in input_lines {
                    lines.push((LineKind::ToolCall, format!("  {line}")));
                }
            }
        }
        AgentEvent::ToolResult {
            output, is_error, ..
        } => {
            let kind = if *is_error {
                LineKind::ToolError
            } else {
                LineKind::ToolOutput
            };
            for line in output.trim_end().lines() {
                lines.push((kind, format!("  │ {line}")));
            }
        }
        AgentEvent::Done(done) => {
            let mut summary = format!(
                "■ done · {}",
                crate::state::usage_words(done.usage.total(), done.cost_usd.unwrap_or(0.0))
            );
            if let Some(turns) = done.turns {
                summary.push_str(&format!(" · {turns} turns"));
            }
            if let Some(error) = &done.error {
                summary.push_str(&format!(" · error: {error}"));
            }
            lines.push((LineKind::Summary, summary));
        }
    }
    lines
}
