//! `log` and `show` for people: the audit trail as an indented tree, and one
//! attempt part by part. `--json` prints the same data as one JSON object.

use console::Term;

use super::digest::usage;
use super::transcript::{LineKind, event_lines};
use super::{Styles, out};
use crate::audit::{AttemptDetail, Trail, TrailAttempt};
use crate::state::AttemptOutcome;

/// Print a value as pretty JSON on stdout.
pub fn outcome_word(outcome: AttemptOutcome) -> &'static str {
    outcome.describe()
}

/// `1m05s`, `3.2s`.
pub fn duration(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

fn where_kept(attempt: &TrailAttempt) -> String {
    match (&attempt.checkpoint, &attempt.attempt_ref) {
        (Some(commit), _) => format!("checkpoint {}", &commit[..commit.len().min(10)]),
        (None, Some(name)) => name.clone(),
        (None, None) => "-".to_owned(),
    }
}

/// The audit trail: story → attempts → outcome and reason → where the work
/// is → duration, tokens, cost.
pub fn print_trail(trail: &Trail) {
    let s = Styles::for_term(&Term::stdout());
    out(&s.field(
        "run",
        format_args!(
            "{} · {} · {}{} · agent {}",
            trail.run,
            trail.branch,
            trail.state,
            trail
                .reason
                .filter(|r| !(*r == "stopped" && trail.state == "stopped"))
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            trail.agent
        ),
    ));
    for story in &trail.stories {
        let mark = if story.done {
            s.good.apply_to("✓").to_string()
        } else {
            "·".to_owned()
        };
        let tasks = if story.tasks_total > 0 {
            format!(" [{}/{} tasks]", story.tasks_done, story.tasks_total)
        } else {
            String::new()
        };
        out(&format!("{mark} {}. {}{tasks}", story.id, story.title));
        for attempt in &story.attempts {
            print_attempt(trail, attempt, &s);
        }
    }
    if let Some(learnings) = &trail.learnings {
        out(&s.field(
            "learnings:",
            format_args!("{} bytes in {}", learnings.bytes, learnings.path),
        ));
    }
    out(&s.field(
        "totals:",
        format_args!(
            "{} · {}",
            super::status::plural(trail.totals.attempts as usize, "attempt"),
            usage(trail.totals.tokens(), trail.totals.cost_usd)
        ),
    ));
}

/// One attempt of the trail: outcome, who ran it, where its work is, how
/// long it took and what it spent; then its reason, flag and remarks.
fn print_attempt(trail: &Trail, attempt: &TrailAttempt, s: &Styles) {
    let word = outcome_word(attempt.outcome);
    let word = if attempt.outcome == AttemptOutcome::Complete {
        s.good.apply_to(word).to_string()
    } else if attempt.outcome == AttemptOutcome::Running {
        word.to_owned()
    } else {
        s.bad.apply_to(word).to_string()
    };
    out(&format!(
        "    #{} {}{word}{} · {} · {} · {}",
        attempt.attempt,
        attempt
            .role
            .map(|role| format!("{role} "))
            .unwrap_or_default(),
        super::by_other_agent(attempt.agent.as_deref(), &trail.agent),
        where_kept(attempt),
        duration(attempt.duration_ms),
        usage(
            attempt.input_tokens.saturating_add(attempt.output_tokens),
            attempt.cost_usd
        )
    ));
    if let Some(reason) = &attempt.reason {
        out(&format!("       {}", s.dim.apply_to(reason)));
    }
    if let Some(flag) = &attempt.flag {
        out(&format!("       {} {flag}", s.warn.apply_to("flagged:")));
    }
    for line in exchange_lines(attempt) {
        out(&format!("       {line}"));
    }
    for remark in super::attempt_remarks(
        &attempt.outside_ticks,
        &attempt.git_dir_changes,
        &attempt.added_tasks,
    ) {
        out(&format!("       {}", s.warn.apply_to(remark)));
    }
}

/// One attempt for people, part by part, in the order prompt, transcript,
/// diff, checks; the transcript is streamed between [`AttemptPrinter::head`]
/// and [`AttemptPrinter::tail`].
pub struct AttemptPrinter {
    styles: Styles,
    json: bool,
    events: u64,
}

impl AttemptPrinter {
    pub fn new(json: bool) -> AttemptPrinter {
        AttemptPrinter {
            styles: Styles::for_term(&Term::stdout()),
            json,
            events: 0,
        }
    }

    /// Everything before the transcript; with `--json`, the object without
    /// its closing brace.
    pub fn head(&mut self, detail: &AttemptDetail, transcript: bool) {
        if self.json {
            let text = serde_json::to_string_pretty(detail).unwrap_or_else(|_| "{}".into());
            let open = text.trim_end().trim_end_matches('}').trim_end();
            out(open);
            if transcript {
                out("  ,\"transcript\": [");
            }
            return;
        }
        print_head(detail, &self.styles);
        if transcript {
            section(&self.styles, "transcript");
        }
    }

    pub fn event(&mut self, event: &crate::agent::AgentEvent) {
        self.events += 1;
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let comma = if self.events > 1 { "," } else { "" };
                out(&format!("    {comma}{line}"));
            }
            return;
        }
        let s = &self.styles;
        for (kind, line) in event_lines(event) {
            match kind {
                LineKind::ToolCall => out(&s.bold.apply_to(line).to_string()),
                LineKind::ToolError => out(&s.bad.apply_to(line).to_string()),
                LineKind::ToolOutput | LineKind::Summary => out(&s.dim.apply_to(line).to_string()),
                LineKind::Message => out(&line),
            }
        }
    }

    /// Everything after the transcript.
    pub fn tail(&mut self, detail: &AttemptDetail, transcript: bool) {
        if self.json {
            if transcript {
                out("  ]");
            }
            out("}");
            return;
        }
        print_tail(detail, &self.styles);
    }
}

