//! The grammar of one line of a task list: what is a box (and whether it
//! is ticked), what only looks like one, what is a heading, and the label
//! an author gave a heading. Pure functions of a line of text.

use std::ops::Range;

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
    /// The task as a reader sees it: its bold id, then its text without
    /// HTML comments (`<!-- id: 3 -->`), which markdown does not show.
    pub(super) fn full_text(&self) -> String {
        let text = without_comments(self.text);
        match self.id {
            Some(id) if text.is_empty() => id.to_owned(),
            Some(id) => format!("{id} {text}"),
            None => text,
        }
    }
}

/// `text` without its HTML comments, with the white space around them
/// closed up; an unclosed `<!--` is kept. Text without comments is
/// returned as it is.
pub(super) fn without_comments(text: &str) -> String {
    if !text.contains("<!--") {
        return text.to_owned();
    }
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        let Some(length) = rest[start + 4..].find("-->") else {
            break;
        };
        shown.push_str(&rest[..start]);
        rest = &rest[start + 4 + length + 3..];
    }
    shown.push_str(rest);
    shown.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// JavaScript's `\s`: Unicode white space without U+0085, plus the BOM.
pub(super) fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// The rest of a line after a list marker: `-`, `*`, `+`, `1.` or `1)`.
pub(super) fn after_list_marker(text: &str) -> Option<&str> {
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
pub(super) struct BoxStart<'a> {
    pub(super) id: Option<&'a str>,
    /// The text from the `[` on.
    rest: &'a str,
    /// The box sits inside `**…**`, whose closing marks end the text.
    in_bold: bool,
}

