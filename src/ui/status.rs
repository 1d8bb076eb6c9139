//! `git ralph status` for people: the run, story by story, with colour on
//! a terminal.

use super::{Styles, out as line_out};
use crate::state::{AttemptOutcome, Report};

/// `git ralph status` for people.
pub fn print(report: &Report) {
    let term = console::Term::stdout();
    let s = Styles::for_term(&term);
    line_out(&format!("{} {}", s.bold.apply_to("change:"), report.change));
    line_out(&format!("{} {}", s.bold.apply_to("branch:"), report.branch));
    let mut line = format!("{} {}", s.bold.apply_to("state: "), report.state);
    if let Some(reason) = report.reason {
        line.push_str(&format!(" ({reason})"));
    }
    if let Some(with) = report.finished_with {
        line.push_str(&format!(" with {with}"));
    }
    line.push_str(&match report.pid {
        Some(pid) => format!(" · loop alive (pid {pid})"),
        None => " · no loop process".to_owned(),
    });
    line_out(&line);
    line_out(&format!(
        "{} {} · agent: {}",
        s.bold.apply_to("source:"),
        report.source,
        report.agent
    ));
    line_out(&format!(
        "{} {}",
        s.bold.apply_to("started from:"),
        report.original
    ));
    line_out(&format!(
        "{} {}/{} done",
        s.bold.apply_to("stories:"),
        report.stories_done,
        report.stories_total
    ));
    for story in report.stories {
        let mark = if story.done {
            s.good.apply_to("✓").to_string()
        } else {
            " ".to_owned()
        };
        let current = report.current_story == Some(story.id.as_str()) && !story.done;
        let attempts: Vec<String> = story
            .attempts
            .iter()
            .map(|a| match &a.flag {
                Some(flag) => format!(
                    "#{} {} ({} {flag})",
                    a.attempt,
                    outcome(a.outcome),
                    s.warn.apply_to("flagged:")
                ),
                None => format!("#{} {}", a.attempt, outcome(a.outcome)),
            })
            .collect();
        line_out(&format!(
            "  {mark} {}. {} [{}/{} tasks]{}{}",
            story.id,
            story.title,
            story.tasks_done,
            story.tasks_total,
            if attempts.is_empty() {
                String::new()
            } else {
                format!(" · {}", attempts.join(", "))
            },
            if current {
                format!(" {}", s.bold.apply_to("← current"))
            } else {
                String::new()
            }
        ));
    }
    if let Some(story) = report.current_story {
        line_out(&format!(
            "{} story {story}, attempt {}",
            s.bold.apply_to("current:"),
            report.current_attempt
        ));
    }
    if let Some(until) = report.paused_until {
        line_out(&format!(
            "{} {} — resuming in {}s",
            s.bold.apply_to("paused:"),
            report.pause_reason.unwrap_or("usage limit"),
            until.saturating_sub(crate::state::now())
        ));
    }
    if let Some(failure) = report.last_failure {
        line_out(&format!("{} {failure}", s.bold.apply_to("last failure:")));
    }
    if let Some(learnings) = &report.learnings {
        line_out(&format!(
            "{} {} bytes in {}",
            s.bold.apply_to("learnings:"),
            learnings.bytes,
            learnings.path
        ));
    }
    line_out(&format!(
        "{} {} attempts · {} tokens in, {} out · ${:.2}",
        s.bold.apply_to("totals:"),
        report.totals.attempts,
        report.totals.input_tokens
            + report.totals.cache_read_tokens
            + report.totals.cache_creation_tokens,
        report.totals.output_tokens,
        report.totals.cost_usd
    ));
}

fn outcome(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Complete => "complete",
        AttemptOutcome::Failed => "failed",
        AttemptOutcome::Rejected => "rejected",
        AttemptOutcome::RateLimited => "usage-limited",
        AttemptOutcome::NoSignal => "no signal",
        AttemptOutcome::AgentError => "agent error",
        AttemptOutcome::TimedOut => "timed out",
        AttemptOutcome::Interrupted => "interrupted",
        AttemptOutcome::Running => "running",
    }
}
