//! Issue 28: the checklist reader (OpenSpec `tasks.md`, `--tasks` files)
//! on generated documents. Documents are built from the shapes real plans
//! hold — headings with and without labels, boxes in every form the reader
//! knows and in forms it does not, tables with any number of empty cells,
//! code fences left open, multi-byte text — joined with LF or CRLF, with or
//! without a byte-order mark and a final newline; and from awkward
//! characters alone. Besides "no panic", each test checks what must hold
//! of any reading.

use std::path::Path;

use git_ralph::stories::checklist::{
    self, Checklist, SectionRules, heading_label, task_line, tick, unreadable_box, untick,
};
use git_ralph::stories::{MarkdownSource, OpenSpecSource, StoriesError, StorySource};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;

use crate::harness::fuzz::{awkward_line, awkward_text, cases, words};

/// White space a line may start with.
fn indent() -> impl Strategy<Value = String> {
    select(
        &[
            "", "", "  ", "    ", "\t", " \t", "\u{a0}", "\u{3000}", "\u{feff}", "      ",
        ][..],
    )
    .prop_map(str::to_owned)
}

/// A heading: up to seven `#`, a label or none, a title, maybe closing `#`s.
fn heading() -> impl Strategy<Value = String> {
    let hashes = select(
        &[
            "#", "##", "###", "####", "######", "#######", " ##", "   #", "    #",
        ][..],
    );
    let gap = select(&[" ", "  ", "\t", ""][..]);
    let label = select(
        &[
            "",
            "1. ",
            "1) ",
            "2.3 ",
            "10.3.1. ",
            "0. ",
            "Phase 2: ",
            "Phase 2 ",
            "phase 1 - ",
            "Tier 1b ",
            "Task 3.1: ",
            "P0.1 - ",
            "P1.10: ",
            "T-3 — ",
            "ABCD1 ",
            "3 ",
            "1.2.",
            "Step",
            "7.2 ",
            "1:",
            "1)",
            "Story 4b) ",
        ][..],
    );
    let title = prop_oneof![
        3 => select(
            &[
                "Docs",
                "Success Criteria",
                "Notes on it",
                "✅ Completed",
                "Tasks",
                "Optional",
                "",
                "#",
                " ## ",
                "日本",
            ][..]
        )
        .prop_map(str::to_owned),
        1 => awkward_line(12),
    ];
    let closing = select(&["", "", " #", " ##", "#"][..]);
    (hashes, gap, label, title, closing).prop_map(|(hashes, gap, label, title, closing)| {
        format!("{hashes}{gap}{label}{title}{closing}")
    })
}

/// A box in any of the forms the module docs of `checklist` name, and
/// forms that only look like one.
fn box_line() -> impl Strategy<Value = String> {
    let marker = select(
        &[
            "-",
            "*",
            "+",
            "1.",
            "1)",
            "12.",
            "1234567890.",
            "",
            "a.",
            "1.[ ]",
        ][..],
    );
    let gap = select(&[" ", "", "  ", "\t", "\u{a0}", "\u{3000}"][..]);
    let bold_id = select(
        &[
            "",
            "",
            "**P1.10** ",
            "**P1.10**: ",
            "__T-3__ ",
            "**a b c d** ",
            "**[x]** ",
            "** **",
        ][..],
    );
    let open_bold = select(&["", "", "**", "__"][..]);
    let mark = select(
        &[
            " ", "x", "X", "~", "-", "\t", "\u{3000}", "\u{a0}", "\u{85}", "é", "日", "?", "",
            "  ", " x", "partial", "done", "n/a", "[", "]", "\u{feff}", "😀",
        ][..],
    );
    let close = select(&["]", "]", "]", "", ")", "]("][..]);
    let text = prop_oneof![3 => words(), 1 => awkward_line(16)];
    let close_bold = select(&["", "**", "__", "** "][..]);
    (
        indent(),
        marker,
        gap,
        bold_id,
        open_bold,
        mark,
        close,
        text,
        close_bold,
    )
        .prop_map(
            |(indent, marker, gap, bold_id, open_bold, mark, close, text, close_bold)| {
                format!(
                    "{indent}{marker}{gap}{bold_id}{open_bold}[{mark}{close} {text}{close_bold}"
                )
            },
        )
}

