//! What a plan reports as it goes, for whoever shows it: typed, in the
//! order it happens, and nothing printed here.

use serde::Serialize;

use super::review::OpenUnit;
use crate::agent::AgentEvent;

/// One thing that happened while a plan was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanEvent {
    /// The plan began: what it writes, with which agent, in how many
    /// tries at most, and where it is recorded.
    Began {
        change: String,
        target: String,
        refine: bool,
        agent: String,
        tries: u32,
        record: String,
    },
    /// A try's agent starts.
    TryStarted { attempt: u32, tries: u32 },
    /// What the agent said.
    Agent { attempt: u32, event: AgentEvent },
    /// Something the agent did that it must not, and that was undone, in
    /// words.
    Undone { attempt: u32, what: String },
    /// The plan was read and sent back, with the reader's words.
    SentBack { attempt: u32, findings: Vec<String> },
    /// The plan was read and accepted.
    Accepted {
        attempt: u32,
        stories: usize,
        open: usize,
        unit: OpenUnit,
    },
}
