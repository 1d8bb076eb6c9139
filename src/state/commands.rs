//! The commands that change the run's record, each named for what
//! happened: an attempt begun, noted, finished; a story taken up,
//! checkpointed, parked; the run paused, stopped, finished. Outside
//! `state/` nobody assigns a field of [`RunState`]: a change goes through
//! one of these, which keeps its own rule (an attempt taken back takes
//! its count with it, a checkpointed story leaves no story at work) and
//! returns the [`Change`] that tells of it, for the run to save once and
//! publish.

use super::change::Change;
use super::run::{
    AttemptOutcome, AttemptRecord, FallbackState, Findings, FinishChoice, Flag, HooksDue,
    PipelineState, RunState, RunStatus, RunWorktree, StopReason, StoryRecord, Totals,
};
use crate::contract::Role;
use crate::events::Event;
use crate::git::ObjectId;

/// Something learned about an attempt while it is judged.
#[derive(Debug, Clone)]
pub enum AttemptNote {
    /// How the worktree was read after the agent ran.
    Scanned(Option<crate::git::Scan>),
    /// The question the agent ended with, if any.
    Asked(Option<String>),
    /// Stories whose boxes it ticked though it was not given them.
    TickedOutside(Vec<String>),
    /// Tasks it added to the list.
    AddedTasks(Vec<String>),
    /// Whether it changed the worktree at all.
    Progress(bool),
    /// Something about its accepted claim worth a second look.
    Flagged(Flag),
    /// The checks that passed on its result.
    PassedChecks(Vec<String>),
    /// What it changed in the git directory, each undone.
    GitDirChanged(Vec<String>),
    /// Where its work is kept.
    Preserved(String),
}

/// What an attempt spent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub duration_ms: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub cost_usd: f64,
    pub tokens_unknown: bool,
    /// `cost_usd` was estimated from the tokens.
    pub cost_estimated: bool,
}

/// How an attempt ended, as its record keeps it.
#[derive(Debug, Clone)]
pub struct Ending {
    pub outcome: AttemptOutcome,
    pub reason: Option<String>,
    pub preserved: Option<String>,
    pub checkpoint: Option<String>,
}

impl Ending {
    /// Ended with `outcome` and nothing more to say.
    pub fn bare(outcome: AttemptOutcome) -> Ending {
        Ending {
            outcome,
            reason: None,
            preserved: None,
            checkpoint: None,
        }
    }
}

impl StoryRecord {
    /// The record of story `id` before anything is known of it.
    pub fn empty(id: &str) -> StoryRecord {
        StoryRecord {
            id: id.to_owned(),
            title: String::new(),
            done: false,
            tasks_done: 0,
            tasks_total: 0,
            attempts: Vec::new(),
        }
    }
}

impl RunState {
    /// A run begun now on `branch` from `initial`, driven by the loop of
    /// process `pid`.
    pub fn begun(
        change: String,
        branch: String,
        original: crate::git::Original,
        initial: ObjectId,
        settings: super::Settings,
        pid: u32,
    ) -> RunState {
        RunState {
            version: 1,
            change,
            branch,
            status: RunStatus::Running,
            reason: None,
            original,
            initial_commit: initial,
            checkpoint: initial,
            stories: Vec::new(),
            current_story: None,
            current_attempt: 0,
            last_failure: None,
            totals: Default::default(),
            settings,
            started_at: super::now(),
            updated_at: super::now(),
            pid: Some(pid),
            finished_with: None,
            no_progress_streak: 0,
            runtime_ms: 0,
            paused_until: None,
            pause_reason: None,
            rate_limit_wait_secs: 0,
            rate_limit_pauses: 0,
            role_iterations_added: 0,
            hooks_due: Vec::new(),
            pipeline: None,
            fallback: None,
            worktree: None,
            parallel: None,
            checkpoint_due: None,
        }
    }

    /// The record of `id`, made empty when the state has none yet.
    pub fn story_entry(&mut self, id: &str) -> &mut StoryRecord {
        if let Some(at) = self.stories.iter().position(|story| story.id == id) {
            return &mut self.stories[at];
        }
        self.stories.push(StoryRecord::empty(id));
        self.stories.last_mut().expect("just pushed")
    }

    fn attempt_entry(&mut self, story: &str, attempt: u32) -> Option<&mut AttemptRecord> {
        self.story_entry(story)
            .attempts
            .iter_mut()
            .find(|record| record.attempt == attempt)
    }

    /// A loop drives the run in process `pid`.
    pub fn loop_began(&mut self, pid: u32) {
        self.status = RunStatus::Running;
        self.reason = None;
        self.pid = Some(pid);
    }