/// A table row: any number of cells, empty or not, boxes among them.
fn table_row() -> impl Strategy<Value = String> {
    let cell = select(
        &[
            "",
            "",
            " ",
            "  ",
            "[ ]",
            "[x]",
            " [x] ",
            "[~]",
            "[é]",
            "[  ]",
            "[partial]",
            "é",
            "日本",
            "\\|",
            "\\",
            " \u{a0} ",
            "\u{2003}",
            "**Total**",
            "a",
            "3",
            "[x](link)",
            "\t",
        ][..],
    );
    let cells = proptest::collection::vec(cell, 0..8);
    let end = select(&["|", "|", "", " |", "|  ", "\\|"][..]);
    (indent(), cells, end).prop_map(|(indent, cells, end)| {
        let mut row = format!("{indent}|");
        row.push_str(&cells.join("|"));
        row.push_str(end);
        row
    })
}

/// A code fence, opening or closing, of either kind.
fn fence() -> impl Strategy<Value = String> {
    select(
        &[
            "```", "~~~", "````", "```rust", "   ```", "``` `x`", "~~~~", "``", "```  ", "\t```",
        ][..],
    )
    .prop_map(str::to_owned)
}

/// One line of a plan, without its line break and without a carriage
/// return (see [`document`] for those).
fn plan_line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => heading(),
        6 => box_line(),
        2 => table_row(),
        1 => fence(),
        2 => words(),
        1 => Just(String::new()),
        2 => awkward_line(24),
    ]
}

/// A plan: its lines, which end each line takes, and how the file starts
/// and ends.
#[derive(Debug, Clone)]
struct Plan {
    lines: Vec<String>,
    crlf: Vec<bool>,
    bom: bool,
    final_newline: bool,
}

impl Plan {
    /// The file as written: LF or CRLF per line, BOM and final newline as drawn.
    fn text(&self) -> String {
        self.render(self.bom, |index| self.crlf[index], self.final_newline)
    }

    /// The same plan with LF line ends only, no BOM, no final newline. (A
    /// first line that starts with a BOM of its own keeps the file's BOM:
    /// only one is read as absent.)
    fn plain(&self) -> String {
        let own_bom = self
            .lines
            .first()
            .is_some_and(|line| line.starts_with('\u{feff}'));
        self.render(self.bom && own_bom, |_| false, false)
    }

    fn render(&self, bom: bool, crlf: impl Fn(usize) -> bool, final_newline: bool) -> String {
        let mut text = String::new();
        if bom {
            text.push('\u{feff}');
        }
        for (index, line) in self.lines.iter().enumerate() {
            text.push_str(line);
            let last = index + 1 == self.lines.len();
            if !last || final_newline {
                text.push_str(if crlf(index) { "\r\n" } else { "\n" });
            }
        }
        text
    }
}

fn plan() -> impl Strategy<Value = Plan> {
    proptest::collection::vec((plan_line(), any::<bool>()), 0..32)
        .prop_flat_map(|lines| (Just(lines), any::<bool>(), any::<bool>()))
        .prop_map(|(lines, bom, final_newline)| {
            let (lines, crlf) = lines.into_iter().unzip();
            Plan {
                lines,
                crlf,
                bom,
                final_newline,
            }
        })
}

/// Section rules from the words headings use, so that skip and keep matter.
fn rules() -> impl Strategy<Value = SectionRules> {
    let phrase = select(
        &[
            "Docs", "Notes", "Optional", "Tasks", "", "日本", "✅", "Phase",
        ][..],
    );
    (
        proptest::collection::vec(phrase.clone(), 0..3),
        proptest::collection::vec(phrase, 0..3),
    )
        .prop_map(|(skip, keep)| SectionRules {
            skip: skip.into_iter().map(str::to_owned).collect(),
            keep: keep.into_iter().map(str::to_owned).collect(),
            all_work: false,
        })
}

/// The lines of `text` as the reader numbers them: the BOM dropped, split
/// on LF, one carriage return taken off each.
fn logical_lines(text: &str) -> Vec<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect()
}

