//! The console view of a run: one line per milestone (story started, attempt
//! finished, warnings), and on a terminal a live status line with the current
//! story n/N, the attempt, elapsed time, the last agent message, tokens and
//! cost.

use std::time::Instant;

use console::Term;

use super::digest::{Notice, NoticeKind, clock, usage};
use super::live_line::LiveLine;
use super::{Styles, out};
use crate::agent::AgentEvent;
use crate::events::{Event, Record};
use crate::state::AttemptOutcome;

pub struct ConsoleView {
    styles: Styles,
    line: LiveLine,
    story: Option<(String, usize, usize, u32, u32)>,
    started: Instant,
    /// A usage-limit pause in force, for the countdown.
    paused_until: Option<u64>,
    /// What attempts did beyond their stories, for the final summary.
    beyond: Vec<String>,
    /// `--notify`: ring the bell when the run ends or waits out a usage
    /// limit.
    pub bell: bool,
}

impl Default for ConsoleView {
    fn default() -> Self {
        Self::new()
    }
}

impl ConsoleView {
    pub fn new() -> ConsoleView {
        let term = Term::stdout();
        let styles = Styles::for_term(&term);
        ConsoleView {
            line: LiveLine::new(term, styles.dim.clone()),
            styles,
            story: None,
            started: Instant::now(),
            paused_until: None,
            beyond: Vec::new(),
            bell: false,
        }
    }

    pub fn render(&mut self, record: &Record) {
        if let Some(line) = self.line_of(record) {
            self.clear();
            out(&line);
        }
        if self.bell
            && matches!(
                record.event,
                Event::Complete { .. }
                    | Event::Error { .. }
                    | Event::Paused { .. }
                    | Event::Question { .. }
            )
        {
            super::ring_bell();
        }
        self.tick();
    }

