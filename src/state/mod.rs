//! The files under `<git-dir>/ralph/`: one directory per change holding
//! `state.json` (the run, rewritten atomically so a reader never sees a torn
//! file), `events.jsonl` (every event, appended) and `attempts/` (each
//! attempt's raw agent output), `learnings.md` (what the agents learned,
//! see [`learnings`]), `receipts.txt` (every checkpoint's trailers, only
//! ever appended to: nothing reads it back), `answers.jsonl` (the answers
//! people gave to the run's questions, see [`answers`]), plus the repository-wide
//! `lock` that keeps two loops from running at once. A run begun again
//! moves the earlier one to `history/<id>/` (`history`: its record names
//! its refs where they went). Nothing here knows about agents' formats or
//! the terminal.

pub mod answers;
mod atomic;
mod change;
mod checkpoint_due;
mod commands;
mod events_log;
mod history;
pub mod layout;
pub mod learnings;
mod lock;
mod prepare;
mod readers;
mod report;
mod run;
mod workers;

pub use atomic::{write_atomically, write_atomically_with_mode};
pub use change::Change;
pub use checkpoint_due::CheckpointDue;
pub use commands::{AttemptNote, Ending, Usage};
pub use events_log::EventsLog;
pub use history::refs_in_history;
pub use lock::{
    LockError, RalphDirBefore, RunLock, ask_to_stop, lock_holder, lock_path, process_alive,
};
pub use prepare::{Prepared, RunDirError, check_run_name};
pub use report::{LearningsReport, Report, usage_words};
pub use run::{
    AttemptOutcome, AttemptRecord, FallbackState, Findings, FinishChoice, Flag, Guardrails,
    HooksDue, ParallelState, PipelineState, RunState, RunStatus, RunWorktree, Settings, StopReason,
    StoryRecord, Totals, WorkerRecord, now,
};

use std::path::{Path, PathBuf};

/// Where a change's files live.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub dir: PathBuf,
}

/// Why a state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("could not read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid run state", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("could not write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StateError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            StateError::Read { path, .. } => Some(format!(
                "check that {} is a file git-ralph may read",
                path.display()
            )),
            StateError::Corrupt { path, .. } => {
                let dir = path.parent().unwrap_or(path);
                let in_history = dir
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|name| name == "history");
                let kept = match dir.file_name() {
                    Some(name) if !in_history => {
                        let name = name.to_string_lossy();
                        format!(
                            "its commits stay on branch ralph/{name} and under refs/ralph/{name}/"
                        )
                    }
                    _ => "its commits stay in git, under refs/ralph/".to_owned(),
                };
                Some(format!(
                    "git-ralph writes this file whole, so something else changed it: restore it if you \
                     can, or move {} aside to forget the run ({kept})",
                    dir.display()
                ))
            }
            StateError::Write { path, .. } => Some(format!(
                "check that {} is writable and the disk is not full",
                path.display()
            )),
        }
    }
}

impl RunDir {
    /// `<ralph-dir>/<change>`; `change` must already be validated.
    pub fn new(ralph_dir: &Path, change: &str) -> RunDir {
        RunDir {
            dir: ralph_dir.join(change),
        }
    }

