//! `git ralph status` for people: the run, story by story, with colour on
//! a terminal.

use super::{Styles, out as line_out};
use crate::state::{AttemptRecord, FinishChoice, Report, RunStatus, StoryRecord};

/// `git ralph status` for people.
pub fn print(report: &Report) {
    let term = console::Term::stdout();
    let s = Styles::for_term(&term);
    print_run(report, &s);
    print_placement(report, &s);
    line_out(&s.field(
        "stories:",
        format_args!("{}/{} done", report.stories_done, report.stories_total),
    ));
    for story in &report.stories {
        line_out(&story_line(report, story, &s));
    }
    print_waiting(report, &s);
    print_now(report, &s);
    line_out(&s.field("totals:", totals_line(report)));
}

/// The stories waiting for an answer, each with its question.
fn print_waiting(report: &Report, s: &Styles) {
    for waiting in &report.waiting {
        let how = if waiting.answered {
            format!(
                "answered, taken up at the run's next turn: {}",
                waiting.question
            )
        } else {
            format!(
                "waits for an answer: {} (git ralph answer {} {} \"...\")",
                waiting.question, report.change, waiting.story
            )
        };
        line_out(&s.field("question:", format_args!("story {} {how}", waiting.story)));
    }
}

/// The run: its change, branch, state, source and agent, and where it
/// started from.
fn print_run(report: &Report, s: &Styles) {
    line_out(&s.field("change:", report.change));
    let gone = match (report.state, report.finished_with) {
        (RunStatus::Aborted, _) => Some("aborted"),
        (RunStatus::Finished, Some(FinishChoice::Cleanup)) => Some("finished"),
        _ => None,
    };
    match gone {
        Some(kept_as) => line_out(&s.field(
            "branch:",
            format_args!(
                "{} (deleted; its tip is kept at refs/ralph/{}/{kept_as})",
                report.branch, report.change
            ),
        )),
        None => line_out(&s.field("branch:", report.branch)),
    }
    let mut line = s.field("state: ", super::state_words(report.state, report.reason));
    if let Some(with) = report.finished_with {
        line.push_str(&format!(" with {with}"));
    }
    line.push_str(&match report.pid {
        Some(pid) => format!(" · loop alive (pid {pid})"),
        None => " · no loop process".to_owned(),
    });
    line_out(&line);
    line_out(&s.field(
        "source:",
        format_args!("{} · agent: {}", report.source, report.agent),
    ));
    line_out(&s.field("started from:", &report.original));
}

/// Where the run works: its own worktree, and a parallel run's stories at
/// work, each in its worktree.
fn print_placement(report: &Report, s: &Styles) {
    if let Some(path) = &report.worktree {
        let removed = if report.worktree_removed {
            " (removed)"
        } else {
            ""
        };
        line_out(&s.field("worktree:", format_args!("{path}{removed}")));
    }
    if let Some(width) = report.parallel {
        line_out(&s.field("parallel:", format_args!("up to {width} stories at once")));
    }
    for worker in &report.workers {
        line_out(&s.field(
            "at work:",
            format_args!(
                "story {} · attempt {} · in {}",
                worker.story, worker.attempt, worker.worktree
            ),
        ));
    }
}

/// One story: its mark, id and title, its tasks when it has any, its
/// attempts, and whether it is being worked on.
fn story_line(report: &Report, story: &StoryRecord, s: &Styles) -> String {
    let ended = report.state.is_over();
    let mark = if story.done {
        s.good.apply_to("✓").to_string()
    } else {
        " ".to_owned()
    };
    let at_work = !ended && report.workers.iter().any(|w| w.story == story.id);
    let current = !ended && report.current_story == Some(story.id.as_str()) && !story.done;
    let attempts: Vec<String> = story
        .attempts
        .iter()
        .map(|a| attempt_words(report, a, s))
        .collect();
    let tasks = if story.tasks_total > 0 {
        format!(" [{}/{} tasks]", story.tasks_done, story.tasks_total)
    } else {
        String::new()
    };
    format!(
        "  {mark} {}. {}{tasks}{}{}",
        story.id,
        story.title,
        if attempts.is_empty() {
            String::new()
        } else {
            format!(" · {}", attempts.join(", "))
        },
        if at_work {
            format!(" {}", s.bold.apply_to("← at work"))
        } else if current && report.workers.is_empty() {
            format!(" {}", s.bold.apply_to("← current"))
        } else {
            String::new()
        }
    )
}

