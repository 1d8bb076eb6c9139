//! Issue 28: the prd.json reader on generated files. Files are built in
//! every dialect the reader accepts (the stories at the top, under
//! `userStories`, `user_stories` or `stories`; each field under each of its
//! names), then given a wrong type in any field, cut short at every byte,
//! or spliced with bytes that are not UTF-8. Every file ends in stories
//! that make sense or in an error that names the file (and the line, for
//! JSON that does not parse) and says what to do.

use std::collections::HashSet;
use std::path::Path;

use git_ralph::stories::prd::{self, PrdSource};
use git_ralph::stories::{StoriesError, Story, StorySource};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value, json};

use crate::harness::fuzz::{awkward_line, cases};

/// Any JSON value, small: the wrong type for any field.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        select(&[1.5, -0.0, 1e300, -1e-300][..]).prop_map(Value::from),
        awkward_line(12).prop_map(Value::String),
        select(
            &[
                "high", "P2", "p", "done", "open", "", " ", "true", "US-1", "1"
            ][..]
        )
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(select(&["id", "x", "text", ""][..]), inner, 0..3)
                .prop_map(|map| Value::Object(
                    map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
        ]
    })
}

/// A value of the type a field takes, in one of the forms the reader knows.
fn right_value(field: &str) -> BoxedStrategy<Value> {
    match field {
        "id" => prop_oneof![
            select(&["US-1", "US-2", "US-3", "A", " B ", "日本", "1"][..]).prop_map(Value::from),
            (0u64..5).prop_map(Value::from),
        ]
        .boxed(),
        "title" | "description" | "notes" => prop_oneof![
            awkward_line(20).prop_map(Value::String),
            proptest::collection::vec(awkward_line(8).prop_map(Value::String), 0..3)
                .prop_map(Value::Array),
        ]
        .boxed(),
        "acceptance" => prop_oneof![
            awkward_line(20).prop_map(Value::String),
            proptest::collection::vec(
                prop_oneof![
                    awkward_line(8).prop_map(Value::String),
                    (0u64..9).prop_map(Value::from)
                ],
                0..3
            )
            .prop_map(Value::Array),
        ]
        .boxed(),
        "depends" => proptest::collection::vec(
            select(&["US-1", "US-2", "US-3", "A", "B", "1", "Z"][..]).prop_map(Value::from),
            0..3,
        )
        .prop_map(Value::Array)
        .boxed(),
        "priority" => prop_oneof![
            (-3i64..9).prop_map(Value::from),
            select(
                &[
                    "critical", "high", "Medium", " low ", "lowest", "p2", "P1", "3"
                ][..]
            )
            .prop_map(Value::from),
        ]
        .boxed(),
        "passes" => prop_oneof![
            any::<bool>().prop_map(Value::Bool),
            Just(json!([])),
            proptest::collection::vec(any::<bool>().prop_map(Value::Bool), 1..3)
                .prop_map(Value::Array),
            select(&["true", "no", "YES", ""][..]).prop_map(Value::from),
        ]
        .boxed(),
        _ => select(
            &[
                "open",
                "Done",
                "in_progress",
                "in-review",
                "",
                "closed",
                "To Do",
            ][..],
        )
        .prop_map(Value::from)
        .boxed(),
    }
}

/// The names each field goes by, in the dialects the reader accepts.
const FIELDS: &[(&str, &[&str])] = &[
    ("id", &["id"]),
    ("title", &["title", "name"]),
    ("description", &["description"]),
    ("notes", &["notes"]),
    (
        "acceptance",
        &["acceptanceCriteria", "acceptance_criteria", "acceptance"],
    ),
    ("depends", &["dependsOn", "depends_on", "dependencies"]),
    ("priority", &["priority"]),
    ("passes", &["passes", "passed", "done", "completed"]),
    ("status", &["status", "state"]),
];

/// One story: each field present or not, under one of its names, with a
/// value of its type or (rarely) of any other; sometimes an entry that is
/// no object at all.
fn story() -> impl Strategy<Value = Value> {
    let field = |(kind, names): &'static (&'static str, &'static [&'static str])| {
        let present = if *kind == "id" { 0.9 } else { 0.5 };
        proptest::option::weighted(
            present,
            (
                select(*names),
                prop_oneof![6 => right_value(kind), 1 => any_json()],
            ),
        )
    };
    let fields: Vec<_> = FIELDS.iter().map(field).collect();
    let entry = (fields, proptest::option::of(any_json())).prop_map(|(fields, extra)| {
        let mut map = Map::new();
        for (name, value) in fields.into_iter().flatten() {
            map.insert(name.to_owned(), value);
        }
        if let Some(extra) = extra {
            map.insert("somethingNew".to_owned(), extra);
        }
        Value::Object(map)
    });
    prop_oneof![12 => entry, 1 => any_json()]
}

