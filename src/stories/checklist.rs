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
//! - Sections that are not work — Success Criteria, Status Legend, Notes,
//!   Completed, … (see [`DEFAULT_SKIP`]) — are skipped with everything under
//!   them; [`SectionRules`] lets `ralph.toml` add or remove headings. A
//!   skipped section that held boxes is reported as a warning.
//! - The id is the label the author wrote: `## 3. Docs` and `## 3) Docs` give
//!   `3`, `### 1.2 Parser` gives `1.2`, `## Phase 2: Core` gives `phase-2`,
//!   `### P0.1 - Stdlib` gives `P0.1`. A heading without a label takes its
//!   1-based position among the file's headings (the title aside, sections
//!   without boxes included), or `section-N` when a label already took that
//!   number. Ticking or adding boxes never moves an id. A repeated label
//!   gets `-2`, `-3`… and a warning.
//! - A lone level-one heading at the top is the document's title, not a
//!   section. Boxes before the first section form a story of their own
//!   ([`PREAMBLE_ID`]); a file where no section holds boxes is a flat to-do
//!   list, with one story per top-level box (id = its position among them).
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
//! not start sections either. A UTF-8 byte-order mark, CRLF line ends and a
//! missing final newline are all read as if absent.

use std::collections::HashMap;
use std::ops::Range;

use super::{Story, StorySection, Task, UnreadableLine, Warning, WarningKind};

/// Id of the story made of the boxes before the first section.
pub const PREAMBLE_ID: &str = "preamble";
/// Title of the story made of the boxes before the first section.
pub const PREAMBLE_TITLE: &str = "Preamble";

/// Headings that are not work unless `ralph.toml` says otherwise. A heading
/// matches when its title, without its label, starts with one of these
/// words (case does not matter), e.g. "Success Criteria (UPDATED)" or
/// "Notes on consistency".
pub const DEFAULT_SKIP: &[&str] = &[
    "Success Criteria",
    "Validation Checklist",
    "Status Legend",
    "Legend",
    "Summary",
    "Notes",
    "Note",
    "Dependencies",
    "Future Work",
    "Optional",
    "Completed",
    "Recently Completed",
    "Done",
    "Overview",
    "Analysis Summary",
    "Risk Assessment",
    "Risks",
    "Estimated Timeline",
    "Timeline",
    "Verification Evidence",
    "Definition of Done",
    "Goals",
    "Non-Goals",
    "Out of Scope",
    "Open Questions",
    "References",
];

/// Largest part of a section given to the agent as the story's text.
pub const SECTION_LIMIT: usize = 48 * 1024;
/// Largest part of each enclosing section's intro given with a story.
const PARENT_INTRO_LIMIT: usize = 4 * 1024;

/// Which headings are not work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionRules {
    /// Headings skipped on top of [`DEFAULT_SKIP`].
    pub skip: Vec<String>,
    /// Headings of [`DEFAULT_SKIP`] that are work after all.
    pub keep: Vec<String>,
}

impl SectionRules {
    /// Whether a heading title (without its label) names a non-work section.
    pub fn is_skipped(&self, title: &str) -> bool {
        let title = normalize_title(title);
        let matches = |phrase: &str| {
            let phrase = normalize_title(phrase);
            !phrase.is_empty()
                && title.starts_with(&phrase)
                && title[phrase.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
        };
        if self.keep.iter().any(|phrase| matches(phrase)) {
            return false;
        }
        DEFAULT_SKIP.iter().any(|phrase| matches(phrase))
            || self.skip.iter().any(|phrase| matches(phrase))
    }
}

/// Lower case, markdown marks and leading symbols (emoji, `✅`) dropped,
/// white space collapsed.
fn normalize_title(title: &str) -> String {
    let cleaned: String = title
        .chars()
        .filter(|c| !matches!(c, '*' | '`' | '_'))
        .collect();
    let trimmed = cleaned.trim_start_matches(|c: char| !c.is_alphanumeric());
    trimmed
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

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
}

/// A line that is a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLine<'a> {
    pub done: bool,
    /// The task's text, without the box and its list marker.
    pub text: &'a str,
    /// The bold id written before the box (`P1.10` in `- **P1.10** [ ]`).
    pub id: Option<&'a str>,
    /// Leading whitespace in columns, tabs to the next multiple of four.
    pub indent: usize,
    /// Byte range of the character between the brackets.
    pub mark: Range<usize>,
}