/// `#2 failed by codex (flagged: …; …)`.
fn attempt_words(report: &Report, a: &AttemptRecord, s: &Styles) -> String {
    let role = a.role.map(|role| format!("{role} ")).unwrap_or_default();
    let mut said = format!(
        "#{} {role}{}{}",
        a.attempt,
        a.outcome.describe(),
        super::by_other_agent(a.agent.as_deref(), report.agent)
    );
    let mut remarks = Vec::new();
    if let Some(flag) = &a.flag {
        remarks.push(format!("{} {flag}", s.warn.apply_to("flagged:")));
    }
    remarks.extend(super::attempt_remarks(
        &a.outside_ticks,
        &a.git_dir_changes,
        &a.added_tasks,
    ));
    if !remarks.is_empty() {
        said.push_str(&format!(" ({})", remarks.join("; ")));
    }
    said
}

/// What holds now: the story at work, a pause, the last failure, the
/// learnings file.
fn print_now(report: &Report, s: &Styles) {
    let ended = report.state.is_over();
    if let Some(story) = report.current_story.filter(|_| !ended)
        && report.workers.is_empty()
    {
        line_out(&s.field(
            "current:",
            format_args!("story {story}, attempt {}", report.current_attempt),
        ));
    }
    if let Some(until) = report.paused_until {
        line_out(&s.field(
            "paused:",
            format_args!(
                "{} — resuming in {}s",
                report.pause_reason.unwrap_or("usage limit"),
                until.saturating_sub(crate::state::now())
            ),
        ));
    }
    if let Some(failure) = report.last_failure {
        line_out(&s.field("last failure:", failure));
    }
    if let Some(learnings) = &report.learnings {
        line_out(&s.field(
            "learnings:",
            format_args!("{} bytes in {}", learnings.bytes, learnings.path),
        ));
    }
}

/// `3 attempts (2 at work) · 1200 tokens in, 300 out · $0.05`, with
/// `unknown` for what no agent reported.
fn totals_line(report: &Report) -> String {
    let totals = &report.totals;
    let tokens = match (totals.tokens_unknown, totals.tokens()) {
        (_, 0) => "tokens unknown".to_owned(),
        (unknown, _) => format!(
            "{} tokens in, {} out{}",
            totals.input_tokens(),
            totals.output_tokens,
            if unknown {
                " (some attempts' tokens unknown)"
            } else {
                ""
            }
        ),
    };
    let cost = if totals.cost_usd > 0.0 {
        format!(
            "${:.2}{}",
            totals.cost_usd,
            estimated(totals.cost_estimated)
        )
    } else {
        "cost unknown".to_owned()
    };
    let at_work = report.workers.len();
    let attempts = if at_work > 0 && !report.state.is_over() {
        format!(
            "{} ({at_work} at work)",
            plural(totals.attempts as usize, "attempt")
        )
    } else {
        plural(totals.attempts as usize, "attempt")
    };
    format!("{attempts} · {tokens} · {cost}")
}

/// The mark of a cost worked out from the contract's price table.
pub fn estimated(estimated: bool) -> &'static str {
    if estimated { " (estimated)" } else { "" }
}

/// `n thing` or `n things`.
pub fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// One line per run, for `status` when there are several and `--all`.
pub fn print_runs(runs: &[(String, Report)], earlier: &[(String, Report)]) {
    let s = Styles::for_term(&console::Term::stdout());
    for (title, list) in [("runs:", runs), ("earlier runs:", earlier)] {
        if list.is_empty() {
            continue;
        }
        line_out(&s.bold.apply_to(title).to_string());
        for (name, report) in list {
            line_out(&format!(
                "  {name}  {} · {}/{} stories · {} · {}",
                super::state_words(report.state, report.reason),
                report.stories_done,
                report.stories_total,
                plural(report.totals.attempts as usize, "attempt"),
                report.branch
            ));
        }
    }
}
