//! A parallel run (`--parallel N`): up to N independent stories at once,
//! each done by an ordinary story loop in a worktree of its own, from the
//! run's branch as it stood when the story started. Which stories are
//! independent is [`schedule`]'s decision; starting and retiring a story's
//! loop is [`worker`]'s; bringing its work onto the branch is [`merge`]'s;
//! taking a run up again after a crash is [`recover`]'s.
//!
//! The run's own loop here does no story itself. It starts stories, hears
//! their events (logged as the run's, so `log`, `watch` and the screens
//! see every story), and merges each finished story onto `ralph/<change>`
//! in its own worktree, one at a time, in story order. A story is done
//! only once it is merged and its checks pass on the merged tree; one
//! that conflicts runs again on top of what was merged, told why. Every
//! story's worktree is recorded in the run's state before its loop
//! starts, so a resume after a crash finds and retires each one, keeping
//! what it left under the run's refs.

mod merge;
mod recover;
mod schedule;
mod worker;

pub(crate) use recover::retire_left_behind;

use super::hooks;
use super::notifications;
use super::settle;
use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::{mpsc, watch};

use self::merge::Merged;
use self::schedule::Order;
use self::worker::{Running, Start};
use super::error::RunError;
use super::story_loop::{LoopEnd, StoryLoop};
use crate::events::{Event, Record};
use crate::git::ObjectId;
use crate::state::{AttemptOutcome, StopReason, WorkerRecord};
use crate::stories::Story;

/// A story loop that ended, with its story.
type Ended = (String, LoopEnd);

/// A story merged onto the run's branch, and the paths its merge changed.
#[derive(Debug, Clone)]
pub(super) struct MergedStory {
    pub story: String,
    pub paths: Vec<String>,
}

/// A story done in its worktree, its loop ended, not merged yet.
struct Waiting {
    worker: WorkerRecord,
    tip: ObjectId,
}

/// What the run's loop keeps while stories are at work.
#[derive(Default)]
struct Board {
    running: Vec<Running>,
    /// Stories that used their retries.
    given_up: BTreeSet<String>,
    /// Stories merged in this loop, in order, with the paths each merge
    /// changed: what a conflict is named against.
    merged: Vec<MergedStory>,
    /// How many stories were merged when each running story started.
    merged_at_start: BTreeMap<String, usize>,
    /// Each started story's place in the file: merges go in this order.
    place: BTreeMap<String, usize>,
    /// Stories done in their worktrees, waiting for the stories before
    /// them to end before they are merged, by place.
    waiting: BTreeMap<usize, Waiting>,
    /// Why the run ends, once it is decided; the stories at work are
    /// stopped and waited for.
    ending: Option<(StopReason, String)>,
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

impl StoryLoop {
    /// Whether this loop runs stories in parallel rather than doing them.
    pub(super) fn is_parallel(&self) -> bool {
        self.state.settings.parallel.is_some() && self.settings.story_only.is_none()
    }

    /// What decides which stories may run at once.
    fn order(&self) -> Order {
        order_of(&self.settings.contract)
    }

    /// Run the stories until none is left to start and none is at work.
    pub(super) async fn drive_parallel(&mut self) -> Result<(StopReason, String), RunError> {
        let width = self.state.settings.parallel.unwrap_or(1).max(1) as usize;
        let order = self.order();
        let (records_tx, mut records) = mpsc::unbounded_channel::<Record>();
        let (ended_tx, mut ended) = mpsc::unbounded_channel::<Ended>();
        let (stop_workers, workers_stop) = watch::channel(false);
        let mut stop = self.stop.clone();
        let mut board = Board::default();
        // Stories start at first, and again only when one ended: agent
        // output, which wakes this loop most often, changes nothing there.
        let mut may_start = true;
        loop {
            if board.ending.is_none() {
                board.ending = self.why_stop().await;
            }
            if board.ending.is_some() {
                let _ = stop_workers.send(true);
            } else if std::mem::take(&mut may_start) {
                let stories = self.load_stories().await?;
                self.sync_stories(&stories);
                let launch = Launch {
                    width,
                    order: &order,
                    records: &records_tx,
                    ended: &ended_tx,
                    stop: &workers_stop,
                };
                if let Some(end) = self.launch_ready(&stories, &mut board, launch).await? {
                    return Ok(end);
                }
            }
            if board.running.is_empty() {
                return Ok(board.ending.take().unwrap_or_else(|| {
                    (
                        StopReason::Error,
                        "no story is at work and none can start".into(),
                    )
                }));
            }
            tokio::select! {
                biased;
                Some(record) = records.recv() => self.forward(record),
                Some((story, end)) = ended.recv() => {
                    while let Ok(record) = records.try_recv() {
                        self.forward(record);
                    }
                    self.story_ended(&mut board, &story, end).await?;
                    may_start = true;
                }
                changed = stop.changed(), if board.ending.is_none() => {
                    if changed.is_err() || *stop.borrow() {
                        board.ending = Some((StopReason::Stopped, "stopped by the user".into()));
                    }
                }
            }
        }
    }

