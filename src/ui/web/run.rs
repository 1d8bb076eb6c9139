//! One run, as `status` reports it and `log` lists it: its state, its
//! stories with their tasks and attempts (outcome, reason, where the work
//! is kept, time, tokens, cost, and what each was flagged for), the
//! stories at work in a parallel run, and the notices of its events.

use super::{cost, escape, outcome, plural};
use crate::events::Record;
use crate::serve::{Action, AttemptRef, Route, answer_path};
use crate::state::{AttemptRecord, Report, StoryRecord};
use crate::ui::digest::Notice;

/// How many of the run's notices the page lists, newest first.
const NOTICES_SHOWN: usize = 50;

/// What the run page shows.
pub struct RunView<'a> {
    /// `<change>` or `history/<dir>`.
    pub label: &'a str,
    pub history: bool,
    pub report: &'a Report<'a>,
    /// The run's events that are not agent output, oldest first.
    pub milestones: &'a [Record],
}

/// The inner HTML of the run page.
pub fn run_main(view: &RunView) -> String {
    let report = view.report;
    let mut html = format!("<h1>{}</h1>", escape(report.change));
    html.push_str(&headline(view));
    html.push_str(&facts(view));
    html.push_str("<h2>Stories</h2><div class=\"stories\">");
    for story in &report.stories {
        html.push_str(&story_card(view, story));
    }
    html.push_str("</div>");
    html.push_str(&notices(view.milestones));
    html
}

/// State, reason, whether a loop drives it, progress; and the stop button.
fn headline(view: &RunView) -> String {
    let report = view.report;
    let mut line = format!("<p><strong class=\"state\">{}</strong>", report.state);
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
    line.push_str(&format!(
        " · {}/{} stories done</p>",
        report.stories_done, report.stories_total
    ));
    if report.alive && !view.history {
        line.push_str(&format!(
            "<p><a class=\"button danger\" href=\"{}\">Stop the run</a></p>",
            escape(&Route::Confirm(view.label.to_owned(), Action::Stop).path())
        ));
    }
    line
}

fn facts(view: &RunView) -> String {
    let report = view.report;
    let mut rows: Vec<(&str, String)> = vec![
        ("branch", escape(report.branch)),
        ("agent", escape(report.agent)),
        ("source", escape(report.source)),
        ("started from", escape(&report.original)),
    ];
    if view.history {
        rows.push(("kept as", escape(view.label)));
    }
    if let Some(path) = &report.worktree {
        let removed = if report.worktree_removed {
            " (removed)"
        } else {
            ""
        };
        rows.push(("worktree", format!("{}{removed}", escape(path))));
    }
    if let Some(width) = report.parallel {
        rows.push(("parallel", format!("up to {width} stories at once")));
    }
    for worker in &report.workers {
        let at = AttemptRef {
            run: view.label.to_owned(),
            story: worker.story.clone(),
            attempt: worker.attempt,
        };
        rows.push((
            "at work",
            format!(
                "<a href=\"{}\">story {} · attempt {}</a> · in {}",
                escape(&Route::Attempt(at).path()),
                escape(&worker.story),
                worker.attempt,
                escape(&worker.worktree)
            ),
        ));
    }
    if let (Some(story), false) = (report.current_story, report.state.is_over()) {
        rows.push((
            "current",
            format!(
                "story {}, attempt {}",
                escape(story),
                report.current_attempt
            ),
        ));
    }
    if let Some(until) = report.paused_until {
        rows.push((
            "paused",
            format!(
                "{} — resuming in {}s",
                escape(report.pause_reason.unwrap_or("usage limit")),
                until.saturating_sub(crate::state::now())
            ),
        ));
    }
    if let Some(failure) = report.last_failure {
        rows.push(("last failure", escape(failure)));
    }
    if let Some(learnings) = &report.learnings {
        rows.push((
            "learnings",
            format!("{} bytes in {}", learnings.bytes, escape(&learnings.path)),
        ));
    }
    rows.push(("totals", totals(report)));
    let mut html = String::from("<dl class=\"facts\">");
    for (label, value) in rows {
        html.push_str(&format!("<dt>{label}</dt><dd>{value}</dd>"));
    }
    html.push_str("</dl>");
    html
}

fn totals(report: &Report) -> String {
    let totals = &report.totals;
    let tokens = match (totals.tokens_unknown, totals.tokens()) {
        (true, 0) => "tokens unknown".to_owned(),
        (unknown, _) => format!(
            "{} tokens in, {} out{}",
            totals.input_tokens(),
            totals.output_tokens,
            if unknown { " (some unknown)" } else { "" }
        ),
    };
    format!(
        "{} · {tokens} · {}",
        plural(totals.attempts as usize, "attempt"),
        cost(totals.cost_usd)
    )
}

