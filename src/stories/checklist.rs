//! The markdown checklist parser shared by the OpenSpec and markdown sources.
//!
//! People write task lists in many shapes, and a box that is not understood
//! must never vanish silently: either it is a task, or it is reported with
//! its line number and the story holding it cannot count as done.
//!
//! # Tasks
//!
//! A task is a list item whose first thing is a box: `- [ ]`, `* [x]`,
//! `+ [ ]`, `1. [ ]`, `1) [ ]`, also after a bold id (`- **P1.10** [ ]`) or
//! inside bold (`1. **[ ] Add the helper**`), or a table row with a cell that
//! is only a box (`| 3 | [x] | Ship |`). The box holds a space (open), `x`
//! or `X` (done), or `~` / `-` (partial: not done). This is a superset of
//! OpenSpec's rule `^\s*[-*]\s*\[([\sxX])\]`; `\s` means what it means in
//! JavaScript, so every box the CLI counts is a task here too.
//!
//! A line that looks like a box but is none of these (`[partial]`, `[?]`,
//! `[ x]`, a box without a list marker) is an [`UnreadableLine`]: it becomes
//! a [`Warning`], and it is attached to the story around it, which then
//! never counts as done (see [`Story::is_complete`]).
//!
//! # Stories
//!
//! - Stories are the sections that directly hold boxes, at any heading
//!   level. A `## Tasks` that only wraps `### Phase N` groups is not a story;
//!   the groups are. A heading's direct boxes are those before the next
//!   heading of any level.
//! - Sections that are not work are skipped by their shape and words
//!   together, never by one word of a numbered group's title (see
//!   [`SectionRules`]): unnumbered bookkeeping (Success Criteria, Notes,
//!   Completed, Rollback Plan, … [`DEFAULT_SKIP`]), sections the file puts
//!   out of scope ([`OUT_OF_SCOPE`]), lifecycle lists (Planning … Done),
//!   an index whose boxes repeat the headings below it (`index`), and
//!   what `ralph.toml` names. Each skipped section that held boxes is
//!   reported as a warning with why and how many of its tasks are open,
//!   and a file whose boxes all sit in such sections is refused with where
//!   they are ([`Checklist::skipped`]).
//! - The id is the label the author wrote: `## 3. Docs` and `## 3) Docs` give
//!   `3`, `## 5b. Extras` gives `5b`, `### 1.2 Parser` gives `1.2`,
//!   `## Phase 2: Core` gives `phase-2`
//!   (also `Week 2`, `Day 2`, `Sprint 2`, …),
//!   `### P0.1 - Stdlib` gives `P0.1`. A heading without a label takes its
//!   1-based position among the file's headings (the title aside, sections
//!   without boxes included), or `section-N` when a label already took that
//!   number. Ticking or adding boxes never moves an id. A repeated label
//!   gets `-2`, `-3`… and a warning.
//! - A lone level-one heading at the top is the document's title, not a
//!   section, unless it numbers the boxes under it (`# 1. Setup`). Boxes
//!   before the first section form a story of their own ([`PREAMBLE_ID`]);
//!   a file where no section holds boxes is a flat to-do list, with one
//!   story per top-level box (id = its position among them).
//! - A heading is read as a reader sees it: characters that take no room
//!   (a byte-order mark, zero-width spaces) before its `#`s and a
//!   non-breaking space after them do not hide it, and HTML comments are
//!   no part of a title or a task.
//!
//! Every story keeps its whole section text (intro, nested bullets, code,
//! acceptance paragraphs) and the intro of the sections around it, for the
//! prompt.
//!
//! A box inside a ``` or ~~~ code fence is example text, not work, and
//! counting it would leave its story impossible to finish honestly. Such
//! boxes are not tasks here (OpenSpec counts them); the parser counts them in
//! [`Checklist::fenced_checkboxes`] so a cross-check against the CLI can
//! compare `native + fenced` with the CLI's total. Headings inside fences do
//! not start sections either. GitHub's ```` ```[tasklist] ```` block is
//! the exception: it is a task list, and its boxes are tasks of the section
//! around it (its own `### Tasks` line is the block's title, not a
//! section). A UTF-8 byte-order mark, CRLF line ends and a missing final
//! newline are all read as if absent.

