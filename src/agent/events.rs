//! The agent-neutral vocabulary of what happened during an attempt.
//!
//! Every supported agent CLI speaks its own stream format; the parsers turn
//! each of them into these few typed events so that the rest of git-ralph
//! (the event log, `--json` output, the promise check, usage accounting)
//! never needs to know which agent produced them. Events are serialisable so
//! they can be written to `events.jsonl` verbatim and read back later.

use serde::{Deserialize, Serialize};

/// One thing the agent did, in the order it happened.
///
/// Content is carried in full: truncation, if any, is a presentation
/// concern of whoever displays the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// An assistant message: its text and the tools it asked to run.
    Message {
        text: String,
        tool_uses: Vec<ToolUse>,
    },
    /// The outcome of one tool run, as reported back to the model.
    ToolResult {
        tool_use_id: Option<String>,
        output: String,
        is_error: bool,
    },
    /// The end of the run: final message, outcome flags and usage.
    Done(Done),
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: serde_json::Value,
}

/// What the agent reported when its run ended (or what could be gathered if
/// it never said so explicitly).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// The final assistant message, the only text a promise is read from.
    pub final_text: String,
    /// The agent itself considers the run failed (API error, turn limit, …).
    pub is_error: bool,
    /// The agent's own name for how the run ended, when it has one.
    pub subtype: Option<String>,
    pub turns: Option<u64>,
    pub usage: Usage,
    /// The agent printed no token counts (Copilot CLI), so `usage` holds
    /// zeros that mean "unknown", not "none".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_unknown: bool,
    pub cost_usd: Option<f64>,
    pub duration_ms: Option<u64>,
    /// What went wrong, in the agent's words, when `is_error` is set.
    pub error: Option<String>,
    /// Set when the run was cut short by a provider rate or usage limit.
    pub rate_limit: Option<RateLimit>,
}

/// Token counts, split the way Anthropic's API reports them: `input_tokens`
/// excludes cached input, so the four fields never overlap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Every token billed or served from cache during the run.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }

    /// Counts as Anthropic's API names them, in `usage`; a missing one is 0.
    pub fn from_anthropic(usage: &serde_json::Value) -> Usage {
        let count = |key: &str| usage[key].as_u64().unwrap_or(0);
        Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
            cache_creation_input_tokens: count("cache_creation_input_tokens"),
            cache_read_input_tokens: count("cache_read_input_tokens"),
        }
    }

    /// Adds `more` to these counts. Counts come from the agent: a wrong one
    /// saturates, never overflows.
    pub fn add(&mut self, more: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(more.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(more.output_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(more.cache_creation_input_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(more.cache_read_input_tokens);
    }
}

/// A provider limit stopped the run; retrying before the reset is pointless.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    /// When the limit lifts, if the agent said so in machine-readable form.
    pub reset_at_unix: Option<u64>,
    /// The agent's own message about the limit.
    pub message: String,
}

/// How the agent process ended.
pub use crate::process::ExitStatusKind;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_with_a_snake_case_type_tag() {
        let event = AgentEvent::ToolResult {
            tool_use_id: Some("t1".into()),
            output: "ok".into(),
            is_error: false,
        };
        let json = serde_json::to_value(&event).expect("serialisable");
        assert_eq!(json["type"], "tool_result");
        assert_eq!(json["tool_use_id"], "t1");

        let done = AgentEvent::Done(Done {
            final_text: "bye".into(),
            turns: Some(3),
            ..Done::default()
        });
        let json = serde_json::to_value(&done).expect("serialisable");
        assert_eq!(json["type"], "done");
        assert_eq!(json["final_text"], "bye");
        assert_eq!(json["turns"], 3);
    }

    #[test]
    fn events_round_trip_through_json() {
        let events = vec![
            AgentEvent::Message {
                text: "hello".into(),
                tool_uses: vec![ToolUse {
                    id: "a".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({"command": "ls"}),
                }],
            },
            AgentEvent::Done(Done {
                is_error: true,
                error: Some("boom".into()),
                rate_limit: Some(RateLimit {
                    reset_at_unix: Some(7),
                    message: "slow down".into(),
                }),
                ..Done::default()
            }),
        ];
        for event in events {
            let line = serde_json::to_string(&event).expect("serialisable");
            let back: AgentEvent = serde_json::from_str(&line).expect("parsable");
            assert_eq!(back, event);
        }
    }

    #[test]
    fn usage_total_adds_every_bucket() {
        let usage = Usage {
            input_tokens: 1,
            output_tokens: 20,
            cache_creation_input_tokens: 300,
            cache_read_input_tokens: 4000,
        };
        assert_eq!(usage.total(), 4321);
    }

    #[test]
    fn exit_status_serialises_with_its_code() {
        let json = serde_json::to_value(ExitStatusKind::Exited(3)).expect("serialisable");
        assert_eq!(json, serde_json::json!({"kind": "exited", "code": 3}));
        let json = serde_json::to_value(ExitStatusKind::TimedOut).expect("serialisable");
        assert_eq!(json, serde_json::json!({"kind": "timed_out"}));
        assert!(ExitStatusKind::Exited(0).is_success());
        assert!(!ExitStatusKind::Exited(1).is_success());
        assert!(!ExitStatusKind::Stopped.is_success());
    }
}
