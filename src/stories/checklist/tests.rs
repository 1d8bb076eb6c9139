use super::lines::*;
use super::*;
use crate::stories::{Story, WarningKind};

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
        ("+ [ ] plus bullet", Some((false, "plus bullet"))),
        ("1. [ ] ordered", Some((false, "ordered"))),
        ("12) [x] ordered, paren", Some((true, "ordered, paren"))),
        ("1.[ ] not a list item", None),
        ("- [~] partial", Some((false, "partial"))),
        ("- [-] partial too", Some((false, "partial too"))),
        ("1. **[ ] inside bold**", Some((false, "inside bold"))),
        (
            "- **P1.10** [x] after a bold id",
            Some((true, "after a bold id")),
        ),
        ("| 3 | [x] | Ship it |", Some((true, "Ship it"))),
        ("| Ship it | [ ] |", Some((false, "Ship it"))),
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
        "../../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/tasks.md"
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
                "preamble".to_owned(),
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
    assert_eq!(heading("## 1. Greeting"), Some((2, "1. Greeting")));
    assert_eq!(heading("   ## Title ##"), Some((2, "Title")));
    assert_eq!(heading("## C#"), Some((2, "C#")));
    assert_eq!(heading("##"), Some((2, "")));
    assert_eq!(heading("### Sub"), Some((3, "Sub")));
    assert_eq!(heading("# Top"), Some((1, "Top")));
    assert_eq!(heading("####### seven"), None);
    assert_eq!(heading("##Tight"), None);
    assert_eq!(heading("    ## code"), None);
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
        "../../../tests/fixtures/openspec/repo/openspec/changes/add-greeting/tasks.md"
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

fn ids_and_counts(checklist: &Checklist) -> Vec<(String, String, usize, usize)> {
    checklist
        .stories
        .iter()
        .map(|story| {
            let (done, total) = story.task_counts();
            (story.id.clone(), story.title.clone(), done, total)
        })
        .collect()
}

fn row(id: &str, title: &str, done: usize, total: usize) -> (String, String, usize, usize) {
    (id.to_owned(), title.to_owned(), done, total)
}

/// Pattern 1: every box form is read, and a box-like line that is not is
/// reported with its line number and keeps its story from being done.
#[test]
fn issue_11_box_forms_and_unreadable_lines() {
    let text = "## 1. Forms\n\
                - [x] dash\n\
                + [x] plus\n\
                1. [x] ordered dot\n\
                2) [x] ordered paren\n\
                - **P1.10** [x] bold id\n\
                - [~] partial\n\
                - [-] partial too\n\
                | id | state | what |\n\
                |----|-------|------|\n\
                | 7 | [x] | table |\n\
                ## 2. Odd\n\
                - [x] fine\n\
                - [partial] status word\n\
                [ ] no list marker\n\
                - [link](https://example.com) is not a box\n\
                - [NEW] a tag is not a box\n";
    let parsed = parse(text);
    assert_eq!(
        ids_and_counts(&parsed),
        vec![row("1", "Forms", 6, 8), row("2", "Odd", 1, 1)]
    );
    let lines: Vec<usize> = parsed.unreadable.iter().map(|u| u.line).collect();
    assert_eq!(lines, [14, 15]);
    let warned: Vec<Option<usize>> = parsed
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::UnreadableBox)
        .map(|w| w.line)
        .collect();
    assert_eq!(warned, [Some(14), Some(15)]);
    assert!(parsed.warnings[0].message.contains("[partial]"));
    let odd = &parsed.stories[1];
    assert!(odd.tasks.iter().all(|t| t.done));
    assert!(!odd.is_complete(), "an unreadable box keeps the story open");
    let set = crate::stories::StorySet::from(parsed);
    assert!(!set.all_done());
}

#[test]
fn issue_11_unreadable_line_outside_stories_still_blocks_the_run() {
    let text = "## 1. Work\n- [x] done\n## Notes\n- [?] what is this\n";
    let set = crate::stories::StorySet::from(parse(text));
    assert!(set.stories.iter().all(Story::is_complete));
    assert_eq!(set.unreadable.len(), 1);
    assert!(!set.all_done());
}