use super::{Story, UnreadableLine, Warning, WarningKind};

/// Id of the story made of the boxes before the first section.
pub const PREAMBLE_ID: &str = "preamble";
/// Title of the story made of the boxes before the first section.
pub const PREAMBLE_TITLE: &str = "Preamble";

/// Largest part of a section given to the agent as the story's text.
pub const SECTION_LIMIT: usize = 48 * 1024;
/// Largest part of each enclosing section's intro given with a story.
pub(super) const PARENT_INTRO_LIMIT: usize = 4 * 1024;

/// The stories of one checklist file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checklist {
    pub stories: Vec<Story>,
    /// Boxes seen inside code fences and therefore not counted as tasks.
    pub fenced_checkboxes: usize,
    /// What the reader noticed: unreadable boxes, skipped sections, renamed
    /// ids. In line order.
    pub warnings: Vec<Warning>,
    /// Every line that looks like a box but could not be read, whether or
    /// not a story holds it.
    pub unreadable: Vec<UnreadableLine>,
    /// The sections skipped as not work that held boxes, in file order.
    pub skipped: Vec<SkippedSection>,
}

/// A section that held boxes but is not work (see [`SectionRules`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedSection {
    /// Why it is not work.
    pub reason: SkipReason,
    /// The heading line as written, e.g. `## Completed`.
    pub heading: String,
    /// The heading's text, e.g. `Completed`.
    pub title: String,
    /// How `keep` names it: its title without its label, or its label.
    pub name: String,
    /// 1-based line of the heading.
    pub line: usize,
    /// Boxes in it and in the sections inside it.
    pub boxes: usize,
    /// How many of those are ticked.
    pub done: usize,
}

mod index;
mod lines;
mod outline;
mod rules;
mod sections;

pub use lines::{TaskLine, heading_label, task_line, unreadable_box};
use outline::{Heading, Outline};
pub use rules::{DEFAULT_SKIP, OUT_OF_SCOPE, SectionRules, SkipReason};

/// Whether `text`, read with `rules`, marks story `id` done: every box
/// of it ticked; `None` when it holds no such story.
pub fn marked_done(text: &str, rules: &SectionRules, id: &str) -> Option<bool> {
    parse_with(text, rules)
        .stories
        .iter()
        .find(|story| story.id == id)
        .map(super::Story::is_complete)
}

/// Parses a checklist file with the default section rules.
pub fn parse(text: &str) -> Checklist {
    parse_with(text, &SectionRules::default())
}

/// Parses a checklist file into stories; see the module docs for the rules.
///
/// The passes: read the lines into headings and boxes, apply the title
/// rule, mark the sections that are not work, then make the stories, one
/// per section that is work, or one per box of a flat list when no section
/// holds any.
pub fn parse_with(text: &str, rules: &SectionRules) -> Checklist {
    let mut outline = Outline::read(text);
    outline.take_title();
    outline.mark_skipped(rules);
    let index_warnings = index::mark_indexes(&mut outline, rules);
    let skipped = skipped_sections(&outline);
    let mut warnings = unreadable_warnings(&outline.unreadable);
    warnings.extend(index_warnings);
    warnings.extend(skipped_warnings(&skipped));
    let stories = if outline.has_section_work() {
        sections::section_stories(&outline, &mut warnings)
    } else {
        sections::flat_stories(&outline)
    };
    warnings.sort_by_key(|w| w.line);
    Checklist {
        stories,
        fenced_checkboxes: outline.fenced_checkboxes,
        warnings,
        unreadable: outline.unreadable,
        skipped,
    }
}

