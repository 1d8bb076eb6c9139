//! The run as recorded in `state.json`: enough for `status` to report it from
//! any terminal, for `start` to resume it, and for `abort` to restore the
//! pre-start state even after a crash.

use serde::{Deserialize, Serialize};

use super::usage_words;
use crate::contract::Role;
use crate::git::{LinkedWorktree, Original, hex};

/// Why a run ended. Every run ends with exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every story is verifiably done.
    Completed,
    /// A story failed more often than `--max-retries` allows.
    MaxRetries,
    /// The run used up `--max-iterations` attempts.
    MaxIters,
    /// Too many attempts in a row changed nothing.
    NoProgress,
    /// `--max-runtime` passed.
    Timeout,
    /// `--max-cost` or `--max-tokens` was reached.
    Budget,
    /// The user stopped it.
    Stopped,
    /// git-ralph itself failed.
    Error,
    /// The agent could not work at all (not installed, no API key, not
    /// logged in, refusing to run): no retry was spent, and the run
    /// resumes once the cause is fixed.
    Setup,
    /// Only stories waiting for an answer are left: `git ralph answer`,
    /// then `git ralph start` resumes.
    Questions,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::MaxRetries => "max_retries",
            StopReason::MaxIters => "max_iters",
            StopReason::NoProgress => "no_progress",
            StopReason::Timeout => "timeout",
            StopReason::Budget => "budget",
            StopReason::Stopped => "stopped",
            StopReason::Error => "error",
            StopReason::Setup => "setup",
            StopReason::Questions => "questions",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A loop process is driving it (see the lock for its PID).
    Running,
    /// The loop ended (a reason is recorded) or was stopped; `start` resumes
    /// it and `finish` closes it.
    Stopped,
    /// Finished with keep or cleanup.
    Finished,
    /// Aborted: the pre-start state was restored.
    Aborted,
}

impl RunStatus {
    /// The status as a reader should see it: a loop that died without
    /// saving still says "running", but no loop holds the lock for it.
    pub fn seen(self, loop_alive: bool) -> RunStatus {
        match (self, loop_alive) {
            (RunStatus::Running, false) => RunStatus::Stopped,
            (status, _) => status,
        }
    }

    /// Whether the run is over: nothing resumes it any more.
    pub fn is_over(self) -> bool {
        matches!(self, RunStatus::Finished | RunStatus::Aborted)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Stopped => "stopped",
            RunStatus::Finished => "finished",
            RunStatus::Aborted => "aborted",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run was finished, as `state.json` and `status --json` spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishChoice {
    /// Back to the original branch with all the work uncommitted.
    Cleanup,
    /// Stay on `ralph/<change>`, one commit per story.
    Keep,
}

impl FinishChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishChoice::Cleanup => "cleanup",
            FinishChoice::Keep => "keep",
        }
    }
}

impl std::fmt::Display for FinishChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// Verified done and checkpointed.
    Complete,
    /// A role's gate passed and the story goes on to the next role; the
    /// work so far is kept under the attempt's ref until the pipeline's
    /// checkpoint.
    Passed,
    /// The agent said FAILED.
    Failed,
    /// The agent claimed completion, but the story was not marked done, the
    /// contract was broken, or verification or a check failed.
    Rejected,
    /// The agent ended without a promise.
    NoSignal,
    /// The agent reported an error, crashed, or exited non-zero.
    AgentError,
    /// The agent ran past `--agent-timeout`.
    TimedOut,
    /// The user stopped the run, or git-ralph's own error cut it short.
    Interrupted,
    /// The agent hit a usage or rate limit: no retry spent, nothing reverted.
    RateLimited,
    /// Still running.
    Running,
    /// The agent ended with a question for a person: no retry spent, its
    /// work kept under the attempt's ref, and the story waits for an
    /// answer.
    Question,
}

impl AttemptOutcome {
    /// In words, as `status` shows it.
    pub fn describe(self) -> &'static str {
        match self {
            AttemptOutcome::Complete => "complete",
            AttemptOutcome::Passed => "passed",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::Rejected => "rejected",
            AttemptOutcome::RateLimited => "usage-limited",
            AttemptOutcome::NoSignal => "no signal",
            AttemptOutcome::AgentError => "agent error",
            AttemptOutcome::TimedOut => "timed out",
            AttemptOutcome::Interrupted => "interrupted",
            AttemptOutcome::Running => "running",
            AttemptOutcome::Question => "asked a question",
        }
    }
}