impl TaskLine<'_> {
    fn full_text(&self) -> String {
        match self.id {
            Some(id) if self.text.is_empty() => id.to_owned(),
            Some(id) => format!("{id} {}", self.text),
            None => self.text.to_owned(),
        }
    }
}

/// JavaScript's `\s`: Unicode white space without U+0085, plus the BOM.
fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// The rest of a line after a list marker: `-`, `*`, `+`, `1.` or `1)`.
fn after_list_marker(text: &str) -> Option<&str> {
    if let Some(rest) = text
        .strip_prefix('-')
        .or_else(|| text.strip_prefix('*'))
        .or_else(|| text.strip_prefix('+'))
    {
        return Some(rest);
    }
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 9 {
        return None;
    }
    let rest = text[digits..]
        .strip_prefix('.')
        .or_else(|| text[digits..].strip_prefix(')'))?;
    // `1.[ ]` is not a list item, `1. [ ]` is.
    rest.starts_with(is_js_space).then_some(rest)
}

/// What stands between a list marker and a box: nothing, a bold id
/// (`**P1.10**`), or the opening of a bold span that holds the box.
struct BoxStart<'a> {
    id: Option<&'a str>,
    /// The text from the `[` on.
    rest: &'a str,
    /// The box sits inside `**…**`, whose closing marks end the text.
    in_bold: bool,
}

fn box_start(after_marker: &str) -> Option<BoxStart<'_>> {
    let text = after_marker.trim_start_matches(is_js_space);
    if text.starts_with('[') {
        return Some(BoxStart {
            id: None,
            rest: text,
            in_bold: false,
        });
    }
    let (open, inner) = if let Some(inner) = text.strip_prefix("**") {
        ("**", inner)
    } else {
        ("__", text.strip_prefix("__")?)
    };
    if inner.starts_with('[') {
        return Some(BoxStart {
            id: None,
            rest: inner,
            in_bold: true,
        });
    }
    let close = inner.find(open)?;
    let id = inner[..close].trim();
    let short_label = !id.is_empty()
        && id.chars().count() <= 24
        && !id.contains(['[', ']'])
        && id.split_whitespace().count() <= 3;
    if !short_label {
        return None;
    }
    let rest = inner[close + open.len()..]
        .trim_start_matches(is_js_space)
        .trim_start_matches(':')
        .trim_start_matches(is_js_space);
    rest.starts_with('[').then_some(BoxStart {
        id: Some(id.trim_end_matches(':')),
        rest,
        in_bold: false,
    })
}

/// The state a box mark stands for: `Some(done)`, or `None` when the mark
/// is not one this parser reads.
fn mark_state(mark: char) -> Option<bool> {
    match mark {
        'x' | 'X' => Some(true),
        '~' | '-' => Some(false),
        c if is_js_space(c) => Some(false),
        _ => None,
    }
}

/// Matches one line (without its line break) against the task forms in
/// the module docs.
pub fn task_line(line: &str) -> Option<TaskLine<'_>> {
    let after_indent = line.trim_start_matches(is_js_space);
    let indent = columns(&line[..line.len() - after_indent.len()]);
    if after_indent.starts_with('|') {
        return table_task(line, indent);
    }
    let start = box_start(after_list_marker(after_indent)?)?;
    let in_box = start.rest.strip_prefix('[')?;
    let mark = in_box.chars().next()?;
    let done = mark_state(mark)?;
    let rest = in_box[mark.len_utf8()..].strip_prefix(']')?;
    let mut text = rest.trim_matches(is_js_space);
    if start.in_bold {
        text = text.strip_suffix("**").unwrap_or(text).trim_end();
        text = text.strip_suffix("__").unwrap_or(text).trim_end();
    }
    let mark_start = line.len() - in_box.len();
    Some(TaskLine {
        done,
        text,
        id: start.id,
        indent,
        mark: mark_start..mark_start + mark.len_utf8(),
    })
}

