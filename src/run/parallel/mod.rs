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

pub(in crate::run) mod board;
mod git_dir_sweep;
pub(in crate::run) mod merge;
mod recover;
pub(super) mod schedule;
mod worker;

pub(crate) use recover::retire_left_behind;

use super::hooks;
use super::notifications;
use super::questions;
use super::settle;
use std::collections::BTreeSet;

use tokio::sync::{mpsc, watch};

use self::board::{Board, Ended, Launch, Waiting};
use self::schedule::Order;
pub use self::schedule::Schedule;
use self::worker::Start;
use super::context::Run;
use super::error::RunError;
use super::lifecycle::{self, LoopEnd};
use super::start_error::StartError;
use crate::events::{Event, Record};
use crate::state::{AttemptOutcome, StopReason};
use crate::stories::Story;

/// The run's own loop when its stories run at once: it does no story
/// itself, but starts each in a worktree of its own, hears what they say,
/// and merges each one done onto the run's branch.
pub struct Coordinator {
    run: Run,
    /// How many stories may be at work at once.
    width: usize,
}

impl Coordinator {
    /// The loop of the parallel run whose context is `run`, `width`
    /// stories at once.
    pub(in crate::run) fn new(run: Run, width: u32) -> Coordinator {
        Coordinator {
            run,
            width: width.max(1) as usize,
        }
    }

    /// Drive the run until it ends, and say why.
    pub async fn run(self, resumed: bool) -> LoopEnd {
        lifecycle::live(self, resumed, recover::recover_parallel).await
    }

    /// Run the stories until none is left to start and none is at work.
    async fn drive_stories(&mut self) -> Result<(StopReason, String), RunError> {
        let width = self.width;
        let order = Order::of(self.run.settings.contract());
        let (records_tx, mut records) = mpsc::unbounded_channel::<Record>();
        let (ended_tx, mut ended) = mpsc::unbounded_channel::<Ended>();
        let (stop_workers, workers_stop) = watch::channel(false);
        let mut stop = self.run.stop.clone();
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
                questions::take_answers(&mut self.run).await?;
                let stories = self.run.load_stories().await?;
                self.run.sync_stories(&stories);
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
            if board.running.is_empty() && board.ending.is_none() {
                match questions::when_none_may_start(&mut self.run).await? {
                    questions::Waiting::Answered => {
                        may_start = true;
                        continue;
                    }
                    questions::Waiting::Stop(stop) => return Ok(stop),
                    questions::Waiting::Nobody => {}
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
        if let Some(found) = settle::guard_head(&mut self.run, "while stories were at work").await?
        {
            let message = format!(
                "while stories were at work, {}; {} is back at its last checkpoint",
                super::settle::found_words(&found),
                self.run.state.branch()
            );
            self.run.warn(message);
        }
        Ok(())
    }

    /// A hook's stop, or the user's.
    async fn why_stop(&mut self) -> Option<(StopReason, String)> {
        notifications::report_deliveries(&mut self.run).await;
        if let Err(err) = self.guard_run_branch().await {
            return Some((StopReason::Error, err.to_string()));
        }
        if let Some(stop) = hooks::run_due_hooks(&mut self.run).await {
            return Some(stop);
        }
        self.run
            .stop_requested()
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
        // A story waiting for an answer is as busy as one at work.
        let parked = super::asked::parked(&self.run.state);
        let busy: BTreeSet<String> = board
            .running
            .iter()
            .map(|r| &r.record)
            .chain(board.waiting.values().map(|w| &w.worker))
            .map(|worker| worker.story.clone())
            .chain(parked.iter().cloned())
            .collect();
        let ready: Vec<Story> = launch
            .order
            .ready(self.run.source.kind(), stories, &busy, &board.given_up)
            .into_iter()
            .cloned()
            .collect();
        if board.running.is_empty() && !ready.is_empty() {
            board.git_dir = Some(git_dir_sweep::note(&self.run).await?);
        }
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
            return lifecycle::no_story_left(&self.run, stories).await.map(Some);
        }
        if !parked.is_empty() {
            return Ok(None);
        }
        let blocked = launch
            .order
            .blocked(self.run.source.kind(), stories, &board.given_up);
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
        let rules = self.run.rules_for(story);
        let record = self.run.story_record(&story.id).into_owned();
        super::guardrails::hit(
            self.run.settings.guardrails(),
            &self.run.state,
            &record,
            (rules.max_cost, rules.max_tokens),
            self.run.settings.max_retries(),
            self.run.runtime_ms(),
        )
    }

    /// Make the story's worktree, record it, and start its loop.
    fn start_story(
        &mut self,
        story: &Story,
        board: &mut Board,
        launch: &Launch<'_>,
    ) -> Result<(), RunError> {
        let workdir = self.run.repo_lock().workdir().to_owned();
        let planned = worker::plan(
            self.run.settings.change(),
            &workdir,
            &self.run.run_dir,
            self.run.state.checkpoint(),
            story,
        )?;
        self.run.state.worker_planned(planned.clone());
        self.run.save()?;
        let launched = {
            let repo = self.run.repo_lock();
            Start {
                repo: &repo,
                change: self.run.settings.change(),
                run_dir: &self.run.run_dir,
                state: &self.run.state,
                settings: &self.run.settings,
                records: launch.records.clone(),
                stop: launch.stop.clone(),
                hints: self.run.hints,
            }
            .launch(planned, story, launch.ended.clone())
        };
        let running = match launched {
            Ok(running) => running,
            Err(err) => {
                self.run.state.worker_gone(&story.id);
                self.run.save()?;
                return Err(err);
            }
        };
        self.run.state.worker_started(running.record.clone());
        self.run.save()?;
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
        self.run.emit(Event::Workers { stories });
    }

    /// A story's event, as the run's own. How a story's loop began and
    /// ended is the run's business alone; an error that ended it is a
    /// warning here. A story done in its worktree is not done yet: the
    /// run says so once its merge is decided.
    fn forward(&mut self, mut record: Record) {
        record.change = self.run.settings.change().to_string();
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
                self.run.warn(message);
            }
            Event::Error { .. } => {}
            Event::Question {
                ref story_id,
                ref question,
                ..
            } => {
                let (story, question) = (story_id.clone(), question.clone());
                self.run.deliver(record);
                notifications::notify_question(&mut self.run, &story, &question);
            }
            _ => self.run.deliver(record),
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
        if board.running.is_empty()
            && let Some(before) = board.git_dir.take()
        {
            git_dir_sweep::put_back(&mut self.run, before).await?;
        }
        let worker = running.record;
        let tip = end.state.checkpoint();
        // Done in its worktree is its last attempt's outcome, whatever
        // ended its loop after that: a stop seen just after its
        // checkpoint leaves the work to be merged all the same.
        let done = end
            .state
            .stories()
            .iter()
            .find(|record| record.id == story)
            .and_then(|record| record.attempts.last())
            .is_some_and(|attempt| attempt.outcome == AttemptOutcome::Complete);
        let worker = merge::adopt(&mut self.run, worker)?;
        if done {
            let place = board.place.get(story).copied().unwrap_or(0);
            board.waiting.insert(place, Waiting { worker, tip });
        } else {
            merge::retire_worker(&mut self.run, &worker)?;
        }
        self.emit_workers(board);
        self.merge_waiting(board).await?;
        match end.reason {
            StopReason::MaxRetries if !done => {
                board.given_up.insert(story.to_owned());
            }
            StopReason::MaxRetries
            | StopReason::Completed
            | StopReason::Stopped
            | StopReason::Questions => {}
            reason => {
                board.ending.get_or_insert((reason, end.message));
            }
        }
        Ok(())
    }

