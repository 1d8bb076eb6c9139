//! What a run leaves behind, read back for people: the audit trail of `log`,
//! one attempt for `show`, and the offsets the terminal UI needs to browse a
//! run whose agents wrote gigabytes. Everything here only reads: the run's
//! files under `<git-dir>/ralph/` (or its history) and git objects through
//! `crate::git`. It knows neither clap nor the terminal.

mod follow;
mod index;
mod live_diff;
mod runs;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use follow::{Follower, Opened};
pub use index::{
    AttemptSpan, EventsIndex, LineHead, file_len, line_head, read_events, read_events_where,
    read_record, read_transcript_tail,
};
pub use runs::{RunSummary, find_run, list_all};

use crate::agent::AgentEvent;
use crate::events::Event;
use crate::git::Repo;
use crate::state::{
    AttemptOutcome, AttemptRecord, Flag, RunDir, RunState, StateError, StoryRecord,
};

/// Why a run or one of its attempts could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("there is no git-ralph run in this repository")]
    NoRun,
    #[error("there is no git-ralph run for '{0}', now or in the run history")]
    NoSuchRun(String),
    #[error("there are {} runs ({}); name the change", .0.len(), .0.join(", "))]
    Ambiguous(Vec<String>),
    #[error("the run '{change}' has no story '{story}'")]
    NoStory { change: String, story: String },
    #[error("story '{story}' has no attempt {attempt}")]
    NoAttempt { story: String, attempt: u32 },
    #[error("story '{0}' has no attempt yet")]
    NoAttempts(String),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("could not read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl AuditError {
    pub fn hint(&self) -> Option<String> {
        match self {
            AuditError::NoRun | AuditError::NoSuchRun(_) => {
                Some("start one with 'git ralph start <change>'".to_owned())
            }
            AuditError::Ambiguous(names) => names
                .first()
                .map(|name| format!("e.g. 'git ralph log {name}'")),
            AuditError::NoStory { .. }
            | AuditError::NoAttempt { .. }
            | AuditError::NoAttempts(_) => {
                Some("see the stories and their attempts with 'git ralph log'".to_owned())
            }
            AuditError::State(err) => err.hint(),
            AuditError::Io { .. } => None,
        }
    }
}

/// A run found on disk: live under `ralph/<change>` or kept in `ralph/history`.
#[derive(Debug, Clone)]
pub struct FoundRun {
    pub dir: RunDir,
    /// `<change>`, or `history/<change>-<unix time>`.
    pub label: String,
    pub history: bool,
}

impl FoundRun {
    pub fn load(&self) -> Result<RunState, AuditError> {
        Ok(self.dir.load()?)
    }
}

