//! Stories from a Ralph-style `prd.json`.
//!
//! The file holds `{"userStories": [{"id", "title", "description",
//! "acceptanceCriteria", "priority", "passes", "notes", "dependsOn"}]}`; other
//! keys (`project`, `branchName`, a top-level `description`, anything newer)
//! are ignored so files written for other Ralph loops load unchanged. A story
//! is done when the agent sets `"passes": true`. Order of work is by
//! `priority` (lowest number first, unnumbered last, ties in file order),
//! among stories whose `dependsOn` are all done. The file is validated on
//! every load — unique ids, known dependencies, no cycles — because a broken
//! graph would otherwise stall the run with no story ever eligible.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{
    ContextFile, SourceKind, StoriesError, Story, StorySource, check_unique_ids,
    read_context_files, read_text, repo_relative_file, slash_path,
};

/// The file looked for at the repository root when no `--prd` is given.
pub const DEFAULT_FILE: &str = "prd.json";

/// The stories of one `prd.json` inside the repository.
#[derive(Debug, Clone)]
pub struct PrdSource {
    workdir: PathBuf,
    file: PathBuf,
}

impl PrdSource {
    /// Binds to `file` (relative to `workdir` or absolute inside it), or to
    /// `prd.json` at the root when `file` is `None`.
    pub fn new(workdir: &Path, file: Option<&Path>) -> Result<Self, StoriesError> {
        let file = file.unwrap_or(Path::new(DEFAULT_FILE));
        Ok(PrdSource {
            workdir: workdir.to_path_buf(),
            file: repo_relative_file(workdir, file)?,
        })
    }
}

/// Parses and validates the text of a `prd.json`; `path` is only for errors.
///
/// Files written for other loops vary, so the reader is lenient about
/// shape and strict about meaning: the stories may be a top-level array or
/// sit under `userStories` or `stories`; ids may be strings or integers;
/// `priority` may be a number or `"high"` / `"medium"` / `"low"`; progress
/// may be `passes` (a boolean, or an empty list for "not yet") or a
/// `status` such as `"open"` or `"done"`, and is "not done" when missing;
/// criteria may be `acceptanceCriteria` or `acceptance`; dependencies may
/// be `dependsOn` or `dependencies`; unknown keys are ignored. A value that
/// still cannot be read is an error naming the story and the field.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Story>, StoriesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    read_stories(path, text).map_err(|error| with_line(error, text, None))
}

