//! The open issues of the beads tracker as stories (`--source beads`).
//!
//! beads keeps its issues in `.beads/issues.jsonl`, one JSON object per
//! line, as `bd` exports them. Of each, the run reads `id` (the story's
//! id), `title`, `description` (the story's text, whose task list gives its
//! tasks), `design` and `notes` (shown after the description),
//! `acceptance_criteria` (one criterion a line), `status`, `priority` (0
//! first, 2 when missing), `issue_type`, `labels`, `created_at` (ties of
//! priority go to the older issue) and `dependencies` (`depends_on_id` and
//! `type`); other fields are ignored.
//!
//! The work is the issues whose status is `open`, `in_progress` or
//! `blocked` and whose type is a kind of work (`task`, `bug`, `feature`,
//! `epic`, `chore`, or none). Dependencies are honoured as `bd ready` does:
//! a `blocks` dependency makes the issue wait for the other one, and a
//! parent (an epic) waits for its children (`parent-child`). A dependency
//! on a closed issue, or on one the file does not hold, is met; an issue
//! that waits on one the run will not work on (deferred, say) is left out,
//! with a warning, and so is anything waiting on it. Closing the finished
//! issues (`bd close`) is the user's to do: `finish` offers the command.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::issues::{Issue, IssuesError, Snapshot};
use super::{SourceKind, StoriesError, Warning, WarningKind};

/// The file `--source beads` reads, relative to the repository root.
pub const DEFAULT_FILE: &str = ".beads/issues.jsonl";
/// The priority of an issue that gives none: beads' default.
const DEFAULT_PRIORITY: i64 = 2;
/// Statuses of issues that are work.
const WORK_STATUSES: &[&str] = &["open", "in_progress", "blocked"];
/// Statuses of issues that are done with.
const DONE_STATUSES: &[&str] = &["closed", "tombstone"];
/// Types of issues that are work for a coding agent.
const WORK_TYPES: &[&str] = &["task", "bug", "feature", "epic", "chore"];

#[derive(Deserialize)]
struct Bead {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    design: String,
    #[serde(default)]
    acceptance_criteria: String,
    #[serde(default)]
    notes: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    priority: Option<i64>,
    #[serde(default)]
    issue_type: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    dependencies: Vec<Dependency>,
    #[serde(default)]
    created_at: Option<String>,
}

#[derive(Deserialize)]
struct Dependency {
    depends_on_id: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
}

impl Bead {
    fn status(&self) -> &str {
        self.status.as_deref().unwrap_or("open")
    }

    fn is_work(&self) -> bool {
        WORK_STATUSES.contains(&self.status())
            && self
                .issue_type
                .as_deref()
                .is_none_or(|kind| kind.is_empty() || WORK_TYPES.contains(&kind))
    }

    fn is_done(&self) -> bool {
        DONE_STATUSES.contains(&self.status())
    }

    fn priority(&self) -> i64 {
        self.priority.unwrap_or(DEFAULT_PRIORITY)
    }
}

/// The open issues of `file` (relative to `workdir`, or absolute), or of
/// `.beads/issues.jsonl`.
pub fn read(workdir: &Path, file: Option<&Path>) -> Result<Snapshot, StoriesError> {
    let path = workdir.join(file.unwrap_or(Path::new(DEFAULT_FILE)));
    if !path.is_file() {
        return Err(StoriesError::FileNotFound { path });
    }
    let text = super::read_text(&path)?;
    Ok(parse(&path, &text)?)
}

