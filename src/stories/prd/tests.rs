use super::*;
use crate::stories::tests::write;

fn parse_ok(text: &str) -> Vec<Story> {
    parse(Path::new("prd.json"), text).expect("valid prd.json")
}

fn parse_err(text: &str) -> StoriesError {
    parse(Path::new("prd.json"), text).expect_err("invalid prd.json")
}

const FULL: &str = r#"{
  "project": "Greeter",
  "branchName": "ralph/greeting",
  "description": "Say hello",
  "somethingNew": {"nested": true},
  "userStories": [
{
  "id": "US-1",
  "title": "Greeting file",
  "description": "As a visitor I am greeted",
  "acceptanceCriteria": ["hello.txt exists", "it is not empty"],
  "priority": 2,
  "passes": false,
  "notes": "keep it short",
  "dependsOn": []
},
{"id": "US-2", "title": "Farewell", "priority": 1, "passes": false, "dependsOn": ["US-1"]},
{"id": "US-3", "title": "Docs", "priority": 2, "passes": false},
{"id": 4, "priority": 1, "passes": true}
  ]
}"#;

#[test]
fn reads_every_field_and_ignores_unknown_keys() {
    let stories = parse_ok(FULL);
    assert_eq!(stories.len(), 4);
    let first = &stories[0];
    assert_eq!(first.id, "US-1");
    assert_eq!(first.title, "Greeting file");
    assert_eq!(
        first.description.as_deref(),
        Some("As a visitor I am greeted\n\nNotes: keep it short")
    );
    assert_eq!(
        first.acceptance_criteria,
        ["hello.txt exists", "it is not empty"]
    );
    assert_eq!(first.priority, Some(2));
    assert_eq!(first.passes, Some(false));
    assert!(first.tasks.is_empty());
    assert_eq!(stories[1].depends_on, ["US-1"]);
    assert_eq!(
        (stories[3].id.as_str(), stories[3].title.as_str()),
        ("4", "4")
    );
    assert!(stories[3].is_complete());
}

#[test]
fn missing_passes_means_not_done() {
    let stories = parse_ok(r#"{"userStories": [{"id": "A", "title": "a"}]}"#);
    assert_eq!(stories[0].passes, Some(false));
    assert!(!stories[0].is_complete());
}

fn source_in(dir: &Path, text: &str) -> PrdSource {
    write(dir, "prd.json", text);
    PrdSource::new(dir, None).expect("source")
}

#[test]
fn next_story_by_priority_then_file_order_with_dependencies_done() {
    let repo = tempfile::tempdir().expect("temp dir");
    let source = source_in(repo.path(), FULL);
    let mut stories = source.load().expect("load");
    // US-2 has the best priority but waits for US-1; US-1 and US-3 tie.
    assert_eq!(
        source.next_story(&stories).map(|s| s.id.as_str()),
        Some("US-1")
    );
    stories[0].passes = Some(true);
    assert_eq!(
        source.next_story(&stories).map(|s| s.id.as_str()),
        Some("US-2")
    );
    stories[1].passes = Some(true);
    assert_eq!(
        source.next_story(&stories).map(|s| s.id.as_str()),
        Some("US-3")
    );
    stories[2].passes = Some(true);
    assert_eq!(source.next_story(&stories), None);
}

#[test]
fn stories_without_priority_come_last() {
    let repo = tempfile::tempdir().expect("temp dir");
    let source = source_in(
        repo.path(),
        r#"{"userStories": [{"id": "A"}, {"id": "B", "priority": 9}]}"#,
    );
    let stories = source.load().expect("load");
    assert_eq!(
        source.next_story(&stories).map(|s| s.id.as_str()),
        Some("B")
    );
}

#[test]
fn load_rereads_and_reports_the_agents_progress() {
    let repo = tempfile::tempdir().expect("temp dir");
    let source = source_in(
        repo.path(),
        r#"{"userStories": [{"id": "A", "passes": false}]}"#,
    );
    assert!(!source.load().expect("load")[0].is_complete());
    write(
        repo.path(),
        "prd.json",
        r#"{"userStories": [{"id": "A", "passes": true}]}"#,
    );
    assert!(source.load().expect("reload")[0].is_complete());
}

#[test]
fn tracking_context_and_done_instruction() {
    let repo = tempfile::tempdir().expect("temp dir");
    let source = source_in(repo.path(), FULL);
    assert_eq!(source.kind(), SourceKind::Prd);
    assert_eq!(source.tracking_file(), Path::new("prd.json"));
    let files = source.context_files().expect("context");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "prd.json");
    assert_eq!(files[0].content, FULL);
    let stories = source.load().expect("load");
    let instruction = source.done_instruction(&stories[0]);
    assert!(
        instruction.starts_with("set \"passes\": true for story US-1 in prd.json"),
        "{instruction}"
    );
}

