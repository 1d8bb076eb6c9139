//! The pull request's title and body, written from the run's record alone:
//! the issues it closes (a run over GitHub or GitLab issues), each story
//! with its outcome and attempts, the checks that ran and how
//! they did, tokens and cost, and every flag an attempt carries. Flags are
//! read generically (any field of an attempt's record that is not one of
//! the ordinary ones below and holds something), so what later releases add
//! to the record shows up here without a change.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::state::{AttemptRecord, RunState, StoryRecord};
use crate::stories::SourceKind;

/// GitHub refuses bodies over 65,536 characters; GitLab allows more.
const MAX_BODY_CHARS: usize = 60_000;
/// A reason, a flag's text or a question, in one line of the body.
const MAX_LINE_CHARS: usize = 300;

/// The fields of an attempt's record that every attempt has, or that the
/// body shows in its own words. Every other field is a flag.
const ORDINARY_FIELDS: &[&str] = &[
    "attempt",
    "outcome",
    "reason",
    "preserved",
    "checkpoint",
    "started_at",
    "duration_ms",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "log",
    "failed_checks",
    "passed_checks",
    "progress",
    // Who ran it and in which role: said in the attempt's line.
    "agent",
    "role",
    // How the worktree was read: the engine's business, not a reviewer's.
    "scan",
];

/// The title: the change's name as words, `add-dark-mode` → `Add dark mode`.
pub fn title(change: &str) -> String {
    let words = change.replace(['-', '_'], " ");
    let mut chars = words.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => change.to_owned(),
    }
}

/// The body, in GitHub-flavoured markdown (GitLab reads it too).
pub fn body(state: &RunState, base: Option<&str>) -> String {
    let mut body = summary(state, base);
    body.push_str(&closes(state));
    body.push_str(&stories_table(state.stories()));
    let agent = state
        .settings()
        .agent_command
        .as_deref()
        .unwrap_or(&state.settings().agent);
    let tail = format!(
        "{}{}{}{}",
        checks(state.stories()),
        spending(state),
        flags(state.stories()),
        footer(state.change())
    );
    let room = MAX_BODY_CHARS.saturating_sub(body.len() + tail.len());
    body.push_str(&attempts(state.stories(), agent, room));
    body.push_str(&tail);
    body
}

fn summary(state: &RunState, base: Option<&str>) -> String {
    let done = state.stories_done();
    let total = state.stories().len();
    let ending = match state.reason() {
        Some(reason) => format!(" (the run ended: {reason})"),
        None => String::new(),
    };
    let onto = base
        .map(|base| format!(", to be merged into `{base}`"))
        .unwrap_or_default();
    format!(
        "git-ralph worked through the change `{}` on `{}`{onto}: **{done} of {total} {} done**{ending}. \
         Each story that was done is one commit, its receipts in the commit's trailers.\n\n",
        state.change(),
        state.branch(),
        if total == 1 { "story" } else { "stories" },
    )
}