/// Something about an accepted attempt worth a second look. Spelled in
/// `state.json` and `events.jsonl` as the sentence people read, which is
/// what every release has written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Flag {
    /// The attempt changed nothing but the boxes (or `passes`) of the
    /// tracking file: the classic fake "done".
    #[serde(rename = "no change besides ticking boxes")]
    TickOnly,
    /// The attempt changed nothing at all.
    #[serde(rename = "no change at all")]
    NoChange,
}

impl Flag {
    /// In words, as every view shows it.
    pub fn describe(self) -> &'static str {
        match self {
            Flag::TickOnly => "no change besides ticking boxes",
            Flag::NoChange => "no change at all",
        }
    }
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub attempt: u32,
    pub outcome: AttemptOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `refs/ralph/<change>/attempts/<story>/<n>` for a failed attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserved: Option<String>,
    /// The checkpoint commit of a completed attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    pub started_at: u64,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    /// The cost was worked out from the tokens by the contract's prices.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_estimated: bool,
    /// The agent's raw output, relative to the run's directory.
    pub log: String,
    /// Checks that failed, as (name, tail of output), for the next prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_checks: Vec<(String, String)>,
    /// Whether the attempt changed the worktree at all.
    #[serde(default = "yes")]
    pub progress: bool,
    /// Something about an accepted attempt worth a second look.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<Flag>,
    /// The question the agent ended with instead of the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// The answer a person gave to the question of an attempt that ended
    /// in one (`git ralph answer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Checks that passed on this attempt's result, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed_checks: Vec<String>,
    /// Stories whose boxes the attempt ticked though it was not given
    /// them; the ticks were put back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_ticks: Vec<String>,
    /// What the attempt changed in the git directory, as the user would
    /// look for it (`.git/config (core.hooksPath)`); each was undone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git_dir_changes: Vec<String>,
    /// Tasks the attempt added to the list, as `<story>: <task>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_tasks: Vec<String>,
    /// The role the attempt played in the story's pipeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// How the worktree was read after the agent ran: only the paths a
    /// watch saw touched, or every file and why. None when not watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<crate::git::Scan>,
    /// The agent that ran it: a preset's name, or the command run through
    /// `sh -c`; `None` in runs of earlier releases, where it was the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Cut short by git-ralph's own error (a full disk, a failed revert):
    /// what its agent left is still in the worktree, for the resume to
    /// set aside, never to be taken for the user's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsettled: bool,
}

impl AttemptRecord {
    /// An attempt with its number, outcome and start, and nothing else
    /// recorded yet: no tokens, no checks, no refs, and a change assumed.
    pub fn new(attempt: u32, outcome: AttemptOutcome, started_at: u64) -> AttemptRecord {
        AttemptRecord {
            attempt,
            outcome,
            reason: None,
            preserved: None,
            checkpoint: None,
            started_at,
            duration_ms: 0,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            cost_estimated: false,
            log: String::new(),
            failed_checks: Vec::new(),
            progress: true,
            flag: None,
            asked: None,
            answer: None,
            passed_checks: Vec::new(),
            outside_ticks: Vec::new(),
            git_dir_changes: Vec::new(),
            added_tasks: Vec::new(),
            role: None,
            scan: None,
            agent: None,
            unsettled: false,
        }
    }
}

fn yes() -> bool {
    true
}

impl AttemptRecord {
    /// Tokens in and out. Counts come from agents and from a file anyone
    /// can edit: one at the limit saturates the sum, never overflows it.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoryRecord {
    pub id: String,
    pub title: String,
    pub done: bool,
    pub tasks_done: usize,
    pub tasks_total: usize,
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub attempts: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub cost_usd: f64,
    /// Some attempt's agent printed no token counts (Copilot CLI), so the
    /// counts above leave its tokens out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_unknown: bool,
    /// Some of the cost was estimated ([`AttemptRecord::cost_estimated`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cost_estimated: bool,
}

impl Totals {
    /// Every token of the run; like [`AttemptRecord::tokens`], it saturates.
    pub fn tokens(&self) -> u64 {
        self.input_tokens().saturating_add(self.output_tokens)
    }

    /// Input tokens, cached or not.
    pub fn input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_creation_tokens)
    }

    /// Adds one attempt's counts, saturating.
    pub fn add_tokens(&mut self, input: u64, output: u64, cache_read: u64, cache_creation: u64) {
        self.input_tokens = self.input_tokens.saturating_add(input);
        self.output_tokens = self.output_tokens.saturating_add(output);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(cache_read);
        self.cache_creation_tokens = self.cache_creation_tokens.saturating_add(cache_creation);
    }
}