    /// Merge the stories waiting whose turn it is: no story before them
    /// in the file is still at work, and no stop was asked.
    async fn merge_waiting(&mut self, board: &mut Board) -> Result<(), RunError> {
        while let Some(entry) = board.waiting.first_entry() {
            // Nothing is merged once the user asked to stop: each story
            // waiting stays in its worktree, and the resume merges it.
            if self.run.stop_requested() {
                break;
            }
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
            merge::merge_done_story(&mut self.run, board, &worker, tip, &merged_since).await?;
        }
        Ok(())
    }
}

impl lifecycle::Driven for Coordinator {
    fn run_mut(&mut self) -> &mut Run {
        &mut self.run
    }

    async fn drive(&mut self) -> Result<(StopReason, String), RunError> {
        let end = self.drive_stories().await;
        let unmerged = merge::unmerged_at_end(&mut self.run);
        let end = end?;
        unmerged?;
        Ok(end)
    }
}

/// What a parallel run `width` stories wide would start with, and what
/// would wait for what, for `start --dry-run`.
pub(crate) fn schedule(
    contract: &crate::contract::Contract,
    kind: crate::stories::SourceKind,
    stories: &[Story],
    width: usize,
) -> Schedule {
    Order::of(contract).schedule(kind, stories, width)
}

/// Whether the stories can be run at once in the order the contract
/// gives them: refused before anything is written, with why.
pub(crate) fn check_order(
    contract: &crate::contract::Contract,
    kind: crate::stories::SourceKind,
    stories: &[Story],
) -> Result<(), StartError> {
    Order::of(contract)
        .check(kind, stories)
        .map_err(|why| StartError::ParallelUnfit {
            what: why.to_string(),
        })
}