    /// The run's branch is the run's: a story's agent that moved it is
    /// undone before anything is merged onto it or a hook looks at it.
    async fn guard_run_branch(&mut self) -> Result<(), RunError> {
        if let Some(found) = settle::guard_head(self, "while stories were at work").await? {
            let message = format!(
                "while stories were at work, {}; {} is back at its last checkpoint",
                super::settle::found_words(&found),
                self.state.branch
            );
            self.warn(message);
        }
        Ok(())
    }

    /// A hook's stop, or the user's.
    async fn why_stop(&mut self) -> Option<(StopReason, String)> {
        notifications::report_deliveries(self).await;
        if let Err(err) = self.guard_run_branch().await {
            return Some((StopReason::Error, err.to_string()));
        }
        if let Some(stop) = hooks::run_due_hooks(self).await {
            return Some(stop);
        }
        self.stop_requested()
            .then(|| (StopReason::Stopped, "stopped by the user".into()))
    }

    /// Start every story that may start, up to the width; when nothing is
    /// at work and nothing can start, the run's end.
    async fn launch_ready(
        &mut self,
        stories: &[Story],
        board: &mut Board,
        launch: Launch<'_>,
    ) -> Result<Option<(StopReason, String)>, RunError> {
        let busy: BTreeSet<String> = board
            .running
            .iter()
            .map(|r| &r.record)
            .chain(board.waiting.values().map(|w| &w.worker))
            .map(|worker| worker.story.clone())
            .collect();
        let ready: Vec<Story> = launch
            .order
            .ready(self.source.kind(), stories, &busy, &board.given_up)
            .into_iter()
            .cloned()
            .collect();
        for story in ready {
            if board.running.len() >= launch.width {
                break;
            }
            if let Some(limit) = self.guardrail_before(&story) {
                if limit.0 == StopReason::MaxRetries {
                    board.given_up.insert(story.id.clone());
                    continue;
                }
                board.ending = Some(limit);
                return Ok(None);
            }
            let place = stories.iter().position(|s| s.id == story.id).unwrap_or(0);
            board.place.insert(story.id.clone(), place);
            self.start_story(&story, board, &launch)?;
        }
        if !board.running.is_empty() {
            return Ok(None);
        }
        if stories.iter().all(Story::is_complete) {
            return self.no_story_left(stories).await.map(Some);
        }
        let blocked = launch
            .order
            .blocked(self.source.kind(), stories, &board.given_up);
        let given_up: Vec<&str> = board.given_up.iter().map(String::as_str).collect();
        let mut message = format!("story {} used its retries", given_up.join(", "));
        if !blocked.is_empty() {
            message.push_str(&format!(
                "; story {} waits for it and did not start",
                blocked.join(", ")
            ));
        }
        Ok(Some((StopReason::MaxRetries, message)))
    }

    /// The guardrail that keeps `story` from starting, if one does.
    fn guardrail_before(&mut self, story: &Story) -> Option<(StopReason, String)> {
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let record = self.story_record(&story.id).clone();
        super::guardrails::hit(
            &self.settings.guardrails,
            &self.state,
            &record,
            (rules.max_cost, rules.max_tokens),
            self.settings.max_retries,
            self.runtime_ms(),
        )
    }

    /// Make the story's worktree, record it, and start its loop.
    fn start_story(
        &mut self,
        story: &Story,
        board: &mut Board,
        launch: &Launch<'_>,
    ) -> Result<(), RunError> {
        let workdir = self.repo_lock().workdir().to_owned();
        let planned = worker::plan(
            &self.settings.change,
            &workdir,
            &self.run_dir,
            self.state.checkpoint,
            story,
        )?;
        self.state
            .parallel
            .get_or_insert_with(Default::default)
            .workers
            .push(planned.clone());
        self.save()?;
        let launched = {
            let repo = self.repo_lock();
            Start {
                repo: &repo,
                change: &self.settings.change,
                run_dir: &self.run_dir,
                state: &self.state,
                settings: &self.settings,
                records: launch.records.clone(),
                stop: launch.stop.clone(),
            }
            .launch(planned, story, launch.ended.clone())
        };
        let workers = &mut self
            .state
            .parallel
            .get_or_insert_with(Default::default)
            .workers;
        let running = match launched {
            Ok(running) => running,
            Err(err) => {
                workers.retain(|w| w.story != story.id);
                self.save()?;
                return Err(err);
            }
        };
        if let Some(own) = workers.iter_mut().find(|w| w.story == story.id) {
            *own = running.record.clone();
        }
        self.save()?;
        board
            .merged_at_start
            .insert(story.id.clone(), board.merged.len());
        board.running.push(running);
        self.emit_workers(board);
        Ok(())
    }

