//! What a run reports as it goes. The loop emits these typed events; the ui
//! module alone renders them (console for people, JSON lines for programs),
//! and every one is appended to `<git-dir>/ralph/<change>/events.jsonl`.

use serde::{Deserialize, Serialize};

use crate::agent::AgentEvent;
use crate::contract::Role;
use crate::state::{AttemptOutcome, Flag, StopReason, Totals};

/// One event with when and for which change it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Milliseconds since the epoch.
    pub ts_ms: u64,
    pub change: String,
    #[serde(flatten)]
    pub event: Event,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The loop started or resumed.
    RunStarted {
        branch: String,
        source: String,
        stories_total: usize,
        stories_done: usize,
        resumed: bool,
    },
    /// Work on a story begins (or continues with a new attempt).
    StoryProgress {
        story_id: String,
        title: String,
        /// 1-based position among all stories.
        index: usize,
        total: usize,
        attempt: u32,
        max_attempts: u32,
        /// The role this attempt plays in the story's pipeline, with its
        /// iteration and bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<Role>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role_iteration: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role_max_iterations: Option<u32>,
    },
    /// Something the agent did, untruncated.
    StoryEvent {
        story_id: String,
        attempt: u32,
        event: AgentEvent,
    },
    /// How an attempt ended.
    AttemptFinished {
        story_id: String,
        attempt: u32,
        outcome: AttemptOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The ref keeping a failed attempt's work.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preserved: Option<String>,
        /// The checkpoint commit of a completed story.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<String>,
        /// The role the attempt played.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<Role>,
        /// The attempt changed nothing: its ref, if any, holds the tree of
        /// the checkpoint it started from.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unchanged: bool,
    },
    /// A role that only looks (reviewer, qa) changed files; they were
    /// undone, and what it wrote is kept at `kept_at`.
    RoleEditsUndone {
        story_id: String,
        attempt: u32,
        role: Role,
        paths: Vec<String>,
        kept_at: String,
    },
    /// A role did not pass the story, and sent it back to the coder with
    /// its findings; the pipeline goes on at `role` once the coder passes.
    SentBack {
        story_id: String,
        attempt: u32,
        role: Role,
        findings: String,
    },
    /// An accepted attempt worth a second look. Sent before the attempt's
    /// `attempt_finished`.
    Flag {
        story_id: String,
        attempt: u32,
        flag: Flag,
    },
    /// The attempt ticked boxes of stories it was not given. Those ticks
    /// do not count: they were put back, and each of those stories gets
    /// attempts of its own. Sent before the attempt's `attempt_finished`.
    TicksOutsideStory {
        story_id: String,
        attempt: u32,
        stories: Vec<TickedStory>,
    },
    /// The attempt changed something in the git directory; the change was
    /// undone. One event per file, or per config key.
    GitDirChanged {
        story_id: String,
        attempt: u32,
        /// The file, as `.git/…`.
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// The file and key as people look for them:
        /// `.git/config (core.hooksPath)`.
        what: String,
        change: GitDirChange,
        /// Whether the change could have run code as the user.
        runs_code: bool,
    },
    /// The attempt added tasks to the list; they stand.
    TasksAdded {
        story_id: String,
        attempt: u32,
        tasks: Vec<AddedTask>,
    },
    /// The attempt ended with a question for a person: the story waits
    /// for an answer (`git ralph answer`), its work kept at `preserved`,
    /// while the stories that do not depend on it go on. Sent after the attempt's
    /// `attempt_finished`.
    Question {
        story_id: String,
        attempt: u32,
        question: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preserved: Option<String>,
        /// Whether another story may start meanwhile (`false` in an
        /// ordered checklist, whose later stories wait); not known in
        /// the logs of earlier releases.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        others_go_on: Option<bool>,
    },
    /// A person answered the question an attempt at the story ended
    /// with; the story is picked up again at its turn.
    Answered {
        story_id: String,
        attempt: u32,
        answer: String,
    },
    /// Something worth knowing that does not stop the run.
    Warning { message: String },
    /// The agent hit a usage or rate limit; the loop waits, spending no
    /// retry, until `until_unix`.
    Paused {
        story_id: String,
        until_unix: u64,
        message: String,
    },
    /// The agent hit a usage limit that resets later than the wait
    /// allows: the story goes to the fallback agent `to`.
    AgentFallback {
        story_id: String,
        /// The attempt that hit the limit.
        attempt: u32,
        from: String,
        to: String,
        message: String,
    },
    /// Verification results worth seeing: checks that ran, and how.
    Checks {
        story_id: String,
        attempt: u32,
        passed: Vec<String>,
        failed: Vec<String>,
    },
    /// The stories of a parallel run at work now, each in a worktree of
    /// its own.
    Workers { stories: Vec<String> },
    /// A story done in a worktree of its own, and whether its work is now
    /// on the run's branch with its checks passing there. A story that was
    /// not merged runs again; `reason` says why.
    Merged {
        story_id: String,
        merged: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The ref keeping the story's work when it was not merged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preserved: Option<String>,
    },
    /// The run ended unfinished.
    Error {
        reason: StopReason,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        story_id: Option<String>,
        totals: Totals,
    },
    /// Every story is verifiably done.
    Complete {
        reason: StopReason,
        stories_total: usize,
        totals: Totals,
    },
}

impl Event {
    /// Whether the event tells of a change to the run's record (its
    /// state): such an event is published only once the state that holds
    /// it is saved, so that no log, hook or screen ever says what the state
    /// does not.
    pub fn tells_of_state(&self) -> bool {
        matches!(
            self,
            Event::RunStarted { .. }
                | Event::StoryProgress { .. }
                | Event::AttemptFinished { .. }
                | Event::SentBack { .. }
                | Event::Paused { .. }
                | Event::AgentFallback { .. }
                | Event::Workers { .. }
                | Event::Merged { .. }
                | Event::Question { .. }
                | Event::Answered { .. }
                | Event::Complete { .. }
        )
    }

    /// The event's name, as the log writes it in `type`.
    pub fn kind(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|value| value.get("type")?.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// A story whose boxes an attempt at another story ticked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickedStory {
    pub id: String,
    pub boxes: usize,
}

impl TickedStory {
    /// `2, 3`: the stories' ids, as every view names them.
    pub fn ids(stories: &[TickedStory]) -> String {
        stories
            .iter()
            .map(|story| story.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A task an attempt added, and the story it stands in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddedTask {
    pub story: String,
    pub text: String,
}

/// What happened to a file of the git directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GitDirChange {
    Added,
    Modified,
    Removed,
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
