//! The run's own record of the issues it works through, in its directory
//! under `.git/ralph/<change>/`: never in the worktree, so no commit of the
//! user's carries it, and never on the tracker, so no tick reaches GitHub
//! or beads.
//!
//! - `issues.json`: the issues as read when the run began ([`Snapshot`]);
//! - `tasks.md`: the tracking file the agent ticks;
//! - `tasks.checkpoint.md`: `tasks.md` as of the last checkpoint.
//!
//! Git neither commits nor reverts these files, so the last two stand in
//! for the worktree and HEAD: a checkpoint copies the tracking file to its
//! checkpoint copy, a revert copies it back.

use std::path::{Path, PathBuf};

use super::{IssuesError, Snapshot};
use crate::state::write_atomically;
use crate::stories::StoriesError;

/// The issues as read when the run began.
pub const SNAPSHOT_FILE: &str = "issues.json";
/// The tracking file the agent ticks.
pub const TRACKING_FILE: &str = "tasks.md";
/// The tracking file as of the last checkpoint.
pub const CHECKPOINT_FILE: &str = "tasks.checkpoint.md";

/// The files of one run's record of its issues.
#[derive(Debug, Clone)]
pub(super) struct Ledger {
    pub snapshot: PathBuf,
    pub tracking: PathBuf,
    pub checkpoint: PathBuf,
}

impl Ledger {
    /// The record in the run's directory, `.git/ralph/<change>/`.
    pub fn in_run_dir(run_dir: &Path) -> Ledger {
        Ledger {
            snapshot: run_dir.join(SNAPSHOT_FILE),
            tracking: run_dir.join(TRACKING_FILE),
            checkpoint: run_dir.join(CHECKPOINT_FILE),
        }
    }

    /// Writes a new record: the issues, and the tracking file with its
    /// checkpoint copy.
    pub fn create(&self, snapshot: &Snapshot, tracking: &str) -> Result<(), IssuesError> {
        let json = serde_json::to_vec_pretty(snapshot).map_err(|err| IssuesError::Write {
            path: self.snapshot.clone(),
            source: std::io::Error::other(err),
        })?;
        write(&self.snapshot, &json)?;
        write(&self.checkpoint, tracking.as_bytes())?;
        write(&self.tracking, tracking.as_bytes())
    }

    /// The issues as read when the run began.
    pub fn read_snapshot(&self) -> Result<Snapshot, IssuesError> {
        let bytes = std::fs::read(&self.snapshot).map_err(|_| IssuesError::LedgerMissing {
            path: self.snapshot.clone(),
        })?;
        serde_json::from_slice(&bytes).map_err(|err| IssuesError::LedgerCorrupt {
            path: self.snapshot.clone(),
            message: err.to_string(),
        })
    }

    /// The tracking file as the agent left it.
    pub fn read_tracking(&self) -> Result<String, StoriesError> {
        if !self.tracking.is_file() {
            return Err(IssuesError::LedgerMissing {
                path: self.tracking.clone(),
            }
            .into());
        }
        crate::stories::read_text(&self.tracking)
    }

    /// The tracking file as of the last checkpoint; a record written before
    /// there was a checkpoint copy has its tracking file stand in.
    fn read_checkpoint(&self) -> Result<String, StoriesError> {
        if self.checkpoint.is_file() {
            crate::stories::read_text(&self.checkpoint)
        } else {
            self.read_tracking()
        }
    }

    /// The tracking file becomes the checkpoint's.
    pub fn checkpointed(&self) -> Result<(), StoriesError> {
        let text = self.read_tracking()?;
        Ok(write(&self.checkpoint, text.as_bytes())?)
    }

    /// The tracking file goes back to the checkpoint's.
    pub fn reverted(&self) -> Result<(), StoriesError> {
        let text = self.read_checkpoint()?;
        Ok(write(&self.tracking, text.as_bytes())?)
    }

    /// The checkpoint's tracking file and the current one, when they differ.
    pub fn change(&self) -> Result<Option<(String, String)>, StoriesError> {
        let (before, after) = (self.read_checkpoint()?, self.read_tracking()?);
        Ok((before != after).then_some((before, after)))
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), IssuesError> {
    write_atomically(path, bytes).map_err(|source| IssuesError::Write {
        path: path.to_owned(),
        source,
    })
}