/// The skipped sections that held boxes (their sub-sections' included),
/// each at its outermost skipped heading.
fn skipped_sections(outline: &Outline<'_>) -> Vec<SkippedSection> {
    let headings = &outline.headings;
    let mut skipped = Vec::new();
    for (index, heading) in headings.iter().enumerate() {
        let Some(reason) = &heading.skipped else {
            continue;
        };
        let inside_skipped = heading
            .parent
            .is_some_and(|p| headings[p].covers_subsections());
        if inside_skipped {
            continue;
        }
        let subtree = match reason.covers_subsections() {
            true => subtree(headings, index),
            false => std::slice::from_ref(heading),
        };
        let boxes: usize = subtree.iter().map(|h| h.tasks.len()).sum();
        if boxes == 0 {
            continue;
        }
        skipped.push(SkippedSection {
            reason: reason.clone(),
            heading: outline.lines[heading.line].trim().to_owned(),
            title: heading.text.to_owned(),
            name: keep_name(heading.text),
            line: heading.line + 1,
            boxes,
            done: subtree
                .iter()
                .flat_map(|h| &h.tasks)
                .filter(|(task, _)| task.done)
                .count(),
        });
    }
    skipped
}

/// The name `keep` takes for a heading: its title without its label, or
/// the label when that is all there is.
fn keep_name(text: &str) -> String {
    match heading_label(text) {
        Some((id, title)) if title.is_empty() => id,
        Some((_, title)) => title,
        None => text.to_owned(),
    }
}

/// Heading `index` and the headings inside it.
fn subtree<'h, 'a>(headings: &'h [Heading<'a>], index: usize) -> &'h [Heading<'a>] {
    let level = headings[index].level;
    let end = headings[index + 1..]
        .iter()
        .position(|h| h.level <= level)
        .map_or(headings.len(), |offset| index + 1 + offset);
    &headings[index..end]
}

fn skipped_warnings(skipped: &[SkippedSection]) -> Vec<Warning> {
    skipped
        .iter()
        .map(|section| Warning {
            line: Some(section.line),
            kind: WarningKind::SkippedSection,
            message: skipped_message(section),
        })
        .collect()
}

/// What a warning says of a skipped section: its name, why, what of it
/// is left undone, and how to work it after all.
fn skipped_message(section: &SkippedSection) -> String {
    let open = section.boxes - section.done;
    let reason = section.reason.describe();
    if open == 0 {
        return format!(
            "section \"{}\" is not read as work: {reason} ({} box{}, all ticked)",
            section.title,
            section.boxes,
            if section.boxes == 1 { "" } else { "es" }
        );
    }
    if section.reason == SkipReason::Index {
        return format!(
            "section \"{}\" is not read as work: {reason}",
            section.title
        );
    }
    let how = match &section.reason {
        SkipReason::Named(name) => format!("take \"{name}\" out of `skip`"),
        _ => format!("add \"{}\" to `keep`", section.name),
    };
    format!(
        "section \"{}\" is not read as work: {reason}; its {open} open task{} will not be worked; to work it, {how} under [stories] in ralph.toml",
        section.title,
        if open == 1 { "" } else { "s" },
    )
}

fn unreadable_warnings(lines: &[UnreadableLine]) -> Vec<Warning> {
    lines
        .iter()
        .map(|unreadable| Warning {
            line: Some(unreadable.line),
            kind: WarningKind::UnreadableBox,
            message: format!(
                "this looks like a checkbox but is not one git-ralph can read: {:?}; write it as `- [ ]` or `- [x]` (until then its story cannot count as done)",
                unreadable.text
            ),
        })
        .collect()
}

/// Returns `text` with the box on 1-based `line` ticked (`[x]`), leaving
/// every other byte, line endings included, as it was. A line that is not a
/// task, or is out of range, leaves the text unchanged.
pub fn tick(text: &str, line: usize) -> String {
    set_mark(text, line, 'x', |task| !task.done)
}

/// Returns `text` with the box on 1-based `line` opened (`[ ]`).
pub fn untick(text: &str, line: usize) -> String {
    set_mark(text, line, ' ', |task| task.done)
}

fn set_mark(text: &str, line: usize, mark: char, when: impl Fn(&TaskLine<'_>) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, raw) in text.split_inclusive('\n').enumerate() {
        let content = raw.trim_end_matches(['\n', '\r']);
        match task_line(content).filter(|task| index + 1 == line && when(task)) {
            Some(task) => {
                out.push_str(&raw[..task.mark.start]);
                out.push(mark);
                out.push_str(&raw[task.mark.end..]);
            }
            None => out.push_str(raw),
        }
    }
    out
}

#[cfg(test)]
mod tests;
