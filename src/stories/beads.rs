//! The open issues of the beads tracker as stories (`--source beads`).
//!
//! beads keeps its issues in `.beads/issues.jsonl`, one JSON object per
//! line, as `bd` exports them; a newer `bd export` marks each line with its
//! record type (`"_type": "issue"`) and may add other records after the
//! issues (`"_type": "memory"`), which are not issues and are passed over.
//! Of each issue, the run reads `id` (the story's id), `title`,
//! `description` (the story's text, whose task list gives its tasks),
//! `design` and `notes` (shown after the description),
//! `acceptance_criteria` (one criterion a line), `status`, `priority` (0
//! first; missing is read as 0, as `bd` reads it, with a warning),
//! `issue_type`, `labels`, `created_at` (ties of priority go to the older
//! issue, times from different zones compared as instants),
//! `is_template` and `dependencies` (`depends_on_id` and `type`); other
//! fields are ignored.
//!
//! The work is the issues whose status is `open`, `in_progress` or
//! `blocked` and whose type is a kind of work (`task`, `bug`, `feature`,
//! `epic`, `chore`, `story`, `spike`, their aliases, or none). Any other
//! issue that is not closed (deferred, pinned, a `decision`, a `message`,
//! a type of the project's own) is left out with a warning naming it, so
//! no open issue is dropped without a word; so is a template
//! (`is_template`, which `bd list` hides) and every step under it. Dependencies are honoured as
//! `bd ready` does (see `graph`), and the issues are listed in the order
//! the run takes them. Closing the finished issues (`bd close`) is the
//! user's to do: `finish` offers the command.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use super::issues::{Issue, IssuesError, Snapshot};
use super::{SourceKind, StoriesError, Warning, WarningKind};

mod graph;
mod instant;

/// The file `--source beads` reads, relative to the repository root.
pub const DEFAULT_FILE: &str = ".beads/issues.jsonl";
/// The priority of an issue that gives none: what `bd` reads from it (its
/// zero value, P0), said in a warning.
const DEFAULT_PRIORITY: i64 = 0;
/// Statuses of issues that are work.
const WORK_STATUSES: &[&str] = &["open", "in_progress", "blocked"];
/// Statuses of issues that are done with.
const DONE_STATUSES: &[&str] = &["closed", "tombstone"];
/// Types of issues that are work for a coding agent, with the aliases
/// beads reads as them.
const WORK_TYPES: &[&str] = &[
    "task",
    "bug",
    "feature",
    "epic",
    "chore",
    "story",
    "spike",
    "enhancement",
    "feat",
    "user-story",
    "user_story",
    "investigation",
    "timebox",
];

/// What a line of the file says it is, for a newer export.
#[derive(Deserialize)]
struct Record {
    #[serde(default, rename = "_type")]
    kind: Option<String>,
}

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
    /// A molecule's template: `bd list` hides it, and so do its steps.
    #[serde(default)]
    is_template: bool,
    /// The template this issue is a step of (its parent, or its
    /// parent's), found once the whole file is read.
    #[serde(skip)]
    step_of: Option<String>,
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
        WORK_STATUSES.contains(&self.status()) && self.is_work_type() && !self.is_template_part()
    }

    fn is_template_part(&self) -> bool {
        self.is_template || self.step_of.is_some()
    }

    fn is_work_type(&self) -> bool {
        self.issue_type.as_deref().is_none_or(|kind| {
            kind.is_empty() || WORK_TYPES.contains(&kind.to_ascii_lowercase().as_str())
        })
    }

    /// Why an issue that is neither work nor done is not part of the run.
    fn why_not_work(&self) -> Option<String> {
        if self.is_work() || self.is_done() {
            return None;
        }
        if self.is_template {
            return Some("it is a template (`is_template`), which `bd list` hides".to_owned());
        }
        if let Some(template) = &self.step_of {
            return Some(format!("it is a step of the template {template}"));
        }
        Some(match WORK_STATUSES.contains(&self.status()) {
            true => format!(
                "its type is `{}`, which is not work git-ralph gives an agent (task, bug, feature, epic, chore, story, spike)",
                self.issue_type.as_deref().unwrap_or_default()
            ),
            false => format!("its status is `{}`", self.status()),
        })
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
    let (mut beads, mut warnings) = read_lines(path, text)?;
    mark_template_steps(&mut beads);
    let by_id: HashMap<&str, &Bead> = beads.iter().map(|bead| (bead.id.as_str(), bead)).collect();
    for bead in &beads {
        if let Some(why) = bead.why_not_work() {
            warnings.push(left_out(&bead.id, &why));
        } else if bead.priority.is_none() && bead.is_work() {
            warnings.push(Warning {
                line: None,
                kind: WarningKind::OddValue,
                message: format!(
                    "{} gives no priority; it is read as P0, as bd reads it",
                    bead.id
                ),
            });
        }
    }
    let graph = graph::Graph::of(&beads, &by_id, &mut warnings);
    for (id, why) in &graph.left_out {
        warnings.push(left_out(id, why));
    }
    warnings.sort_by(|a, b| a.message.cmp(&b.message));
    let work = graph.order_of_work(&beads);
    if work.is_empty() {
        return Err(IssuesError::NoIssues {
            from: path.display().to_string(),
            label: None,
        });
    }
    let issues = work
        .into_iter()
        .map(|bead| issue(bead, graph.waits_of(&bead.id)))
        .collect();
    Ok(Snapshot {
        tracker: SourceKind::Beads,
        read_from: path.display().to_string(),
        issues,
        warnings,
    })
}

