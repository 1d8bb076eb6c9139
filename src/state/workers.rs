//! The commands of a parallel run's record: its stories' workers
//! planned, started, adopted and taken off, their merges, and the state
//! each worker's own loop starts from. Like every command (see
//! `commands.rs`), each keeps its own rule.

use super::run::{AttemptOutcome, RunState, RunStatus, StoryRecord, Totals, WorkerRecord};
use crate::git::ObjectId;

impl RunState {
    /// A story's worker was planned: its worktree and branch are on the
    /// record before they exist.
    pub fn worker_planned(&mut self, worker: WorkerRecord) {
        self.parallel
            .get_or_insert_with(Default::default)
            .workers
            .push(worker);
    }

    /// The worker of `worker.story` runs as `worker` says.
    pub fn worker_started(&mut self, worker: WorkerRecord) {
        let workers = &mut self.parallel.get_or_insert_with(Default::default).workers;
        if let Some(own) = workers.iter_mut().find(|w| w.story == worker.story) {
            *own = worker;
        }
    }

    /// The worker of `story` is gone (retired, or never started).
    pub fn worker_gone(&mut self, story: &str) {
        if let Some(parallel) = self.parallel.as_mut() {
            parallel.workers.retain(|w| w.story != story);
        }
    }

    /// The loop of `story`'s worker ended: its record of the story (with
    /// `done` as the run's branch says) and its totals become the run's.
    /// An attempt done in the worker's worktree is not done in the run's
    /// until its work is merged onto the run's branch: it stays running,
    /// naming no checkpoint, until its merge is decided.
    pub fn worker_adopted(&mut self, story: &str, record: Option<StoryRecord>, totals: &Totals) {
        if let Some(mut record) = record {
            let own = self.story_entry(story);
            (record.done, record.tasks_done, record.tasks_total) =
                (own.done, own.tasks_done, own.tasks_total);
            if let Some(last) = record.attempts.last_mut()
                && last.outcome == AttemptOutcome::Complete
            {
                last.outcome = AttemptOutcome::Running;
                last.checkpoint = None;
            }
            *own = record;
        }
        self.add_totals(totals);
        if let Some(own) = self
            .parallel
            .as_mut()
            .and_then(|p| p.workers.iter_mut().find(|w| w.story == story))
        {
            own.ended = true;
        }
    }

    /// Every worker is taken off the record, to be retired; the loops that
    /// had not ended give the run their records as they stand, with
    /// `done` as the run's branch says. No loop of theirs goes on: an
    /// attempt still running, or done in its worktree only, was
    /// interrupted, and names no checkpoint until its work is found on
    /// the run's branch ([`RunState::merge_found`]). Returns them.
    pub fn workers_taken_off(
        &mut self,
        recorded: impl Fn(&WorkerRecord) -> (Option<StoryRecord>, Totals),
    ) -> Vec<WorkerRecord> {
        let Some(parallel) = self.parallel.as_mut() else {
            return Vec::new();
        };
        let workers = std::mem::take(&mut parallel.workers);
        for worker in &workers {
            if !worker.ended {
                let (story, totals) = recorded(worker);
                if let Some(mut record) = story {
                    let own = self.story_entry(&worker.story);
                    (record.done, record.tasks_done, record.tasks_total) =
                        (own.done, own.tasks_done, own.tasks_total);
                    *own = record;
                }
                self.add_totals(&totals);
            }
            if let Some(last) = self.story_entry(&worker.story).attempts.last_mut()
                && matches!(
                    last.outcome,
                    AttemptOutcome::Running | AttemptOutcome::Complete
                )
            {
                last.outcome = AttemptOutcome::Interrupted;
                last.checkpoint = None;
            }
        }
        workers
    }

    /// What a retired worker left is kept at `kept`: its interrupted
    /// attempt says so, unless it names a place already.
    pub fn worker_kept(&mut self, story: &str, kept: String) {
        if let Some(last) = self.story_entry(story).attempts.last_mut()
            && last.outcome == AttemptOutcome::Interrupted
            && last.preserved.is_none()
        {
            last.preserved = Some(kept);
        }
    }

