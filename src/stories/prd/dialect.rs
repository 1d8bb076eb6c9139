//! The shapes of `prd.json` that other loops write, read as one.
//!
//! Files written for other loops vary, so the reader is lenient about
//! shape and strict about meaning: the stories may be a top-level array or
//! sit under `userStories` or `stories`; ids may be strings or integers;
//! `priority` may be a number or `"high"` / `"medium"` / `"low"`; progress
//! may be `passes` (a boolean, or an empty list for "not yet") or a
//! `status` such as `"open"` or `"done"`, and is "not done" when missing;
//! criteria may be `acceptanceCriteria` or `acceptance`; dependencies may
//! be `dependsOn` or `dependencies`; unknown keys are ignored. A value that
//! still cannot be read is an error naming the story and the field.

use std::path::Path;

use serde_json::{Map, Value};

use crate::stories::{StoriesError, Story};

/// The list of story entries in a parsed file.
pub(super) fn story_entries<'a>(
    path: &Path,
    file: &'a Value,
) -> Result<&'a Vec<Value>, StoriesError> {
    let entries = match file {
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
    Ok(entries)
}

/// Where the list of stories may be, in order of preference.
const STORY_LIST_KEYS: &[&str] = &["userStories", "user_stories", "stories"];

fn field_error(path: &Path, story: &str, field: &str, problem: &str) -> StoriesError {
    StoriesError::PrdField {
        path: path.to_path_buf(),
        story: story.to_owned(),
        field: field.to_owned(),
        problem: problem.to_owned(),
    }
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

pub(super) fn to_story(path: &Path, index: usize, entry: &Value) -> Result<Story, StoriesError> {
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