/// A table row with a cell that holds only a box; the task's text is the
/// first cell after the box that holds words, or the first before it.
fn table_task(line: &str, indent: usize) -> Option<TaskLine<'_>> {
    let cells = table_cells(line);
    let (index, mark, done) = cells.iter().enumerate().find_map(|(index, range)| {
        let cell = &line[range.clone()];
        let inner = cell.strip_prefix('[')?.strip_suffix(']')?;
        let mut chars = inner.chars();
        let mark = chars.next()?;
        if chars.next().is_some() {
            return None;
        }
        let done = mark_state(mark)?;
        let start = range.start + 1;
        Some((index, start..start + mark.len_utf8(), done))
    })?;
    let wordy = |range: &Range<usize>| line[range.clone()].chars().any(char::is_alphabetic);
    let text = cells[index + 1..]
        .iter()
        .find(|range| wordy(range))
        .or_else(|| cells[..index].iter().rev().find(|range| wordy(range)))
        .map_or("", |range| &line[range.clone()]);
    Some(TaskLine {
        done,
        text,
        id: None,
        indent,
        mark,
    })
}

/// Byte ranges of the trimmed cells of a table row.
fn table_cells(line: &str) -> Vec<Range<usize>> {
    let mut cells = Vec::new();
    let mut start = None;
    let mut escaped = false;
    for (index, c) in line.char_indices() {
        match c {
            '\\' => escaped = !escaped,
            '|' if !escaped => {
                if let Some(from) = start {
                    cells.push(trimmed_range(line, from, index));
                }
                start = Some(index + 1);
            }
            _ => escaped = false,
        }
    }
    cells
}

fn trimmed_range(line: &str, from: usize, to: usize) -> Range<usize> {
    let cell = &line[from..to];
    let lead = cell.len() - cell.trim_start().len();
    let trail = cell.len() - cell.trim_end().len();
    from + lead..to - trail
}

/// Words that, alone in brackets where a box belongs, say a status.
const STATUS_WORDS: &[&str] = &[
    "partial",
    "done",
    "wip",
    "todo",
    "skip",
    "skipped",
    "blocked",
    "n/a",
    "na",
    "pending",
    "in progress",
    "started",
    "cancelled",
    "canceled",
    "deferred",
    "complete",
    "completed",
];

/// Whether bracket contents look like a box mark rather than a link or tag.
fn box_like(inner: &str) -> bool {
    let trimmed = inner.trim();
    if trimmed.is_empty() {
        return true;
    }
    let lower = trimmed.to_lowercase();
    if STATUS_WORDS.contains(&lower.as_str()) {
        return true;
    }
    inner.chars().count() <= 3
        && trimmed
            .chars()
            .all(|c| !c.is_alphanumeric() || matches!(c, 'x' | 'X' | 'o' | 'O' | 'v' | 'V'))
}

/// `[…]` at the start of `text`, if it looks like a box: returns its inside.
fn leading_box(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('[')?;
    let close = inner.char_indices().take(20).find(|(_, c)| *c == ']')?.0;
    let after = &inner[close + 1..];
    if after.starts_with(['(', '[', ':']) {
        return None; // a link or a link reference
    }
    let inside = &inner[..close];
    (!inside.contains('[') && box_like(inside)).then_some(inside)
}