#[test]
fn issue_11_every_new_form_can_be_ticked() {
    let text = "+ [ ] a\n1. [ ] b\n2) [~] c\n- **X1** [-] d\n| e | [ ] |\n1. **[ ] f**\n";
    let mut ticked = text.to_owned();
    for line in 1..=6 {
        ticked = tick(&ticked, line);
    }
    assert_eq!(
        ticked,
        "+ [x] a\n1. [x] b\n2) [x] c\n- **X1** [x] d\n| e | [x] |\n1. **[x] f**\n"
    );
    assert_eq!(
        untick(&ticked, 5),
        "+ [x] a\n1. [x] b\n2) [x] c\n- **X1** [x] d\n| e | [ ] |\n1. **[x] f**\n"
    );
    assert!(parse(&ticked).stories.iter().all(Story::is_complete));
}

/// Pattern 2: the sections that directly hold the boxes are the stories.
#[test]
fn issue_11_stories_are_the_sections_holding_the_boxes() {
    let text = "# Plan\n\n## Tasks\n\nIntro to all.\n\n### Phase 1: Setup\n- [x] a\n### Phase 2: Build\n- [ ] b\n#### 2.1 Detail\n- [ ] c\n## Other\n- [ ] d\n";
    assert_eq!(
        ids_and_counts(&parse(text)),
        vec![
            row("phase-1", "Setup", 1, 1),
            row("phase-2", "Build", 0, 1),
            row("2.1", "2.1 Detail", 0, 1),
            row("5", "Other", 0, 1),
        ]
    );
}

/// Pattern 3: sections that are not work are skipped, and `ralph.toml`
/// can move headings either way.
#[test]
fn issue_11_non_work_sections_are_skipped_and_adjustable() {
    let text = "## 1. Build\n- [ ] a\n## Success Criteria (UPDATED)\n- [ ] all green\n## Status Legend\n- [ ] open\n- [x] done\n## Summary Checklist\n### Tests\n- [x] t\n## Optional\n- [ ] nice\n## Completed\n- [x] old\n## Rollout\n- [ ] ship\n";
    let parsed = parse(text);
    let ids: Vec<&str> = parsed.stories.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["1", "8"]);
    let skipped: Vec<Option<usize>> = parsed
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::SkippedSection)
        .map(|w| w.line)
        .collect();
    assert_eq!(skipped, [Some(3), Some(5), Some(8), Some(11), Some(13)]);
    assert!(parsed.warnings[2].message.contains("Summary Checklist"));
    assert!(parsed.warnings[2].message.contains("1 box, all ticked"));

    let rules = SectionRules {
        skip: vec!["rollout".to_owned()],
        keep: vec!["Optional".to_owned()],
        all_work: false,
    };
    let adjusted = parse_with(text, &rules);
    let ids: Vec<&str> = adjusted.stories.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["1", "6"]);
}

#[test]
fn issue_11_skip_matches_whole_words_only() {
    let rules = SectionRules::default();
    assert!(rules.is_skipped("Notes on consistency"));
    assert!(rules.is_skipped("✅ Completed"));
    assert!(rules.is_skipped("Dependencies and Parallelization"));
    assert!(!rules.is_skipped("Notebook export"));
    assert!(!rules.is_skipped("Verification"));
    assert!(!rules.is_skipped("Validation"));
    assert!(!rules.is_skipped("Core I/O Migration ✅ COMPLETED"));
}

/// Pattern 4: a byte-order mark, CRLF and a missing final newline change
/// nothing.
#[test]
fn issue_11_bom_crlf_and_no_final_newline() {
    let plain = "## 1. Group\n- [ ] a\n- [x] b\n## 2. Next\n- [ ] c\n";
    let odd = format!("\u{feff}{}", plain.replace('\n', "\r\n").trim_end());
    assert_eq!(ids_and_counts(&parse(&odd)), ids_and_counts(&parse(plain)));
    assert_eq!(ids_and_counts(&parse(plain))[0], row("1", "Group", 1, 2));
    assert_eq!(tick(&odd, 2), odd.replacen("- [ ] a", "- [x] a", 1));
}