/// The issues of a beads JSONL file that are the run's work, in the order
/// they are worked; `path` is for errors.
pub fn parse(path: &Path, text: &str) -> Result<Snapshot, IssuesError> {
    let beads = read_lines(path, text)?;
    let by_id: HashMap<&str, &Bead> = beads.iter().map(|bead| (bead.id.as_str(), bead)).collect();
    let mut warnings = Vec::new();
    let mut waits: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut left_out: HashMap<&str, String> = HashMap::new();
    for bead in beads.iter().filter(|bead| bead.is_work()) {
        waits.entry(&bead.id).or_default();
        for dependency in &bead.dependencies {
            let other = dependency.depends_on_id.as_str();
            match dependency.kind.as_deref().unwrap_or("blocks") {
                "blocks" => match by_id.get(other) {
                    None => warnings.push(outside(&bead.id, other)),
                    Some(other) if other.is_done() => {}
                    Some(other) if other.is_work() => {
                        waits.entry(&bead.id).or_default().push(&other.id)
                    }
                    Some(other) => {
                        left_out.insert(
                            &bead.id,
                            format!("it waits on {} ({})", other.id, other.status()),
                        );
                    }
                },
                // The child is this issue: its parent waits for it.
                "parent-child" if by_id.get(other).is_some_and(|parent| parent.is_work()) => {
                    waits.entry(other).or_default().push(&bead.id);
                }
                _ => {}
            }
        }
    }
    leave_out_what_waits_on_left_out(&waits, &mut left_out);
    for (id, why) in &left_out {
        warnings.push(Warning {
            line: None,
            kind: WarningKind::LeftOut,
            message: format!("{id} is left out of the run: {why}"),
        });
    }
    warnings.sort_by(|a, b| a.message.cmp(&b.message));
    let mut work: Vec<(usize, &Bead)> = beads
        .iter()
        .enumerate()
        .filter(|(_, bead)| bead.is_work() && !left_out.contains_key(bead.id.as_str()))
        .collect();
    work.sort_by(|(a_index, a), (b_index, b)| {
        (a.priority(), a.created_at.as_deref(), a_index).cmp(&(
            b.priority(),
            b.created_at.as_deref(),
            b_index,
        ))
    });
    if work.is_empty() {
        return Err(IssuesError::NoIssues {
            from: path.display().to_string(),
            label: None,
        });
    }
    let issues = work
        .into_iter()
        .map(|(_, bead)| issue(bead, &waits))
        .collect();
    Ok(Snapshot {
        tracker: SourceKind::Beads,
        read_from: path.display().to_string(),
        issues,
        warnings,
    })
}

/// Every issue of the file; a later line with the same id replaces an
/// earlier one.
fn read_lines(path: &Path, text: &str) -> Result<Vec<Bead>, IssuesError> {
    let mut beads: Vec<Bead> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        let bead: Bead = serde_json::from_str(line).map_err(|err| IssuesError::MalformedBeads {
            path: path.to_owned(),
            line: index + 1,
            message: err.to_string(),
        })?;
        match beads.iter_mut().find(|earlier| earlier.id == bead.id) {
            Some(earlier) => *earlier = bead,
            None => beads.push(bead),
        }
    }
    Ok(beads)
}

/// Anything that waits on an issue left out is left out too.
fn leave_out_what_waits_on_left_out<'a>(
    waits: &HashMap<&'a str, Vec<&'a str>>,
    left_out: &mut HashMap<&'a str, String>,
) {
    loop {
        let more: Vec<(&str, String)> = waits
            .iter()
            .filter(|(id, _)| !left_out.contains_key(*id))
            .filter_map(|(id, on)| {
                on.iter()
                    .find(|other| left_out.contains_key(*other))
                    .map(|other| (*id, format!("it waits on {other}, which is left out")))
            })
            .collect();
        if more.is_empty() {
            return;
        }
        left_out.extend(more);
    }
}

fn outside(id: &str, other: &str) -> Warning {
    Warning {
        line: None,
        kind: WarningKind::OutsideDependency,
        message: format!(
            "{id} depends on {other}, which the file does not hold; it is taken as done"
        ),
    }
}

fn issue(bead: &Bead, waits: &HashMap<&str, Vec<&str>>) -> Issue {
    let mut depends_on: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for other in waits.get(bead.id.as_str()).into_iter().flatten() {
        if *other != bead.id && seen.insert(*other) {
            depends_on.push((*other).to_owned());
        }
    }
    let mut summary = format!(
        "beads issue {} ({}, priority {}",
        bead.id,
        bead.issue_type.as_deref().unwrap_or("task"),
        bead.priority()
    );
    if !bead.labels.is_empty() {
        summary.push_str(&format!(", labels: {}", bead.labels.join(", ")));
    }
    summary.push(')');
    let mut text = bead.description.trim().to_owned();
    for (heading, part) in [("Design", &bead.design), ("Notes", &bead.notes)] {
        if !part.trim().is_empty() {
            text.push_str(&format!("\n\n{heading}:\n\n{}", part.trim()));
        }
    }
    Issue {
        id: bead.id.clone(),
        title: bead.title.clone(),
        summary,
        text: text.trim().to_owned(),
        priority: Some(bead.priority()),
        depends_on,
        acceptance_criteria: criteria(&bead.acceptance_criteria),
    }
}