/// Whether a line that is not a task still looks like one: a box this
/// parser cannot read, or a box where no task can be.
pub fn unreadable_box(line: &str) -> bool {
    if task_line(line).is_some() {
        return false;
    }
    let after_indent = line.trim_start_matches(is_js_space);
    if after_indent.starts_with('|') {
        return table_cells(line)
            .iter()
            .any(|range| leading_box(&line[range.clone()]).is_some() && range.len() <= 22);
    }
    let candidate = match after_list_marker(after_indent) {
        Some(rest) => match box_start(rest) {
            Some(start) => start.rest,
            None => rest.trim_start_matches(is_js_space),
        },
        None => after_indent,
    };
    leading_box(candidate).is_some()
}

fn columns(indent: &str) -> usize {
    indent.chars().fold(0, |column, c| match c {
        '\t' => column + 4 - column % 4,
        _ => column + 1,
    })
}

/// An open code fence: its character and how many of them opened it.
#[derive(Debug, Clone, Copy)]
struct Fence {
    ch: char,
    len: usize,
}

fn fence_run(line: &str) -> Option<(Fence, &str)> {
    let trimmed = line.trim_start_matches([' ', '\t']);
    let ch = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let rest = trimmed.trim_start_matches(ch);
    let len = trimmed.len() - rest.len();
    (len >= 3).then_some((Fence { ch, len }, rest))
}

fn opens_fence(line: &str) -> Option<Fence> {
    let (fence, info) = fence_run(line)?;
    // CommonMark: a backtick fence's info string cannot hold a backtick.
    (fence.ch == '~' || !info.contains('`')).then_some(fence)
}

fn closes_fence(open: Fence, line: &str) -> bool {
    fence_run(line).is_some_and(|(fence, rest)| {
        fence.ch == open.ch && fence.len >= open.len && rest.trim().is_empty()
    })
}

/// The level and text of an ATX heading (`#` to `######`), if the line is one.
fn heading(line: &str) -> Option<(usize, &str)> {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    if spaces > 3 {
        return None;
    }
    let hashes = &line[spaces..];
    let level = hashes.len() - hashes.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &hashes[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim();
    // An optional closing sequence of `#`s is not part of the title.
    let without_closing = text.trim_end_matches('#');
    if without_closing.is_empty() || without_closing.ends_with([' ', '\t']) {
        Some((level, without_closing.trim_end()))
    } else {
        Some((level, text))
    }
}

/// Words that introduce a numbered group: `Phase 2`, `Task 3`, `Stage 1`.
const LABEL_WORDS: &[&str] = &[
    "phase",
    "stage",
    "step",
    "task",
    "part",
    "milestone",
    "sprint",
    "epic",
    "story",
    "group",
    "section",
    "tier",
    "iteration",
    "chapter",
    "round",
    "level",
    "wave",
    "batch",
];

/// Splits a heading into the id its label gives and the title without the
/// label: `3. Docs` → (`3`, `Docs`), `1) CLI` → (`1`, `CLI`), `Phase 2:
/// Core` → (`phase-2`, `Core`), `P0.1 - Stdlib` → (`P0.1`, `Stdlib`). An
/// outline number followed by a plain space (`7.2 Cleanup`) is the id and
/// stays in the title, which is how such headings are read aloud.
pub fn heading_label(heading: &str) -> Option<(String, String)> {
    let text = heading.trim();
    // A word label: `Phase 2`, `Task 3.1`, any case.
    let word_end = text
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(text.len());
    let word = text[..word_end].to_lowercase();
    if LABEL_WORDS.contains(&word.as_str()) {
        let after_word = &text[word_end..];
        let spaced = after_word.trim_start_matches([' ', '\t']);
        if spaced.len() < after_word.len()
            && let Some((number, rest)) = outline_number(spaced)
        {
            // `Tier 1b`: a letter right after the number belongs to it.
            let suffix = rest
                .chars()
                .next()
                .filter(|c| c.is_ascii_lowercase())
                .filter(|_| {
                    rest[1..]
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric())
                })
                .map_or(0, char::len_utf8);
            let label = &spaced[..number.len() + suffix];
            if let Some(title) = after_separator(&rest[suffix..], true) {
                return Some((format!("{word}-{label}"), title.to_owned()));
            }
        }
        return None;
    }
    // A code label: `P0`, `P1.10`, `T-3`, then a separator or nothing.
    if let Some(code) = code_label(text) {
        let rest = &text[code.len()..];
        let separated = rest.is_empty()
            || rest
                .trim_start()
                .starts_with(['-', '–', '—', ':', '.', ')', '|']);
        return separated
            .then(|| after_separator(rest, false))
            .flatten()
            .map(|title| (code.to_owned(), title.to_owned()));
    }
    // A number: `3.`, `1)`, `0.`, `1.2`, `1.2.`.
    let (number, rest) = outline_number(text)?;
    if rest.is_empty() {
        return Some((number.to_owned(), String::new()));
    }
    if let Some(title) = rest
        .strip_prefix('.')
        .or_else(|| rest.strip_prefix(')'))
        .or_else(|| rest.strip_prefix(':'))
        .filter(|after| after.is_empty() || after.starts_with(char::is_whitespace))
    {
        return Some((number.to_owned(), strip_dash(title.trim()).to_owned()));
    }
    if rest.starts_with(char::is_whitespace) {
        let after = rest.trim_start();
        if after.starts_with(['-', '–', '—']) {
            return Some((number.to_owned(), strip_dash(after).to_owned()));
        }
        // `7.2 Cleanup`: the number is part of how the heading reads.
        if number.contains('.') {
            return Some((number.to_owned(), text.to_owned()));
        }
        return Some((number.to_owned(), after.to_owned()));
    }
    None
}

