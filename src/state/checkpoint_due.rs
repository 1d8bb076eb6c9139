//! The loop's word, written ahead, that a verified story's checkpoint is
//! about to be committed. The commit and the record that calls the story
//! done are two writes; a loop killed between them leaves a commit on the
//! run's branch that its record does not know. Without this note nothing
//! tells that commit apart from the commits the user made on the branch
//! after the kill (or from one an agent made with a forged subject), and
//! recovery had to take them all off the branch. With it, the commit
//! whose parent and tree are exactly the noted ones is the loop's own,
//! made of work it had verified.

use serde::{Deserialize, Serialize};

use super::run::{AttemptOutcome, RunState};
use crate::git::{ObjectId, hex};

/// A checkpoint about to be committed: the attempt it settles, the
/// commit it goes on and the tree it holds, and how the attempt is to
/// be recorded (complete, or a failure whose work is kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointDue {
    pub story: String,
    pub attempt: u32,
    #[serde(with = "hex")]
    pub parent: ObjectId,
    #[serde(with = "hex")]
    pub tree: ObjectId,
    pub outcome: AttemptOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<(String, String)>,
}

impl CheckpointDue {
    /// Whether the checkpoint finishes its story: a failed attempt whose
    /// work is kept all the same always says why it failed.
    pub fn finishes_story(&self) -> bool {
        self.reason.is_none()
    }
}

impl RunState {
    /// The checkpoint `due` is about to be committed.
    pub fn checkpoint_due(&mut self, due: CheckpointDue) {
        self.checkpoint_due = Some(due);
    }

    /// The checkpoint noted as due, if its record was never saved.
    pub fn due_checkpoint(&self) -> Option<&CheckpointDue> {
        self.checkpoint_due.as_ref()
    }

    /// The noted checkpoint is recorded, or was looked for: the note goes.
    pub fn checkpoint_settled(&mut self) -> Option<CheckpointDue> {
        self.checkpoint_due.take()
    }
}