/// One criterion a line, without list markers or boxes.
fn criteria(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            let line = line.trim();
            let line = line
                .strip_prefix(['-', '*', '+'])
                .map_or(line, str::trim_start);
            let line = ["[ ]", "[x]", "[X]"]
                .iter()
                .find_map(|mark| line.strip_prefix(mark))
                .map_or(line, str::trim_start);
            line.to_owned()
        })
        .filter(|line| !line.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDED: &str = include_str!("../../tests/fixtures/trackers/beads/issues.jsonl");

    fn ids(snapshot: &Snapshot) -> Vec<&str> {
        snapshot.issues.iter().map(|i| i.id.as_str()).collect()
    }

    #[test]
    fn the_recorded_file_gives_its_open_work_by_priority() {
        let snapshot = parse(Path::new("issues.jsonl"), RECORDED).expect("parse");
        let by_id: HashMap<&str, &Issue> =
            snapshot.issues.iter().map(|i| (i.id.as_str(), i)).collect();
        assert!(!by_id.contains_key("bd-1c7e"), "closed");
        assert_eq!(
            ids(&snapshot),
            ["bd-9f3b", "bd-5d2a", "bd-2e8c"],
            "{:?}",
            snapshot.warnings
        );
        assert_eq!(by_id["bd-9f3b"].depends_on, ["bd-2e8c"]);
        assert_eq!(by_id["bd-9f3b"].priority, Some(0));
        assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    }

    #[test]
    fn waiting_on_deferred_work_leaves_an_issue_out_and_whatever_waits_on_it() {
        let text = concat!(
            r#"{"id":"a","title":"A","status":"deferred","priority":1}"#,
            "\n",
            r#"{"id":"b","title":"B","status":"open","priority":1,"dependencies":[{"issue_id":"b","depends_on_id":"a","type":"blocks"}]}"#,
            "\n",
            r#"{"id":"c","title":"C","status":"open","priority":1,"dependencies":[{"issue_id":"c","depends_on_id":"b","type":"blocks"},{"issue_id":"c","depends_on_id":"zz","type":"blocks"}]}"#,
            "\n",
            r#"{"id":"d","title":"D","status":"open","priority":3}"#,
            "\n"
        );
        let snapshot = parse(Path::new("f"), text).expect("parse");
        assert_eq!(ids(&snapshot), ["d"]);
        let kinds: Vec<WarningKind> = snapshot.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(
            kinds,
            [
                WarningKind::LeftOut,
                WarningKind::OutsideDependency,
                WarningKind::LeftOut
            ],
            "{:?}",
            snapshot.warnings
        );
    }

    #[test]
    fn a_parent_waits_for_its_children_and_related_work_does_not_wait() {
        let text = concat!(
            r#"{"id":"epic","title":"E","status":"open","priority":0,"issue_type":"epic"}"#,
            "\n",
            r#"{"id":"kid","title":"K","status":"in_progress","priority":3,"dependencies":[{"issue_id":"kid","depends_on_id":"epic","type":"parent-child"},{"issue_id":"kid","depends_on_id":"epic","type":"related"}]}"#,
            "\n",
            r#"{"id":"note","title":"N","status":"open","issue_type":"message"}"#,
            "\n"
        );
        let snapshot = parse(Path::new("f"), text).expect("parse");
        assert_eq!(ids(&snapshot), ["epic", "kid"], "priority orders the list");
        assert_eq!(snapshot.issues[0].depends_on, ["kid"]);
        assert!(snapshot.issues[1].depends_on.is_empty());
    }

    #[test]
    fn a_line_that_is_not_an_issue_names_its_line() {
        let error =
            parse(Path::new("issues.jsonl"), "{\"id\":\"a\"}\n\nnot json\n").expect_err("bad");
        assert!(
            error
                .to_string()
                .starts_with("issues.jsonl:3: not a beads issue"),
            "{error}"
        );
        let error = parse(Path::new("issues.jsonl"), "").expect_err("empty");
        assert!(matches!(error, IssuesError::NoIssues { .. }), "{error}");
    }

    #[test]
    fn criteria_are_one_a_line() {
        assert_eq!(
            criteria("- [ ] greets\n* says bye\n\n plain\n"),
            ["greets", "says bye", "plain"]
        );
    }
}