fn story_card(view: &RunView, story: &StoryRecord) -> String {
    let report = view.report;
    let current = !report.state.is_over()
        && !story.done
        && (report.current_story == Some(story.id.as_str())
            || report.workers.iter().any(|w| w.story == story.id));
    let (mark, class) = match (story.done, current) {
        (true, _) => ("<span class=\"mark good\">✓</span>", "card story done"),
        (false, true) => ("<span class=\"mark\">▸</span>", "card story current"),
        (false, false) => ("<span class=\"mark muted\">·</span>", "card story"),
    };
    let mut html = format!(
        "<section class=\"{class}\" data-story=\"{id}\" data-done=\"{done}\">\
         <h3>{mark}{id}. {title}</h3><span class=\"muted\">{tasks_done}/{tasks_total} tasks{state}</span>",
        id = escape(&story.id),
        done = story.done,
        title = escape(&story.title),
        tasks_done = story.tasks_done,
        tasks_total = story.tasks_total,
        state = if story.done {
            " · done"
        } else if current {
            " · at work"
        } else {
            ""
        },
    );
    if !story.attempts.is_empty() {
        html.push_str("<ul class=\"attempts\">");
        for attempt in &story.attempts {
            html.push_str(&attempt_item(view, story, attempt));
        }
        html.push_str("</ul>");
    }
    html.push_str("</section>");
    html
}

/// How long an attempt took, or, while it runs, how long it has been at
/// work: the words its own page uses.
pub(super) fn attempt_time(running: bool, started_at: u64, duration_ms: u64) -> String {
    if running {
        let secs = crate::state::now().saturating_sub(started_at);
        format!(
            "at work for {}",
            crate::ui::duration(secs.saturating_mul(1000))
        )
    } else {
        crate::ui::duration(duration_ms)
    }
}

fn attempt_item(view: &RunView, story: &StoryRecord, a: &AttemptRecord) -> String {
    let at = AttemptRef {
        run: view.label.to_owned(),
        story: story.id.clone(),
        attempt: a.attempt,
    };
    let role = a.role.map(|role| format!(" {role}")).unwrap_or_default();
    let kept = match (&a.checkpoint, &a.preserved) {
        (Some(commit), _) => format!("checkpoint {}", &commit[..commit.len().min(10)]),
        (None, Some(name)) => name.clone(),
        (None, None) => "-".to_owned(),
    };
    let mut html = format!(
        "<li><a href=\"{href}\">#{n}{role}</a> {outcome}{by} · {kept} · {time} · {tokens} tokens · {cost}",
        href = escape(&Route::Attempt(at).path()),
        n = a.attempt,
        role = escape(&role),
        outcome = outcome(a.outcome),
        by = escape(&crate::ui::by_other_agent(
            a.agent.as_deref(),
            view.report.agent
        )),
        kept = escape(&kept),
        time = attempt_time(
            a.outcome == crate::state::AttemptOutcome::Running,
            a.started_at,
            a.duration_ms
        ),
        tokens = a.tokens(),
        cost = cost(a.cost_usd),
    );
    if let Some(reason) = &a.reason {
        html.push_str(&format!(
            "<span class=\"remark muted\">{}</span>",
            escape(reason)
        ));
    }
    if let Some(question) = &a.asked {
        html.push_str(&format!(
            "<span class=\"remark warn\">asked: {}</span>",
            escape(question)
        ));
        if waits_on(view, story, a) {
            html.push_str(&format!(
                " <a class=\"button\" href=\"{}\">Answer</a>",
                escape(&answer_path(view.label, &story.id))
            ));
        }
    }
    if let Some(flag) = &a.flag {
        html.push_str(&format!(
            "<span class=\"remark warn\">flagged: {}</span>",
            escape(flag.describe())
        ));
    }
    for remark in crate::ui::attempt_remarks(&a.outside_ticks, &a.git_dir_changes, &a.added_tasks) {
        html.push_str(&format!(
            "<span class=\"remark warn\">{}</span>",
            escape(&remark)
        ));
    }
    html.push_str("</li>");
    html
}

/// Whether `story` still waits on the question attempt `a` asked: its
/// last, unanswered, in a run that goes on. An answer given elsewhere and
/// not yet taken by the loop is refused by the answer page itself.
fn waits_on(view: &RunView, story: &StoryRecord, a: &AttemptRecord) -> bool {
    !view.history
        && !view.report.state.is_over()
        && !story.done
        && a.answer.is_none()
        && story
            .attempts
            .last()
            .is_some_and(|last| last.attempt == a.attempt)
}

/// The run's notices, newest first: warnings, flags, findings of a role
/// that sent a story back, changes undone in the git directory, pauses.
fn notices(milestones: &[Record]) -> String {
    let notices: Vec<Notice> = milestones
        .iter()
        .rev()
        .filter_map(Notice::of)
        .take(NOTICES_SHOWN)
        .collect();
    if notices.is_empty() {
        return String::new();
    }
    let mut html = String::from("<h2>Notices</h2><ul class=\"notices\">");
    for notice in notices {
        let class = match notice.label() {
            "note:" => "muted",
            _ => "warn",
        };
        html.push_str(&format!(
            "<li><span class=\"{class}\">{}</span> {}</li>",
            notice.label(),
            escape(&notice.text)
        ));
    }
    html.push_str("</ul>");
    html
}