/// What must hold of any reading of `text`.
fn check_reading(text: &str, parsed: &Checklist) -> Result<(), TestCaseError> {
    let lines = logical_lines(text);
    let mut ids = std::collections::HashSet::new();
    let mut task_lines = std::collections::HashSet::new();
    for story in &parsed.stories {
        prop_assert!(!story.id.is_empty(), "a story without an id: {story:?}");
        prop_assert!(
            ids.insert(story.id.clone()),
            "id {:?} given twice",
            story.id
        );
        prop_assert!(!story.title.is_empty(), "story {:?} has no title", story.id);
        let mut previous = 0;
        for task in &story.tasks {
            prop_assert!(
                task.line > previous,
                "tasks out of line order in {:?}",
                story.id
            );
            previous = task.line;
            prop_assert!(
                task_lines.insert(task.line),
                "line {} is two tasks",
                task.line
            );
            let line = lines.get(task.line - 1).copied();
            prop_assert!(line.is_some(), "task line {} past the end", task.line);
            let read = task_line(line.unwrap_or_default());
            prop_assert!(
                read.is_some(),
                "line {} is not a task: {:?}",
                task.line,
                line
            );
            let read = read.expect("checked");
            prop_assert_eq!(read.done, task.done, "line {}", task.line);
            let text = match read.id {
                Some(id) if read.text.is_empty() => id.to_owned(),
                Some(id) => format!("{id} {}", read.text),
                None => read.text.to_owned(),
            };
            prop_assert_eq!(&text, &task.text, "line {}", task.line);
        }
        if let Some(section) = &story.section {
            prop_assert!(section.first_line >= 1);
            prop_assert!(section.first_line <= section.last_line, "{section:?}");
            prop_assert!(section.last_line <= lines.len(), "{section:?}");
        }
        for unreadable in &story.unreadable {
            prop_assert!(parsed.unreadable.contains(unreadable));
        }
    }
    for unreadable in &parsed.unreadable {
        let line = lines.get(unreadable.line - 1).copied().unwrap_or_default();
        prop_assert!(
            unreadable_box(line),
            "line {} is not box-like: {line:?}",
            unreadable.line
        );
        prop_assert_eq!(&unreadable.text, line.trim());
        prop_assert!(!task_lines.contains(&unreadable.line));
    }
    let warned: Vec<usize> = parsed.warnings.iter().filter_map(|w| w.line).collect();
    prop_assert!(
        warned.windows(2).all(|w| w[0] <= w[1]),
        "warnings out of order"
    );
    Ok(())
}

/// Every task of `parsed`, by line: (line, done).
fn task_states(parsed: &Checklist) -> Vec<(usize, bool)> {
    let mut tasks: Vec<(usize, bool)> = parsed
        .stories
        .iter()
        .flat_map(|story| story.tasks.iter().map(|task| (task.line, task.done)))
        .collect();
    tasks.sort_unstable();
    tasks
}

/// `text` with the mark of the box on 1-based `line` replaced by `mark`,
/// the line found as the file holds it (BOM and line end included).
fn with_mark(text: &str, line: usize, mark: &str) -> Result<String, TestCaseError> {
    let offset: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    let raw = text[offset..]
        .split_inclusive('\n')
        .next()
        .unwrap_or_default();
    let content = raw.trim_end_matches(['\n', '\r']);
    let task = task_line(content);
    prop_assert!(
        task.is_some(),
        "line {} as written is no task: {:?}",
        line,
        content
    );
    let range = task.expect("checked").mark;
    Ok(format!(
        "{}{mark}{}",
        &text[..offset + range.start],
        &text[offset + range.end..]
    ))
}