    /// The loop ended for `reason`, after `runtime_ms` in loops all told:
    /// the run is stopped, an unfinished one keeping what failed.
    pub fn loop_ended(&mut self, reason: StopReason, message: &str, runtime_ms: u64) -> Change {
        let story_id = self.current_story.clone();
        self.runtime_ms = runtime_ms;
        self.status = RunStatus::Stopped;
        self.reason = Some(reason);
        self.pid = None;
        if reason != StopReason::Completed && reason != StopReason::Stopped {
            self.last_failure.get_or_insert_with(|| message.to_owned());
        }
        let totals = self.totals.clone();
        Change::telling(match reason {
            StopReason::Completed => Event::Complete {
                reason,
                stories_total: self.stories.len(),
                totals,
            },
            _ => Event::Error {
                reason,
                message: message.to_owned(),
                story_id,
                totals,
            },
        })
    }

    /// About to be written at `at`, with the hooks still due.
    pub fn stamped(&mut self, at: u64, hooks_due: Vec<HooksDue>) {
        self.updated_at = at;
        self.hooks_due = hooks_due;
    }

    /// The branch holds a new checkpoint.
    pub fn checkpointed(&mut self, commit: ObjectId) {
        self.checkpoint = commit;
    }

    /// `story` is the one at work.
    pub fn story_taken(&mut self, story: &str) {
        self.current_story = Some(story.to_owned());
    }

    /// No story is chosen next.
    pub fn no_story_next(&mut self) {
        self.current_story = None;
    }

    /// The story at work was settled (checkpointed, or parked to wait
    /// for an answer): none is at work.
    pub fn story_left(&mut self) {
        self.current_story = None;
        self.current_attempt = 0;
    }

    /// A prompt has no file to mark it done: the contract met is.
    pub fn story_met_its_contract(&mut self, story: &str) {
        let record = self.story_entry(story);
        record.done = true;
        record.tasks_done = record.tasks_total;
    }

    /// The attempt `record` at `story` begins: it is at work, and counts.
    pub fn attempt_begun(&mut self, story: &str, record: AttemptRecord) {
        self.current_story = Some(story.to_owned());
        self.current_attempt = record.attempt;
        self.story_entry(story).attempts.push(record);
        self.totals.attempts += 1;
    }

    /// The attempt `attempt` at `story`, the last begun, never ran (its
    /// agent could not work, a hook stopped the run): it is taken back
    /// with its count, as if it had never begun.
    pub fn attempt_taken_back(&mut self, story: &str, attempt: u32) {
        let record = self.story_entry(story);
        if record.attempts.last().is_some_and(|a| a.attempt == attempt) {
            record.attempts.pop();
            self.totals.attempts = self.totals.attempts.saturating_sub(1);
        }
    }

    /// Something learned about an attempt.
    pub fn attempt_noted(&mut self, story: &str, attempt: u32, note: AttemptNote) {
        let Some(record) = self.attempt_entry(story, attempt) else {
            return;
        };
        match note {
            AttemptNote::Scanned(scan) => record.scan = scan,
            AttemptNote::Asked(asked) => record.asked = asked,
            AttemptNote::TickedOutside(stories) => record.outside_ticks = stories,
            AttemptNote::AddedTasks(tasks) => record.added_tasks = tasks,
            AttemptNote::Progress(progress) => record.progress = progress,
            AttemptNote::Flagged(flag) => record.flag = Some(flag),
            AttemptNote::PassedChecks(names) => record.passed_checks = names,
            AttemptNote::GitDirChanged(what) => record.git_dir_changes = what,
            AttemptNote::Preserved(refname) => record.preserved = Some(refname),
        }
    }

    /// What the attempt spent, added to its record and the run's totals.
    pub fn attempt_spent(&mut self, story: &str, attempt: u32, usage: &Usage) {
        self.add_totals(&Totals {
            attempts: 0,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_creation_tokens: usage.cache_creation_tokens,
            cost_usd: usage.cost_usd,
            tokens_unknown: usage.tokens_unknown,
            cost_estimated: usage.cost_estimated,
        });
        if let Some(record) = self.attempt_entry(story, attempt) {
            record.duration_ms = usage.duration_ms;
            record.input_tokens = usage
                .input_tokens
                .saturating_add(usage.cache_read_tokens)
                .saturating_add(usage.cache_creation_tokens);
            record.output_tokens = usage.output_tokens;
            record.cost_usd = usage.cost_usd;
            record.cost_estimated = usage.cost_estimated;
        }
    }

