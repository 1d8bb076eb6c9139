//! Amp: its preset (it cannot be pointed at the stand-in) and its
//! `amp -x --stream-json` stream.
//!
//! Amp writes Claude Code's stream-json format, so the Claude parser reads
//! it, with two differences made up for here: Amp states token usage on
//! each assistant message rather than on the closing `result`, and a failed
//! run's `result` carries its reason in an `error` string.
//!
//! Built from Amp's documented output, not from a recorded transcript.

use serde_json::Value;

use super::claude::{ClaudeParser, with_result_error};
use super::{Preset, PromptPassing};
use crate::agent::stream::{Json, nonblank};
use crate::agent::{AgentEvent, Done, StreamParser, Usage};

/// Amp talks only to Amp's service, so `agents --verify` cannot point it at
/// the stand-in; its stream is Claude Code's, so auto-detection reads it as
/// that.
pub const PRESET: Preset = Preset {
    name: "amp",
    title: "Amp",
    program: "amp",
    verified: None,
    oldest: None,
    lead: &["-x", "--stream-json", "--dangerously-allow-all"],
    model_flag: None,
    tail: &[],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(AmpParser::new()),
    first_event: None,
    standin: None,
};

/// Parses Amp stream-json output.
pub(super) struct AmpParser {
    claude: Json<ClaudeParser>,
    message_usage: Usage,
    result_error: Option<String>,
}

impl AmpParser {
    pub(super) fn new() -> Self {
        AmpParser {
            claude: Json::new(ClaudeParser::new()),
            message_usage: Usage::default(),
            result_error: None,
        }
    }

    fn note(&mut self, event: &Value) {
        match event["type"].as_str() {
            Some("assistant") => {
                self.message_usage
                    .add(Usage::from_anthropic(&event["message"]["usage"]));
            }
            Some("result") => {
                self.result_error = nonblank(&event["error"]);
            }
            _ => {}
        }
    }
}

impl StreamParser for AmpParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if let Ok(event) = serde_json::from_str::<Value>(line) {
            self.note(&event);
        }
        self.claude.feed_line(line)
    }

    fn finish(&mut self) -> Option<Done> {
        let mut done = self.claude.finish()?;
        if done.usage == Usage::default() {
            done.usage = self.message_usage;
        }
        Some(with_result_error(done, self.result_error.take()))
    }
}