    /// The line (or lines) an event prints, if it prints any; the live
    /// line's figures follow the event.
    fn line_of(&mut self, record: &Record) -> Option<String> {
        let s = &self.styles;
        match &record.event {
            Event::RunStarted {
                branch,
                source,
                stories_total,
                stories_done,
                resumed,
            } => Some(format!(
                "{} {} on {} ({source}: {stories_done}/{stories_total} stories done)",
                s.bold
                    .apply_to(if *resumed { "Resuming" } else { "Starting" }),
                record.change,
                s.bold.apply_to(branch),
            )),
            Event::StoryProgress { .. } => Some(self.story_started(&record.event)),
            Event::StoryEvent { event, .. } => {
                self.agent_said(event);
                None
            }
            Event::AttemptFinished { .. } => Some(self.attempt_finished(&record.event)),
            Event::Checks { passed, failed, .. } => Some(format!(
                "  checks: {} passed{}",
                passed.len(),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!(", {} failed ({})", failed.len(), failed.join(", "))
                }
            )),
            Event::Error {
                reason,
                message,
                totals,
                ..
            } => Some(format!(
                "{} run ended ({reason}): {message}\n  {}{}",
                s.bad.apply_to("✗"),
                spent_in_all(totals),
                self.beyond_summary()
            )),
            Event::Complete {
                stories_total,
                totals,
                ..
            } => Some(format!(
                "{} all {stories_total} stories done in {} · {}{}",
                s.good.apply_to("✓"),
                clock(self.started.elapsed().as_secs()),
                spent_in_all(totals),
                self.beyond_summary()
            )),
            // Everything else the run says in passing is a notice.
            other => {
                self.remember_beyond(other);
                Notice::of(record).map(|notice| self.notice_line(&notice))
            }
        }
    }

    /// `▶ story 2/3 · 2. Farewell · attempt 1/4`; the live line starts
    /// over for the attempt.
    fn story_started(&mut self, event: &Event) -> String {
        let Event::StoryProgress {
            story_id,
            title,
            index,
            total,
            attempt,
            max_attempts,
            role,
            role_iteration,
            role_max_iterations,
        } = event
        else {
            return String::new();
        };
        self.story = Some((story_id.clone(), *index, *total, *attempt, *max_attempts));
        self.line.begin();
        let step = match (role, role_iteration, role_max_iterations) {
            (Some(role), Some(n), Some(max)) => format!("{role} {n}/{max} · attempt {attempt}"),
            _ => format!("attempt {attempt}/{max_attempts}"),
        };
        format!(
            "{} story {index}/{total} · {story_id}. {title} · {step}",
            self.styles.bold.apply_to("▶")
        )
    }

    /// What the agent said feeds the live line: its last words, what it
    /// spent.
    fn agent_said(&mut self, event: &AgentEvent) {
        self.line.follow(event);
    }

    /// How an attempt ended, and where its work is.
    fn attempt_finished(&self, event: &Event) -> String {
        let Event::AttemptFinished {
            story_id,
            attempt,
            outcome,
            reason,
            preserved,
            checkpoint,
            role,
            unchanged,
        } = event
        else {
            return String::new();
        };
        let s = &self.styles;
        let elapsed = self.line.elapsed_secs();
        let who = role
            .map(|role| format!("the {role}'s "))
            .unwrap_or_default();
        // A question is told by the notice that follows, with the
        // command that answers it.
        let reason = match outcome {
            AttemptOutcome::Question => String::new(),
            _ => format!(": {}", reason.as_deref().unwrap_or("no reason given")),
        };
        let failed = format!(
            "  {} {who}attempt {attempt} {}{reason}",
            s.bad.apply_to("✗"),
            outcome_word(*outcome),
        );
        match outcome {
            AttemptOutcome::Complete => format!(
                "  {} story {story_id} done in {elapsed:.1}s · checkpoint {}",
                s.good.apply_to("✓"),
                checkpoint.as_deref().map(short).unwrap_or_default()
            ),
            AttemptOutcome::Passed => format!(
                "  {} {}passed story {story_id} in {elapsed:.1}s{}",
                s.good.apply_to("✓"),
                role.map(|role| format!("the {role} ")).unwrap_or_default(),
                preserved
                    .as_deref()
                    .map(|kept| format!(" · work so far kept at {kept}"))
                    .unwrap_or_default()
            ),
            _ if role.is_some_and(|role| !role.edits()) => failed,
            _ if *unchanged => format!("{failed}\n    it changed nothing; nothing to revert"),
            _ => format!(
                "{failed}\n    work kept at {}; worktree reverted to the last checkpoint",
                preserved.as_deref().unwrap_or("-"),
            ),
        }
    }

    /// A notice's line; a pause also starts the countdown.
    /// Note what an attempt did beyond its story, for the summary.
    fn remember_beyond(&mut self, event: &Event) {
        match event {
            Event::TicksOutsideStory {
                story_id,
                attempt,
                stories,
            } => self.beyond.push(format!(
                "story {story_id} attempt {attempt} ticked story {} (put back)",
                crate::events::TickedStory::ids(stories)
            )),
            Event::GitDirChanged {
                story_id,
                attempt,
                what,
                ..
            } => self.beyond.push(format!(
                "story {story_id} attempt {attempt} changed {what} (undone)"
            )),
            _ => {}
        }
    }

    /// The final summary's lines on what attempts did beyond their
    /// stories, each on a line of its own.
    fn beyond_summary(&self) -> String {
        self.beyond
            .iter()
            .map(|said| {
                format!(
                    "\n  {} {said}",
                    self.styles.warn.apply_to("beyond its story:")
                )
            })
            .collect()
    }

    fn notice_line(&mut self, notice: &Notice) -> String {
        let (s, text) = (&self.styles, &notice.text);
        match notice.kind {
            NoticeKind::Warning => format!("{} {text}", s.warn.apply_to(notice.label())),
            NoticeKind::Flag | NoticeKind::Undone | NoticeKind::Note | NoticeKind::Question => {
                format!("  {} {text}", s.warn.apply_to(notice.label()))
            }
            NoticeKind::Paused { until_unix } => {
                self.paused_until = Some(until_unix);
                format!(
                    "  {} {text}; no retry is spent, waiting until the limit resets (about {})",
                    s.warn.apply_to("⏸"),
                    clock(until_unix.saturating_sub(crate::state::now()))
                )
            }
        }
    }

    /// Redraw the live status line (terminals only).
    pub fn tick(&mut self) {
        if !self.line.is_live() {
            return;
        }
        if let Some(until) = self.paused_until {
            let left = until.saturating_sub(crate::state::now());
            if left > 0 {
                self.line.show_plain(&format!(
                    "  paused for a usage limit · resuming in {}",
                    clock(left)
                ));
                return;
            }
            self.paused_until = None;
        }
        let Some((id, index, total, attempt, max)) = &self.story else {
            return;
        };
        let head = format!("  story {index}/{total} ({id}) · attempt {attempt}/{max}");
        self.line.show(&head);
    }

    pub fn clear(&mut self) {
        self.line.clear();
    }
}

fn outcome_word(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Failed => "failed",
        AttemptOutcome::Rejected => "rejected",
        AttemptOutcome::RateLimited => "usage-limited",
        AttemptOutcome::NoSignal => "ended without a promise",
        AttemptOutcome::AgentError => "hit an agent error",
        AttemptOutcome::TimedOut => "timed out",
        AttemptOutcome::Interrupted => "was interrupted",
        AttemptOutcome::Question => "asked a question",
        AttemptOutcome::Complete | AttemptOutcome::Passed | AttemptOutcome::Running => "ended",
    }
}

/// `2 attempts · 1234 tokens · $0.05`, unknown where nothing was reported.
fn spent_in_all(totals: &crate::state::Totals) -> String {
    format!(
        "{} · {}{}",
        super::status::plural(totals.attempts as usize, "attempt"),
        usage(totals.tokens(), totals.cost_usd),
        super::status::estimated(totals.cost_estimated && totals.cost_usd > 0.0)
    )
}

fn short(id: &str) -> String {
    id.chars().take(10).collect()
}