/// The question an attempt ended with, and its answer, one line each.
fn exchange_lines(attempt: &TrailAttempt) -> Vec<String> {
    let Some(asked) = &attempt.asked else {
        return Vec::new();
    };
    let mut lines = vec![format!("asked: {asked}")];
    match &attempt.answer {
        Some(answer) => lines.push(format!("answer: {answer}")),
        None if attempt.outcome == AttemptOutcome::Question => {
            lines.push("answer: none yet".to_owned());
        }
        None => {}
    }
    lines
}

fn section(s: &Styles, name: &str) {
    out(&format!("\n{}", s.bold.apply_to(format!("── {name} ──"))));
}

fn print_head(detail: &AttemptDetail, s: &Styles) {
    let a = &detail.record;
    out(&s.field(
        "attempt",
        format_args!(
            "{}/{} · {} · {}{}{} · {} · {}",
            detail.story,
            a.attempt,
            detail.title,
            a.role
                .map(|role| format!("the {role}: "))
                .unwrap_or_default(),
            outcome_word(a.outcome),
            a.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default(),
            where_kept(a),
            usage(a.input_tokens.saturating_add(a.output_tokens), a.cost_usd)
        ),
    ));
    for line in exchange_lines(a) {
        out(&line);
    }
    if let Some(prompt) = &detail.prompt {
        section(s, "prompt");
        out(prompt.trim_end());
    }
}

fn print_tail(detail: &AttemptDetail, s: &Styles) {
    if let Some(diff) = &detail.diff {
        section(s, "diff");
        if diff.is_empty() {
            out("(no change)");
        }
        for line in diff.lines() {
            let styled = if line.starts_with('+') && !line.starts_with("+++") {
                s.good.apply_to(line).to_string()
            } else if line.starts_with('-') && !line.starts_with("---") {
                s.bad.apply_to(line).to_string()
            } else {
                line.to_owned()
            };
            out(&styled);
        }
    }
    if let Some(checks) = &detail.checks {
        section(s, "checks");
        if checks.is_empty() {
            out("(no checks ran)");
        }
        for check in checks {
            if check.passed {
                out(&format!("{} {}", s.good.apply_to("✓"), check.name));
            } else {
                out(&format!("{} {}", s.bad.apply_to("✗"), check.name));
                if let Some(output) = &check.output {
                    for line in output.lines() {
                        out(&format!("    {line}"));
                    }
                }
            }
        }
    }
}

/// `show --patch`: the attempt's patch alone, byte for byte, for `git
/// apply`; a note on stderr when it changed nothing.
pub fn print_patch(detail: &AttemptDetail) {
    match detail.diff.as_deref() {
        Some(patch) if !patch.is_empty() => super::out_raw(patch),
        _ => super::note(&format!(
            "attempt {}/{} changed nothing: there is no patch",
            detail.story, detail.record.attempt
        )),
    }
}