proptest! {
    #![proptest_config(cases(768))]

    /// 768 cases: generated plans through `parse_with` with generated
    /// section rules. Every task's line reads as that task, every
    /// unreadable line is box-like, ids are unique, sections lie in the
    /// file; CRLF, a BOM and a missing final newline change nothing.
    #[test]
    fn fuzz_checklist_plans_read_consistently(plan in plan(), rules in rules()) {
        let text = plan.text();
        let parsed = checklist::parse_with(&text, &rules);
        check_reading(&text, &parsed)?;
        let plain = checklist::parse_with(&plan.plain(), &rules);
        prop_assert_eq!(&parsed, &plain, "CRLF, BOM or final newline changed the reading");
    }

    /// 256 cases: ticking each open task's line (and unticking each done
    /// one) makes that task done (open) and changes only its mark; every
    /// other task stays as it was. Lines that are no task are left alone.
    #[test]
    fn fuzz_checklist_tick_changes_only_the_mark(plan in plan()) {
        let text = plan.text();
        let parsed = checklist::parse(&text);
        let before = task_states(&parsed);
        for &(line, done) in &before {
            let (changed, new_mark) = if done {
                (untick(&text, line), " ")
            } else {
                (tick(&text, line), "x")
            };
            let reread = checklist::parse(&changed);
            let expected: Vec<(usize, bool)> = before
                .iter()
                .map(|&(at, state)| (at, if at == line { !done } else { state }))
                .collect();
            prop_assert_eq!(task_states(&reread), expected, "line {}", line);
            prop_assert_eq!(&changed, &with_mark(&text, line, new_mark)?, "line {}", line);
            // Setting the state it already has changes nothing.
            let again = if done { tick(&text, line) } else { untick(&text, line) };
            prop_assert_eq!(&again, &text);
        }
        let lines = logical_lines(&text).len();
        for line in [0, lines + 1, lines + 100] {
            prop_assert_eq!(&tick(&text, line), &text);
            prop_assert_eq!(&untick(&text, line), &text);
        }
        for line in 1..=lines {
            if !before.iter().any(|(at, _)| *at == line)
                && task_line(logical_lines(&text)[line - 1]).is_none()
            {
                prop_assert_eq!(&tick(&text, line), &text, "line {} is no task", line);
            }
        }
    }

    /// 1024 cases: awkward text, any characters, through the reader, the
    /// line grammar and tick.
    #[test]
    fn fuzz_checklist_awkward_text_is_read(text in awkward_text(160)) {
        let parsed = checklist::parse(&text);
        check_reading(&text, &parsed)?;
        for (index, line) in text.split('\n').enumerate() {
            let _ = task_line(line);
            let _ = unreadable_box(line);
            let _ = tick(&text, index + 1);
            let _ = untick(&text, index + 1);
        }
    }

    /// 1024 cases: heading labels of generated headings and awkward text
    /// give a non-empty id when they give one.
    #[test]
    fn fuzz_checklist_heading_labels(
        heading in prop_oneof![heading(), awkward_line(40)],
    ) {
        let text = heading.trim_start_matches(['#', ' ', '\t']);
        for candidate in [heading.as_str(), text] {
            if let Some((id, _title)) = heading_label(candidate) {
                prop_assert!(!id.is_empty(), "{candidate:?}");
            }
        }
    }
}

/// Bytes that are not UTF-8: Latin-1 letters, lone lead and continuation
/// bytes, a character cut short, a surrogate.
const BAD_BYTES: &[&[u8]] = &[
    b"\xff",
    b"\xe9",
    b"\xc3",
    b"\xe6\x97",
    b"\x80\x80",
    b"\xf0\x9f\x98",
    b"\xed\xa0\x80",
];

/// A plan with bytes that are not UTF-8 spliced in at `at`.
fn with_bad_bytes(text: &str, at: usize, bad: &[u8]) -> (Vec<u8>, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let mut bytes = text.as_bytes()[..at].to_vec();
    bytes.extend_from_slice(bad);
    bytes.extend_from_slice(&text.as_bytes()[at..]);
    (bytes, at)
}

/// The line and column (1-based, in characters) of byte `at`.
fn line_and_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (
        1 + before.matches('\n').count(),
        1 + before[line_start..].chars().count(),
    )
}