    pub fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    pub fn events_path(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// `attempts/<story>-<n>.jsonl`: the agent's raw output.
    pub fn attempt_log(&self, story: &str, attempt: u32) -> PathBuf {
        self.dir
            .join("attempts")
            .join(format!("{story}-{attempt}.jsonl"))
    }

    /// `attempts/<story>-<n>.verify.jsonl`: a verifier agent's output.
    pub fn attempt_verifier_log(&self, story: &str, attempt: u32) -> PathBuf {
        self.dir
            .join("attempts")
            .join(format!("{story}-{attempt}.verify.jsonl"))
    }

    /// The prompt of the attempt as a file, for `RALPH_PROMPT_FILE`.
    pub fn attempt_prompt(&self, story: &str, attempt: u32) -> PathBuf {
        self.dir
            .join("attempts")
            .join(format!("{story}-{attempt}.prompt.md"))
    }

    /// What the agents learned, for the attempts after them: outside the
    /// worktree, so no revert erases it.
    pub fn learnings_path(&self) -> PathBuf {
        self.dir.join("learnings.md")
    }

    /// Every checkpoint's receipt, appended: the audit trail that outlives
    /// a cleanup's squash.
    pub fn receipts_path(&self) -> PathBuf {
        self.dir.join("receipts.txt")
    }

    /// The answers people gave to the run's questions, appended by
    /// `git ralph answer` (see [`answers`]).
    pub fn answers_path(&self) -> PathBuf {
        self.dir.join("answers.jsonl")
    }

    /// The running agent's process group, while an attempt runs.
    pub fn agent_pid_file(&self) -> PathBuf {
        self.dir.join("agent.pid")
    }

    /// There from the moment a hook has started until the run's record
    /// says it ran: a loop killed meanwhile had started that hook.
    pub fn hook_started_file(&self) -> PathBuf {
        self.dir.join("hook.started")
    }

    /// Where the user's branches, tags and stash stood before the
    /// attempt under way, so that they are put back even if the loop is
    /// killed before it can do so itself.
    pub fn refs_before_path(&self) -> PathBuf {
        self.dir.join("refs-before.json")
    }

    pub fn exists(&self) -> bool {
        self.state_path().exists()
    }

    /// The run's state; for a run in history, its refs named where they
    /// are now (see [`RunState::name_refs_in_history`]).
    pub fn load(&self) -> Result<RunState, StateError> {
        let path = self.state_path();
        let bytes = std::fs::read(&path).map_err(|source| StateError::Read {
            path: path.clone(),
            source,
        })?;
        let mut state: RunState = serde_json::from_slice(&bytes)
            .map_err(|source| StateError::Corrupt { path, source })?;
        if let Some(id) = self.history_id() {
            state.name_refs_in_history(id);
        }
        Ok(state)
    }

    pub fn save(&self, state: &RunState) -> Result<(), StateError> {
        let _timed = crate::timings::phase("state save");
        let path = self.state_path();
        let bytes = serde_json::to_vec_pretty(state).map_err(|source| StateError::Corrupt {
            path: path.clone(),
            source,
        })?;
        write_atomically(&path, &bytes).map_err(|source| StateError::Write { path, source })
    }
}

/// The earlier runs kept under `<ralph-dir>/history/`, oldest first, by
/// their archive name.
pub fn list_history(ralph_dir: &Path) -> Vec<(String, RunDir)> {
    let history = ralph_dir.join(layout::HISTORY);
    let mut runs: Vec<(String, RunDir)> = list_runs(&history)
        .into_iter()
        .map(|name| {
            let dir = RunDir::new(&history, &name);
            (name, dir)
        })
        .collect();
    runs.sort_by_key(|(name, dir)| (dir.load().map(|s| s.started_at).unwrap_or(0), name.clone()));
    runs
}

/// The names of all runs recorded under `ralph_dir`, sorted.
pub fn list_runs(ralph_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(ralph_dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("state.json").is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corrupt(path: &str) -> StateError {
        StateError::Corrupt {
            path: PathBuf::from(path),
            source: serde_json::from_str::<RunState>("{").expect_err("not a state"),
        }
    }

    #[test]
    fn a_damaged_state_says_where_the_runs_commits_stay() {
        let live = corrupt("/r/.git/ralph/greet/state.json")
            .hint()
            .expect("a hint");
        assert!(live.contains("move /r/.git/ralph/greet aside"), "{live}");
        assert!(
            live.contains("branch ralph/greet and under refs/ralph/greet/"),
            "{live}"
        );
        // A run in the history is named after its change and when it ended.
        let old = corrupt("/r/.git/ralph/history/greet-1767225600/state.json")
            .hint()
            .expect("a hint");
        assert!(
            old.contains("move /r/.git/ralph/history/greet-1767225600 aside"),
            "{old}"
        );
        assert!(!old.contains("branch ralph/greet-"), "{old}");
    }
}
