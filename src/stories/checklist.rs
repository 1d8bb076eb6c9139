//! The markdown checklist parser shared by the OpenSpec and markdown sources.
//!
//! A task is a line matching OpenSpec's own rule, `^\s*[-*]\s*\[([\sxX])\]\s*(.*)`,
//! and is done when its box holds `x` or `X`; `\s` means what it means in
//! JavaScript, so the count matches the `openspec` CLI line for line.
//!
//! Stories are cut from the file as follows:
//! - Every level-two heading (`## ...`) starts a story. `## 3. Docs` gives id
//!   `3` and title `Docs`; a heading without a leading `N.` takes its 1-based
//!   position among all `##` headings as id (headings without boxes count, so
//!   ids stay put when a box is added to an empty section). A heading with no
//!   box under it gives no story. Indented boxes belong to the story above.
//! - Boxes before the first heading form a story of their own, with id
//!   [`PREAMBLE_ID`] (`0`) and title [`PREAMBLE_TITLE`].
//! - A file with no `##` heading at all is a flat to-do list: each top-level
//!   box is a story (id = its 1-based position among top-level boxes, title =
//!   its text) whose tasks are the box itself plus the boxes nested under it.
//!   "Top-level" means the smallest indentation among the file's boxes, so a
//!   list that is indented as a whole still works; a box indented deeper but
//!   preceding every top-level box stands alone.
//!
//! One deliberate difference from OpenSpec: a box inside a ``` or ~~~ code
//! fence is example text, not work, and counting it would leave its story
//! impossible to finish honestly. Such boxes are not tasks here; the parser
//! counts them in [`Checklist::fenced_checkboxes`] so a cross-check against the
//! CLI can compare `native + fenced` with the CLI's total. Headings inside
//! fences do not start stories either.

use std::ops::Range;

use super::{Story, Task};

/// Id of the story made of the boxes before the first `##` heading.
pub const PREAMBLE_ID: &str = "0";
/// Title of the story made of the boxes before the first `##` heading.
pub const PREAMBLE_TITLE: &str = "Preamble";

/// The stories of one checklist file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checklist {
    pub stories: Vec<Story>,
    /// Boxes seen inside code fences and therefore not counted as tasks.
    pub fenced_checkboxes: usize,
}

/// A line that is a task by OpenSpec's rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLine<'a> {
    pub done: bool,
    pub text: &'a str,
    /// Leading whitespace in columns, tabs to the next multiple of four.
    pub indent: usize,
    /// Byte range of the character between the brackets.
    pub mark: Range<usize>,
}

/// JavaScript's `\s`: Unicode white space without U+0085, plus the BOM.
fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// Matches one line (without its line break) against OpenSpec's task rule.
pub fn task_line(line: &str) -> Option<TaskLine<'_>> {
    let after_indent = line.trim_start_matches(is_js_space);
    let indent_text = &line[..line.len() - after_indent.len()];
    let after_bullet = after_indent
        .strip_prefix('-')
        .or_else(|| after_indent.strip_prefix('*'))?;
    let in_box = after_bullet
        .trim_start_matches(is_js_space)
        .strip_prefix('[')?;
    let mark = in_box.chars().next()?;
    let done = match mark {
        'x' | 'X' => true,
        c if is_js_space(c) => false,
        _ => return None,
    };
    let rest = in_box[mark.len_utf8()..].strip_prefix(']')?;
    let mark_start = line.len() - in_box.len();
    Some(TaskLine {
        done,
        text: rest.trim_matches(is_js_space),
        indent: columns(indent_text),
        mark: mark_start..mark_start + mark.len_utf8(),
    })
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

/// The text of a level-two heading, if the line is one.
fn heading(line: &str) -> Option<&str> {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    if spaces > 3 {
        return None;
    }
    let rest = line[spaces..].strip_prefix("##")?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim();
    // An optional closing sequence of `#`s is not part of the title.
    let without_closing = text.trim_end_matches('#');
    if without_closing.is_empty() || without_closing.ends_with([' ', '\t']) {
        Some(without_closing.trim_end())
    } else {
        Some(text)
    }
}