/// An event of a run kept in history, with the refs it names (an attempt's
/// work, a story's merge) named where the history keeps them: the events
/// log is the run's as it was written, never rewritten.
pub fn event_in_history(record: crate::events::Record, history_id: &str) -> crate::events::Record {
    fn rename(value: &mut serde_json::Value, change: &str, id: &str) {
        match value {
            serde_json::Value::String(text) => {
                *text = crate::state::refs_in_history(text, change, id);
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|item| rename(item, change, id));
            }
            serde_json::Value::Object(fields) => {
                fields
                    .values_mut()
                    .for_each(|item| rename(item, change, id));
            }
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::to_value(&record) else {
        return record;
    };
    rename(&mut value, &record.change, history_id);
    serde_json::from_value(value).unwrap_or(record)
}

/// The audit trail of a run, as `log` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Trail {
    pub change: String,
    pub run: String,
    pub branch: String,
    pub state: &'static str,
    pub reason: Option<&'static str>,
    pub agent: String,
    pub stories: Vec<TrailStory>,
    pub totals: crate::state::Totals,
    /// The run's learnings file, unless it kept none.
    pub learnings: Option<crate::state::LearningsReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrailStory {
    pub id: String,
    pub title: String,
    pub done: bool,
    pub tasks_done: usize,
    pub tasks_total: usize,
    pub attempts: Vec<TrailAttempt>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrailAttempt {
    pub attempt: u32,
    pub outcome: AttemptOutcome,
    pub reason: Option<String>,
    /// The checkpoint commit of a completed attempt.
    pub checkpoint: Option<String>,
    /// The ref keeping a failed attempt's work.
    pub attempt_ref: Option<String>,
    pub started_at: u64,
    pub duration_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// What an accepted attempt was flagged for.
    pub flag: Option<Flag>,
    /// The role it played in the story's pipeline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<crate::contract::Role>,
    /// Stories whose boxes it ticked though it was not given them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside_ticks: Vec<String>,
    /// What it changed in the git directory (undone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub git_dir_changes: Vec<String>,
    /// Tasks it added, as `<story>: <task>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added_tasks: Vec<String>,
    /// The agent that ran it, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The question it ended with, and the answer a person gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl From<&AttemptRecord> for TrailAttempt {
    fn from(record: &AttemptRecord) -> Self {
        TrailAttempt {
            attempt: record.attempt,
            outcome: record.outcome,
            reason: record.reason.clone(),
            checkpoint: record.checkpoint.clone(),
            attempt_ref: record.preserved.clone(),
            started_at: record.started_at,
            duration_ms: record.duration_ms,
            input_tokens: record.input_tokens,
            output_tokens: record.output_tokens,
            cost_usd: record.cost_usd,
            asked: record.asked.clone(),
            answer: record.answer.clone(),
            flag: record.flag,
            role: record.role,
            agent: record.agent.clone(),
            outside_ticks: record.outside_ticks.clone(),
            git_dir_changes: record.git_dir_changes.clone(),
            added_tasks: record.added_tasks.clone(),
        }
    }
}

/// The trail of `state`, as recorded.
pub fn trail(found: &FoundRun, state: &RunState) -> Trail {
    Trail {
        change: state.change().clone(),
        run: found.label.clone(),
        branch: state.branch().clone(),
        state: state.status().as_str(),
        reason: state.reason().map(|reason| reason.as_str()),
        agent: agent_name(state),
        stories: state
            .stories()
            .iter()
            .map(|story| TrailStory {
                id: story.id.clone(),
                title: story.title.clone(),
                done: story.done,
                tasks_done: story.tasks_done,
                tasks_total: story.tasks_total,
                attempts: story.attempts.iter().map(TrailAttempt::from).collect(),
            })
            .collect(),
        totals: state.totals().clone(),
        learnings: (!state.settings().no_learnings).then(|| {
            let path = found.dir.learnings_path();
            crate::state::LearningsReport {
                bytes: crate::state::learnings::len(&path),
                path: path.to_string_lossy().into_owned(),
            }
        }),
    }
}

/// The agent as the run names it: the preset, or the command it ran.
pub fn agent_name(state: &RunState) -> String {
    state
        .settings()
        .agent_command
        .clone()
        .unwrap_or_else(|| state.settings().agent.clone())
}

/// `<story>[/<attempt>]`: the attempt named, or the story's last one.
pub fn pick_attempt<'a>(
    state: &'a RunState,
    spec: &str,
) -> Result<(&'a StoryRecord, &'a AttemptRecord), AuditError> {
    let (story_id, attempt) = match spec.rsplit_once('/') {
        Some((story, n)) if n.parse::<u32>().is_ok() => (story, n.parse::<u32>().ok()),
        _ => (spec, None),
    };
    let story = state
        .stories()
        .iter()
        .find(|story| story.id == story_id)
        .ok_or_else(|| AuditError::NoStory {
            change: state.change().clone(),
            story: story_id.to_owned(),
        })?;
    let record = match attempt {
        Some(n) => story
            .attempts
            .iter()
            .find(|record| record.attempt == n)
            .ok_or(AuditError::NoAttempt {
                story: story.id.clone(),
                attempt: n,
            })?,
        None => story
            .attempts
            .last()
            .ok_or_else(|| AuditError::NoAttempts(story.id.clone()))?,
    };
    Ok((story, record))
}

/// One check as the run recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub passed: bool,
    /// The tail of a failed check's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// Everything `show` can print about one attempt.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptDetail {
    pub change: String,
    pub story: String,
    pub title: String,
    #[serde(flatten)]
    pub record: TrailAttempt,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The attempt against its checkpoint, as a unified patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<CheckResult>>,
}

/// Which parts of an attempt to read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Parts {
    pub prompt: bool,
    pub transcript: bool,
    pub diff: bool,
    pub checks: bool,
}

impl Parts {
    pub fn all() -> Parts {
        Parts {
            prompt: true,
            transcript: true,
            diff: true,
            checks: true,
        }
    }
}