/// For a run over GitHub or GitLab issues, one `Closes` line per finished
/// issue, so that merging the request closes it; an issue whose story is
/// not done stays open. A GitLab issue is named with its project's path
/// (`group/app#2`), which holds whichever project the request is in.
fn closes(state: &RunState) -> String {
    let settings = state.settings();
    let prefix = match (settings.source, settings.tracker.project.as_deref()) {
        (Some(SourceKind::Github), _) => "#".to_owned(),
        (Some(SourceKind::Gitlab), Some(project)) if project.contains('/') => {
            format!("{project}#")
        }
        (Some(SourceKind::Gitlab), _) => "#".to_owned(),
        _ => return String::new(),
    };
    let mut out: String = state
        .stories()
        .iter()
        .filter(|story| story.done)
        .map(|story| format!("Closes {prefix}{}\n", story.id))
        .collect();
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn stories_table(stories: &[StoryRecord]) -> String {
    let mut out =
        String::from("## Stories\n\n| story | title | outcome | attempts |\n|---|---|---|---|\n");
    for story in stories {
        let outcome = if story.done {
            "done".to_owned()
        } else if story.tasks_total > 0 {
            format!(
                "not done ({} of {} tasks)",
                story.tasks_done, story.tasks_total
            )
        } else {
            "not done".to_owned()
        };
        let attempts = if story.attempts.is_empty() {
            "none".to_owned()
        } else {
            let outcomes: Vec<&str> = story
                .attempts
                .iter()
                .map(|attempt| attempt.outcome.describe())
                .collect();
            format!("{}: {}", story.attempts.len(), outcomes.join(", "))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {outcome} | {attempts} |",
            cell(&story.id),
            cell(&story.title)
        );
    }
    out.push('\n');
    out
}

/// One line per attempt, as many as fit in `room` characters; an attempt
/// another agent than the run's ran names it.
fn attempts(stories: &[StoryRecord], agent: &str, room: usize) -> String {
    let lines: Vec<String> = stories
        .iter()
        .flat_map(|story| {
            story
                .attempts
                .iter()
                .map(move |a| attempt_line(story, a, agent))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Attempts\n\n");
    for (shown, line) in lines.iter().enumerate() {
        let rest = lines.len() - shown;
        if out.len() + line.len() + 80 > room {
            let _ = writeln!(
                out,
                "- … {rest} more attempt{} (see `git ralph log`)",
                if rest == 1 { "" } else { "s" }
            );
            break;
        }
        out.push_str(line);
    }
    out.push('\n');
    out
}

fn attempt_line(story: &StoryRecord, attempt: &AttemptRecord, agent: &str) -> String {
    let mut parts = vec![attempt.outcome.describe().to_owned()];
    if let Some(reason) = &attempt.reason {
        parts[0] = format!("{}: {}", parts[0], one_line(reason));
    }
    if let Some(role) = attempt.role {
        parts.push(format!("as the {role}"));
    }
    if let Some(ran) = attempt.agent.as_deref().filter(|ran| *ran != agent) {
        parts.push(format!("by {}", code(ran)));
    }
    if let Some(commit) = &attempt.checkpoint {
        parts.push(format!("commit `{}`", commit.get(..10).unwrap_or(commit)));
    }
    if let Some(kept) = &attempt.preserved {
        parts.push(format!("kept at `{kept}`"));
    }
    let tokens = attempt.tokens();
    if tokens > 0 || attempt.cost_usd > 0.0 {
        parts.push(crate::state::usage_words(tokens, attempt.cost_usd).replace(" · ", ", "));
    }
    if !attempt.passed_checks.is_empty() {
        let names: Vec<String> = attempt.passed_checks.iter().map(|n| code(n)).collect();
        parts.push(format!("passed {}", names.join(", ")));
    }
    if !attempt.failed_checks.is_empty() {
        let names: Vec<String> = attempt.failed_checks.iter().map(|(n, _)| code(n)).collect();
        parts.push(format!("failed {}", names.join(", ")));
    }
    format!(
        "- story {} attempt {}: {}\n",
        story.id,
        attempt.attempt,
        parts.join("; ")
    )
}

fn checks(stories: &[StoryRecord]) -> String {
    // name → (passed, failed), in the order they first ran.
    let mut order: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    let mut count = |name: &str, passed: bool| {
        if !counts.contains_key(name) {
            order.push(name.to_owned());
        }
        let entry = counts.entry(name.to_owned()).or_default();
        if passed {
            entry.0 += 1;
        } else {
            entry.1 += 1;
        }
    };
    for attempt in stories.iter().flat_map(|story| &story.attempts) {
        for name in &attempt.passed_checks {
            count(name, true);
        }
        for (name, _) in &attempt.failed_checks {
            count(name, false);
        }
    }
    if order.is_empty() {
        return "## Checks\n\nNo check ran.\n\n".to_owned();
    }
    let mut out = String::from("## Checks\n\n| check | passed | failed |\n|---|---|---|\n");
    for name in order {
        let (passed, failed) = counts[&name];
        let _ = writeln!(out, "| {} | {passed} | {failed} |", cell(&code(&name)));
    }
    out.push('\n');
    out
}

fn spending(state: &RunState) -> String {
    let totals = &state.totals();
    let unknown = if totals.tokens_unknown {
        " (an agent reported no token counts, so its tokens are left out)"
    } else {
        ""
    };
    let tokens = match totals.tokens() {
        0 => "tokens unknown (no agent reported any)".to_owned(),
        all => format!(
            "{all} tokens ({} in, {} out){unknown}",
            totals.input_tokens(),
            totals.output_tokens
        ),
    };
    let cost = if totals.cost_usd > 0.0 {
        format!("${:.2}", totals.cost_usd)
    } else {
        "cost unknown".to_owned()
    };
    format!(
        "## Tokens and cost\n\n{} attempt{}, {tokens}, {cost}.\n\n",
        totals.attempts,
        if totals.attempts == 1 { "" } else { "s" },
    )
}

fn flags(stories: &[StoryRecord]) -> String {
    let lines: Vec<String> = stories
        .iter()
        .flat_map(|story| {
            story.attempts.iter().flat_map(move |attempt| {
                flags_of(attempt).into_iter().map(move |flag| {
                    format!("- story {} attempt {}: {flag}\n", story.id, attempt.attempt)
                })
            })
        })
        .collect();
    if lines.is_empty() {
        return "## Flags\n\nNone.\n\n".to_owned();
    }
    format!("## Flags\n\n{}\n", lines.concat())
}

/// The flags of one attempt: every field of its record that is not an
/// ordinary one and holds something, as `name: value`.
pub fn flags_of(attempt: &AttemptRecord) -> Vec<String> {
    match serde_json::to_value(attempt) {
        Ok(record) => flags_in(&record),
        Err(_) => Vec::new(),
    }
}

/// [`flags_of`] on the record as JSON, whatever fields it has.
fn flags_in(record: &Value) -> Vec<String> {
    let Value::Object(fields) = record else {
        return Vec::new();
    };
    // By name, whatever order the JSON map keeps.
    let mut fields: Vec<(&String, &Value)> = fields.iter().collect();
    fields.sort_by_key(|(name, _)| *name);
    fields
        .into_iter()
        .filter(|(name, _)| !ORDINARY_FIELDS.contains(&name.as_str()))
        .filter_map(|(name, value)| {
            let name = name.replace('_', " ");
            match value {
                Value::Null | Value::Bool(false) => None,
                Value::Bool(true) => Some(name),
                Value::String(text) if text.is_empty() => None,
                Value::Array(items) if items.is_empty() => None,
                Value::Object(map) if map.is_empty() => None,
                value => Some(format!("{name}: {}", one_line(&shown(value)))),
            }
        })
        .collect()
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn footer(change: &str) -> String {
    format!(
        "<sub>Written by git-ralph from the run's record (`.git/ralph/{change}/state.json`; \
         `git ralph log {change}` shows it all). `git ralph finish {change} --pr` pushes the \
         branch again and rewrites this description.</sub>\n"
    )
}

/// Text in one line, at most [`MAX_LINE_CHARS`] characters.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_LINE_CHARS {
        return line;
    }
    let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{cut}…")
}

/// Text as inline code, unless it holds a backtick.
fn code(text: &str) -> String {
    let text = one_line(text);
    if text.contains('`') {
        text
    } else {
        format!("`{text}`")
    }
}

/// Text for a table cell.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{AttemptOutcome, Flag};

    fn attempt(n: u32, outcome: AttemptOutcome) -> AttemptRecord {
        AttemptRecord::new(n, outcome, 0)
    }

    #[test]
    fn the_title_is_the_change_in_words() {
        assert_eq!(title("add-dark-mode"), "Add dark mode");
        assert_eq!(title("fix_login"), "Fix login");
        assert_eq!(title("greet"), "Greet");
    }

    #[test]
    fn ordinary_fields_are_not_flags_and_every_other_one_is() {
        let mut plain = attempt(1, AttemptOutcome::Complete);
        plain.reason = Some("fine".into());
        plain.passed_checks = vec!["cargo test".into()];
        plain.progress = false;
        assert!(flags_of(&plain).is_empty(), "{:?}", flags_of(&plain));

        let mut flagged = attempt(2, AttemptOutcome::Complete);
        flagged.flag = Some(Flag::TickOnly);
        flagged.asked = Some("Should I use X\nor Y?".into());
        assert_eq!(
            flags_of(&flagged),
            vec![
                "asked: Should I use X or Y?".to_owned(),
                "flag: no change besides ticking boxes".to_owned()
            ]
        );
    }

    #[test]
    fn a_field_added_to_the_record_later_is_listed_as_a_flag() {
        let mut record = serde_json::to_value(attempt(1, AttemptOutcome::Complete)).unwrap();
        assert!(flags_in(&record).is_empty());
        record["ticks_outside_story"] = serde_json::json!(["2.1", "3.4"]);
        record["git_dir_changed"] = serde_json::json!(true);
        record["review_findings"] = serde_json::json!([]);
        assert_eq!(
            flags_in(&record),
            vec![
                "git dir changed".to_owned(),
                "ticks outside story: 2.1, 3.4".to_owned()
            ]
        );
    }

    #[test]
    fn cells_and_code_stay_on_one_line_and_in_their_column() {
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(code("cargo test"), "`cargo test`");
        assert_eq!(code("echo `x`"), "echo `x`");
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        assert!(one_line(&long).ends_with('…'));
    }
}