pub(super) fn box_start(after_marker: &str) -> Option<BoxStart<'_>> {
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
pub(super) fn mark_state(mark: char) -> Option<bool> {
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
pub(super) fn table_task(line: &str, indent: usize) -> Option<TaskLine<'_>> {
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
pub(super) fn table_cells(line: &str) -> Vec<Range<usize>> {
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

/// The range of `line[from..to]` without its surrounding white space; an
/// empty cell (`| |`) gives an empty range at its start.
pub(super) fn trimmed_range(line: &str, from: usize, to: usize) -> Range<usize> {
    let cell = &line[from..to];
    let start = from + (cell.len() - cell.trim_start().len());
    let end = start + cell.trim().len();
    start..end
}

/// Words that, alone in brackets where a box belongs, say a status.
pub(super) const STATUS_WORDS: &[&str] = &[
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
pub(super) fn box_like(inner: &str) -> bool {
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
pub(super) fn leading_box(text: &str) -> Option<&str> {
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

pub(super) fn columns(indent: &str) -> usize {
    indent.chars().fold(0, |column, c| match c {
        '\t' => column + 4 - column % 4,
        _ => column + 1,
    })
}

/// An open code fence: its character and how many of them opened it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fence {
    pub(super) ch: char,
    pub(super) len: usize,
    /// GitHub's `[tasklist]` block: a task list, not code.
    pub(super) tasklist: bool,
}

pub(super) fn fence_run(line: &str) -> Option<(Fence, &str)> {
    let trimmed = line.trim_start_matches([' ', '\t']);
    let ch = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let rest = trimmed.trim_start_matches(ch);
    let len = trimmed.len() - rest.len();
    (len >= 3).then_some((
        Fence {
            ch,
            len,
            tasklist: false,
        },
        rest,
    ))
}

pub(super) fn opens_fence(line: &str) -> Option<Fence> {
    let (fence, info) = fence_run(line)?;
    // CommonMark: a backtick fence's info string cannot hold a backtick.
    (fence.ch == '~' || !info.contains('`')).then_some(fence)
}

/// A fence that opens GitHub's tasklist block: ```` ```[tasklist] ````.
pub(super) fn opens_tasklist(line: &str) -> Option<Fence> {
    let (fence, info) = fence_run(line)?;
    info.trim()
        .eq_ignore_ascii_case("[tasklist]")
        .then_some(Fence {
            tasklist: true,
            ..fence
        })
}

pub(super) fn closes_fence(open: Fence, line: &str) -> bool {
    fence_run(line).is_some_and(|(fence, rest)| {
        fence.ch == open.ch && fence.len >= open.len && rest.trim().is_empty()
    })
}

/// Characters that take no room on screen: the byte-order mark, zero-width
/// space, non-joiner and joiner, and the word joiner.
const INVISIBLE: &[char] = &['\u{feff}', '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}'];

/// The level and text of an ATX heading (`#` to `######`), if the line is one.
///
/// Characters no reader sees do not hide a heading: a byte-order mark or a
/// zero-width character before the `#`s (files pasted together, or written
/// by tools, carry them), and a non-breaking space after them.
pub(super) fn heading(line: &str) -> Option<(usize, &str)> {
    let line = line.trim_start_matches(INVISIBLE);
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
    if !(rest.is_empty() || rest.starts_with([' ', '\t', '\u{a0}'])) {
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
pub(super) const LABEL_WORDS: &[&str] = &[
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
    "week",
    "day",
];

/// Splits a heading into the id its label gives and the title without the
/// label: `3. Docs` → (`3`, `Docs`), `1) CLI` → (`1`, `CLI`), `Phase 2:
/// Core` → (`phase-2`, `Core`), `P0.1 - Stdlib` → (`P0.1`, `Stdlib`). An
/// outline number followed by a plain space (`7.2 Cleanup`) is the id and
/// stays in the title, which is how such headings are read aloud.
pub fn heading_label(heading: &str) -> Option<(String, String)> {
    let text = without_marks(heading);
    if let Some(label) = word_label(text) {
        return Some(label);
    }
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
    // A lettered number, `1a.` or `5b)`: the letter belongs to the label.
    if let Some(title) = lettered(rest) {
        let label = &text[..number.len() + 1];
        return Some((label.to_owned(), strip_dash(title.trim()).to_owned()));
    }
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

/// A heading without the emoji or status marks before its label (`✅
/// Etapa 0`, `🚀 3.`), which do not hide it.
fn without_marks(heading: &str) -> &str {
    heading
        .trim()
        .trim_start_matches(|c: char| (!c.is_alphanumeric() && !c.is_ascii()) || c.is_whitespace())
}

/// A stage number after any word, in any language: `Etapa 0: Base`,
/// `Fase 2 - Pagos`, `Schritt 4:`, `阶段 3：数据` (the id is the word, in
/// lower case, and the number: `etapa-0`). Outside [`LABEL_WORDS`] the
/// number must be followed by a separator, so `Python 3 upgrade` is no
/// label.
fn word_label(text: &str) -> Option<(String, String)> {
    let word_end = text.find(|c: char| !c.is_alphabetic())?;
    let word = &text[..word_end];
    if word.is_empty() || LABEL_WORDS.contains(&word.to_lowercase().as_str()) {
        return None;
    }
    let after_word = &text[word_end..];
    let spaced = after_word.trim_start_matches([' ', '\t']);
    let cjk = word.chars().last().is_some_and(|c| c as u32 >= 0x2e80);
    if spaced.len() == after_word.len() && !cjk {
        return None;
    }
    let (number, rest) = outline_number(spaced)?;
    // A full-width colon needs no space after it.
    let rest = match rest.strip_prefix(['：', '．']) {
        Some(after) => format!(": {after}"),
        None => rest.to_owned(),
    };
    if rest.is_empty() {
        return None;
    }
    let title = after_separator(&rest, false)?;
    Some((
        format!("{}-{number}", word.to_lowercase()),
        title.to_owned(),
    ))
}

/// After a number, one ASCII letter then `.`, `)` or `:` and a space (or
/// nothing): the title after it. `3d rendering` is not lettered; `1a.` is.
fn lettered(rest: &str) -> Option<&str> {
    let letter = rest.chars().next().filter(char::is_ascii_alphabetic)?;
    let after = &rest[letter.len_utf8()..];
    let title = after
        .strip_prefix('.')
        .or_else(|| after.strip_prefix(')'))
        .or_else(|| after.strip_prefix(':'))?;
    (title.is_empty() || title.starts_with(char::is_whitespace)).then_some(title)
}

/// `1`, `1.2`, `10.3.1` at the start of `text`, and what follows it.
pub(super) fn outline_number(text: &str) -> Option<(&str, &str)> {
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
pub(super) fn code_label(text: &str) -> Option<&str> {
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
pub(super) fn after_separator(rest: &str, loose: bool) -> Option<&str> {
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

pub(super) fn strip_dash(text: &str) -> &str {
    text.trim_start_matches(['-', '–', '—']).trim_start()
}