/// Read back one attempt: only what `parts` asks for. The transcript, which
/// may be gigabytes, is not read here but streamed with
/// [`RunFiles::each_transcript_event`].
pub fn attempt_detail(
    repo: &Repo,
    found: &FoundRun,
    state: &RunState,
    story: &StoryRecord,
    record: &AttemptRecord,
    parts: Parts,
) -> Result<AttemptDetail, AuditError> {
    let files = RunFiles::new(found.dir.clone());
    Ok(AttemptDetail {
        change: state.change().clone(),
        story: story.id.clone(),
        title: story.title.clone(),
        record: TrailAttempt::from(record),
        prompt: parts.prompt.then(|| files.prompt(record)).flatten(),
        diff: if parts.diff {
            Some(attempt_patch(repo, record, crate::git::PatchFor::GIT).unwrap_or_default())
        } else {
            None
        },
        checks: if parts.checks {
            Some(files.checks(&story.id, record)?)
        } else {
            None
        },
    })
}

/// The attempt's work against the checkpoint it started from: its
/// checkpoint commit, or the commit its attempt ref keeps; for a view or
/// for `git apply` (`to`).
pub fn attempt_patch(
    repo: &Repo,
    record: &AttemptRecord,
    to: crate::git::PatchFor,
) -> Option<String> {
    let commit = match (&record.checkpoint, &record.preserved) {
        (Some(hex), _) => crate::git::ObjectId::from_hex(hex.as_bytes()).ok()?,
        (None, Some(name)) => repo.resolve_ref(name).ok()??,
        (None, None) => return None,
    };
    repo.commit_patch(commit, to).ok()
}

/// The files of one run: prompts, the events log and its offsets.
#[derive(Debug, Clone)]
pub struct RunFiles {
    pub dir: RunDir,
}

impl RunFiles {
    pub fn new(dir: RunDir) -> RunFiles {
        RunFiles { dir }
    }

    /// The prompt the attempt was given, kept next to its output.
    pub fn prompt(&self, record: &AttemptRecord) -> Option<String> {
        std::fs::read_to_string(prompt_path(&self.dir.dir, &record.log)).ok()
    }

    /// Every agent event of the attempt, read line by line from
    /// `events.jsonl` and handed to `on_event` one at a time.
    pub fn each_transcript_event(
        &self,
        story: &str,
        attempt: u32,
        mut on_event: impl FnMut(AgentEvent),
    ) -> Result<(), AuditError> {
        let want = |head: &LineHead| {
            head.is_output()
                && head.story.as_deref() == Some(story)
                && head.attempt == Some(attempt)
        };
        read_events_where(&self.dir.events_path(), 0, u64::MAX, want, |record| {
            if let Event::StoryEvent {
                story_id,
                attempt: n,
                event,
            } = record.event
                && story_id == story
                && n == attempt
            {
                on_event(event);
            }
        })
        .map_err(|source| AuditError::Io {
            path: self.dir.events_path(),
            source,
        })
    }

    /// The checks of the attempt: what passed and failed, with the output
    /// kept of each failure.
    pub fn checks(
        &self,
        story: &str,
        record: &AttemptRecord,
    ) -> Result<Vec<CheckResult>, AuditError> {
        let mut results = Vec::new();
        let want = |head: &LineHead| head.kind == "checks" && head.story.as_deref() == Some(story);
        read_events_where(&self.dir.events_path(), 0, u64::MAX, want, |line| {
            if let Event::Checks {
                story_id,
                attempt,
                passed,
                failed,
            } = line.event
                && story_id == story
                && attempt == record.attempt
            {
                results = passed
                    .into_iter()
                    .map(|name| CheckResult {
                        name,
                        passed: true,
                        output: None,
                    })
                    .chain(failed.into_iter().map(|name| {
                        CheckResult {
                            output: record
                                .failed_checks
                                .iter()
                                .find(|(failed, _)| *failed == name)
                                .map(|(_, output)| output.clone()),
                            name,
                            passed: false,
                        }
                    }))
                    .collect();
            }
        })
        .map_err(|source| AuditError::Io {
            path: self.dir.events_path(),
            source,
        })?;
        // Failures the state kept that no event listed.
        for (name, output) in &record.failed_checks {
            if !results.iter().any(|result| &result.name == name) {
                results.push(CheckResult {
                    name: name.clone(),
                    passed: false,
                    output: Some(output.clone()),
                });
            }
        }
        Ok(results)
    }
}

/// `attempts/<story>-<n>.jsonl` → `attempts/<story>-<n>.prompt.md`.
fn prompt_path(run_dir: &Path, log: &str) -> PathBuf {
    let prompt = log.strip_suffix(".jsonl").unwrap_or(log);
    run_dir.join(format!("{prompt}.prompt.md"))
}

