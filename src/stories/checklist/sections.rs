//! The last passes: stories made of an outline, either one per section that
//! holds boxes (with the id its author wrote, or its position) or, when no
//! section does, one per top-level box of a flat list. Each story keeps the
//! text it was read from, for the prompt.

use std::collections::{HashMap, HashSet};

use super::lines::{TaskLine, heading, heading_label, without_comments};
use super::outline::{Heading, Outline};
use super::{PARENT_INTRO_LIMIT, PREAMBLE_ID, PREAMBLE_TITLE, SECTION_LIMIT};
use crate::stories::{Story, StorySection, Task, UnreadableLine, Warning, WarningKind};

/// One story per section that is work, after a preamble story for the
/// boxes before the first section. Repeated ids are renamed, with a warning
/// added to `warnings`.
pub(super) fn section_stories(outline: &Outline<'_>, warnings: &mut Vec<Warning>) -> Vec<Story> {
    let mut stories: Vec<Story> = Vec::new();
    if !outline.preamble.is_empty() || !outline.preamble_unreadable.is_empty() {
        let mut story = Story::from_tasks(PREAMBLE_ID, PREAMBLE_TITLE, tasks(&outline.preamble));
        story.unreadable = outline.preamble_unreadable.clone();
        stories.push(story);
    }
    let ids = SectionIds::new(outline);
    for (index, heading) in outline.sections().filter(|(_, h)| h.is_story()) {
        let (id, title) = ids.of(index, heading, &outline.headings);
        let mut story = Story::from_tasks(id, title, tasks(&heading.tasks));
        story.unreadable = heading.unreadable.clone();
        story.section = Some(section_of(&outline.lines, &outline.headings, index));
        stories.push(story);
    }
    dedupe_ids(&mut stories, warnings);
    stories
}