/// A whole file in one of the dialects, as compact or pretty JSON.
fn prd_file() -> impl Strategy<Value = String> {
    let stories = proptest::collection::vec(story(), 0..5);
    let container = select(&["userStories", "user_stories", "stories", "[]", "project"][..]);
    (stories, container, any::<bool>(), any::<bool>()).prop_map(
        |(stories, container, pretty, bom)| {
            let file = match container {
                "[]" => Value::Array(stories),
                // No list of stories at all.
                "project" => json!({"project": "x", "branchName": "ralph/x"}),
                key => json!({"project": "Greeter", "description": "Say hello", key: stories}),
            };
            let text = if pretty {
                serde_json::to_string_pretty(&file)
            } else {
                serde_json::to_string(&file)
            }
            .expect("JSON");
            if bom { format!("\u{feff}{text}") } else { text }
        },
    )
}

/// What must hold of stories read from a prd.json.
fn check_stories(stories: &[Story]) -> Result<(), TestCaseError> {
    prop_assert!(!stories.is_empty());
    let ids: HashSet<&str> = stories.iter().map(|story| story.id.as_str()).collect();
    prop_assert_eq!(ids.len(), stories.len(), "ids are unique");
    for story in stories {
        prop_assert!(!story.id.is_empty());
        prop_assert_eq!(story.id.trim(), story.id.as_str());
        prop_assert!(story.passes.is_some(), "a prd story is done by its flag");
        prop_assert!(story.tasks.is_empty());
        for dependency in &story.depends_on {
            prop_assert!(ids.contains(dependency.as_str()), "unknown {dependency}");
        }
    }
    Ok(())
}

/// What must hold of an error reading `text` from `file`.
fn check_error(error: &StoriesError, text: &str, file: &str) -> Result<(), TestCaseError> {
    let message = error.to_string();
    prop_assert!(message.contains(file), "the file is named: {message}");
    // A refusal of the whole file says what to do in its one sentence;
    // any other error in a hint.
    let said = match error {
        StoriesError::NoStories { .. } | StoriesError::NoWork { .. } => {
            ["; add ", "; write ", "; put ", "; move "]
                .iter()
                .any(|verb| message.contains(verb))
        }
        _ => error.hint().is_some(),
    };
    prop_assert!(said, "what to do is said: {message}");
    let lines = 1 + text.matches('\n').count();
    match error {
        StoriesError::MalformedPrd { line, column, .. } => {
            prop_assert!(
                (1..=lines).contains(line),
                "line {line} of {lines}: {message}"
            );
            prop_assert!(
                message.contains(&format!("{file}:{line}:{column}:")),
                "{message}"
            );
        }
        StoriesError::PrdField {
            line,
            field,
            problem,
            ..
        } => {
            prop_assert!(line.is_some(), "the line is named: {message}");
            let line = line.expect("checked");
            prop_assert!(
                (1..=lines).contains(&line),
                "line {line} of {lines}: {message}"
            );
            prop_assert!(message.contains(&format!("{file}:{line}:")), "{message}");
            // The value of a field that is there starts on the field's line.
            let at = text.lines().nth(line - 1).unwrap_or_default();
            if problem != "is missing" && !field.starts_with('(') && field != "userStories" {
                prop_assert!(
                    at.contains(&format!("\"{field}\"")),
                    "line {line} is {at:?}: {message}"
                );
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_parse(text: &str) -> Result<(), TestCaseError> {
    match prd::parse(Path::new("prd.json"), text) {
        Ok(stories) => check_stories(&stories),
        Err(error) => check_error(&error, text, "prd.json"),
    }
}

proptest! {
    #![proptest_config(cases(512))]

    /// 512 cases: files in every dialect, with a wrong type in any field
    /// now and then.
    #[test]
    fn fuzz_prd_every_dialect_and_wrong_types(text in prd_file()) {
        check_parse(&text)?;
    }
}

proptest! {
    #![proptest_config(cases(48))]

    /// 48 cases, each cut at every character boundary (a few hundred
    /// readings per case): a file cut short is stories or an error naming
    /// the file and the line.
    #[test]
    fn fuzz_prd_truncated_at_every_character(text in prd_file()) {
        for (at, _) in text.char_indices() {
            check_parse(&text[..at])?;
        }
    }

    /// 48 cases, each cut at 24 bytes anywhere (inside a character too)
    /// and read from disk through `PrdSource`: the cut file is stories, an
    /// error naming the file and the line, or, when the cut split a
    /// character, an error naming the file, the line and the column.
    #[test]
    fn fuzz_prd_files_cut_at_any_byte(
        text in prd_file(),
        cuts in proptest::collection::vec(0.0..=1.0f64, 24),
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("prd.json");
        for cut in cuts {
            let bytes = crate::harness::fuzz::cut_bytes(text.as_bytes(), cut);
            std::fs::write(&path, bytes).expect("written");
            let source = PrdSource::new(dir.path(), None).expect("source");
            match (source.load(), std::str::from_utf8(bytes)) {
                (Ok(stories), Ok(_)) => check_stories(&stories)?,
                (Err(error @ StoriesError::NotUtf8 { .. }), Err(bad)) => {
                    let valid = &bytes[..bad.valid_up_to()];
                    let line = 1 + valid.iter().filter(|b| **b == b'\n').count();
                    let message = error.to_string();
                    prop_assert!(message.contains(&format!("prd.json:{line}:")), "{message}");
                    prop_assert!(error.hint().is_some());
                }
                (Err(error), Ok(text)) => check_error(&error, text, "prd.json")?,
                (other, _) => prop_assert!(false, "{other:?} for {bytes:?}"),
            }
        }
    }
}