/// Details of an attempt that are files or git objects rather than events,
/// for the terminal UI. `None` means not available (yet). The diff of the
/// attempt at work is the worktree as it is now; ask again to refresh it.
pub trait AttemptDetails: Send {
    // Each detail is unknown unless the source has it.
    fn prompt(&self, _story: &str, _attempt: u32) -> Option<String> {
        None
    }
    fn diff(&self, _story: &str, _attempt: u32) -> Option<String> {
        None
    }
    fn checks(&self, _story: &str, _attempt: u32) -> Option<Vec<CheckResult>> {
        None
    }
    /// What a finished attempt's agent said, its last stretch at most
    /// [`TRANSCRIPT_TAIL`] of text: for a screen that did not see it
    /// happen (a resumed run's earlier attempts).
    fn transcript(&self, _story: &str, _attempt: u32) -> Option<Vec<AgentEvent>> {
        None
    }
}

/// How much of a transcript's text [`AttemptDetails::transcript`] gives.
pub const TRANSCRIPT_TAIL: usize = 4 << 20;

/// About how much text an event shows, to keep a transcript's tail bounded.
fn shown_bytes(event: &AgentEvent) -> usize {
    match event {
        AgentEvent::Message { text, tool_uses } => {
            text.len()
                + tool_uses
                    .iter()
                    .map(|t| t.input.to_string().len())
                    .sum::<usize>()
        }
        AgentEvent::ToolResult { output, .. } => output.len(),
        AgentEvent::Done(_) => 64,
    }
}

/// No details at all: for tests and for callers that have none.
pub struct NoDetails;

impl AttemptDetails for NoDetails {}

/// The details of a run's attempts, read from its files and the repository.
pub struct RunDetails {
    repo: Repo,
    files: RunFiles,
    /// Started at the first look at a running attempt's diff.
    live: std::cell::OnceCell<live_diff::LiveDiff>,
}

impl RunDetails {
    pub fn new(repo: Repo, dir: RunDir) -> RunDetails {
        RunDetails {
            repo,
            files: RunFiles::new(dir),
            live: std::cell::OnceCell::new(),
        }
    }

    fn record(&self, story: &str, attempt: u32) -> Option<AttemptRecord> {
        let state = self.files.dir.load().ok()?;
        let story = state.into_stories().into_iter().find(|s| s.id == story)?;
        story.attempts.into_iter().find(|a| a.attempt == attempt)
    }
}

impl AttemptDetails for RunDetails {
    fn prompt(&self, story: &str, attempt: u32) -> Option<String> {
        self.files.prompt(&self.record(story, attempt)?)
    }

    fn diff(&self, story: &str, attempt: u32) -> Option<String> {
        let record = self.record(story, attempt)?;
        if record.outcome != AttemptOutcome::Running {
            return attempt_patch(&self.repo, &record, crate::git::PatchFor::VIEW);
        }
        // The attempt at work: the worktree it works in as it is now (the
        // run's own, for a run beside the user's), read off this thread.
        self.live
            .get_or_init(|| {
                let workdir = self
                    .files
                    .dir
                    .load()
                    .ok()
                    .and_then(|state| state.into_worktree())
                    .filter(|record| !record.removed)
                    .map_or_else(
                        || self.repo.workdir().to_owned(),
                        |record| record.linked.path,
                    );
                live_diff::LiveDiff::start(workdir, self.files.dir.clone())
            })
            .diff(story, attempt)
    }

    fn checks(&self, story: &str, attempt: u32) -> Option<Vec<CheckResult>> {
        let record = self.record(story, attempt)?;
        if record.outcome == AttemptOutcome::Running {
            return None;
        }
        self.files.checks(story, &record).ok()
    }

    fn transcript(&self, story: &str, attempt: u32) -> Option<Vec<AgentEvent>> {
        let mut tail = std::collections::VecDeque::new();
        let mut bytes = 0;
        self.files
            .each_transcript_event(story, attempt, |event| {
                bytes += shown_bytes(&event);
                tail.push_back(event);
                while bytes > TRANSCRIPT_TAIL && tail.len() > 1 {
                    if let Some(old) = tail.pop_front() {
                        bytes -= shown_bytes(&old);
                    }
                }
            })
            .ok()?;
        Some(tail.into())
    }
}