/// Splits `3. Docs` into id `3` and title `Docs`.
fn numbered(heading: &str) -> Option<(&str, &str)> {
    let digits_end = heading
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(heading.len());
    if digits_end == 0 {
        return None;
    }
    let rest = heading[digits_end..].strip_prefix('.')?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some((&heading[..digits_end], rest.trim()))
}

enum Item<'a> {
    Heading(&'a str),
    Task(TaskLine<'a>, usize),
}

/// Parses a checklist file into stories; see the module docs for the rules.
pub fn parse(text: &str) -> Checklist {
    let mut items = Vec::new();
    let mut fenced_checkboxes = 0;
    let mut fence: Option<Fence> = None;
    for (index, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(open) = fence {
            if closes_fence(open, line) {
                fence = None;
            } else if task_line(line).is_some() {
                fenced_checkboxes += 1;
            }
            continue;
        }
        if let Some(open) = opens_fence(line) {
            fence = Some(open);
        } else if let Some(text) = heading(line) {
            items.push(Item::Heading(text));
        } else if let Some(task) = task_line(line) {
            items.push(Item::Task(task, index + 1));
        }
    }
    let stories = if items.iter().any(|item| matches!(item, Item::Heading(_))) {
        by_headings(&items)
    } else {
        by_top_level_boxes(&items)
    };
    Checklist {
        stories,
        fenced_checkboxes,
    }
}

fn to_task(task: &TaskLine<'_>, line: usize) -> Task {
    Task {
        text: task.text.to_owned(),
        done: task.done,
        line,
    }
}

fn by_headings(items: &[Item<'_>]) -> Vec<Story> {
    let mut stories = Vec::new();
    let mut current = Story::from_tasks(PREAMBLE_ID, PREAMBLE_TITLE, Vec::new());
    let mut headings_seen = 0;
    for item in items {
        match item {
            Item::Heading(text) => {
                headings_seen += 1;
                let (id, title) = match numbered(text) {
                    Some((id, title)) => (id.to_owned(), title),
                    None => (headings_seen.to_string(), *text),
                };
                let title = if title.is_empty() {
                    format!("Story {id}")
                } else {
                    title.to_owned()
                };
                let finished =
                    std::mem::replace(&mut current, Story::from_tasks(id, title, Vec::new()));
                if !finished.tasks.is_empty() {
                    stories.push(finished);
                }
            }
            Item::Task(task, line) => current.tasks.push(to_task(task, *line)),
        }
    }
    if !current.tasks.is_empty() {
        stories.push(current);
    }
    stories
}

fn by_top_level_boxes(items: &[Item<'_>]) -> Vec<Story> {
    let tasks: Vec<(&TaskLine<'_>, usize)> = items
        .iter()
        .filter_map(|item| match item {
            Item::Task(task, line) => Some((task, *line)),
            Item::Heading(_) => None,
        })
        .collect();
    let Some(top) = tasks.iter().map(|(task, _)| task.indent).min() else {
        return Vec::new();
    };
    let mut stories: Vec<Story> = Vec::new();
    let mut seen_top_level = false;
    for (task, line) in tasks {
        let is_top = task.indent <= top;
        match stories.last_mut() {
            Some(story) if !is_top && seen_top_level => story.tasks.push(to_task(task, line)),
            _ => {
                seen_top_level |= is_top;
                let id = (stories.len() + 1).to_string();
                let title = if task.text.is_empty() {
                    format!("Task {id}")
                } else {
                    task.text.to_owned()
                };
                stories.push(Story::from_tasks(id, title, vec![to_task(task, line)]));
            }
        }
    }
    stories
}

/// Returns `text` with the box on 1-based `line` ticked (`[x]`), leaving
/// every other byte, line endings included, as it was. A line that is not a
/// task, or is out of range, leaves the text unchanged.
pub fn tick(text: &str, line: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, raw) in text.split_inclusive('\n').enumerate() {
        let content = raw.trim_end_matches(['\n', '\r']);
        match task_line(content).filter(|task| index + 1 == line && !task.done) {
            Some(task) => {
                out.push_str(&raw[..task.mark.start]);
                out.push('x');
                out.push_str(&raw[task.mark.end..]);
            }
            None => out.push_str(raw),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, done, line) of one task.
    type TaskRow = (String, bool, usize);

    fn summary(checklist: &Checklist) -> Vec<(String, String, Vec<TaskRow>)> {
        checklist
            .stories
            .iter()
            .map(|story| {
                (
                    story.id.clone(),
                    story.title.clone(),
                    story
                        .tasks
                        .iter()
                        .map(|task| (task.text.clone(), task.done, task.line))
                        .collect(),
                )
            })
            .collect()
    }

    fn t(text: &str, done: bool, line: usize) -> TaskRow {
        (text.to_owned(), done, line)
    }

    #[test]
    fn task_lines_follow_the_openspec_rule() {
        let cases: &[(&str, Option<(bool, &str)>)] = &[
            ("- [ ] plain", Some((false, "plain"))),
            ("- [x] done", Some((true, "done"))),
            ("- [X] upper", Some((true, "upper"))),
            ("* [x] star", Some((true, "star"))),
            ("   - [ ] indented", Some((false, "indented"))),
            ("-[ ]tight", Some((false, "tight"))),
            ("-   [\t]   tab mark  ", Some((false, "tab mark"))),
            ("\u{feff}- [ ] after a BOM", Some((false, "after a BOM"))),
            ("- [ ]", Some((false, ""))),
            ("- [y] other mark", None),
            ("- [  ] two spaces", None),
            ("+ [ ] plus bullet", None),
            ("1. [ ] ordered", None),
            ("- [link](x)", None),
            ("**[x]** bold", None),
            ("text - [ ] later", None),
            ("- [ x] late mark", None),
        ];
        for (line, expected) in cases {
            let got = task_line(line).map(|task| (task.done, task.text));
            assert_eq!(got, *expected, "{line:?}");
        }
    }

    #[test]
    fn openspec_fixture_is_split_by_headings() {
        let text = include_str!(
            "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/tasks.md"
        );
        let parsed = parse(text);
        assert_eq!(parsed.fenced_checkboxes, 1);
        assert_eq!(
            summary(&parsed),
            vec![
                (
                    "1".to_owned(),
                    "Greeting".to_owned(),
                    vec![
                        t("1.1 Create hello.txt containing a greeting", false, 3),
                        t(
                            "1.2 Add a test that checks hello.txt is not empty",
                            false,
                            4
                        ),
                        t("1.2.1 Nested detail: run the test in CI", false, 5),
                    ]
                ),
                (
                    "2".to_owned(),
                    "Farewell".to_owned(),
                    vec![
                        t("2.1 Decide the farewell wording", true, 9),
                        t("2.2 Create bye.txt containing the farewell", false, 10),
                    ]
                ),
                (
                    "3".to_owned(),
                    "Docs".to_owned(),
                    vec![
                        t("3.1 Mention hello.txt in README.md", true, 14),
                        t("3.2 Mention bye.txt in README.md", false, 15),
                    ]
                ),
            ]
        );
    }

    #[test]
    fn preamble_boxes_and_unnumbered_headings() {
        let text = "# Plan\n- [ ] before\n## Setup\n- [x] a\n## Empty\ntext\n## 7. Seven\n- [ ] b\n## Last\n  * [ ] c\n";
        assert_eq!(
            summary(&parse(text)),
            vec![
                (
                    "0".to_owned(),
                    "Preamble".to_owned(),
                    vec![t("before", false, 2)]
                ),
                ("1".to_owned(), "Setup".to_owned(), vec![t("a", true, 4)]),
                ("7".to_owned(), "Seven".to_owned(), vec![t("b", false, 8)]),
                ("4".to_owned(), "Last".to_owned(), vec![t("c", false, 10)]),
            ]
        );
    }

    #[test]
    fn heading_forms() {
        assert_eq!(heading("## 1. Greeting"), Some("1. Greeting"));
        assert_eq!(heading("   ## Title ##"), Some("Title"));
        assert_eq!(heading("## C#"), Some("C#"));
        assert_eq!(heading("##"), Some(""));
        assert_eq!(heading("### Sub"), None);
        assert_eq!(heading("##Tight"), None);
        assert_eq!(heading("    ## code"), None);
        assert_eq!(numbered("12. Twelve"), Some(("12", "Twelve")));
        assert_eq!(numbered("1.2 Sub"), None);
        assert_eq!(numbered("Docs"), None);
        assert_eq!(numbered("2."), Some(("2", "")));
    }

    #[test]
    fn fenced_boxes_and_headings_are_skipped_but_counted() {
        let text = "## 1. A\n- [ ] real\n~~~~md\n## 9. Not a story\n- [x] example\n~~~\n* [ ] still fenced\n~~~~~\n- [ ] real again\n```rust\n- [ ] unclosed fence\n";
        let parsed = parse(text);
        assert_eq!(parsed.fenced_checkboxes, 3);
        assert_eq!(
            summary(&parsed),
            vec![(
                "1".to_owned(),
                "A".to_owned(),
                vec![t("real", false, 2), t("real again", false, 9)]
            )]
        );
    }

    #[test]
    fn inline_backticks_do_not_open_a_fence() {
        let parsed = parse("## 1. A\n```not`a fence\n- [ ] counted\n");
        assert_eq!(parsed.fenced_checkboxes, 0);
        assert_eq!(parsed.stories[0].tasks.len(), 1);
    }

    #[test]
    fn headingless_file_makes_one_story_per_top_level_box() {
        let text = "# TODO\r\n\r\n- [ ] Write parser\r\n  - [x] lexer\r\n\t- [ ] grammar\r\n- [x] Ship\r\n- [ ]\r\n";
        assert_eq!(
            summary(&parse(text)),
            vec![
                (
                    "1".to_owned(),
                    "Write parser".to_owned(),
                    vec![
                        t("Write parser", false, 3),
                        t("lexer", true, 4),
                        t("grammar", false, 5)
                    ]
                ),
                ("2".to_owned(), "Ship".to_owned(), vec![t("Ship", true, 6)]),
                ("3".to_owned(), "Task 3".to_owned(), vec![t("", false, 7)]),
            ]
        );
    }

    #[test]
    fn headingless_list_indented_as_a_whole() {
        let text = "    - [ ] deeper orphan\n  - [ ] a\n    - [ ] a.1\n  - [ ] b\n";
        assert_eq!(
            summary(&parse(text)),
            vec![
                (
                    "1".to_owned(),
                    "deeper orphan".to_owned(),
                    vec![t("deeper orphan", false, 1)]
                ),
                (
                    "2".to_owned(),
                    "a".to_owned(),
                    vec![t("a", false, 2), t("a.1", false, 3)]
                ),
                ("3".to_owned(), "b".to_owned(), vec![t("b", false, 4)]),
            ]
        );
    }

    #[test]
    fn files_without_boxes_give_no_story() {
        assert!(parse("").stories.is_empty());
        assert!(
            parse("## 1. Only prose\nNothing to do.\n")
                .stories
                .is_empty()
        );
    }

    #[test]
    fn tick_changes_only_the_box() {
        let text = "## 1. A\r\n- [ ] one\r\n  * [\u{a0}] two\n- [X] three";
        assert_eq!(
            tick(text, 2),
            "## 1. A\r\n- [x] one\r\n  * [\u{a0}] two\n- [X] three"
        );
        assert_eq!(
            tick(text, 3),
            "## 1. A\r\n- [ ] one\r\n  * [x] two\n- [X] three"
        );
        assert_eq!(tick(text, 4), text, "already done");
        assert_eq!(tick(text, 1), text, "not a task");
        assert_eq!(tick(text, 99), text, "out of range");
    }

    #[test]
    fn ticking_every_task_completes_every_story() {
        let mut text = include_str!(
            "../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/tasks.md"
        )
        .to_owned();
        let lines: Vec<usize> = parse(&text)
            .stories
            .iter()
            .flat_map(|story| story.tasks.iter().map(|task| task.line))
            .collect();
        for line in lines {
            text = tick(&text, line);
        }
        let parsed = parse(&text);
        assert!(parsed.stories.iter().all(Story::is_complete));
        assert_eq!(parsed.fenced_checkboxes, 1);
        assert!(text.contains("- [ ] this line sits in a code fence"));
    }
}