    fn emit_workers(&mut self, board: &Board) {
        let stories = board
            .running
            .iter()
            .map(|r| r.record.story.clone())
            .collect();
        self.emit(Event::Workers { stories });
    }

    /// A story's event, as the run's own. How a story's loop began and
    /// ended is the run's business alone; an error that ended it is a
    /// warning here. A story done in its worktree is not done yet: the
    /// run says so once its merge is decided.
    fn forward(&mut self, mut record: Record) {
        record.change = self.settings.change.to_string();
        match record.event {
            Event::RunStarted { .. } | Event::Complete { .. } => {}
            Event::AttemptFinished {
                outcome: AttemptOutcome::Complete,
                ..
            } => {}
            Event::Error {
                ref message,
                story_id: Some(ref story),
                reason,
                ..
            } if reason != StopReason::Stopped => {
                let message = format!("story {story}: {message}");
                self.warn(message);
            }
            Event::Error { .. } => {}
            _ => self.deliver(record),
        }
    }

    /// A story's loop ended: retire it, and merge its work if it was done.
    async fn story_ended(
        &mut self,
        board: &mut Board,
        story: &str,
        end: LoopEnd,
    ) -> Result<(), RunError> {
        let Some(at) = board.running.iter().position(|r| r.record.story == story) else {
            return Ok(());
        };
        self.guard_run_branch().await?;
        let running = board.running.remove(at);
        let worker = running.record;
        let tip = end.state.checkpoint;
        let done = end.reason == StopReason::Completed
            && end
                .state
                .stories
                .iter()
                .find(|record| record.id == story)
                .and_then(|record| record.attempts.last())
                .is_some_and(|attempt| attempt.outcome == AttemptOutcome::Complete);
        let worker = self.adopt(worker)?;
        if done {
            let place = board.place.get(story).copied().unwrap_or(0);
            board.waiting.insert(place, Waiting { worker, tip });
        } else {
            self.retire_worker(&worker)?;
        }
        self.emit_workers(board);
        self.merge_waiting(board).await?;
        if done {
            return Ok(());
        }
        match end.reason {
            StopReason::MaxRetries => {
                board.given_up.insert(story.to_owned());
            }
            StopReason::Completed | StopReason::Stopped => {}
            reason => {
                board.ending.get_or_insert((reason, end.message));
            }
        }
        Ok(())
    }

    /// Merge the stories waiting whose turn it is: no story before them
    /// in the file is still at work.
    async fn merge_waiting(&mut self, board: &mut Board) -> Result<(), RunError> {
        while let Some(entry) = board.waiting.first_entry() {
            let place = *entry.key();
            let earlier_at_work = board.running.iter().any(|running| {
                board
                    .place
                    .get(&running.record.story)
                    .is_some_and(|at| *at < place)
            });
            if earlier_at_work {
                break;
            }
            let Waiting { worker, tip } = entry.remove();
            let since = board.merged_at_start.remove(&worker.story).unwrap_or(0);
            let merged_since = board.merged.get(since..).unwrap_or_default().to_vec();
            self.merge_done_story(board, &worker, tip, &merged_since)
                .await?;
        }
        Ok(())
    }

    /// Merge a story done in its own worktree, retire its worktree, and
    /// say how that went. Its worktree goes only once the merge is
    /// decided: a crash before that finds it done on resume. The story
    /// becomes done here, once its work is on the branch and the state
    /// says so; only then is it announced.
    async fn merge_done_story(
        &mut self,
        board: &mut Board,
        worker: &WorkerRecord,
        tip: ObjectId,
        merged_since: &[MergedStory],
    ) -> Result<(), RunError> {
        let story = worker.story.clone();
        let before = self.state.checkpoint;
        let merged = self.merge_story(worker, tip, merged_since).await?;
        let kept = self.retire_worker(worker)?;
        let (checkpoint, reason, preserved) = match merged {
            Merged::Done { checkpoint } => {
                let paths = self.paths_between(before, checkpoint).await?;
                board.merged.push(MergedStory {
                    story: story.clone(),
                    paths,
                });
                (Some(checkpoint.to_string()), None, None)
            }
            Merged::Refused {
                reason,
                kept: merge_kept,
            } => (None, Some(reason), merge_kept.or(kept)),
        };
        let (outcome, attempt, role) = {
            let record = self.last_attempt(&story);
            let number = record.as_ref().map_or(0, |a| a.attempt);
            let role = record.as_ref().and_then(|a| a.role);
            let outcome = match record {
                Some(attempt) if checkpoint.is_some() => {
                    attempt.checkpoint = checkpoint.clone();
                    AttemptOutcome::Complete
                }
                Some(attempt) => {
                    attempt.outcome = AttemptOutcome::Rejected;
                    attempt.reason = reason.clone();
                    attempt.preserved = preserved.clone();
                    attempt.checkpoint = None;
                    AttemptOutcome::Rejected
                }
                None => AttemptOutcome::Rejected,
            };
            (outcome, number, role)
        };
        let stories = self.load_stories().await?;
        self.sync_stories(&stories);
        self.save()?;
        self.emit(Event::AttemptFinished {
            story_id: story.clone(),
            attempt,
            outcome,
            reason: reason.clone(),
            preserved: preserved.clone(),
            checkpoint: checkpoint.clone(),
            role,
        });
        self.emit(Event::Merged {
            story_id: story,
            merged: checkpoint.is_some(),
            checkpoint,
            reason,
            preserved,
        });
        Ok(())
    }