fn read_stories(path: &Path, text: &str) -> Result<Vec<Story>, StoriesError> {
    let file: Value = serde_json::from_str(text).map_err(|error| malformed(path, &error))?;
    let entries = match &file {
        Value::Array(entries) => entries,
        Value::Object(map) => match STORY_LIST_KEYS.iter().find_map(|key| map.get(*key)) {
            Some(Value::Array(entries)) => entries,
            Some(_) => {
                return Err(field_error(
                    path,
                    "the file",
                    "userStories",
                    "is not a list",
                ));
            }
            None => {
                return Err(StoriesError::NoStories {
                    path: path.to_path_buf(),
                });
            }
        },
        _ => {
            return Err(field_error(
                path,
                "the file",
                "userStories",
                "the file is neither an object nor a list of stories",
            ));
        }
    };
    if entries.is_empty() {
        return Err(StoriesError::NoStories {
            path: path.to_path_buf(),
        });
    }
    let stories = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            to_story(path, index + 1, entry)
                .map_err(|error| with_line(error, text, Some(index + 1)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_unique_ids(path, &stories)?;
    check_dependencies(path, &stories)?;
    Ok(stories)
}

/// Where the list of stories may be, in order of preference.
const STORY_LIST_KEYS: &[&str] = &["userStories", "user_stories", "stories"];

fn field_error(path: &Path, story: &str, field: &str, problem: &str) -> StoriesError {
    StoriesError::PrdField {
        path: path.to_path_buf(),
        line: None,
        story: story.to_owned(),
        field: field.to_owned(),
        problem: problem.to_owned(),
    }
}

/// `error` with the line of the value it is about, when it is about one
/// field of story `index` (1-based), or of the file when there is none,
/// and the value can be found.
fn with_line(mut error: StoriesError, text: &str, index: Option<usize>) -> StoriesError {
    if let StoriesError::PrdField {
        line: line @ None,
        field,
        ..
    } = &mut error
    {
        *line = value_line(text, index, field);
    }
    error
}

/// The 1-based line where `field` of story `index` starts (the story
/// itself when it has no such field), or the list of stories when no
/// story is given.
fn value_line(text: &str, index: Option<usize>, field: &str) -> Option<usize> {
    use serde_json::value::RawValue;
    type Fields<'a> = HashMap<String, &'a RawValue>;
    let top: &RawValue = serde_json::from_str(text).ok()?;
    let list = match serde_json::from_str::<Fields<'_>>(top.get()) {
        Ok(map) => STORY_LIST_KEYS
            .iter()
            .find_map(|key| map.get(*key).copied())?,
        Err(_) => top,
    };
    let Some(index) = index else {
        return Some(line_of(text, list));
    };
    let entries: Vec<&RawValue> = serde_json::from_str(list.get()).ok()?;
    let entry = *entries.get(index.checked_sub(1)?)?;
    let value = serde_json::from_str::<Fields<'_>>(entry.get())
        .ok()
        .and_then(|fields| fields.get(field).copied())
        .unwrap_or(entry);
    Some(line_of(text, value))
}

/// The line of `text` on which `value`, a slice of it, starts.
fn line_of(text: &str, value: &serde_json::value::RawValue) -> usize {
    let offset = (value.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let before = &text.as_bytes()[..offset.min(text.len())];
    1 + before.iter().filter(|byte| **byte == b'\n').count()
}

/// The first of `keys` present in `entry` (a `null` counts as absent),
/// with the key found.
fn first<'a>(
    entry: &'a Map<String, Value>,
    keys: &[&'static str],
) -> Option<(&'static str, &'a Value)> {
    keys.iter()
        .find_map(|key| entry.get(*key).filter(|v| !v.is_null()).map(|v| (*key, v)))
}

fn to_story(path: &Path, index: usize, entry: &Value) -> Result<Story, StoriesError> {
    let position = format!("story #{index}");
    let Value::Object(entry) = entry else {
        return Err(field_error(path, &position, "(entry)", "is not an object"));
    };
    let id = match first(entry, &["id"]) {
        Some((_, Value::String(id))) => id.trim().to_owned(),
        Some((_, Value::Number(number))) => number.to_string(),
        Some((key, _)) => {
            return Err(field_error(
                path,
                &position,
                key,
                "must be a string or a number",
            ));
        }
        None => {
            return Err(field_error(path, &position, "id", "is missing"));
        }
    };
    if id.is_empty() {
        return Err(StoriesError::EmptyId {
            path: path.to_path_buf(),
            index,
        });
    }
    let name = format!("story {id:?}");
    let error = |field: &str, problem: &str| field_error(path, &name, field, problem);
    let title = match first(entry, &["title", "name"]) {
        Some((_, Value::String(title))) => title.clone(),
        Some((key, _)) => return Err(error(key, "must be a string")),
        None => id.clone(),
    };
    let mut description = match first(entry, &["description"]) {
        Some((key, value)) => Some(text_of(value).ok_or_else(|| error(key, "must be text"))?),
        None => None,
    };
    if let Some((key, value)) = first(entry, &["notes"]) {
        let notes = text_of(value).ok_or_else(|| error(key, "must be text"))?;
        if !notes.trim().is_empty() {
            let joined = match description.take() {
                Some(text) if !text.trim().is_empty() => format!("{text}\n\nNotes: {notes}"),
                _ => format!("Notes: {notes}"),
            };
            description = Some(joined);
        }
    }
    let acceptance_criteria = match first(
        entry,
        &["acceptanceCriteria", "acceptance_criteria", "acceptance"],
    ) {
        Some((key, value)) => {
            strings(value).ok_or_else(|| error(key, "must be text or a list of text"))?
        }
        None => Vec::new(),
    };
    let depends_on = match first(entry, &["dependsOn", "depends_on", "dependencies"]) {
        Some((key, value)) => {
            strings(value).ok_or_else(|| error(key, "must be a list of story ids"))?
        }
        None => Vec::new(),
    };
    let priority = match first(entry, &["priority"]) {
        Some((key, value)) => Some(priority_of(value).ok_or_else(|| {
            error(
                key,
                "must be a whole number or one of critical, high, medium, low",
            )
        })?),
        None => None,
    };
    let passes = match first(entry, &["passes", "passed", "done", "completed"]) {
        Some((key, value)) => {
            passes_of(value).ok_or_else(|| error(key, "must be true or false"))?
        }
        None => match first(entry, &["status", "state"]) {
            Some((key, value)) => status_of(value).ok_or_else(|| {
                error(
                    key,
                    "must be a status such as \"open\", \"in progress\" or \"done\"",
                )
            })?,
            None => false,
        },
    };
    Ok(Story {
        id,
        title,
        tasks: Vec::new(),
        description,
        acceptance_criteria,
        depends_on,
        priority,
        // `Some` marks the story as one whose completion is the flag, not
        // its (absent) tasks.
        passes: Some(passes),
        unreadable: Vec::new(),
        section: None,
    })
}

/// A string, or a list of strings joined by lines.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(_) => strings(value).map(|lines| lines.join("\n")),
        _ => None,
    }
}

