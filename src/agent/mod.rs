//! Running one agent attempt and deciding what it amounted to.
//!
//! git-ralph drives agent CLIs it does not control, each with its own output
//! format. This module runs one agent process ([`run`]), turns whatever it
//! prints into agent-neutral [`AgentEvent`]s (one [`StreamParser`] per
//! format), and reduces the run to a [`Conclusion`] through the promise
//! protocol ([`parse_promise`], [`conclude`]); a final message that asks
//! instead of working is told apart ([`trailing_question`]). It neither prints nor knows
//! about the command line: callers receive events and typed results.

mod aider;
mod amp;
mod claude;
mod codex;
mod copilot;
mod cursor;
mod events;
mod gemini;
mod opencode;
mod plain;
mod promise;
mod question;
mod runner;
#[cfg(test)]
mod transcripts;

use serde::{Deserialize, Serialize};

pub use events::{AgentEvent, Done, ExitStatusKind, RateLimit, ToolUse, Usage};
pub use promise::{
    Conclusion, DEFAULT_TOKEN, PromiseScope, Signal, conclude, parse_promise,
    parse_promise_on_last_line,
};
pub use question::trailing_question;
pub use runner::{AgentRun, Invocation, RunnerError, StdinSource, run};

/// Turns an agent's output, line by line, into [`AgentEvent`]s.
///
/// Parsers never fail: a line they do not understand is skipped, because
/// agent CLIs add event types and print stray warnings. They keep only what
/// the final message needs, so memory stays bounded however much the agent
/// prints.
pub trait StreamParser: Send {
    /// Consumes one line (without its newline) and returns the messages and
    /// tool results it holds. Never returns [`AgentEvent::Done`].
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent>;

    /// Ends the stream: the agent's closing report if it gave one, otherwise
    /// what could be gathered from the stream, or `None` if nothing was seen.
    fn finish(&mut self) -> Option<Done>;

    /// Events held back to be reported together, called after every read
    /// of the agent's output and before [`finish`](Self::finish). Plain
    /// text is reported per read rather than per line, so a flood of short
    /// lines does not turn into a flood of events.
    fn flush(&mut self) -> Vec<AgentEvent> {
        Vec::new()
    }

    /// Where in [`Done::final_text`] a promise may be read from.
    fn promise_scope(&self) -> PromiseScope {
        PromiseScope::FinalMessage
    }
}

/// The output format an agent CLI is run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamFormat {
    /// `claude -p --output-format stream-json --verbose`.
    Claude,
    /// `codex exec --json`.
    Codex,
    /// `gemini --output-format stream-json`.
    Gemini,
    /// `opencode run --auto --format json`.
    Opencode,
    /// `amp -x --stream-json`: Claude Code's format, usage per message.
    Amp,
    /// `cursor-agent -p --output-format stream-json`.
    Cursor,
    /// `copilot -p … --output-format json`.
    Copilot,
    /// Aider's console output (`--no-stream --no-pretty`).
    Aider,
    /// Unstructured text.
    Plain,
    /// Decided from the first non-empty line.
    #[default]
    Auto,
}

/// A fresh parser for `format`.
pub fn parser_for(format: StreamFormat) -> Box<dyn StreamParser> {
    match format {
        StreamFormat::Claude => Box::new(claude::ClaudeParser::new()),
        StreamFormat::Codex => Box::new(codex::CodexParser::new()),
        StreamFormat::Gemini => Box::new(gemini::GeminiParser::new()),
        StreamFormat::Opencode => Box::new(opencode::OpencodeParser::new()),
        StreamFormat::Amp => Box::new(amp::AmpParser::new()),
        StreamFormat::Cursor => Box::new(cursor::CursorParser::new()),
        StreamFormat::Copilot => Box::new(copilot::CopilotParser::new()),
        StreamFormat::Aider => Box::new(aider::AiderParser::new()),
        StreamFormat::Plain => Box::new(plain::PlainParser::new()),
        StreamFormat::Auto => Box::new(SniffingParser { chosen: None }),
    }
}

/// The format a stream's first non-empty line reveals.
///
/// Claude Code's stream-json is recognised by its event types. Codex and
/// Gemini are recognised by the event each of them always starts with,
/// opencode by its `part`-carrying events and Copilot by its dotted event
/// names with a `data` payload, so that their JSON is never mistaken for
/// plain text; anything else is plain.
fn sniff_format(first_line: &str) -> StreamFormat {
    let Ok(serde_json::Value::Object(event)) = serde_json::from_str(first_line) else {
        return StreamFormat::Plain;
    };
    match event.get("type").and_then(serde_json::Value::as_str) {
        Some(kind) if claude::CLAUDE_EVENT_TYPES.contains(&kind) => StreamFormat::Claude,
        Some("thread.started") => StreamFormat::Codex,
        Some("init") if event.contains_key("session_id") => StreamFormat::Gemini,
        Some("step_start" | "text" | "tool_use") if event.contains_key("part") => {
            StreamFormat::Opencode
        }
        Some(kind)
            if event.contains_key("data")
                && ["user.", "assistant.", "session.", "tool."]
                    .iter()
                    .any(|prefix| kind.starts_with(prefix)) =>
        {
            StreamFormat::Copilot
        }
        _ => StreamFormat::Plain,
    }
}