/// Pattern 5: ids are the labels the author wrote, and stay put when the
/// file changes around them.
#[test]
fn issue_11_ids_come_from_the_heading_label() {
    let text = "## 0. Zero\n- [ ] a\n## 1) CLI wiring\n- [ ] b\n## Phase 1: Setup\n- [ ] c\n## Task 3 — Docs\n- [ ] d\n## Stage 2 — Ship\n- [ ] e\n### P0.1 - Stdlib\n- [ ] f\n### 7.2 清理\n- [ ] g\n## Tier 1b — Extra\n- [ ] h\n## High Priority\n- [ ] i\n";
    assert_eq!(
        ids_and_counts(&parse(text)),
        vec![
            row("0", "Zero", 0, 1),
            row("1", "CLI wiring", 0, 1),
            row("phase-1", "Setup", 0, 1),
            row("task-3", "Docs", 0, 1),
            row("stage-2", "Ship", 0, 1),
            row("P0.1", "Stdlib", 0, 1),
            row("7.2", "7.2 清理", 0, 1),
            row("tier-1b", "Extra", 0, 1),
            row("9", "High Priority", 0, 1),
        ]
    );
    // Ticking and adding boxes leave every id where it was.
    let before: Vec<String> = parse(text).stories.into_iter().map(|s| s.id).collect();
    let changed = tick(text, 2).replace("- [ ] i\n", "- [ ] i\n- [ ] j\n");
    let after: Vec<String> = parse(&changed).stories.into_iter().map(|s| s.id).collect();
    assert_eq!(after, before);
}

#[test]
fn issue_11_positions_never_take_a_label() {
    let ids: Vec<String> = parse("## Setup\n- [ ] a\n## 1. One\n- [ ] b\n")
        .stories
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, ["section-1", "1"]);
}

#[test]
fn issue_11_repeated_labels_are_renamed_with_a_warning() {
    let parsed = parse("## 1. A\n- [ ] a\n## 1. B\n- [ ] b\n");
    let ids: Vec<&str> = parsed.stories.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["1", "1-2"]);
    assert_eq!(parsed.warnings[0].kind, WarningKind::RenamedId);
    assert_eq!(parsed.warnings[0].line, Some(3));
}

/// Pattern 7: the story keeps its whole section and its parents' intros.
#[test]
fn issue_11_story_keeps_its_whole_section() {
    let text = "# Plan\n## Phase 1: Core\nWhy this phase matters.\n### 1.1 Parser\nIntro of the group.\n- [ ] Write the parser\n  - handle `1) x`\n  - keep comments\n```rust\nfn parse() {}\n```\n#### Details for 1.1\nAcceptance: it parses.\n\n### 1.2 Next\n- [ ] other\n";
    let parsed = parse(text);
    let section = parsed.stories[0].section.as_ref().expect("section");
    assert_eq!((section.first_line, section.last_line), (4, 13));
    for needle in [
        "Intro of the group.",
        "  - handle `1) x`",
        "fn parse() {}",
        "Acceptance: it parses.",
    ] {
        assert!(
            section.text.contains(needle),
            "{needle:?} in {}",
            section.text
        );
    }
    assert!(!section.text.contains("other"));
    assert_eq!(
        section.parents,
        ["## Phase 1: Core\nWhy this phase matters."]
    );
}

#[test]
fn issue_11_long_sections_are_cut_with_a_note() {
    let body = "- [ ] task\n".repeat(SECTION_LIMIT / 8);
    let parsed = parse(&format!("## 1. Big\n{body}"));
    let section = parsed.stories[0].section.as_ref().expect("section");
    assert!(section.text.len() <= SECTION_LIMIT + 200);
    assert!(section.text.contains("[cut: "), "the cut is said");
}

#[test]
fn issue_11_a_list_whose_only_sections_are_not_work_stays_a_flat_list() {
    let parsed = parse("# TODO\n- [ ] a\n- [ ] b\n## Notes\n- [ ] remember\n");
    assert_eq!(
        ids_and_counts(&parsed),
        vec![row("1", "a", 0, 1), row("2", "b", 0, 1)]
    );
    assert_eq!(parsed.warnings.len(), 1);
    assert_eq!(parsed.warnings[0].kind, WarningKind::SkippedSection);
}

#[test]
fn issue_11_a_heading_that_is_only_a_label_is_its_own_title() {
    assert_eq!(
        ids_and_counts(&parse(
            "## Phase 2\n- [ ] a\n### 3.\n- [ ] b\n##\n- [ ] c\n"
        )),
        vec![
            row("phase-2", "Phase 2", 0, 1),
            row("3", "3.", 0, 1),
            row("section-3", "Story section-3", 0, 1),
        ]
    );
}