/// A list of strings (numbers are written out), or one string.
fn strings(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(text) => Some(vec![text.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Some(text.clone()),
                Value::Number(number) => Some(number.to_string()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

fn priority_of(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => {
            let text = text.trim().to_ascii_lowercase();
            let named = match text.as_str() {
                "critical" | "urgent" | "highest" | "blocker" => Some(0),
                "high" => Some(1),
                "medium" | "normal" | "moderate" => Some(2),
                "low" => Some(3),
                "lowest" | "trivial" => Some(4),
                _ => None,
            };
            named.or_else(|| text.trim_start_matches('p').parse().ok())
        }
        _ => None,
    }
}

fn passes_of(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(passes) => Some(*passes),
        // Some generators write an empty list of passed checks.
        Value::Array(items) if items.is_empty() => Some(false),
        Value::Array(items) => items
            .iter()
            .map(Value::as_bool)
            .collect::<Option<Vec<_>>>()
            .map(|all| all.iter().all(|b| *b)),
        Value::String(text) => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(true),
            "false" | "no" | "" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn status_of(value: &Value) -> Option<bool> {
    let Value::String(text) = value else {
        return None;
    };
    let status = text.trim().to_ascii_lowercase().replace(['_', '-'], " ");
    match status.as_str() {
        "done" | "complete" | "completed" | "passed" | "passes" | "pass" | "closed"
        | "finished" | "merged" | "resolved" | "verified" => Some(true),
        "open" | "todo" | "to do" | "pending" | "in progress" | "started" | "blocked"
        | "not started" | "ready" | "new" | "failed" | "failing" | "review" | "in review" | "" => {
            Some(false)
        }
        _ => None,
    }
}

fn malformed(path: &Path, error: &serde_json::Error) -> StoriesError {
    let full = error.to_string();
    // serde_json appends " at line L column C"; the error carries both apart.
    let message = match full.rfind(" at line ") {
        Some(index) if error.line() > 0 => full[..index].to_owned(),
        _ => full,
    };
    StoriesError::MalformedPrd {
        path: path.to_path_buf(),
        line: error.line(),
        column: error.column(),
        message,
    }
}

fn check_dependencies(path: &Path, stories: &[Story]) -> Result<(), StoriesError> {
    let index: HashMap<&str, usize> = stories
        .iter()
        .enumerate()
        .map(|(i, story)| (story.id.as_str(), i))
        .collect();
    let mut edges = Vec::with_capacity(stories.len());
    for story in stories {
        let mut targets = Vec::with_capacity(story.depends_on.len());
        for dependency in &story.depends_on {
            let target =
                index
                    .get(dependency.as_str())
                    .ok_or_else(|| StoriesError::UnknownDependency {
                        path: path.to_path_buf(),
                        story: story.id.clone(),
                        dependency: dependency.clone(),
                    })?;
            targets.push(*target);
        }
        edges.push(targets);
    }
    match find_cycle(&edges) {
        Some(cycle) => Err(StoriesError::DependencyCycle {
            path: path.to_path_buf(),
            cycle: cycle.into_iter().map(|i| stories[i].id.clone()).collect(),
        }),
        None => Ok(()),
    }
}

/// Depth-first search for a cycle; returns it closed (`[a, b, a]`). Written
/// iteratively so a long dependency chain cannot overflow the stack.
fn find_cycle(edges: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Unvisited,
        OnPath,
        Finished,
    }
    let mut marks = vec![Mark::Unvisited; edges.len()];
    for start in 0..edges.len() {
        if marks[start] != Mark::Unvisited {
            continue;
        }
        // (node, index of the next edge to follow)
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        marks[start] = Mark::OnPath;
        while let Some(top) = path.last_mut() {
            let node = top.0;
            let target = edges[node].get(top.1).copied();
            top.1 += 1;
            match target {
                Some(target) => match marks[target] {
                    Mark::Unvisited => {
                        marks[target] = Mark::OnPath;
                        path.push((target, 0));
                    }
                    Mark::OnPath => {
                        let from = path.iter().position(|(n, _)| *n == target)?;
                        let mut cycle: Vec<usize> = path[from..].iter().map(|(n, _)| *n).collect();
                        cycle.push(target);
                        return Some(cycle);
                    }
                    Mark::Finished => {}
                },
                None => {
                    marks[node] = Mark::Finished;
                    path.pop();
                }
            }
        }
    }
    None
}

impl StorySource for PrdSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Prd
    }

    fn load(&self) -> Result<Vec<Story>, StoriesError> {
        let text = read_text(&self.workdir.join(&self.file))?;
        parse(&self.file, &text)
    }

    /// The incomplete story with the lowest priority number whose
    /// dependencies are all complete; ties go to the earlier story.
    fn next_story<'a>(&self, stories: &'a [Story]) -> Option<&'a Story> {
        let complete: HashMap<&str, bool> = stories
            .iter()
            .map(|story| (story.id.as_str(), story.is_complete()))
            .collect();
        stories
            .iter()
            .filter(|story| !story.is_complete())
            .filter(|story| {
                story
                    .depends_on
                    .iter()
                    .all(|dependency| complete.get(dependency.as_str()).copied().unwrap_or(false))
            })
            // min_by_key keeps the first of equal keys, i.e. file order.
            .min_by_key(|story| story.priority.unwrap_or(i64::MAX))
    }

    fn tracking_file(&self) -> &Path {
        &self.file
    }

    /// The prd.json itself: it carries the project description and the
    /// stories around this one.
    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError> {
        read_context_files(&self.workdir, std::slice::from_ref(&self.file))
    }

    fn done_instruction(&self, story: &Story) -> String {
        format!(
            "set \"passes\": true for story {} in {} once all of its acceptance criteria hold, and change nothing else about the story there",
            story.id,
            slash_path(&self.file)
        )
    }
}

#[cfg(test)]
mod tests {
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
            (r#"{"userStories": [{"title": "no id"}]}"#, "story #1", "id"),
            (
                r#"[{"id": "A", "priority": 1.5}]"#,
                "story \"A\"",
                "priority",
            ),
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
                r#"[{"id": "A"}, {"id": "B", "acceptance": [{"x": 1}]}]"#,
                "story \"B\"",
                "acceptance",
            ),
            (
                r#"[{"id": "A", "dependsOn": 3}]"#,
                "story \"A\"",
                "dependsOn",
            ),
            (r#"[{"id": ["A"]}]"#, "story #1", "id"),
            (r#"[{"id": "A"}, "B"]"#, "story #2", "(entry)"),
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

    #[test]
    fn empty_story_list_is_an_error() {
        assert!(matches!(
            parse_err(r#"{"userStories": []}"#),
            StoriesError::NoStories { .. }
        ));
    }

    #[test]
    fn empty_id_is_an_error() {
        let error = parse_err(r#"{"userStories": [{"id": "A"}, {"id": " "}]}"#);
        assert!(
            matches!(error, StoriesError::EmptyId { index: 2, .. }),
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
}
