//! How the loop screen takes a run in: seeded (and refreshed) from
//! `state.json`, then fed the run's events one by one, from the driver's
//! channel or from a follower of `events.jsonl`. What a notice says and
//! what an agent spent is read as the line view reads it
//! ([`crate::ui::digest`]).

use super::{App, AttemptItem, Mode, StoryItem};
use crate::events::{Event, Record};
use crate::state::{AttemptOutcome, RunState, RunStatus};
use crate::ui::digest::{Notice, spent};
use crate::ui::transcript::event_lines;

impl App {
    /// Seed (or refresh) from `state.json`: stories, attempts, outcomes,
    /// tokens and cost as recorded. Output already received is kept.
    pub fn apply_state(&mut self, state: &RunState) {
        self.branch = state.branch().clone();
        self.agent = crate::audit::agent_name(state);
        self.max_attempts = if state.settings().once {
            1
        } else {
            state.settings().max_retries.saturating_add(1)
        };
        if self.started_ms.is_none() {
            self.started_ms = Some(state.started_at().saturating_mul(1000));
        }
        for story in state.stories() {
            let item = self.story_mut(&story.id, &story.title);
            item.done = story.done;
            item.tasks_done = story.tasks_done;
            item.tasks_total = story.tasks_total;
            for record in &story.attempts {
                let attempt = item_attempt(item, record.attempt);
                attempt.outcome = record.outcome;
                attempt.role = record.role;
                attempt.reason = record.reason.clone();
                attempt.kept = record.checkpoint.clone().or(record.preserved.clone());
                attempt.asked = record.asked.clone();
                attempt.answer = record.answer.clone();
                if attempt.tokens == 0 {
                    attempt.tokens = record.tokens();
                }
                if attempt.cost == 0.0 {
                    attempt.cost = record.cost_usd;
                }
            }
        }
        if let (Some(story), RunStatus::Running) = (&state.current_story(), state.status()) {
            self.current = Some((story.clone(), state.current_attempt()));
        }
        if state.status() != RunStatus::Running && self.ended.is_none() {
            self.ended = Some(crate::ui::state_words(state.status(), state.reason()));
            self.elapsed_ms = state.runtime_ms();
        }
        self.dirty = true;
    }

    /// A watcher's screen follows the loop as it ends and is resumed
    /// (s stops only a loop that runs). Whether the loop runs when the
    /// screen opens is the watcher's to say, not the log's.
    fn watch_live(&mut self, event: &Event) {
        let running = match event {
            Event::RunStarted { .. } if self.ended.is_some() => true,
            Event::Error { .. } | Event::Complete { .. } => false,
            _ => return,
        };
        if let Mode::Watch { live } = &mut self.mode {
            *live = running;
        }
    }

    fn story_mut(&mut self, id: &str, title: &str) -> &mut StoryItem {
        let at = match self.stories.iter().position(|story| story.id == id) {
            Some(at) => at,
            None => {
                self.stories.push(StoryItem {
                    id: id.to_owned(),
                    title: title.to_owned(),
                    done: false,
                    tasks_done: 0,
                    tasks_total: 0,
                    attempts: Vec::new(),
                });
                self.stories.len() - 1
            }
        };
        &mut self.stories[at]
    }