#[test]
fn malformed_json_reports_line_and_column() {
    let error = parse_err("{\n  \"userStories\": [\n    {\"id\": \"A\",}\n  ]\n}");
    match &error {
        StoriesError::MalformedPrd {
            line,
            column,
            message,
            ..
        } => {
            assert_eq!(*line, 3);
            assert!(*column > 0);
            assert!(!message.contains(" at line "), "{message}");
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(error.to_string().starts_with("prd.json:3:"), "{error}");
    assert!(error.hint().is_some());
}

#[test]
fn wrong_shapes_are_malformed() {
    for text in ["", "{", r#"{"userStories": [}"#] {
        assert!(
            matches!(parse_err(text), StoriesError::MalformedPrd { .. }),
            "{text:?}"
        );
    }
    for text in ["[]", r#"{"stories": []}"#, r#"{"project": "x"}"#] {
        assert!(
            matches!(parse_err(text), StoriesError::NoStories { .. }),
            "{text:?}"
        );
    }
}

/// Pattern 6: the shapes other loops write are read.
#[test]
fn issue_11_lenient_shapes_are_read() {
    let array = parse_ok(
        r#"[{"id": 1, "title": "a", "priority": "high", "passes": true}, {"id": "B", "priority": "low"}]"#,
    );
    assert_eq!(array[0].id, "1");
    assert_eq!(array[0].priority, Some(1));
    assert!(array[0].is_complete());
    assert_eq!(array[1].priority, Some(3));
    assert!(!array[1].is_complete());

    let stories = parse_ok(
        r#"{"name": "x", "stories": [
            {"id": "A", "passes": [], "acceptance": ["works"], "dependencies": ["B"], "extra": {"x": 1}},
            {"id": "B", "status": "done", "priority": "medium"},
            {"id": "C", "status": "open", "acceptance": "one line", "dependsOn": "A"},
            {"id": "D", "status": "In Progress", "passes": null, "notes": ["n1", "n2"]}
        ]}"#,
    );
    let summary: Vec<(&str, bool, Vec<String>, Vec<String>)> = stories
        .iter()
        .map(|s| {
            (
                s.id.as_str(),
                s.is_complete(),
                s.acceptance_criteria.clone(),
                s.depends_on.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("A", false, vec!["works".to_owned()], vec!["B".to_owned()]),
            ("B", true, vec![], vec![]),
            (
                "C",
                false,
                vec!["one line".to_owned()],
                vec!["A".to_owned()]
            ),
            ("D", false, vec![], vec![]),
        ]
    );
    assert_eq!(stories[3].description.as_deref(), Some("Notes: n1\nn2"));
}

#[test]
fn issue_11_unreadable_fields_name_the_story_and_the_field() {
    let cases = [
        (
            r#"[{"id": "A", "passes": "maybe"}]"#,
            "story \"A\"",
            "passes",
        ),
        (
            r#"[{"id": "A", "status": "someday"}]"#,
            "story \"A\"",
            "status",
        ),
        (
            r#"[{"id": "B", "acceptance": [{"x": 1}]}]"#,
            "story \"B\"",
            "acceptance",
        ),
        (
            r#"[{"id": "A", "dependsOn": 3}]"#,
            "story \"A\"",
            "dependsOn",
        ),
        (r#"[{"id": ["A"]}]"#, "story #1", "id"),
        (r#"["B"]"#, "story #1", "(entry)"),
    ];
    for (text, story, field) in cases {
        let error = parse_err(text);
        match &error {
            StoriesError::PrdField {
                story: got_story,
                field: got_field,
                ..
            } => {
                assert_eq!(
                    (got_story.as_str(), got_field.as_str()),
                    (story, field),
                    "{text}"
                );
            }
            other => panic!("{text}: unexpected error {other}"),
        }
        assert!(error.to_string().contains(field), "{error}");
        assert!(error.hint().is_some());
    }
}

/// Issue 46: a story that cannot be read is set aside, named with its
/// field, and the rest of the file is read.
#[test]
fn issue_46_an_unreadable_story_is_set_aside_beside_readable_ones() {
    for (text, story, field) in [
        (
            r#"{"userStories": [{"id": "A"}, {"title": "no id"}]}"#,
            "story #2",
            "\"id\"",
        ),
        (
            r#"[{"id": "A"}, {"id": "B", "acceptance": [{"x": 1}]}]"#,
            "story \"B\"",
            "acceptance",
        ),
        (r#"[{"id": "A"}, "B"]"#, "story #2", "(entry)"),
        (
            r#"[{"id": "A"}, {"id": "B", "passes": "maybe"}, {"id": "C", "dependsOn": ["B"]}]"#,
            "story \"B\"",
            "passes",
        ),
    ] {
        let set = parse_set(Path::new("prd.json"), text).expect(text);
        let ids: Vec<&str> = set.stories.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["A"], "{text}");
        assert!(
            set.warnings.iter().any(|w| w.kind == WarningKind::SetAside
                && w.message.starts_with("prd.json")
                && w.message.contains(story)
                && w.message.contains(field)),
            "{text}: {:?}",
            set.warnings
        );
    }
}

/// Issue 46: priorities are compared as written, fractions included, and
/// falling numbers are scores.
#[test]
fn issue_46_priorities_are_ordered_as_numbers_or_scores() {
    let order = |text: &str| -> Vec<String> {
        let stories = parse_ok(text);
        let mut left = stories.clone();
        let mut ids = Vec::new();
        while let Some(next) = crate::stories::next_ready(&left) {
            ids.push(next.id.clone());
            let id = next.id.clone();
            left.retain(|s| s.id != id);
        }
        ids
    };
    assert_eq!(
        order(
            r#"[{"id": "a", "priority": 10}, {"id": "b", "priority": 9}, {"id": "c", "priority": 9.5}]"#
        ),
        ["b", "c", "a"]
    );
    assert_eq!(
        order(
            r#"[{"id": "a", "priority": 100}, {"id": "b", "priority": 95}, {"id": "c", "priority": 65}]"#
        ),
        ["a", "b", "c"]
    );
    assert_eq!(
        order(
            r#"[{"id": "a", "priority": 3}, {"id": "b", "priority": 2}, {"id": "c", "priority": 1}]"#
        ),
        ["c", "b", "a"],
        "falling ranks are still ranks"
    );
}

#[test]
fn empty_story_list_is_an_error() {
    assert!(matches!(
        parse_err(r#"{"userStories": []}"#),
        StoriesError::NoStories { .. }
    ));
}

#[test]
fn empty_id_is_an_error() {
    let error = parse_err(r#"{"userStories": [{"id": " "}]}"#);
    assert!(
        matches!(error, StoriesError::EmptyId { index: 1, .. }),
        "{error}"
    );
}

#[test]
fn duplicate_id_is_an_error() {
    let error = parse_err(r#"{"userStories": [{"id": "A"}, {"id": "B"}, {"id": "A"}]}"#);
    assert!(
        matches!(&error, StoriesError::DuplicateId { id, .. } if id == "A"),
        "{error}"
    );
    assert!(error.to_string().contains("\"A\""));
}

#[test]
fn unknown_dependency_is_an_error() {
    let error = parse_err(r#"{"userStories": [{"id": "A", "dependsOn": ["Z"]}]}"#);
    assert!(
        matches!(&error, StoriesError::UnknownDependency { story, dependency, .. }
            if story == "A" && dependency == "Z"),
        "{error}"
    );
}

#[test]
fn dependency_cycle_is_named() {
    let error = parse_err(
        r#"{"userStories": [
            {"id": "A"},
            {"id": "B", "dependsOn": ["A", "D"]},
            {"id": "C", "dependsOn": ["B"]},
            {"id": "D", "dependsOn": ["C"]}
        ]}"#,
    );
    match &error {
        StoriesError::DependencyCycle { cycle, .. } => assert_eq!(cycle, &["B", "D", "C", "B"]),
        other => panic!("unexpected error: {other}"),
    }
    assert!(error.to_string().contains("B -> D -> C -> B"), "{error}");
}

#[test]
fn self_dependency_is_a_cycle() {
    let error = parse_err(r#"{"userStories": [{"id": "A", "dependsOn": ["A"]}]}"#);
    assert!(
        matches!(&error, StoriesError::DependencyCycle { cycle, .. } if cycle == &["A", "A"]),
        "{error}"
    );
}

#[test]
fn long_chains_are_not_cycles() {
    let stories: Vec<String> = (0..5000)
        .map(|i| match i {
            0 => r#"{"id": "S0"}"#.to_owned(),
            _ => format!(r#"{{"id": "S{i}", "dependsOn": ["S{}"]}}"#, i - 1),
        })
        .collect();
    let text = format!(r#"{{"userStories": [{}]}}"#, stories.join(","));
    assert_eq!(parse_ok(&text).len(), 5000);
}

/// Issue 21, pattern 3: stories under "tasks", a status word instead of
/// `passes`, priorities in words and ids with leading zeros.
#[test]
fn issue_21_the_tasks_dialect_is_read() {
    let stories = parse_ok(
        r#"{"project": "Shop", "tasks": [
            {"id": "001", "title": "Cart", "status": "completed", "priority": "high"},
            {"id": "002", "title": "Checkout", "status": "pending", "priority": "medium", "dependencies": ["001"]},
            {"id": "003", "title": "Refunds", "status": "in_progress", "priority": "low"}
        ]}"#,
    );
    let summary: Vec<(&str, &str, bool, Option<i64>)> = stories
        .iter()
        .map(|s| (s.id.as_str(), s.title.as_str(), s.is_complete(), s.priority))
        .collect();
    assert_eq!(
        summary,
        [
            ("001", "Cart", true, Some(1)),
            ("002", "Checkout", false, Some(2)),
            ("003", "Refunds", false, Some(3)),
        ]
    );
    assert_eq!(stories[1].depends_on, ["001"]);
}

#[test]
fn issue_21_status_words_people_use() {
    let done = [
        "done",
        "complete",
        "Completed",
        "DONE",
        "✅ Done",
        "closed",
        "merged",
        "shipped",
        "cancelled",
        "obsolete",
    ];
    let open = [
        "todo",
        "to-do",
        "in_progress",
        "In Progress",
        "pending",
        "open",
        "wip",
        "doing",
        "not_started",
        "review",
    ];
    for (words, expected) in [(&done[..], true), (&open[..], false)] {
        for word in words {
            let text = format!(r#"{{"tasks": [{{"id": "1", "status": "{word}"}}]}}"#);
            assert_eq!(parse_ok(&text)[0].is_complete(), expected, "{word}");
        }
    }
    for word in [
        "blocked", "skipped", "won't do", "on hold", "deferred", "manual", "WONTFIX",
    ] {
        let text = format!(r#"{{"tasks": [{{"id": "1"}}, {{"id": "2", "status": "{word}"}}]}}"#);
        let set = parse_set(Path::new("prd.json"), &text).expect("read");
        assert_eq!(set.stories.len(), 1, "{word} is set aside");
        assert!(
            set.warnings.iter().any(|w| w.kind == WarningKind::SetAside),
            "{word}"
        );
    }
}

/// A list in another dialect whose entries carry no ids is numbered by
/// position; titles come from the description when there is no title;
/// criteria written as objects and `steps` are read as criteria.
#[test]
fn issue_21_lists_without_ids_are_numbered_by_position() {
    let stories = parse_ok(
        r#"[
            {"category": "setup", "description": "Project builds. Run the build first.", "steps": ["run build", "no errors"], "passes": true},
            {"category": "feature", "description": "Add login", "complete": false, "started": true}
        ]"#,
    );
    let summary: Vec<(&str, &str, bool)> = stories
        .iter()
        .map(|s| (s.id.as_str(), s.title.as_str(), s.is_complete()))
        .collect();
    assert_eq!(
        summary,
        [("1", "Project builds", true), ("2", "Add login", false)]
    );
    assert_eq!(stories[0].acceptance_criteria, ["run build", "no errors"]);

    let features = parse_ok(
        r#"{"features": [{"title": "Search", "acceptanceCriteria": [{"description": "finds by name", "passes": false}], "done": "no"}]}"#,
    );
    assert_eq!(features[0].id, "1");
    assert_eq!(features[0].acceptance_criteria, ["finds by name"]);
    assert!(!features[0].is_complete());

    // Ralph's own list too, with the title under `story`.
    let ralph = parse_ok(r#"{"userStories": [{"story": "As a user I log in"}]}"#);
    assert_eq!(
        (ralph[0].id.as_str(), ralph[0].title.as_str()),
        ("1", "As a user I log in")
    );
    // A date in `completed` says nothing sure; the status decides.
    let dated =
        parse_ok(r#"{"tasks": [{"id": "A", "completed": "2026-01-05", "status": "open"}]}"#);
    assert!(!dated[0].is_complete());
}

/// The one list of story-like objects is found under any key.
#[test]
fn issue_21_the_one_list_of_stories_is_found_under_any_key() {
    let stories =
        parse_ok(r#"{"name": "x", "milestones": [{"id": "M1", "status": "done"}, {"id": "M2"}]}"#);
    assert_eq!(stories.len(), 2);
    assert!(stories[0].is_complete());
}

/// Every refusal of a prd.json says what was found and what to do.
#[test]
fn issue_21_a_prd_without_stories_says_what_it_holds() {
    let empty = parse_err(r#"{"branchName": "ralph/x", "userStories": []}"#).to_string();
    assert_eq!(
        empty,
        r#"prd.json lists no stories: its "userStories" list is empty; add a story to it, such as {"id": "US-1", "title": "...", "passes": false}"#
    );
    let elsewhere = parse_err(r#"{"project": "x", "epics": "later"}"#).to_string();
    assert!(
        elsewhere.starts_with("prd.json lists no stories: none of its keys (epics, project) holds a list of them; put the stories in a \"userStories\" list"),
        "{elsewhere}"
    );
}

/// Issue 35, pattern 5: stories one level down, under each group's own
/// list, with the lines of their fields where they are.
#[test]
fn issue_35_stories_under_groups_are_read_in_order() {
    let text = r#"{"milestones": [
  {"name": "One", "userStories": [{"id": "A", "passes": true}, {"id": "B"}]},
  {"name": "Two", "userStories": []},
  {"name": "Three", "userStories": [{"id": "C", "priority": "soon"}]}
]}"#;
    let set = parse_set(Path::new("prd.json"), text).expect("read");
    assert!(
        set.warnings.iter().any(|w| w.kind == WarningKind::OddValue
            && w.message.contains("\"C\"")
            && w.message.contains("soon")),
        "{:?}",
        set.warnings
    );
    let stories = parse_ok(&text.replace(r#", "priority": "soon""#, ""));
    let ids: Vec<&str> = stories.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["A", "B", "C"]);
    // A story with sub-tasks of its own is still a story.
    let flat =
        parse_ok(r#"{"userStories": [{"id": "A", "passes": false, "tasks": [{"id": "t"}]}]}"#);
    assert_eq!(flat[0].id, "A");
}

/// Issue 35, pattern 7: a finished story's dependency on an id the file
/// no longer holds is dropped with a warning; an open story's is refused.
#[test]
fn issue_35_stale_dependencies_of_done_stories_are_dropped() {
    let set = parse_set(
        Path::new("prd.json"),
        r#"[{"id": "A", "passes": true, "dependsOn": ["gone", "B"]}, {"id": "B", "passes": true}]"#,
    )
    .expect("read");
    assert_eq!(set.stories[0].depends_on, ["B"]);
    assert_eq!(set.warnings.len(), 1);
    assert!(
        set.warnings[0].message.contains("\"gone\""),
        "{:?}",
        set.warnings
    );
    assert!(matches!(
        parse_err(r#"[{"id": "A", "passes": false, "dependsOn": ["gone"]}]"#),
        StoriesError::UnknownDependency { .. }
    ));
}