    /// The attempt ended as `ending` says; nobody is told yet.
    pub fn attempt_ended(&mut self, story: &str, attempt: u32, ending: Ending) {
        if let Some(record) = self.attempt_entry(story, attempt) {
            record.outcome = ending.outcome;
            record.reason = ending.reason;
            record.preserved = ending.preserved;
            record.checkpoint = ending.checkpoint;
        }
    }

    /// The attempt ended as `ending` says, told by `attempt_finished`
    /// with the role it played.
    pub fn attempt_finished(&mut self, story: &str, attempt: u32, ending: Ending) -> Change {
        self.attempt_told(story, attempt, ending.clone(), false)
    }

    fn attempt_told(
        &mut self,
        story: &str,
        attempt: u32,
        ending: Ending,
        unchanged: bool,
    ) -> Change {
        self.attempt_ended(story, attempt, ending.clone());
        let role = self.attempt_entry(story, attempt).and_then(|a| a.role);
        Change::telling(Event::AttemptFinished {
            story_id: story.to_owned(),
            attempt,
            outcome: ending.outcome,
            reason: ending.reason,
            preserved: ending.preserved,
            checkpoint: ending.checkpoint,
            role,
            unchanged,
        })
    }

    /// The attempt failed as `ending` says, with the checks that failed:
    /// what failed is kept for the next attempt's prompt.
    pub fn attempt_failed(
        &mut self,
        story: &str,
        attempt: u32,
        ending: Ending,
        checks: Vec<(String, String)>,
    ) -> Change {
        let mut unchanged = false;
        if let Some(record) = self.attempt_entry(story, attempt) {
            record.failed_checks = checks;
            unchanged = !record.progress;
        }
        self.last_failure = ending.reason.clone();
        self.attempt_told(story, attempt, ending, unchanged)
    }

    /// The attempt's work is checkpointed, as `ending` says: verified
    /// done, or a failure (with the checks that failed) whose work is
    /// kept all the same.
    pub fn attempt_kept(
        &mut self,
        story: &str,
        attempt: u32,
        ending: Ending,
        failed_checks: Vec<(String, String)>,
    ) -> Change {
        if let Some(record) = self.attempt_entry(story, attempt) {
            record.failed_checks = failed_checks;
        }
        self.last_failure = ending.reason.clone();
        self.attempt_told(story, attempt, ending, false)
    }

    /// The attempt under way was cut short by git-ralph's own error: what
    /// its agent left is still in the worktree, for a resume to set aside.
    pub fn attempt_cut_short(&mut self, story: &str, attempt: u32, reason: String) -> Change {
        if let Some(record) = self.attempt_entry(story, attempt) {
            record.unsettled = true;
        }
        let mut ending = Ending::bare(AttemptOutcome::Interrupted);
        ending.reason = Some(reason);
        self.attempt_told(story, attempt, ending, false)
    }

    /// An interrupted attempt was set aside on resume, its work (if any)
    /// at `kept`; `own_taken` says its own ref already held what its
    /// judgement preserved, named `own`. An attempt cut short keeps the
    /// reason it was cut short for.
    pub fn attempt_set_aside(
        &mut self,
        story: &str,
        attempt: u32,
        why: &str,
        kept: Option<String>,
        own: Option<String>,
    ) {
        let Some(record) = self.attempt_entry(story, attempt) else {
            return;
        };
        let preserved = match own {
            Some(own) => record.preserved.clone().or(Some(own)),
            None => kept,
        };
        let reason = match record.unsettled {
            true => record.reason.clone(),
            false => Some(why.into()),
        };
        record.unsettled = false;
        record.outcome = AttemptOutcome::Interrupted;
        record.reason = reason;
        record.preserved = preserved;
        record.checkpoint = None;
    }

    /// The user marked `story` done while the run was stopped, and its
    /// checks passed: attempt `attempt`, checkpointed at `commit`.
    pub fn marked_done_by_user(&mut self, story: &str, attempt: u32, commit: String, at: u64) {
        self.story_entry(story).attempts.push(AttemptRecord {
            reason: Some("marked done by the user while the run was stopped".into()),
            checkpoint: Some(commit),
            ..AttemptRecord::new(attempt, AttemptOutcome::Complete, at)
        });
    }

    /// A person answered attempt `attempt` at `story`; whether the answer
    /// is new (the attempt asked, and had none yet).
    pub fn answered(&mut self, story: &str, attempt: u32, text: &str) -> bool {
        let Some(record) = self
            .stories
            .iter_mut()
            .find(|record| record.id == story)
            .and_then(|story| story.attempts.iter_mut().find(|a| a.attempt == attempt))
        else {
            return false;
        };
        if record.outcome != AttemptOutcome::Question || record.answer.is_some() {
            return false;
        }
        record.answer = Some(text.to_owned());
        true
    }