    /// Take in one event of the run.
    pub fn apply(&mut self, record: &Record) {
        self.dirty = true;
        self.watch_live(&record.event);
        if self.started_ms.is_none() {
            self.started_ms = Some(record.ts_ms);
        }
        match &record.event {
            Event::RunStarted {
                branch, resumed, ..
            } => {
                self.branch = branch.clone();
                self.ended = None;
                self.run_events.push(format!(
                    "{} on {branch}",
                    if *resumed { "resumed" } else { "started" }
                ));
            }
            Event::StoryProgress { .. } => self.story_started(&record.event),
            Event::StoryEvent {
                story_id,
                attempt,
                event,
            } => {
                let item = self.story_mut(story_id, "");
                let entry = item_attempt(item, *attempt);
                if let Some((tokens, cost)) = spent(event) {
                    entry.tokens = tokens;
                    entry.cost = cost;
                }
                for (kind, line) in event_lines(event) {
                    entry.output.push(kind, line);
                }
            }
            Event::AttemptFinished { .. } => self.attempt_finished(&record.event),
            Event::Workers { stories } => self.workers_now(stories),
            Event::Merged { .. } => self.merged(&record.event),
            Event::Checks {
                story_id,
                attempt,
                passed,
                failed,
            } => {
                let item = self.story_mut(story_id, "");
                let entry = item_attempt(item, *attempt);
                entry.checks_passed = passed.clone();
                entry.checks_failed = failed.clone();
                entry.events.push(format!(
                    "checks: {} passed, {} failed",
                    passed.len(),
                    failed.len()
                ));
            }
            Event::Question { .. } | Event::Answered { .. } => self.apply_question(&record.event),
            Event::Error {
                reason, message, ..
            } => {
                self.ended = Some(crate::ui::state_words(RunStatus::Stopped, Some(*reason)));
                self.run_events.push(format!("ended ({reason}): {message}"));
                self.stop_clock(record.ts_ms);
            }
            Event::Complete { reason, .. } => {
                self.ended = Some(format!("done ({reason})"));
                self.run_events.push("every story is done".to_owned());
                self.stop_clock(record.ts_ms);
            }
            // Everything else the run says in passing is a notice.
            _ => self.noticed(record),
        }
    }

    /// An attempt begins: the story is at work, and the screen follows it
    /// unless the user picked another.
    fn story_started(&mut self, event: &Event) {
        let Event::StoryProgress {
            story_id,
            title,
            attempt,
            max_attempts,
            role,
            role_iteration,
            role_max_iterations,
            ..
        } = event
        else {
            return;
        };
        self.max_attempts = *max_attempts;
        self.role_step = role
            .zip(*role_iteration)
            .zip(*role_max_iterations)
            .map(|((role, n), max)| (role, n, max));
        self.current = Some((story_id.clone(), *attempt));
        if let Some(workers) = self.workers.as_mut()
            && let Some(worker) = workers.iter_mut().find(|(id, _)| id == story_id)
        {
            worker.1 = *attempt;
        }
        let item = self.story_mut(story_id, title);
        if item.title.is_empty() {
            item.title = title.clone();
        }
        let entry = item_attempt(item, *attempt);
        entry.outcome = AttemptOutcome::Running;
        entry.role = *role;
        entry.events.push(match role {
            Some(role) => format!("attempt {attempt} started, as the {role}"),
            None => format!("attempt {attempt}/{max_attempts} started"),
        });
        if self.follow && self.selected_attempt.is_none() {
            // Follow the work: select the story being worked on.
            if let Some(at) = self.stories.iter().position(|s| &s.id == story_id) {
                if at != self.selected_story {
                    self.scroll = 0;
                }
                self.selected_story = at;
            }
        }
    }