pub use crate::settings::{Guardrails, Settings};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub(super) version: u32,
    pub(super) change: String,
    pub(super) branch: String,
    pub(super) status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<StopReason>,
    pub(super) original: Original,
    #[serde(with = "hex")]
    pub(super) initial_commit: crate::git::ObjectId,
    /// The last checkpoint: HEAD must be here before each spawn.
    #[serde(with = "hex")]
    pub(super) checkpoint: crate::git::ObjectId,
    pub(super) stories: Vec<StoryRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) current_story: Option<String>,
    #[serde(default)]
    pub(super) current_attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) last_failure: Option<String>,
    #[serde(default)]
    pub(super) totals: Totals,
    pub(super) settings: Settings,
    pub(super) started_at: u64,
    pub(super) updated_at: u64,
    /// The PID of the loop driving the run, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pid: Option<u32>,
    /// How the run was finished, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) finished_with: Option<FinishChoice>,
    /// Consecutive attempts whose worktree equalled the last checkpoint.
    #[serde(default)]
    pub(super) no_progress_streak: u32,
    /// Time spent in loops so far, across resumes.
    #[serde(default)]
    pub(super) runtime_ms: u64,
    /// A usage-limit pause in force until then (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) paused_until: Option<u64>,
    /// Why the run is paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pause_reason: Option<String>,
    /// Seconds waited for usage limits so far, and how many pauses.
    #[serde(default)]
    pub(super) rate_limit_wait_secs: u64,
    #[serde(default)]
    pub(super) rate_limit_pauses: u32,
    /// Iterations added to every role's bound by resuming with more
    /// retries: a role pipeline has no retries of its own to raise.
    #[serde(default, skip_serializing_if = "crate::state::run::is_zero")]
    pub(super) role_iterations_added: u32,
    /// The user's hooks told of an event and not yet run (from the
    /// `from`-th hook of that event on): run when the run goes on, so that
    /// a loop killed between an event and its hooks still runs them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) hooks_due: Vec<HooksDue>,
    /// Where the current story is in its role pipeline, while it is in
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pipeline: Option<PipelineState>,
    /// The fallback agent a story went to when the agent's usage limit
    /// outlasted the wait; the next story goes back to the run's agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) fallback: Option<FallbackState>,
    /// The worktree of its own the run works in, beside the user's; `None`
    /// for a run in the user's worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) worktree: Option<RunWorktree>,
    /// The stories at work at once in a parallel run, each in a worktree of
    /// its own; `None` for a run that does one story at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) parallel: Option<ParallelState>,
    /// A verified story's checkpoint about to be committed, noted before
    /// the commit and cleared as its record is saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) checkpoint_due: Option<super::CheckpointDue>,
}

/// A parallel run's workers: what a resume after a crash needs to find
/// every worktree and branch again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParallelState {
    #[serde(default)]
    pub workers: Vec<WorkerRecord>,
}

/// One story at work in a worktree of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRecord {
    pub story: String,
    /// Its branch, `refs/heads/ralph/<change>.story-<id>`.
    pub branch: String,
    /// The commit of the run's branch it started from.
    #[serde(with = "hex")]
    pub base: crate::git::ObjectId,
    /// Its worktree.
    #[serde(flatten)]
    pub linked: LinkedWorktree,
    /// Where its own state and events live.
    pub run_dir: std::path::PathBuf,
    /// Its loop ended and its record of the story (attempts, cost) is in
    /// the run's: it waits to be merged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ended: bool,
}

/// The worktree a run works in when it works beside the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunWorktree {
    /// Where it is, and its name under `<git-dir>/worktrees/`.
    #[serde(flatten)]
    pub linked: LinkedWorktree,
    /// The worktree the run was started from: the user's, whose HEAD,
    /// index and files the run never touches.
    pub owner: std::path::PathBuf,
    /// It was removed when the run was finished or aborted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
}

/// A story handed to a fallback agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FallbackState {
    pub story: String,
    /// The fallback preset the story's attempts run.
    pub agent: String,
}

/// A story part-way through its role pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineState {
    pub story: String,
    /// The role whose iteration comes next.
    pub role: Role,
    /// Where the pipeline goes on once the coder passes again, after a
    /// later role sent the story back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_at: Option<Role>,
    /// The commit holding the work every role so far passed (under an
    /// attempt's ref); `None` until the coder first passes.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex::option")]
    pub base: Option<crate::git::ObjectId>,
    /// What the role that sent the story back found, for the coder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<Findings>,
}

