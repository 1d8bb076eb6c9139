//! Qwen Code: its preset, how it is pointed at the stand-in, and its
//! `--output-format stream-json` stream.
//!
//! Qwen Code began as a fork of the Gemini CLI, but its stream-json output
//! copies Claude Code's: a `system` init, `assistant` and `user` messages
//! with content blocks, and one closing `result`. The Claude parser reads
//! it, with one difference made up for here: a failed run's `result` has no
//! `result` text and carries its reason in an `error` object, e.g.
//! `{"message": "[API Error: 429 …]"}`.
//!
//! Checked against transcripts recorded from Qwen Code 0.24.4 (see
//! `tests/fixtures/qwen/README.md`). Its traps:
//! - the prompt may come on stdin or as an argument; `-p` is deprecated;
//! - without `--yolo` a shell command waits for an approval no one gives;
//! - a 429 is retried seven times by Qwen Code itself, after the delay the
//!   server asks for or else a back-off of 1.5 s doubling to 30 s (over a
//!   minute in all), on top of the OpenAI SDK's own retries; the stand-in
//!   asks for 1 ms and the pointing turns the SDK's retries off;
//! - `engines` in its package asks for Node 22; it runs on Node 20.

use std::io;

use serde_json::Value;

use super::claude::{ClaudeParser, with_result_error};
use super::{Pointing, Preset, PromptPassing, STANDIN_KEY, StandinSetup, vars};
use crate::agent::stream::{Json, nonblank};
use crate::agent::{AgentEvent, Done, StreamParser};
use crate::standin::Protocol;

pub const PRESET: Preset = Preset {
    name: "qwen",
    title: "Qwen Code",
    program: "qwen",
    verified: Some("0.24.4"),
    lead: &["--output-format", "stream-json", "--yolo"],
    model_flag: Some("--model"),
    tail: &[],
    prompt: PromptPassing::Stdin,
    env: &[],
    scratch: &[],
    parser: || Box::new(QwenParser::new()),
    first_event: Some(|kind, event| kind == "system" && event.contains_key("qwen_code_version")),
    standin: Some(StandinSetup::with_tools(
        Protocol::OpenAiChatCompletions,
        point,
    )),
};

/// Qwen Code's OpenAI-compatible provider: the key and base URL it reads
/// from the environment, and settings that choose it and keep Qwen Code
/// from reporting or updating.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    at.config_file(
        ".qwen/settings.json",
        &serde_json::json!({
            "security": {"auth": {"selectedType": "openai"}},
            // Qwen Code retries a 429 itself; the SDK's retries would
            // multiply its requests sevenfold.
            "model": {"name": "qwen3-coder-plus", "generationConfig": {"maxRetries": 0}},
            "general": {"enableAutoUpdate": false},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
        })
        .to_string(),
    )?;
    let base = format!("{}/v1", at.base);
    Ok(vars(&[
        ("OPENAI_API_KEY", STANDIN_KEY),
        ("OPENAI_BASE_URL", &base),
        ("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1"),
    ]))
}

/// Parses Qwen Code stream-json output.
pub(super) struct QwenParser {
    claude: Json<ClaudeParser>,
    result_error: Option<String>,
}

impl QwenParser {
    pub(super) fn new() -> Self {
        QwenParser {
            claude: Json::new(ClaudeParser::new()),
            result_error: None,
        }
    }
}

impl StreamParser for QwenParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if let Ok(event) = serde_json::from_str::<Value>(line)
            && event["type"] == "result"
        {
            self.result_error = nonblank(&event["error"]["message"]);
        }
        self.claude.feed_line(line)
    }

    fn finish(&mut self) -> Option<Done> {
        let done = self.claude.finish()?;
        Some(with_result_error(done, self.result_error.take()))
    }
}