    /// An attempt ended: its outcome, its reason and where its work is.
    fn attempt_finished(&mut self, event: &Event) {
        let Event::AttemptFinished {
            story_id,
            attempt,
            outcome,
            reason,
            preserved,
            checkpoint,
            unchanged,
            ..
        } = event
        else {
            return;
        };
        // In a parallel run a story is done once it is merged.
        let parallel = self.workers.is_some();
        let item = self.story_mut(story_id, "");
        if *outcome == AttemptOutcome::Complete && !parallel {
            item.done = true;
            item.tasks_done = item.tasks_total;
        }
        let entry = item_attempt(item, *attempt);
        entry.outcome = *outcome;
        entry.reason = reason.clone();
        entry.kept = checkpoint.clone().or(preserved.clone());
        entry.events.push(format!(
            "{}{}",
            crate::ui::outcome_word(*outcome),
            reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
        match &entry.kept {
            _ if *unchanged => entry.events.push("it changed nothing".to_owned()),
            Some(kept) => entry.events.push(format!("work kept at {kept}")),
            None => {}
        }
        // Details change once an attempt ends.
        entry.diff = None;
        entry.checks = None;
    }

    /// A parallel run's stories at work now, each keeping its attempt.
    fn workers_now(&mut self, stories: &[String]) {
        let before = self.workers.take().unwrap_or_default();
        self.workers = Some(
            stories
                .iter()
                .map(|id| {
                    let attempt = before
                        .iter()
                        .find(|(at_work, _)| at_work == id)
                        .map_or(0, |(_, attempt)| *attempt);
                    (id.clone(), attempt)
                })
                .collect(),
        );
    }

    /// A story of a parallel run merged onto the run's branch, or not.
    fn merged(&mut self, event: &Event) {
        let Event::Merged {
            story_id,
            merged,
            reason,
            preserved,
            ..
        } = event
        else {
            return;
        };
        self.workers.get_or_insert_with(Vec::new);
        let item = self.story_mut(story_id, "");
        item.done = *merged;
        if *merged {
            item.tasks_done = item.tasks_total;
        }
        if let Some(entry) = item.attempts.last_mut() {
            if !*merged {
                entry.outcome = AttemptOutcome::Rejected;
                entry.reason = reason.clone();
                entry.kept = preserved.clone();
            }
            entry.events.push(match (merged, reason) {
                (true, _) => "merged onto the run's branch, its checks passing".to_owned(),
                (false, Some(reason)) => format!("not merged: {reason}"),
                (false, None) => "not merged".to_owned(),
            });
        }
    }

    /// A word in passing: in the run's events, and the current attempt's.
    fn noticed(&mut self, record: &Record) {
        if let Some(notice) = Notice::of(record) {
            let line = format!("{} {}", notice.label(), notice.text);
            self.run_events.push(line.clone());
            if let Some(entry) = self.current_attempt_mut() {
                entry.events.push(line);
            }
        }
    }

    /// A story's question, or the answer a person gave to it.
    fn apply_question(&mut self, event: &Event) {
        match event {
            Event::Question {
                story_id,
                attempt,
                question,
                ..
            } => {
                let entry = item_attempt(self.story_mut(story_id, ""), *attempt);
                entry.asked = Some(question.clone());
                entry.events.push(format!("asked: {question}"));
                self.run_events
                    .push(format!("story {story_id} waits for an answer: {question}"));
            }
            Event::Answered {
                story_id,
                attempt,
                answer,
            } => {
                let entry = item_attempt(self.story_mut(story_id, ""), *attempt);
                entry.answer = Some(answer.clone());
                entry.events.push(format!("answer: {answer}"));
                self.run_events
                    .push(format!("story {story_id} was answered: {answer}"));
            }
            _ => {}
        }
    }

    fn stop_clock(&mut self, at_ms: u64) {
        if let Some(start) = self.started_ms {
            self.elapsed_ms = at_ms.saturating_sub(start);
        }
        self.current = None;
    }

    fn current_attempt_mut(&mut self) -> Option<&mut AttemptItem> {
        let (story, attempt) = self.current.clone()?;
        let item = self.stories.iter_mut().find(|s| s.id == story)?;
        item.attempts.iter_mut().find(|a| a.number == attempt)
    }
}

fn item_attempt(story: &mut StoryItem, number: u32) -> &mut AttemptItem {
    let at = match story.attempts.iter().position(|a| a.number == number) {
        Some(at) => at,
        None => {
            story.attempts.push(AttemptItem::new(number));
            story.attempts.sort_by_key(|a| a.number);
            story
                .attempts
                .iter()
                .position(|a| a.number == number)
                .unwrap_or(0)
        }
    };
    &mut story.attempts[at]
}
