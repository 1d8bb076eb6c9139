//! What the run's own loop keeps while its stories are at work: the
//! stories running and waiting to be merged, what was merged and touched
//! which paths, and how the run ends once that is decided.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::{mpsc, watch};

use super::super::lifecycle::LoopEnd;
use super::schedule::Order;
use super::worker::Running;
use crate::events::Record;
use crate::git::ObjectId;
use crate::state::{StopReason, WorkerRecord};

/// A story loop that ended, with its story.
pub(super) type Ended = (String, LoopEnd);

/// A story merged onto the run's branch, and the paths its merge changed.
#[derive(Debug, Clone)]
pub(in crate::run) struct MergedStory {
    pub story: String,
    pub paths: Vec<String>,
}

/// A story done in its worktree, its loop ended, not merged yet.
pub(super) struct Waiting {
    pub worker: WorkerRecord,
    pub tip: ObjectId,
}

/// What the run's loop keeps while stories are at work.
#[derive(Default)]
pub(super) struct Board {
    pub running: Vec<Running>,
    /// Stories that used their retries.
    pub given_up: BTreeSet<String>,
    /// Stories merged in this loop, in order, with the paths each merge
    /// changed: what a conflict is named against.
    pub merged: Vec<MergedStory>,
    /// How many stories were merged when each running story started.
    pub merged_at_start: BTreeMap<String, usize>,
    /// Each started story's place in the file: merges go in this order.
    pub place: BTreeMap<String, usize>,
    /// Stories done in their worktrees, waiting for the stories before
    /// them to end before they are merged, by place.
    pub waiting: BTreeMap<usize, Waiting>,
    /// Why the run ends, once it is decided; the stories at work are
    /// stopped and waited for.
    pub ending: Option<(StopReason, String)>,
}

impl Drop for Board {
    /// A run's loop that is dropped (a forced quit) takes its stories'
    /// loops with it.
    fn drop(&mut self) {
        for running in &self.running {
            running.handle.abort();
        }
    }
}

/// Where started stories report to.
pub(super) struct Launch<'a> {
    pub width: usize,
    pub order: &'a Order,
    pub records: &'a mpsc::UnboundedSender<Record>,
    pub ended: &'a mpsc::UnboundedSender<Ended>,
    pub stop: &'a watch::Receiver<bool>,
}