/// `1`, `1.2`, `10.3.1` at the start of `text`, and what follows it.
fn outline_number(text: &str) -> Option<(&str, &str)> {
    let mut end = 0;
    let bytes = text.as_bytes();
    loop {
        let digits = bytes[end..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            break;
        }
        end += digits;
        if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
            end += 1;
        } else {
            break;
        }
    }
    (end > 0).then(|| (&text[..end], &text[end..]))
}

/// A short code such as `P0`, `P1.10` or `T-3`: up to three capital
/// letters, an optional `-`, then an outline number.
fn code_label(text: &str) -> Option<&str> {
    let letters = text.len()
        - text
            .trim_start_matches(|c: char| c.is_ascii_uppercase())
            .len();
    if !(1..=3).contains(&letters) {
        return None;
    }
    let mut rest = &text[letters..];
    let dash = usize::from(rest.starts_with('-'));
    rest = &rest[dash..];
    let (number, _) = outline_number(rest)?;
    Some(&text[..letters + dash + number.len()])
}

/// The title after a label's separator (`:`, `.`, `)`, ` -`, ` —`), or the
/// rest when `loose` allows a plain space.
fn after_separator(rest: &str, loose: bool) -> Option<&str> {
    if rest.is_empty() {
        return Some("");
    }
    let trimmed = rest.trim_start();
    for separator in [':', '.', ')', '|'] {
        if let Some(after) = trimmed.strip_prefix(separator)
            && (after.is_empty() || after.starts_with(char::is_whitespace))
        {
            return Some(strip_dash(after.trim()));
        }
    }
    if trimmed.starts_with(['-', '–', '—']) {
        return Some(strip_dash(trimmed));
    }
    (loose && rest.starts_with(char::is_whitespace)).then_some(trimmed)
}

fn strip_dash(text: &str) -> &str {
    text.trim_start_matches(['-', '–', '—']).trim_start()
}

struct Heading<'a> {
    level: usize,
    text: &'a str,
    /// 0-based index into the file's lines.
    line: usize,
    parent: Option<usize>,
    skipped: bool,
    /// Tasks with their 0-based line, before the next heading.
    tasks: Vec<(Task, usize)>,
    unreadable: Vec<UnreadableLine>,
}

/// Parses a checklist file with the default section rules.
pub fn parse(text: &str) -> Checklist {
    parse_with(text, &SectionRules::default())
}