/// What a source read from disk must give for `bytes`: the reading of the
/// text, or the error that says why there is none.
fn check_source(
    loaded: Result<git_ralph::stories::StorySet, StoriesError>,
    bytes: &[u8],
    file: &str,
) -> Result<(), TestCaseError> {
    match std::str::from_utf8(bytes) {
        Err(error) => {
            let at = error.valid_up_to();
            let text = std::str::from_utf8(&bytes[..at]).expect("valid up to there");
            let (line, column) = line_and_column(text, at);
            match loaded {
                Err(error @ StoriesError::NotUtf8 { .. }) => {
                    let message = error.to_string();
                    let place = format!("{file}:{line}:{column}:");
                    prop_assert!(message.contains(&place), "{message} (expected {place})");
                    prop_assert!(error.hint().is_some());
                }
                other => prop_assert!(false, "bytes that are not UTF-8 gave {other:?}"),
            }
        }
        Ok(text) => {
            let parsed = checklist::parse(text);
            match loaded {
                Ok(set) => {
                    prop_assert_eq!(set.stories, parsed.stories);
                    prop_assert_eq!(set.unreadable, parsed.unreadable);
                }
                Err(StoriesError::NoCheckboxes { path, fenced }) => {
                    prop_assert!(parsed.stories.is_empty());
                    prop_assert_eq!(fenced, parsed.fenced_checkboxes);
                    prop_assert!(path.ends_with(file));
                }
                // Every box sits in sections that are not work: the
                // refusal names the file and where the boxes are.
                Err(error @ StoriesError::NoWork { .. }) => {
                    prop_assert!(parsed.stories.is_empty());
                    prop_assert!(error.to_string().contains(file), "{error}");
                }
                Err(other) => prop_assert!(false, "{other}"),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(96))]

    /// 96 cases: a plan, perhaps with bytes that are not UTF-8 spliced in,
    /// read from disk by the markdown source (`--tasks`) and the OpenSpec
    /// source: the same stories as the parser gives, no checkbox as its
    /// error, or an error naming the file, the line and the column of the
    /// first bad byte.
    #[test]
    fn fuzz_checklist_sources_read_files_from_disk(
        plan in plan(),
        bad in proptest::option::of((
            0.0..=1.0f64,
            select(BAD_BYTES),
        )),
    ) {
        let text = plan.text();
        let bytes = match bad {
            Some((at, bad)) => with_bad_bytes(&text, (text.len() as f64 * at) as usize, bad).0,
            None => text.clone().into_bytes(),
        };
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), "PLAN.md", &bytes);
        let source = MarkdownSource::new(dir.path(), Path::new("PLAN.md")).expect("source");
        check_source(source.load_set(), &bytes, "PLAN.md")?;
        write(dir.path(), "openspec/changes/fuzz/tasks.md", &bytes);
        let source = OpenSpecSource::new(dir.path(), "fuzz").expect("source");
        check_source(source.load_set(), &bytes, "openspec/changes/fuzz/tasks.md")?;
    }
}

fn write(root: &Path, relative: &str, bytes: &[u8]) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
    std::fs::write(&path, bytes).expect("written");
}

proptest! {
    #![proptest_config(cases(24))]

    /// 24 cases: sections and intros longer than what a prompt is given
    /// (48 KiB of a section, 4 KiB of each enclosing intro), in characters
    /// of one to four bytes: the text is cut at a line end within the
    /// limit, with a note saying where the rest is.
    #[test]
    fn fuzz_checklist_long_sections(
        unit in select(&["é", "日", "😀", "x", "a\u{301}"][..]),
        line_chars in 1usize..400,
        intro_lines in 0usize..200,
        body_lines in 0usize..600,
        crlf in any::<bool>(),
    ) {
        let line = unit.repeat(line_chars);
        let mut plan = String::from("# Plan\n\n## Phase 1: Core\n\n");
        for _ in 0..intro_lines {
            plan.push_str(&line);
            plan.push('\n');
        }
        plan.push_str("### 1.1 Parser\n\n- [ ] write it\n");
        for _ in 0..body_lines {
            plan.push_str(&line);
            plan.push('\n');
        }
        plan.push_str("- [x] test it\n");
        if crlf {
            plan = plan.replace('\n', "\r\n");
        }
        let parsed = checklist::parse(&plan);
        check_reading(&plan, &parsed)?;
        prop_assert_eq!(parsed.stories.len(), 1);
        let section = parsed.stories[0].section.as_ref().expect("a section");
        let note = 256;
        prop_assert!(section.text.len() <= checklist::SECTION_LIMIT + note, "{}", section.text.len());
        for parent in &section.parents {
            prop_assert!(parent.len() <= 4 * 1024 + note, "{}", parent.len());
        }
        if section.text.contains("[cut: ") {
            prop_assert!(section.text.contains("read them in the file from line"));
        }
    }
}