    /// `story`'s work was found merged onto the run's branch at
    /// `checkpoint` by a loop killed before it said so: the story is done
    /// there, its last attempt complete at that commit. An attempt that
    /// ended otherwise (rejected, failed) is left as it is.
    pub fn merge_found(&mut self, story: &str, checkpoint: String) {
        let own = self.story_entry(story);
        let Some(last) = own.attempts.last() else {
            return;
        };
        let awaiting = matches!(
            last.outcome,
            AttemptOutcome::Running | AttemptOutcome::Interrupted | AttemptOutcome::Complete
        );
        if !awaiting || last.checkpoint.as_deref() == Some(checkpoint.as_str()) {
            return;
        }
        (own.done, own.tasks_done) = (true, own.tasks_total);
        let _ = self.story_merged(story, checkpoint);
    }

    /// The last attempt at `story`, still recorded as running when its
    /// worker stopped, was interrupted.
    pub fn worker_interrupted(&mut self, story: &str) {
        if let Some(attempt) = self.story_entry(story).attempts.last_mut()
            && attempt.outcome == AttemptOutcome::Running
        {
            attempt.outcome = AttemptOutcome::Interrupted;
        }
    }

    /// `story`'s work is on the run's branch at `checkpoint`: its last
    /// attempt is complete there, and names it. Returns the outcome to
    /// tell, `None` when the story has no attempt.
    pub fn story_merged(&mut self, story: &str, checkpoint: String) -> Option<AttemptOutcome> {
        let attempt = self.story_entry(story).attempts.last_mut()?;
        attempt.outcome = AttemptOutcome::Complete;
        attempt.reason = None;
        attempt.preserved = None;
        attempt.checkpoint = Some(checkpoint);
        Some(AttemptOutcome::Complete)
    }

    /// The stories whose worker's loop ended with their work done in
    /// its worktree, not merged yet: their last attempt still runs in
    /// the run's record.
    pub fn unmerged_workers(&self) -> Vec<(WorkerRecord, u32)> {
        let Some(parallel) = self.parallel.as_ref() else {
            return Vec::new();
        };
        parallel
            .workers
            .iter()
            .filter(|worker| worker.ended)
            .filter_map(|worker| {
                let last = self
                    .stories
                    .iter()
                    .find(|record| record.id == worker.story)?
                    .attempts
                    .last()?;
                (last.outcome == AttemptOutcome::Running).then(|| (worker.clone(), last.attempt))
            })
            .collect()
    }

    /// `story`'s work could not be merged, for `reason`; what it did is
    /// kept at `preserved`, and its last attempt counts as rejected.
    pub fn merge_refused(
        &mut self,
        story: &str,
        reason: Option<String>,
        preserved: Option<String>,
    ) -> AttemptOutcome {
        if let Some(attempt) = self.story_entry(story).attempts.last_mut() {
            attempt.outcome = AttemptOutcome::Rejected;
            attempt.reason = reason;
            attempt.preserved = preserved;
            attempt.checkpoint = None;
        }
        AttemptOutcome::Rejected
    }

    /// `more` added to the run's totals, saturating.
    pub(super) fn add_totals(&mut self, more: &Totals) {
        let into = &mut self.totals;
        into.attempts = into.attempts.saturating_add(more.attempts);
        into.add_tokens(
            more.input_tokens,
            more.output_tokens,
            more.cache_read_tokens,
            more.cache_creation_tokens,
        );
        into.cost_usd += more.cost_usd;
        into.tokens_unknown |= more.tokens_unknown;
        into.cost_estimated |= more.cost_estimated;
    }

    /// The state of a worker's own loop for `story`: the run's, on the
    /// worker's branch `branch` of change `change` from `base`, with the
    /// story's attempts so far, so that retries count across merges.
    pub fn for_worker(
        &self,
        change: String,
        branch: String,
        story: &str,
        base: ObjectId,
    ) -> RunState {
        let mut state = self.clone();
        state.change = change;
        state.branch = branch;
        state.status = RunStatus::Running;
        state.reason = None;
        state.initial_commit = base;
        state.checkpoint = base;
        state.stories = self
            .stories
            .iter()
            .filter(|record| record.id == story)
            .cloned()
            .collect();
        state.current_story = None;
        state.current_attempt = 0;
        state.last_failure = None;
        state.totals = Default::default();
        state.no_progress_streak = 0;
        state.pipeline = None;
        state.fallback = None;
        state.worktree = None;
        state.parallel = None;
        state.settings.parallel = None;
        state.runtime_ms = 0;
        state
    }
}