/// Parses a checklist file into stories; see the module docs for the rules.
pub fn parse_with(text: &str, rules: &SectionRules) -> Checklist {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text
        .split('\n')
        .map(|raw| raw.strip_suffix('\r').unwrap_or(raw))
        .collect();
    let mut checklist = Checklist::default();
    let mut headings: Vec<Heading<'_>> = Vec::new();
    // Tasks and unreadable lines before the first heading.
    let mut preamble: Vec<(TaskLine<'_>, usize)> = Vec::new();
    let mut preamble_unreadable: Vec<UnreadableLine> = Vec::new();
    let mut fence: Option<Fence> = None;
    for (index, line) in lines.iter().enumerate() {
        if let Some(open) = fence {
            if closes_fence(open, line) {
                fence = None;
            } else if task_line(line).is_some() {
                checklist.fenced_checkboxes += 1;
            }
            continue;
        }
        if let Some(open) = opens_fence(line) {
            fence = Some(open);
        } else if let Some((level, text)) = heading(line) {
            let mut parent = headings.len().checked_sub(1);
            while let Some(p) = parent {
                if headings[p].level < level {
                    break;
                }
                parent = headings[p].parent;
            }
            headings.push(Heading {
                level,
                text,
                line: index,
                parent,
                skipped: false,
                tasks: Vec::new(),
                unreadable: Vec::new(),
            });
        } else if let Some(task) = task_line(line) {
            match headings.last_mut() {
                Some(heading) => heading.tasks.push((to_task(&task, index + 1), index)),
                None => preamble.push((task, index)),
            }
        } else if unreadable_box(line) {
            let unreadable = UnreadableLine {
                line: index + 1,
                text: line.trim().to_owned(),
            };
            checklist.unreadable.push(unreadable.clone());
            match headings.last_mut() {
                Some(heading) => heading.unreadable.push(unreadable),
                None => preamble_unreadable.push(unreadable),
            }
        }
    }

    // A lone level-one heading at the top is the document's title: its
    // direct boxes are the preamble, and it is no story's parent.
    let title_heading = headings
        .first()
        .filter(|first| first.level == 1)
        .filter(|_| headings.iter().filter(|h| h.level == 1).count() == 1)
        .map(|_| 0);
    if let Some(title) = title_heading {
        let moved = std::mem::take(&mut headings[title].tasks);
        let moved_lines: Vec<(TaskLine<'_>, usize)> = moved
            .iter()
            .filter_map(|(_, index)| task_line(lines[*index]).map(|task| (task, *index)))
            .collect();
        preamble.extend(moved_lines);
        preamble_unreadable.append(&mut headings[title].unreadable);
        for heading in headings.iter_mut() {
            if heading.parent == Some(title) {
                heading.parent = None;
            }
        }
    }

    for index in 0..headings.len() {
        if Some(index) == title_heading {
            continue;
        }
        let own_title = heading_label(headings[index].text)
            .map_or_else(|| headings[index].text.to_owned(), |(_, title)| title);
        let inherited = headings[index]
            .parent
            .is_some_and(|parent| headings[parent].skipped);
        headings[index].skipped = inherited || rules.is_skipped(&own_title);
    }

    let mut warnings = unreadable_warnings(&checklist.unreadable);
    warnings.extend(skipped_warnings(&headings));
    let any_section_work = headings
        .iter()
        .enumerate()
        .any(|(index, h)| Some(index) != title_heading && !h.skipped && !h.tasks.is_empty());
    if !any_section_work {
        checklist.stories = flat_stories(&lines, &preamble, title_heading.map(|t| &headings[t]));
        attach_orphans(&mut checklist.stories, preamble_unreadable);
        for heading in headings.iter().filter(|h| !h.skipped) {
            attach_orphans(&mut checklist.stories, heading.unreadable.clone());
        }
        warnings.sort_by_key(|w| w.line);
        checklist.warnings = warnings;
        return checklist;
    }

    let mut stories: Vec<Story> = Vec::new();
    if !preamble.is_empty() || !preamble_unreadable.is_empty() {
        let tasks = preamble
            .iter()
            .map(|(task, index)| to_task(task, index + 1))
            .collect();
        let mut story = Story::from_tasks(PREAMBLE_ID, PREAMBLE_TITLE, tasks);
        story.unreadable = preamble_unreadable;
        stories.push(story);
    }
    let is_story =
        |h: &Heading<'_>| !h.skipped && (!h.tasks.is_empty() || !h.unreadable.is_empty());
    // An unlabelled section's id is its position among the file's headings
    // (the title aside), counting those without boxes too, so it stays put
    // when boxes are ticked or added.
    let mut positions = vec![0; headings.len()];
    let mut position = 0;
    for (index, slot) in positions.iter_mut().enumerate() {
        if Some(index) != title_heading {
            position += 1;
            *slot = position;
        }
    }
    let labels: std::collections::HashSet<String> = headings
        .iter()
        .filter(|h| is_story(h))
        .filter_map(|h| heading_label(h.text).map(|(id, _)| id))
        .collect();
    for (index, heading) in headings.iter().enumerate() {
        if Some(index) == title_heading {
            continue;
        }
        if heading.skipped {
            continue;
        }
        if !is_story(heading) {
            continue;
        }
        let (id, title) = match heading_label(heading.text) {
            Some((id, title)) => (id, title),
            None => {
                let id = positions[index].to_string();
                let id = if labels.contains(&id) {
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
        let tasks = heading.tasks.iter().map(|(task, _)| task.clone()).collect();
        let mut story = Story::from_tasks(id, title, tasks);
        story.unreadable = heading.unreadable.clone();
        story.section = Some(section_of(&lines, &headings, index, &is_story));
        stories.push(story);
    }
    dedupe_ids(&mut stories, &mut warnings);
    warnings.sort_by_key(|w| w.line);
    checklist.stories = stories;
    checklist.warnings = warnings;
    checklist
}

/// One warning per skipped section that held boxes (its sub-sections'
/// included), at the outermost skipped heading.
fn skipped_warnings(headings: &[Heading<'_>]) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for (index, heading) in headings.iter().enumerate() {
        let outermost = heading.parent.is_none_or(|p| !headings[p].skipped);
        if !heading.skipped || !outermost {
            continue;
        }
        let count = subtree_boxes(headings, index);
        if count == 0 {
            continue;
        }
        warnings.push(Warning {
            line: Some(heading.line + 1),
            kind: WarningKind::SkippedSection,
            message: format!(
                "section \"{}\" is not read as work ({count} box{} skipped); to work it, add it to `keep` under [stories] in ralph.toml",
                heading.text,
                if count == 1 { "" } else { "es" }
            ),
        });
    }
    warnings
}

fn subtree_boxes(headings: &[Heading<'_>], index: usize) -> usize {
    let mut total = headings[index].tasks.len();
    for heading in &headings[index + 1..] {
        if heading.level <= headings[index].level {
            break;
        }
        total += heading.tasks.len();
    }
    total
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

/// Gives each repeated id a `-2`, `-3`… suffix, with a warning.
fn dedupe_ids(stories: &mut [Story], warnings: &mut Vec<Warning>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let taken: std::collections::HashSet<String> = stories.iter().map(|s| s.id.clone()).collect();
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

/// The text of story `index`'s section: from its heading to the next
/// heading that is not inside it or is a story itself (a skipped
/// sub-section, such as its notes, stays in); with the intros of the
/// sections around it.
fn section_of(
    lines: &[&str],
    headings: &[Heading<'_>],
    index: usize,
    is_story: &dyn Fn(&Heading<'_>) -> bool,
) -> StorySection {
    let heading = &headings[index];
    let end = headings[index + 1..]
        .iter()
        .find(|next| next.level <= heading.level || is_story(next))
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

fn to_task(task: &TaskLine<'_>, line: usize) -> Task {
    Task {
        text: task.full_text(),
        done: task.done,
        line,
    }
}

/// A file where no section holds boxes: one story per top-level box, with
/// the boxes nested under it as its further tasks.
fn flat_stories(
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