fn tasks(lines: &[(TaskLine<'_>, usize)]) -> Vec<Task> {
    lines
        .iter()
        .map(|(task, index)| to_task(task, index + 1))
        .collect()
}

pub(super) fn to_task(task: &TaskLine<'_>, line: usize) -> Task {
    Task {
        text: task.full_text(),
        done: task.done,
        line,
    }
}

/// How a section gets its id: the label its author wrote, or else its
/// 1-based position among the file's headings (the title aside, those
/// without boxes included), so the id stays put when boxes are ticked or
/// added; `section-N` when a label already took that number.
struct SectionIds {
    positions: Vec<usize>,
    labels: HashSet<String>,
}

impl SectionIds {
    fn new(outline: &Outline<'_>) -> Self {
        let mut positions = vec![0; outline.headings.len()];
        for (position, (index, _)) in outline.sections().enumerate() {
            positions[index] = position + 1;
        }
        let labels = outline
            .sections()
            .filter(|(_, h)| h.is_story())
            .filter_map(|(_, h)| heading_label(h.text).map(|(id, _)| id))
            .collect();
        SectionIds { positions, labels }
    }

    /// The id and title of section `index`. A generic heading ("Tasks",
    /// "Checklist", "To do") names nothing: the nearest heading above it
    /// that names something gives the title, and its label the id.
    fn of(
        &self,
        index: usize,
        heading: &Heading<'_>,
        headings: &[Heading<'_>],
    ) -> (String, String) {
        if is_generic(heading.text)
            && let Some(named) = named_ancestor(headings, index)
        {
            let ancestor = &headings[named];
            return match heading_label(ancestor.text) {
                Some((id, title)) if !title.is_empty() => (id, without_comments(&title)),
                Some((id, _)) => (id, without_comments(ancestor.text)),
                None => (
                    self.positions[index].to_string(),
                    without_comments(ancestor.text),
                ),
            };
        }
        let (id, title) = match heading_label(heading.text) {
            Some(labelled) => labelled,
            None => {
                let id = self.positions[index].to_string();
                let id = if self.labels.contains(&id) {
                    format!("section-{id}")
                } else {
                    id
                };
                (id, heading.text.to_owned())
            }
        };
        // A heading that is only a label ("## Phase 2") is its own title.
        let title = match (title.is_empty(), heading.text.is_empty()) {
            (false, _) => title,
            (true, false) => heading.text.to_owned(),
            (true, true) => format!("Story {id}"),
        };
        (id, without_comments(&title))
    }
}

/// Headings that say what kind of list follows, not what it is about.
const GENERIC_HEADINGS: &[&str] = &[
    "tasks",
    "task list",
    "checklist",
    "steps",
    "subtasks",
    "sub-tasks",
    "acceptance",
    "acceptance criteria",
    "to do",
    "todo",
    "to-do",
    "todos",
    "work items",
    "action items",
];

/// Whether a heading only names the kind of list under it, in any case,
/// with or without markdown marks and a trailing colon.
fn is_generic(text: &str) -> bool {
    let plain: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .collect();
    let plain = plain
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim_end_matches([':', ' '])
        .to_lowercase();
    GENERIC_HEADINGS.contains(&plain.as_str())
}

/// The nearest heading above `index` (among those it sits in) that names
/// something.
fn named_ancestor(headings: &[Heading<'_>], index: usize) -> Option<usize> {
    let mut at = headings[index].parent;
    while let Some(parent) = at {
        if !is_generic(headings[parent].text) {
            return Some(parent);
        }
        at = headings[parent].parent;
    }
    None
}

/// Gives each repeated id a `-2`, `-3`… suffix, with a warning.
fn dedupe_ids(stories: &mut [Story], warnings: &mut Vec<Warning>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let taken: HashSet<String> = stories.iter().map(|s| s.id.clone()).collect();
    for story in stories.iter_mut() {
        let count = seen.entry(story.id.clone()).or_insert(0);
        *count += 1;
        if *count == 1 {
            continue;
        }
        let mut n = *count;
        let mut renamed = format!("{}-{n}", story.id);
        while taken.contains(&renamed) {
            n += 1;
            renamed = format!("{}-{n}", story.id);
        }
        warnings.push(Warning {
            line: story.section.as_ref().map(|s| s.first_line),
            kind: WarningKind::RenamedId,
            message: format!(
                "id {:?} is used by an earlier section too; this story is {renamed:?}",
                story.id
            ),
        });
        story.id = renamed;
    }
}

/// The text of story `index`'s section: from its heading to the next
/// heading that is not inside it or is a story itself (a skipped
/// sub-section, such as its notes, stays in); with the intros of the
/// sections around it.
fn section_of(lines: &[&str], headings: &[Heading<'_>], index: usize) -> StorySection {
    let heading = &headings[index];
    let end = headings[index + 1..]
        .iter()
        .find(|next| next.level <= heading.level || next.is_story())
        .map_or(lines.len(), |next| next.line);
    let end = trim_blank_end(lines, heading.line, end);
    let mut parents = Vec::new();
    let mut parent = heading.parent;
    while let Some(p) = parent {
        let first_child = headings[p + 1..]
            .first()
            .map_or(lines.len(), |next| next.line);
        let intro_end = trim_blank_end(lines, headings[p].line, first_child);
        let intro = lines[headings[p].line..intro_end].join("\n");
        parents.push(cut(&intro, PARENT_INTRO_LIMIT, headings[p].line + 1));
        parent = headings[p].parent;
    }
    parents.reverse();
    let text = lines[heading.line..end].join("\n");
    StorySection {
        first_line: heading.line + 1,
        last_line: end,
        text: cut(&text, SECTION_LIMIT, heading.line + 1),
        parents,
    }
}

/// A file where no section holds boxes: one story per top-level box, with
/// the boxes nested under it as its further tasks. Unreadable lines go to
/// the story before them.
pub(super) fn flat_stories(outline: &Outline<'_>) -> Vec<Story> {
    let title = outline.title.map(|t| &outline.headings[t]);
    let mut stories = flat_list(&outline.lines, &outline.preamble, title);
    attach_orphans(&mut stories, outline.preamble_unreadable.clone());
    for heading in outline.headings.iter().filter(|h| h.skipped.is_none()) {
        attach_orphans(&mut stories, heading.unreadable.clone());
    }
    stories
}

fn flat_list(
    lines: &[&str],
    tasks: &[(TaskLine<'_>, usize)],
    title: Option<&Heading<'_>>,
) -> Vec<Story> {
    let Some(top) = tasks.iter().map(|(task, _)| task.indent).min() else {
        return Vec::new();
    };
    let mut stories: Vec<Story> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    let mut seen_top_level = false;
    for (task, index) in tasks {
        let is_top = task.indent <= top;
        match stories.last_mut() {
            Some(story) if !is_top && seen_top_level => story.tasks.push(to_task(task, index + 1)),
            _ => {
                seen_top_level |= is_top;
                let id = (stories.len() + 1).to_string();
                let text = task.full_text();
                let title = if text.is_empty() {
                    format!("Task {id}")
                } else {
                    text
                };
                stories.push(Story::from_tasks(id, title, vec![to_task(task, index + 1)]));
                starts.push(*index);
            }
        }
    }
    let parents: Vec<String> = title
        .map(|heading| vec![lines[heading.line].to_owned()])
        .unwrap_or_default();
    for (position, story) in stories.iter_mut().enumerate() {
        let start = starts[position];
        let next = starts.get(position + 1).copied().unwrap_or(lines.len());
        let stop = lines[start + 1..next]
            .iter()
            .position(|line| heading(line).is_some())
            .map_or(next, |offset| start + 1 + offset);
        let end = trim_blank_end(lines, start, stop);
        story.section = Some(StorySection {
            first_line: start + 1,
            last_line: end,
            text: cut(&lines[start..end].join("\n"), SECTION_LIMIT, start + 1),
            parents: parents.clone(),
        });
    }
    stories
}

/// Unreadable lines outside every story go to the story before them, or
/// the first story.
fn attach_orphans(stories: &mut [Story], orphans: Vec<UnreadableLine>) {
    for orphan in orphans {
        let target = stories
            .iter()
            .rposition(|story| story.tasks.first().is_some_and(|t| t.line < orphan.line))
            .or(if stories.is_empty() { None } else { Some(0) });
        if let Some(target) = target {
            stories[target].unreadable.push(orphan);
        }
    }
}

fn trim_blank_end(lines: &[&str], start: usize, mut end: usize) -> usize {
    while end > start + 1 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    end
}

/// Cuts `text` to `limit` bytes at a line end, saying so in the text.
fn cut(text: &str, limit: usize, first_line: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut at = limit;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let at = text[..at].rfind('\n').unwrap_or(at);
    let shown = text[..at].lines().count();
    format!(
        "{}\n[cut: {} more lines of this section are not shown here; read them in the file from line {}]",
        &text[..at],
        text.lines().count() - shown,
        first_line + shown
    )
}
