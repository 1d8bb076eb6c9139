//! The first passes over a checklist file: its lines, its headings with the
//! boxes each one directly holds, the title, and which sections are not
//! work. What the file says, before anything is turned into stories.

use super::lines::{Fence, opens_tasklist, unreadable_box};
use super::lines::{TaskLine, closes_fence, heading, heading_label, opens_fence, task_line};
use super::rules::{SectionName, SectionRules, SkipReason};
use crate::stories::UnreadableLine;

/// A heading and what sits directly under it, up to the next heading.
pub(super) struct Heading<'a> {
    pub level: usize,
    pub text: &'a str,
    /// 0-based index into the file's lines.
    pub line: usize,
    pub parent: Option<usize>,
    /// Why the section is not work, when it is not.
    pub skipped: Option<SkipReason>,
    /// Boxes with their 0-based line, before the next heading.
    pub tasks: Vec<(TaskLine<'a>, usize)>,
    pub unreadable: Vec<UnreadableLine>,
}

impl Heading<'_> {
    /// A section that is work: not skipped, and holding a box (or a line
    /// that tries to be one).
    pub fn is_story(&self) -> bool {
        self.skipped.is_none() && (!self.tasks.is_empty() || !self.unreadable.is_empty())
    }

    /// Whether the sections inside this one are skipped with it.
    pub fn covers_subsections(&self) -> bool {
        self.skipped
            .as_ref()
            .is_some_and(SkipReason::covers_subsections)
    }
}

/// A checklist file read into headings and boxes.
pub(super) struct Outline<'a> {
    /// The file's lines, without BOM or line ends.
    pub lines: Vec<&'a str>,
    pub headings: Vec<Heading<'a>>,
    /// Index of the heading that is the document's title.
    pub title: Option<usize>,
    /// Boxes before the first section (or directly under the title).
    pub preamble: Vec<(TaskLine<'a>, usize)>,
    pub preamble_unreadable: Vec<UnreadableLine>,
    /// Boxes inside code fences, which are not tasks.
    pub fenced_checkboxes: usize,
    /// Every box-like line that could not be read, in line order.
    pub unreadable: Vec<UnreadableLine>,
}

impl<'a> Outline<'a> {
    /// Splits `text` into lines and collects headings (with their parents)
    /// and the boxes under each, outside code fences.
    pub fn read(text: &'a str) -> Self {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut outline = Outline {
            lines: text
                .split('\n')
                .map(|raw| raw.strip_suffix('\r').unwrap_or(raw))
                .collect(),
            headings: Vec::new(),
            title: None,
            preamble: Vec::new(),
            preamble_unreadable: Vec::new(),
            fenced_checkboxes: 0,
            unreadable: Vec::new(),
        };
        let mut fence: Option<Fence> = None;
        for index in 0..outline.lines.len() {
            let line = outline.lines[index];
            if let Some(open) = fence {
                if closes_fence(open, line) {
                    fence = None;
                } else if open.tasklist {
                    // A tasklist's heading is the block's title.
                    if heading(line).is_none() {
                        outline.read_line(index, line);
                    }
                } else if task_line(line).is_some() {
                    outline.fenced_checkboxes += 1;
                }
            } else if let Some(open) = opens_tasklist(line).or_else(|| opens_fence(line)) {
                fence = Some(open);
            } else {
                outline.read_line(index, line);
            }
        }
        outline
    }

    fn read_line(&mut self, index: usize, line: &'a str) {
        if let Some((level, text)) = heading(line) {
            let parent = self.parent_for(level);
            self.headings.push(Heading {
                level,
                text,
                line: index,
                parent,
                skipped: None,
                tasks: Vec::new(),
                unreadable: Vec::new(),
            });
        } else if let Some(task) = task_line(line) {
            match self.headings.last_mut() {
                Some(heading) => heading.tasks.push((task, index)),
                None => self.preamble.push((task, index)),
            }
        } else if unreadable_box(line) {
            let unreadable = UnreadableLine {
                line: index + 1,
                text: line.trim().to_owned(),
            };
            self.unreadable.push(unreadable.clone());
            match self.headings.last_mut() {
                Some(heading) => heading.unreadable.push(unreadable),
                None => self.preamble_unreadable.push(unreadable),
            }
        }
    }

    /// The nearest heading so far of a lower level than `level`.
    fn parent_for(&self, level: usize) -> Option<usize> {
        let mut parent = self.headings.len().checked_sub(1);
        while let Some(p) = parent {
            if self.headings[p].level < level {
                break;
            }
            parent = self.headings[p].parent;
        }
        parent
    }

    /// The title rule: a lone level-one heading at the top is the
    /// document's title, not a section. Its direct boxes join the preamble,
    /// and it is no story's parent. A heading that numbers a group of boxes
    /// (`# 1. Setup` over its boxes) is that group, not a title, wherever it
    /// stands.
    pub fn take_title(&mut self) {
        let lone_level_one = self.headings.iter().filter(|h| h.level == 1).count() == 1;
        let Some(first) = self.headings.first_mut() else {
            return;
        };
        let numbers_its_boxes = heading_label(first.text).is_some() && !first.tasks.is_empty();
        if first.level != 1 || !lone_level_one || numbers_its_boxes {
            return;
        }
        self.preamble.append(&mut first.tasks);
        self.preamble_unreadable.append(&mut first.unreadable);
        self.title = Some(0);
        for heading in &mut self.headings {
            if heading.parent == Some(0) {
                heading.parent = None;
            }
        }
    }

    /// Marks the sections that are not work, and everything under them
    /// (a lifecycle list is about its own boxes only). A section the
    /// user's `keep` names is work even inside a skipped one.
    pub fn mark_skipped(&mut self, rules: &SectionRules) {
        for index in 0..self.headings.len() {
            if Some(index) == self.title {
                continue;
            }
            let heading = &self.headings[index];
            let label = heading_label(heading.text);
            let name = SectionName::new(heading.text, label.as_ref());
            let inherited = heading
                .parent
                .filter(|parent| self.headings[*parent].covers_subsections())
                .and_then(|parent| self.headings[parent].skipped.clone())
                .filter(|_| !rules.keeps(&name));
            let boxes: Vec<String> = heading.tasks.iter().map(|(t, _)| t.full_text()).collect();
            let skipped = inherited.or_else(|| rules.reason(&name, &boxes));
            self.headings[index].skipped = skipped;
        }
    }

    /// The headings that are sections (every one but the title), with
    /// their index.
    pub fn sections(&self) -> impl Iterator<Item = (usize, &Heading<'a>)> {
        self.headings
            .iter()
            .enumerate()
            .filter(move |(index, _)| Some(*index) != self.title)
    }

    /// Whether any section holds boxes that are work; if none does, the
    /// file is a flat to-do list.
    pub fn has_section_work(&self) -> bool {
        self.sections()
            .any(|(_, heading)| heading.skipped.is_none() && !heading.tasks.is_empty())
    }
}
