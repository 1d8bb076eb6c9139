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
//! Releases before 0.24 (0.15.10 is what `npm install` gives on Node 20,
//! whose engines it still accepts) close a failed run differently: a
//! `result` with `subtype: success`, `is_error: false`, exit code 0, and
//! Qwen Code's own error notice as its text (`[API Error: 429 …]`). That
//! notice is the CLI's, not the model's words, so a result that opens with
//! it is a failed run, and a usage limit when it names one.
//!
//! Checked against transcripts recorded from Qwen Code 0.15.10 and 0.24.4
//! (see `tests/fixtures/qwen/README.md`). Its traps:
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
    oldest: Some("0.15.10"),
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

/// How Qwen Code opens a notice of its own about a failed API call.
const API_ERROR: &str = "[API Error:";

/// Parses Qwen Code stream-json output.
pub(super) struct QwenParser {
    claude: Json<ClaudeParser>,
    result_error: Option<String>,
    /// The `result` was Qwen Code's own error notice, not a success.
    api_error: bool,
}

impl QwenParser {
    pub(super) fn new() -> Self {
        QwenParser {
            claude: Json::new(ClaudeParser::new()),
            result_error: None,
            api_error: false,
        }
    }
}

impl StreamParser for QwenParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if let Ok(event) = serde_json::from_str::<Value>(line)
            && event["type"] == "result"
        {
            let notice =
                nonblank(&event["result"]).filter(|text| text.trim_start().starts_with(API_ERROR));
            self.api_error = notice.is_some();
            self.result_error = nonblank(&event["error"]["message"]).or(notice);
        }
        self.claude.feed_line(line)
    }

    fn finish(&mut self) -> Option<Done> {
        let mut done = self.claude.finish()?;
        done.is_error |= std::mem::take(&mut self.api_error);
        Some(with_result_error(done, self.result_error.take()))
    }
}