/// Waits for the first non-empty line, then hands everything to the parser
/// for the format that line reveals.
struct SniffingParser {
    chosen: Option<Box<dyn StreamParser>>,
}

impl StreamParser for SniffingParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if self.chosen.is_none() && line.trim().is_empty() {
            return Vec::new();
        }
        self.chosen
            .get_or_insert_with(|| parser_for(sniff_format(line)))
            .feed_line(line)
    }

    fn flush(&mut self) -> Vec<AgentEvent> {
        self.chosen
            .as_mut()
            .map(|parser| parser.flush())
            .unwrap_or_default()
    }

    fn finish(&mut self) -> Option<Done> {
        self.chosen.as_mut().and_then(|parser| parser.finish())
    }

    fn promise_scope(&self) -> PromiseScope {
        match &self.chosen {
            Some(parser) => parser.promise_scope(),
            None => PromiseScope::LastLine,
        }
    }
}

/// Whether a provider error message means "rate or quota limited".
fn mentions_rate_limit(message: &str) -> bool {
    let message = message.to_lowercase();
    [
        "429",
        "rate limit",
        "rate_limit",
        "usage limit",
        "too many requests",
        "resource_exhausted",
        "quota",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conclude_with(format: StreamFormat, transcript: &str, exit: i32) -> Conclusion {
        let mut parser = parser_for(format);
        for line in transcript.lines() {
            parser.feed_line(line);
        }
        let done = parser.finish();
        conclude(
            done.as_ref(),
            ExitStatusKind::Exited(exit),
            DEFAULT_TOKEN,
            parser.promise_scope(),
        )
    }

    #[test]
    fn sniffing_recognises_each_format() {
        let complete = |dir: &str| crate::agent::transcripts::fixture(dir, "complete").0;
        let (claude, codex, gemini) = (
            complete("claude-code"),
            complete("codex"),
            complete("gemini"),
        );
        let (opencode, copilot, amp) = (complete("opencode"), complete("copilot"), complete("amp"));
        let first = |text: &str| text.lines().next().unwrap_or_default().to_owned();
        assert_eq!(sniff_format(&first(&claude)), StreamFormat::Claude);
        assert_eq!(sniff_format(&first(&codex)), StreamFormat::Codex);
        assert_eq!(sniff_format(&first(&gemini)), StreamFormat::Gemini);
        assert_eq!(sniff_format(&first(&opencode)), StreamFormat::Opencode);
        assert_eq!(sniff_format(&first(&copilot)), StreamFormat::Copilot);
        // Amp speaks Claude Code's format.
        assert_eq!(sniff_format(&first(&amp)), StreamFormat::Claude);
        assert_eq!(sniff_format("Hello there"), StreamFormat::Plain);
        assert_eq!(
            sniff_format(r#"{"type":"unheard_of"}"#),
            StreamFormat::Plain
        );
        assert_eq!(sniff_format(r#"["type"]"#), StreamFormat::Plain);
    }

    #[test]
    fn auto_falls_back_to_plain_text_rules() {
        let transcript = "Prompt: finish with <promise>COMPLETE</promise>\nthinking\n";
        assert_eq!(
            conclude_with(StreamFormat::Auto, transcript, 0),
            Conclusion::NoSignal
        );
        let transcript =
            "Prompt: finish with <promise>COMPLETE</promise>\n<promise>COMPLETE</promise>\n";
        assert_eq!(
            conclude_with(StreamFormat::Auto, transcript, 0),
            Conclusion::Complete
        );
    }

    #[test]
    fn auto_with_no_output_has_no_done() {
        let mut parser = parser_for(StreamFormat::Auto);
        parser.feed_line("");
        assert_eq!(parser.finish(), None);
    }

    #[test]
    fn formats_serialise_as_snake_case_names() {
        let json = serde_json::to_string(&StreamFormat::Claude).expect("serialisable");
        assert_eq!(json, "\"claude\"");
        let back: StreamFormat = serde_json::from_str("\"auto\"").expect("parsable");
        assert_eq!(back, StreamFormat::Auto);
    }
}
