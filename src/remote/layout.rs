//! The record's layout: which files of `<git-dir>/ralph/<change>/` travel
//! with the branch, and the manifest (`record.json`) that says which
//! layout a record was written in. A later release that changes what a
//! record holds raises [`LAYOUT`]; a record of a higher layout than this
//! release knows is refused, never half read.

use serde::{Deserialize, Serialize};

/// The highest layout this release reads.
pub const LAYOUT: u32 = 2;

/// The layout of a whole run's record, which every release since records
/// travelled reads.
pub const RUN_LAYOUT: u32 = 1;

/// The layout of one story's run (`start --story`): the same files, but
/// its state names the change and story it works for, which a release
/// that reads layout 1 alone would take for a change of its own.
pub const STORY_LAYOUT: u32 = 2;

/// The manifest's name in the record's tree.
pub const MANIFEST: &str = "record.json";

/// The run's files that travel: its state, its events, what its agents
/// learned, the answers given, and every checkpoint's receipt. The raw
/// agent output (`attempts/`) and the agent's own session files stay on
/// the machine that ran them.
pub const FILES: [&str; 5] = [
    "state.json",
    "events.jsonl",
    "learnings.md",
    "answers.jsonl",
    "receipts.txt",
];

/// `record.json`: what a record is, for whoever reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The layout it was written in.
    pub layout: u32,
    pub change: String,
    /// The tip of `ralph/<change>` the record describes.
    pub branch: String,
}

/// The ref a change's record lives under, beside its attempts.
pub fn record_ref(namespace: &str) -> String {
    format!("{namespace}/record")
}

/// Where `fetch` puts what a remote holds of a change while it is compared
/// with what is here: out of `refs/ralph/`, and removed before `start`
/// returns, whatever it decides.
pub fn incoming(change: &str) -> String {
    format!("refs/ralph-incoming/{change}")
}
