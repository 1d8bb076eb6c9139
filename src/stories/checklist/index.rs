//! A summary list of boxes that repeats the headings below it is an index
//! of the plan, not work: a roadmap's `## Phases` with `- [x] **Phase 1:
//! …**` above the `### Phase 1` sections that hold the tasks. Working it
//! would prompt the agent for the whole plan at once, and ticking it would
//! say nothing the sections do not. Where the index and the sections
//! disagree (a phase ticked in the index with open tasks below), the
//! sections win and a warning says so.

use super::lines::heading_label;
use super::outline::Outline;
use super::rules::{SectionName, SectionRules, SkipReason};
use crate::stories::{Warning, WarningKind};

/// The fewest boxes an index holds.
const INDEX_FROM: usize = 2;

/// Marks each section whose boxes are an index of the headings after it as
/// not work; the warnings name each entry the sections below contradict.
pub(super) fn mark_indexes(outline: &mut Outline<'_>, rules: &SectionRules) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if rules.all_work {
        return warnings;
    }
    for index in 0..outline.headings.len() {
        let heading = &outline.headings[index];
        let label = heading_label(heading.text);
        if heading.skipped.is_some()
            || heading.tasks.len() < INDEX_FROM
            || rules.keeps(&SectionName::new(heading.text, label.as_ref()))
        {
            continue;
        }
        let entries: Option<Vec<(usize, bool, usize)>> = heading
            .tasks
            .iter()
            .map(|(task, line)| {
                let text = task.full_text();
                named_heading(outline, index, &text).map(|target| (target, task.done, *line))
            })
            .collect();
        let Some(entries) = entries else {
            continue;
        };
        for (target, ticked, line) in entries {
            if let Some(done) = section_done(outline, target)
                && done != ticked
            {
                warnings.push(disagreement(outline, index, target, ticked, line));
            }
        }
        outline.headings[index].skipped = Some(SkipReason::Index);
    }
    warnings
}

/// The heading after `index` that a box's text names: the same words, or
/// the same label.
fn named_heading(outline: &Outline<'_>, index: usize, text: &str) -> Option<usize> {
    let wanted = plain(text);
    let wanted_label = heading_label(&wanted).map(|(id, _)| id);
    outline.headings[index + 1..]
        .iter()
        .position(|heading| {
            let words = plain(heading.text);
            words == wanted
                || wanted_label.is_some() && heading_label(&words).map(|(id, _)| id) == wanted_label
        })
        .map(|offset| index + 1 + offset)
}

/// Whether every task of the section and the sections inside it is
/// ticked; `None` when they hold none.
fn section_done(outline: &Outline<'_>, target: usize) -> Option<bool> {
    let level = outline.headings[target].level;
    let end = outline.headings[target + 1..]
        .iter()
        .position(|h| h.level <= level)
        .map_or(outline.headings.len(), |offset| target + 1 + offset);
    let tasks: Vec<bool> = outline.headings[target..end]
        .iter()
        .filter(|h| h.skipped.is_none())
        .flat_map(|h| h.tasks.iter().map(|(task, _)| task.done))
        .collect();
    (!tasks.is_empty()).then(|| tasks.iter().all(|done| *done))
}

fn disagreement(
    outline: &Outline<'_>,
    index: usize,
    target: usize,
    ticked: bool,
    line: usize,
) -> Warning {
    let (says, below) = match ticked {
        true => ("ticks", "some of its tasks below are still open"),
        false => ("leaves open", "its tasks below are all ticked"),
    };
    Warning {
        line: Some(line + 1),
        kind: WarningKind::SkippedSection,
        message: format!(
            "the index \"{}\" {says} \"{}\", but {below}; the tasks below are read",
            outline.headings[index].text, outline.headings[target].text
        ),
    }
}

/// Text without markdown marks, a trailing colon and extra spaces, in
/// lower case.
fn plain(text: &str) -> String {
    let text: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .collect();
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(':')
        .to_lowercase()
}
