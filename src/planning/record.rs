//! The record of a plan, under `<git-dir>/ralph/plans/<change>/<n>/`:
//! `plan.json` (each try with its prompt, log, tokens, cost and verdict,
//! and the totals, rewritten atomically after each try), the prompts and
//! the agents' raw output, and, for `--refine`, the plan as it was before
//! (`before/`). A new plan of the same change gets the next `<n>`, so no
//! record is ever overwritten.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::{StateError, Totals, now, write_atomically};

/// How a plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Planning,
    /// The reader accepted it.
    Accepted,
    /// It was sent back more often than `--max-retries` allows; it is
    /// kept as written.
    NotValid,
    /// The user stopped it.
    Stopped,
    /// The agent could not work, or git-ralph failed.
    Error,
}

/// One try.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanAttempt {
    pub attempt: u32,
    pub started_at: u64,
    pub duration_ms: u64,
    /// Relative to the record's directory.
    pub prompt: String,
    pub log: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// What it was sent back for; empty when it was accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// What it did that it must not, undone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undone: Vec<String>,
}

/// `plan.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub version: u32,
    pub change: String,
    /// The change's folder or the file, as shown.
    pub target: String,
    pub refine: bool,
    pub agent: String,
    pub status: PlanStatus,
    pub started_at: u64,
    pub updated_at: u64,
    pub attempts: Vec<PlanAttempt>,
    pub totals: Totals,
}

/// A plan's record directory and what it holds so far.
#[derive(Debug)]
pub struct Record {
    pub dir: PathBuf,
    pub plan: PlanRecord,
}

impl Record {
    /// The next free `<ralph-dir>/plans/<change>/<n>/`, not yet created.
    pub fn new(ralph_dir: &Path, plan: PlanRecord) -> Record {
        let base = ralph_dir
            .join(crate::state::layout::PLANS)
            .join(&plan.change);
        let dir = (1u32..)
            .map(|n| base.join(n.to_string()))
            .find(|dir| !dir.exists())
            .unwrap_or_else(|| base.join("0"));
        Record { dir, plan }
    }

    pub fn prompt_path(&self, attempt: u32) -> PathBuf {
        self.dir.join(format!("attempts/{attempt}.prompt.md"))
    }

    pub fn log_path(&self, attempt: u32) -> PathBuf {
        self.dir.join(format!("attempts/{attempt}.log"))
    }

    /// Where the plan as it was before a refinement is kept.
    pub fn before_dir(&self) -> PathBuf {
        self.dir.join("before")
    }

    /// Write `plan.json` whole.
    pub fn save(&mut self) -> Result<(), StateError> {
        self.plan.updated_at = now();
        let path = self.dir.join("plan.json");
        let mut text = serde_json::to_vec_pretty(&self.plan).unwrap_or_default();
        text.push(b'\n');
        write_atomically(&path, &text).map_err(|source| StateError::Write { path, source })
    }

    /// `path` relative to the record's directory.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.dir)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }
}