/// A later role's findings, handed back to the coder verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Findings {
    pub role: Role,
    pub attempt: u32,
    pub text: String,
}

impl StoryRecord {
    /// The iterations `role` spent on the story: stops, usage limits and
    /// the attempt still running do not count.
    pub fn iterations(&self, role: Role) -> u32 {
        self.attempts
            .iter()
            .filter(|a| a.role == Some(role))
            .filter(|a| {
                !matches!(
                    a.outcome,
                    AttemptOutcome::Interrupted
                        | AttemptOutcome::RateLimited
                        | AttemptOutcome::Running
                        | AttemptOutcome::Question
                )
            })
            .count() as u32
    }
}

impl RunState {
    /// Bring the recorded stories in line with the story file (every
    /// story, in its order, with its progress), keeping their attempts.
    pub fn sync_stories(&mut self, stories: &[crate::stories::Story]) {
        let mut records = Vec::with_capacity(stories.len());
        for story in stories {
            let attempts = self
                .stories
                .iter()
                .find(|r| r.id == story.id)
                .map(|r| r.attempts.clone())
                .unwrap_or_default();
            records.push(StoryRecord {
                id: story.id.clone(),
                title: story.title.clone(),
                // A story in its pipeline is done once the last role passed.
                done: story.is_complete()
                    && self.pipeline.as_ref().is_none_or(|p| p.story != story.id),
                tasks_done: story.tasks.iter().filter(|t| t.done).count(),
                tasks_total: story.tasks.len(),
                attempts,
            });
        }
        self.stories = records;
    }

    /// A run stopped because a story used all its retries would stop
    /// again at once if resumed as it is: the `--max-retries` to resume it
    /// with, two more than it had. `None` for any other run.
    pub fn retries_to_resume(&self) -> Option<u32> {
        let open = self.status == RunStatus::Stopped || self.kept_unfinished();
        let stuck = open && self.reason == Some(StopReason::MaxRetries);
        stuck.then_some(self.settings.max_retries.saturating_add(2))
    }

    /// Finished with keep before its stories were all done (out of
    /// retries, stopped): still resumable from its branch, like a run left
    /// stopped.
    pub fn kept_unfinished(&self) -> bool {
        self.status == RunStatus::Finished
            && self.finished_with == Some(FinishChoice::Keep)
            && self
                .reason
                .is_some_and(|reason| reason != StopReason::Completed)
    }

    pub fn stories_done(&self) -> usize {
        self.stories.iter().filter(|story| story.done).count()
    }

    /// What the checkpoints' receipts add up to, in one line: what a
    /// cleanup, which squashes them away, says instead.
    pub fn receipts_summary(&self) -> String {
        let accepted: Vec<&AttemptRecord> = self
            .stories
            .iter()
            .flat_map(|story| &story.attempts)
            .filter(|attempt| attempt.checkpoint.is_some())
            .collect();
        let flagged: Vec<String> = self
            .stories
            .iter()
            .flat_map(|story| {
                story
                    .attempts
                    .iter()
                    .filter(|attempt| attempt.checkpoint.is_some())
                    .filter_map(move |attempt| {
                        attempt
                            .flag
                            .as_ref()
                            .map(|flag| format!("story {} ({flag})", story.id))
                    })
            })
            .collect();
        let mut line = format!(
            "{} checkpoint{} over {} attempt{}, {}",
            accepted.len(),
            if accepted.len() == 1 { "" } else { "s" },
            self.totals.attempts,
            if self.totals.attempts == 1 { "" } else { "s" },
            usage_words(self.totals.tokens(), self.totals.cost_usd).replace(" · ", ", ")
        );
        if !flagged.is_empty() {
            line.push_str(&format!("; flagged: {}", flagged.join(", ")));
        }
        line
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_keep_the_sentences_earlier_releases_wrote() {
        for (flag, sentence) in [
            (Flag::TickOnly, "no change besides ticking boxes"),
            (Flag::NoChange, "no change at all"),
        ] {
            assert_eq!(serde_json::to_value(flag).unwrap(), sentence);
            assert_eq!(
                serde_json::from_value::<Flag>(sentence.into()).unwrap(),
                flag
            );
            assert_eq!(flag.to_string(), sentence);
        }
    }
}

/// An event whose hooks wait to run, as the events log writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HooksDue {
    /// The event's record, a line of `events.jsonl`.
    pub record: serde_json::Value,
    /// How many of its hooks ran already.
    #[serde(default)]
    pub from: usize,
}