    /// The paths that differ between two commits.
    async fn paths_between(&self, old: ObjectId, new: ObjectId) -> Result<Vec<String>, RunError> {
        self.with_repo(move |repo| -> Result<Vec<String>, crate::git::GitFailure> {
            let (old, new) = (repo.commit_tree(old)?, repo.commit_tree(new)?);
            Ok(repo
                .changed_files(old, new)?
                .into_iter()
                .map(|file| file.path)
                .collect())
        })
        .await
        .map_err(|err| RunError::git("read what a merge changed", err))
    }

    fn last_attempt(&mut self, story: &str) -> Option<&mut crate::state::AttemptRecord> {
        self.story_record(story).attempts.last_mut()
    }

    /// A story's loop ended: its record of the story (attempts, cost)
    /// becomes the run's, once.
    fn adopt(&mut self, mut worker: WorkerRecord) -> Result<WorkerRecord, RunError> {
        if worker.ended {
            return Ok(worker);
        }
        let recorded = worker::recorded(&worker);
        if let Some(mut record) = recorded.story {
            // Done is what the run's branch says, not the story's own.
            let own = self.story_record(&worker.story);
            (record.done, record.tasks_done, record.tasks_total) =
                (own.done, own.tasks_done, own.tasks_total);
            *own = record;
        }
        add_totals(&mut self.state.totals, &recorded.totals);
        worker.ended = true;
        if let Some(own) = self
            .state
            .parallel
            .as_mut()
            .and_then(|p| p.workers.iter_mut().find(|w| w.story == worker.story))
        {
            own.ended = true;
        }
        self.save()?;
        Ok(worker)
    }

    /// Retire a story's loop: keep what it left, bring its files into the
    /// run's, remove its worktree and branch. Returns the ref that keeps
    /// the tip of its branch.
    fn retire_worker(&mut self, worker: &WorkerRecord) -> Result<Option<String>, RunError> {
        let kept = {
            let repo = self.repo_lock();
            worker::retire(&repo, &self.settings.change, &self.run_dir, worker)?
        };
        if let Some(parallel) = self.state.parallel.as_mut() {
            parallel.workers.retain(|w| w.story != worker.story);
        }
        self.save()?;
        Ok(kept)
    }
}

/// What decides which stories of `contract`'s change may run at once.
fn order_of(contract: &crate::contract::Contract) -> Order {
    Order {
        after: contract
            .story
            .iter()
            .filter(|(_, story)| !story.after.is_empty())
            .map(|(id, story)| (id.clone(), story.after.clone()))
            .collect(),
        independent: contract.stories.independent,
    }
}

/// Whether the stories can be run at once in the order the contract
/// gives them: refused before anything is written, with why.
pub(crate) fn check_order(
    contract: &crate::contract::Contract,
    kind: crate::stories::SourceKind,
    stories: &[Story],
) -> Result<(), RunError> {
    order_of(contract)
        .check(kind, stories)
        .map_err(|why| RunError::ParallelUnfit { what: why })
}

/// Where started stories report to.
struct Launch<'a> {
    width: usize,
    order: &'a Order,
    records: &'a mpsc::UnboundedSender<Record>,
    ended: &'a mpsc::UnboundedSender<Ended>,
    stop: &'a watch::Receiver<bool>,
}

fn add_totals(into: &mut crate::state::Totals, more: &crate::state::Totals) {
    into.attempts = into.attempts.saturating_add(more.attempts);
    into.add_tokens(
        more.input_tokens,
        more.output_tokens,
        more.cache_read_tokens,
        more.cache_creation_tokens,
    );
    into.cost_usd += more.cost_usd;
    into.tokens_unknown |= more.tokens_unknown;
}