/// Every issue of the file, and warnings for records that are neither
/// issues nor memories; a later line with the same id replaces an earlier
/// one.
fn read_lines(path: &Path, text: &str) -> Result<(Vec<Bead>, Vec<Warning>), IssuesError> {
    let mut beads: Vec<Bead> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut warnings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        let malformed = |err: serde_json::Error| IssuesError::MalformedBeads {
            path: path.to_owned(),
            line: index + 1,
            message: err.to_string(),
        };
        let record: Record = serde_json::from_str(line).map_err(malformed)?;
        match record.kind.as_deref() {
            None | Some("issue") => {}
            Some("memory") => continue,
            Some(other) => {
                warnings.push(Warning {
                    line: Some(index + 1),
                    kind: WarningKind::LeftOut,
                    message: format!(
                        "line {} holds a `{other}` record, not an issue; it is not read",
                        index + 1
                    ),
                });
                continue;
            }
        }
        let bead: Bead = serde_json::from_str(line).map_err(malformed)?;
        match at.get(&bead.id) {
            Some(earlier) => beads[*earlier] = bead,
            None => {
                at.insert(bead.id.clone(), beads.len());
                beads.push(bead);
            }
        }
    }
    Ok((beads, warnings))
}

/// Marks each issue that is a step of a template: its parent (through
/// `parent-child`) is a template or a step of one.
fn mark_template_steps(beads: &mut [Bead]) {
    let at: HashMap<String, usize> = beads
        .iter()
        .enumerate()
        .map(|(index, bead)| (bead.id.clone(), index))
        .collect();
    // Each issue's template, found by climbing parents; a cycle of
    // parents ends the climb.
    for index in 0..beads.len() {
        let mut seen = std::collections::HashSet::new();
        let mut current = index;
        let template = loop {
            if !seen.insert(current) {
                break None;
            }
            let Some(parent) = beads[current]
                .dependencies
                .iter()
                .find(|dependency| dependency.kind.as_deref() == Some("parent-child"))
                .and_then(|dependency| at.get(&dependency.depends_on_id))
            else {
                break None;
            };
            if beads[*parent].is_template {
                break Some(beads[*parent].id.clone());
            }
            current = *parent;
        };
        beads[index].step_of = template;
    }
}

fn left_out(id: &str, why: &str) -> Warning {
    Warning {
        line: None,
        kind: WarningKind::LeftOut,
        message: format!("{id} is left out of the run: {why}"),
    }
}

fn issue(bead: &Bead, waits: &[&str]) -> Issue {
    let mut depends_on: Vec<String> = Vec::new();
    for other in waits {
        if *other != bead.id && !depends_on.iter().any(|seen| seen == other) {
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
mod tests;