/// Issue 21, pattern 1: the group written on the file's first line is a
/// story however that line starts: with a level-one heading that numbers
/// its boxes, or with characters no reader sees.
#[test]
fn issue_21_a_numbered_group_on_the_first_line_is_a_story() {
    let groups = "- [ ] 1.1 Tokens\n- [x] 1.2 Grammar\n\n## 2. Printer\n- [ ] 2.1 Pretty\n";
    let expected = vec![row("1", "Parser", 1, 2), row("2", "Printer", 0, 1)];
    for first_line in [
        "# 1. Parser",
        "\u{200b}## 1. Parser",
        "\u{feff}\u{2060}## 1. Parser",
        "##\u{a0}1. Parser",
        "## 1. Parser",
    ] {
        let parsed = parse(&format!("{first_line}\n{groups}"));
        assert_eq!(ids_and_counts(&parsed), expected, "{first_line:?}");
    }
    // A title that numbers nothing is still the title.
    assert_eq!(
        ids_and_counts(&parse("# 2024 Plan\n\n## 1. Parser\n- [ ] a\n")),
        vec![row("1", "Parser", 0, 1)]
    );
}

/// Issue 21, pattern 2: a plan for when something goes wrong is not work.
#[test]
fn issue_21_contingency_sections_are_not_work() {
    let parsed = parse(
        "## 1. Ship\n- [ ] deploy\n\n## Rollback Plan\n- [ ] revert the release\n- [ ] restore the backup\n\n## Risk Mitigation\n- [ ] feature flag off\n\n### Contingency\n- [ ] call the vendor\n\n## Fallback Plan\n- [ ] keep v1 running\n\n## 2. Announce\n- [ ] blog post\n",
    );
    assert_eq!(
        ids_and_counts(&parsed),
        vec![row("1", "Ship", 0, 1), row("2", "Announce", 0, 1)]
    );
    let skipped: Vec<(&str, usize)> = parsed
        .skipped
        .iter()
        .map(|s| (s.heading.as_str(), s.boxes))
        .collect();
    assert_eq!(
        skipped,
        [
            ("## Rollback Plan", 2),
            ("## Risk Mitigation", 2),
            ("## Fallback Plan", 1)
        ]
    );
    // A feature that is about rollbacks is work.
    assert_eq!(
        ids_and_counts(&parse("## Rollback support\n- [ ] undo a migration\n")),
        vec![row("1", "Rollback support", 0, 1)]
    );
}

/// Headings that are not work, written in Chinese, Japanese or Korean,
/// match at the start of a title whatever follows, since those scripts put
/// no space between words.
#[test]
fn issue_21_headings_that_are_not_work_in_other_scripts() {
    let parsed = parse(
        "## 高优先级\n- [ ] 修复登录\n\n## ✅ 已完成\n- [x] 初始化项目\n\n## 验收标准（必须全部满足）\n- [ ] 测试通过\n",
    );
    assert_eq!(ids_and_counts(&parsed), vec![row("1", "高优先级", 0, 1)]);
    assert_eq!(parsed.skipped.len(), 2);
}

/// What markdown does not show is not part of a task or a title, and a
/// week or a day numbers a group as a phase does.
#[test]
fn issue_21_comments_are_not_text_and_weeks_are_labels() {
    let parsed = parse(
        "## Week 1: Setup <!-- owner: ana -->\n- [ ] **Schema** <!-- id: 20 -->\n\n## Day 2 - Polish\n- [x] docs\n",
    );
    assert_eq!(
        ids_and_counts(&parsed),
        vec![row("week-1", "Setup", 0, 1), row("day-2", "Polish", 1, 1)]
    );
    assert_eq!(parsed.stories[0].tasks[0].text, "**Schema**");
}

/// Issue 21, pattern 4: where the boxes of a file with no work are.
#[test]
fn issue_21_every_box_under_sections_that_are_not_work_is_reported() {
    let parsed = parse(
        "# Plan\n\n## In Progress\n\n## Completed\n- [x] a\n- [x] b\n### Older\n- [x] c\n\n## Notes\n- [ ] remember\n",
    );
    assert!(parsed.stories.is_empty());
    let skipped: Vec<(&str, usize, usize, usize)> = parsed
        .skipped
        .iter()
        .map(|s| (s.heading.as_str(), s.line, s.boxes, s.done))
        .collect();
    assert_eq!(skipped, [("## Completed", 5, 3, 3), ("## Notes", 11, 1, 0)]);
}