    /// The agent hit a usage limit at `attempt`: no retry spent, and the
    /// pauses counted.
    pub fn usage_limited(&mut self, story: &str, attempt: u32, reason: String) {
        let mut ending = Ending::bare(AttemptOutcome::RateLimited);
        ending.reason = Some(reason);
        self.attempt_ended(story, attempt, ending);
        self.rate_limit_pauses += 1;
    }

    /// The run waits out a usage limit until `until` (unix seconds).
    pub fn paused(&mut self, story: &str, until: u64, reason: String) -> Change {
        self.paused_until = Some(until);
        self.pause_reason = Some(reason.clone());
        Change::telling(Event::Paused {
            story_id: story.to_owned(),
            until_unix: until,
            message: reason,
        })
    }

    /// The pause is over, after `waited_secs` of waiting.
    pub fn pause_over(&mut self, waited_secs: u64) {
        self.rate_limit_wait_secs += waited_secs;
        self.paused_until = None;
        self.pause_reason = None;
    }

    /// `story` goes to the fallback agent `agent`.
    pub fn fell_back(&mut self, story: &str, agent: String) {
        self.fallback = Some(FallbackState {
            story: story.to_owned(),
            agent,
        });
    }

    /// Attempts in a row that changed nothing, now.
    pub fn streak_now(&mut self, streak: u32) {
        self.no_progress_streak = streak;
    }

    /// The story is in its role pipeline at `pipeline`.
    pub fn pipeline_at(&mut self, pipeline: PipelineState) {
        self.pipeline = Some(pipeline);
    }

    /// The story's pipeline is over: the last role passed.
    pub fn pipeline_over(&mut self) {
        self.pipeline = None;
    }

    /// `role` passed and the pipeline goes on at `next`, the work so far
    /// at `base` when the role kept it.
    pub fn role_passed(&mut self, role: Role, next: Role, base: Option<ObjectId>) {
        let Some(state) = self.pipeline.as_mut() else {
            return;
        };
        if let Some(commit) = base {
            state.base = Some(commit);
        }
        if role == Role::Coder {
            state.findings = None;
        }
        if state.resume_at == Some(next) {
            state.resume_at = None;
        }
        state.role = next;
    }

    /// A later role sent the story back to the coder with its findings;
    /// the pipeline goes on at that role once the coder passes again.
    pub fn sent_back(&mut self, story: &str, findings: Findings) -> Change {
        let event = Event::SentBack {
            story_id: story.to_owned(),
            attempt: findings.attempt,
            role: findings.role,
            findings: findings.text.clone(),
        };
        if let Some(state) = self.pipeline.as_mut() {
            state.resume_at = Some(findings.role);
            state.findings = Some(findings);
            state.role = Role::Coder;
        }
        Change::telling(event)
    }

    /// The pipeline's work so far is now at `commit`.
    pub fn pipeline_base_moved(&mut self, commit: ObjectId) {
        if let Some(state) = self.pipeline.as_mut() {
            state.base = Some(commit);
        }
    }

    /// Finished as `choice` says, at `at`.
    pub fn finished(&mut self, choice: FinishChoice, at: u64) {
        self.status = RunStatus::Finished;
        self.finished_with = Some(choice);
        self.pid = None;
        self.updated_at = at;
    }

    /// Aborted at `at`: the pre-start state is back.
    pub fn aborted(&mut self, at: u64) {
        self.status = RunStatus::Aborted;
        self.pid = None;
        self.updated_at = at;
    }

    /// A kept run taken up again is open once more: stopped, no longer
    /// finished.
    pub fn reopened(&mut self) {
        if self.status == RunStatus::Finished {
            self.status = RunStatus::Stopped;
            self.finished_with = None;
        }
    }

    /// Taken up on another machine from its pushed record: no loop of
    /// this machine drives it, so a run the record saw running is stopped.
    pub fn taken_up(&mut self) {
        if self.status == RunStatus::Running {
            self.status = RunStatus::Stopped;
        }
        self.pid = None;
    }

    /// Resumed with `settings`, each role's bound raised by `added`
    /// iterations more.
    pub fn resumed_with(&mut self, settings: super::Settings, added: u32) {
        self.role_iterations_added = self.role_iterations_added.saturating_add(added);
        self.settings = settings;
    }

    /// The run works in a worktree of its own, `worktree`.
    pub fn works_in(&mut self, worktree: RunWorktree) {
        self.worktree = Some(worktree);
    }

    /// The run's own worktree was removed (`true`), or made again.
    pub fn worktree_removed(&mut self, removed: bool) {
        if let Some(record) = self.worktree.as_mut() {
            record.removed = removed;
        }
    }
}
