//! The shapes of `prd.json` that other loops write, read as one.
//!
//! Files written for other loops vary, so the reader is lenient about
//! shape and strict about meaning:
//!
//! - **Where the stories are:** a top-level array, or the first of
//!   `userStories`, `stories`, `tasks`, `features`, `items`, `issues`, …
//!   (see [`STORY_LIST_KEYS`]); failing those, the one top-level list whose
//!   entries look like stories. When every entry of that list is a group
//!   (a milestone, a phase) with its own list of stories under one of those
//!   keys, the stories are one level down: the groups' lists, in order.
//! - **Ids** may be strings or integers. A list whose entries carry no id
//!   at all is numbered by position (`1`, `2`, …), whatever its key; one
//!   where some do and some do not is an error naming the story.
//! - **Titles** come from `title` (or `name`, `summary`, `story`,
//!   `feature`, `task`);
//!   without one, from the first sentence of the description, then the
//!   category, then the id.
//! - **Progress** is `passes` (a boolean, or an empty list for "not yet");
//!   else a boolean `done` / `completed` / `complete`; else a `status` word
//!   (see [`status_of`]); missing means "not done". A status that says the
//!   story is no more wanted (cancelled, obsolete, duplicate) counts as
//!   done: there is nothing left for an agent to do there.
//! - **Set aside:** a story that is not done but marked to be left alone
//!   (`"skip": true` with its `skipReason`, `"blocked": true`, `"manual":
//!   true`, or a status `blocked`, `skipped`, `deferred`, `wontfix`,
//!   `manual`, `on hold`) is not run; the reader names it with the reason.
//! - **Priority** is a number, fractions included (`9.5` runs between 9
//!   and 10), or a word (`critical`, `high`, `must`, `P1`…).
//! - **Advisory fields** (priority, notes; effort, estimates, labels,
//!   owners and dates are not read at all) never refuse a file: a value
//!   that cannot be read is named in a warning with its story, and the
//!   story is ordered as one without it.
//! - **Criteria** may be `acceptanceCriteria`, `acceptance`, `criteria`,
//!   `steps` or `tests`, as text, a list of text, or a list of objects with
//!   a `description` (or `text`, `criterion`); details may be
//!   `description` or `details`; dependencies `dependsOn`, `depends_on` or
//!   `dependencies`. Unknown keys are ignored.
//!
//! A value that still cannot be read in a field the run needs (the id,
//! the title, `passes`, the criteria, the dependencies) is an error naming
//! the story and the field; `prd.rs` sets that story aside and refuses the
//! file only when no story is left to run.

use std::path::Path;

use serde_json::{Map, Value};

use crate::stories::json_edit::Step;
use crate::stories::{StoriesError, Story};

/// Where the list of stories may be, in order of preference.
const STORY_LIST_KEYS: &[&str] = &[
    "userStories",
    "user_stories",
    "stories",
    "tasks",
    "features",
    "items",
    "requirements",
    "backlog",
    "todos",
    "tickets",
    "issues",
    "workItems",
    "work_items",
];

const ID_KEYS: &[&str] = &["id", "storyId", "story_id", "taskId", "task_id", "key"];
const TITLE_KEYS: &[&str] = &["title", "name", "summary", "story", "feature", "task"];
const DESCRIPTION_KEYS: &[&str] = &["description", "details", "body"];
const CRITERIA_KEYS: &[&str] = &[
    "acceptanceCriteria",
    "acceptance_criteria",
    "acceptance",
    "criteria",
    "steps",
    "tests",
];
const DEPENDENCY_KEYS: &[&str] = &["dependsOn", "depends_on", "dependencies"];
/// Text fields of a criterion written as an object.
const CRITERION_TEXT_KEYS: &[&str] = &["description", "text", "criterion", "title", "name"];

/// The longest title taken from a description.
const TITLE_FROM_TEXT: usize = 100;

/// The story entries of a parsed file, each with where it is.
pub(super) struct Entries<'a> {
    /// Every entry, with its path in the file, in file order.
    pub entries: Vec<(Vec<Step<'a>>, &'a Value)>,
}

impl Entries<'_> {
    /// Whether stories are numbered by position: no entry carries an id.
    fn numbered_by_position(&self) -> bool {
        self.entries.iter().all(|(_, entry)| {
            entry
                .as_object()
                .is_none_or(|e| first(e, ID_KEYS).is_none())
        })
    }

    /// Every entry read as a story, or what keeps it from being read, in
    /// file order.
    pub fn stories(&self, path: &Path) -> Vec<Result<Parsed, StoriesError>> {
        let by_position = self.numbered_by_position();
        self.entries
            .iter()
            .enumerate()
            .map(|(index, (_, entry))| to_story(path, index + 1, entry, by_position))
            .collect()
    }
}

/// The list of story entries in a parsed file.
pub(super) fn story_entries<'a>(path: &Path, file: &'a Value) -> Result<Entries<'a>, StoriesError> {
    let (key, entries) = match file {
        Value::Array(entries) => (None, entries),
        Value::Object(map) => match first(map, STORY_LIST_KEYS).or_else(|| story_like_list(map)) {
            Some((key, Value::Array(entries))) => (Some(key), entries),
            Some((key, _)) => {
                return Err(field_error(path, "the file", key, "is not a list"));
            }
            None => {
                return Err(StoriesError::NoStories {
                    path: path.to_path_buf(),
                    list: None,
                    keys: map.keys().cloned().collect(),
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
    let list: Vec<Step<'a>> = key.map(Step::Key).into_iter().collect();
    let entries = match groups(entries) {
        Some(inner) => inner
            .into_iter()
            .flat_map(|(index, key, stories)| {
                let list = &list;
                stories.iter().enumerate().map(move |(at, story)| {
                    let mut path = list.clone();
                    path.extend([Step::Index(index), Step::Key(key), Step::Index(at)]);
                    (path, story)
                })
            })
            .collect(),
        None => entries
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                let mut path = list.clone();
                path.push(Step::Index(index));
                (path, entry)
            })
            .collect::<Vec<_>>(),
    };
    if entries.is_empty() {
        return Err(StoriesError::NoStories {
            path: path.to_path_buf(),
            list: key.map(str::to_owned),
            keys: Vec::new(),
        });
    }
    Ok(Entries { entries })
}

/// Stories one level down: when every entry of the list is a group (a
/// milestone, a phase, an epic) holding its own list of story objects
/// under a story-list key, and none is a story itself (no `passes`), the
/// groups' lists in order, each with the group's index and key.
fn groups(entries: &[Value]) -> Option<Vec<(usize, &'static str, &[Value])>> {
    let found: Vec<(usize, &str, &[Value])> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| group_list(entry).map(|(key, stories)| (index, key, stories)))
        .collect::<Option<_>>()?;
    found
        .iter()
        .any(|(_, _, stories)| !stories.is_empty())
        .then_some(found)
}

/// The list of story objects a group holds, with its key.
fn group_list(entry: &Value) -> Option<(&'static str, &[Value])> {
    let entry = entry.as_object()?;
    if entry.contains_key("passes") {
        return None;
    }
    let (key, value) = first(entry, STORY_LIST_KEYS)?;
    let stories = value.as_array()?;
    stories
        .iter()
        .all(Value::is_object)
        .then_some((key, stories.as_slice()))
}

/// The one top-level list of objects that carry a story's fields, when
/// exactly one does.
fn story_like_list(map: &Map<String, Value>) -> Option<(&str, &Value)> {
    let looks_like_story = |entry: &Value| {
        entry.as_object().is_some_and(|entry| {
            [ID_KEYS, TITLE_KEYS, &["passes", "status"]]
                .iter()
                .any(|keys| first(entry, keys).is_some())
        })
    };
    let mut lists = map.iter().filter(|(_, value)| {
        value
            .as_array()
            .is_some_and(|items| !items.is_empty() && items.iter().all(looks_like_story))
    });
    match (lists.next(), lists.next()) {
        (Some((key, value)), None) => Some((key.as_str(), value)),
        _ => None,
    }
}

fn field_error(path: &Path, story: &str, field: &str, problem: &str) -> StoriesError {
    StoriesError::PrdField {
        path: path.to_path_buf(),
        line: None,
        story: story.to_owned(),
        field: field.to_owned(),
        problem: problem.to_owned(),
    }
}

/// The first of `keys` present in `entry` (a `null` counts as absent),
/// with the key found.
fn first<'k, 'a>(entry: &'a Map<String, Value>, keys: &[&'k str]) -> Option<(&'k str, &'a Value)> {
    keys.iter()
        .find_map(|key| entry.get(*key).filter(|v| !v.is_null()).map(|v| (*key, v)))
}

/// One entry read as a story, with what its advisory fields said.
pub(super) struct Parsed {
    pub story: Story,
    /// The priority as written: a number, fractions included, or a word's
    /// rank; `None` when missing or unreadable.
    pub priority: Option<f64>,
    /// Whether the priority was written as a number (not a word).
    pub numeric_priority: bool,
    /// Advisory values that could not be read, each as a field and what
    /// it held; they are warned about, never refused.
    pub odd: Vec<(&'static str, String)>,
    /// Why the story is not to be run although it is not done: a skip
    /// mark (`"skip": true`, `"blocked": true`) or a status such as
    /// `blocked`, `deferred`, `manual`.
    pub set_aside: Option<String>,
}

fn to_story(
    path: &Path,
    index: usize,
    entry: &Value,
    by_position: bool,
) -> Result<Parsed, StoriesError> {
    let position = format!("story #{index}");
    let Value::Object(entry) = entry else {
        return Err(field_error(path, &position, "(entry)", "is not an object"));
    };
    let id = id_of(entry, index, by_position)
        .map_err(|(field, problem)| field_error(path, &position, field, problem))?;
    if id.is_empty() {
        return Err(StoriesError::EmptyId {
            path: path.to_path_buf(),
            index,
        });
    }
    let name = format!("story {id:?}");
    let error = |field: &str, problem: &str| field_error(path, &name, field, problem);
    let mut odd = Vec::new();
    let description = described(entry, &mut odd).map_err(|key| error(key, "must be text"))?;
    let title = match first(entry, TITLE_KEYS) {
        Some((_, Value::String(title))) => title.clone(),
        Some((key, _)) => return Err(error(key, "must be a string")),
        None => description
            .as_deref()
            .and_then(first_sentence)
            .or_else(|| {
                first(entry, &["category"]).and_then(|(_, v)| v.as_str().map(str::to_owned))
            })
            .unwrap_or_else(|| id.clone()),
    };
    let acceptance_criteria = match first(entry, CRITERIA_KEYS) {
        Some((key, value)) => {
            criteria(value).ok_or_else(|| error(key, "must be text or a list of text"))?
        }
        None => Vec::new(),
    };
    let depends_on = match first(entry, DEPENDENCY_KEYS) {
        Some((key, value)) => {
            strings(value).ok_or_else(|| error(key, "must be a list of story ids"))?
        }
        None => Vec::new(),
    };
    let written = first(entry, &["priority"]).map(|(_, value)| value);
    let priority = written.and_then(priority_of);
    if let (Some(value), None) = (written, priority) {
        odd.push(("priority", value.to_string()));
    }
    let passes = progress(entry).map_err(|(key, problem)| error(key, problem))?;
    let set_aside = (!passes).then(|| set_aside(entry)).flatten();
    let lines = |text: String| crate::stories::unix_lines(&text).into_owned();
    let story = Story {
        id,
        title: lines(title),
        tasks: Vec::new(),
        description: description.map(lines),
        acceptance_criteria: acceptance_criteria.into_iter().map(lines).collect(),
        depends_on,
        // Ranked among the file's priorities once every story is read.
        priority: None,
        // `Some` marks the story as one whose completion is the flag, not
        // its (absent) tasks.
        passes: Some(passes),
        unreadable: Vec::new(),
        section: None,
    };
    Ok(Parsed {
        story,
        priority,
        numeric_priority: written.is_some_and(Value::is_number),
        odd,
        set_aside,
    })
}

/// Why a story that is not done is not to be run: `"skip": true` (with its
/// `skipReason`), `"blocked": true`, `"manual": true`, or a status that
/// sets it aside ([`SET_ASIDE_STATUSES`]).
fn set_aside(entry: &Map<String, Value>) -> Option<String> {
    let reason = [
        "skipReason",
        "skip_reason",
        "blockedReason",
        "blocked_reason",
        "reason",
    ]
    .iter()
    .find_map(|key| entry.get(*key).and_then(Value::as_str))
    .map(str::trim)
    .filter(|reason| !reason.is_empty());
    let marked = ["skip", "skipped", "blocked", "manual"]
        .iter()
        .find(|key| entry.get(**key).and_then(passes_of) == Some(true));
    if let Some(key) = marked {
        return Some(match reason {
            Some(reason) => format!("marked \"{key}\": {reason}"),
            None => format!("marked \"{key}\""),
        });
    }
    let (key, status) = first(entry, &["status", "state"])?;
    let word = status_word(status.as_str()?);
    SET_ASIDE_STATUSES
        .contains(&word.as_str())
        .then(|| match reason {
            Some(reason) => format!("its {key} is \"{word}\": {reason}"),
            None => format!("its {key} is \"{word}\""),
        })
}

/// Statuses of a story that is not done and not for the agent: someone
/// set it aside, or it needs a person.
const SET_ASIDE_STATUSES: &[&str] = &[
    "blocked",
    "skip",
    "skipped",
    "deferred",
    "wontfix",
    "won't fix",
    "wont fix",
    "won't do",
    "wont do",
    "manual",
    "on hold",
];

/// The id an entry gives, whatever else is wrong with it.
pub(super) fn entry_id(entry: &Value) -> Option<String> {
    match first(entry.as_object()?, ID_KEYS)? {
        (_, Value::String(id)) => Some(id.trim().to_owned()),
        (_, Value::Number(number)) => Some(number.to_string()),
        _ => None,
    }
}

/// An entry's id, its position when the list is numbered by position, or
/// the field and what is wrong with it.
fn id_of(
    entry: &Map<String, Value>,
    index: usize,
    by_position: bool,
) -> Result<String, (&'static str, &'static str)> {
    match first(entry, ID_KEYS) {
        Some((_, Value::String(id))) => Ok(id.trim().to_owned()),
        Some((_, Value::Number(number))) => Ok(number.to_string()),
        Some((key, _)) => Err((key, "must be a string or a number")),
        None if by_position => Ok(index.to_string()),
        None => Err(("id", "is missing")),
    }
}

/// The description with the notes after it; `Err` names a field that is
/// not text.
fn described(
    entry: &Map<String, Value>,
    odd: &mut Vec<(&'static str, String)>,
) -> Result<Option<String>, &'static str> {
    let mut description = match first(entry, DESCRIPTION_KEYS) {
        Some((key, value)) => Some(text_of(value).ok_or(key)?),
        None => None,
    };
    if let Some((key, value)) = first(entry, &["notes"]) {
        // Notes are advisory: what is not text is named, not refused.
        let Some(notes) = text_of(value) else {
            odd.push((key, value.to_string()));
            return Ok(description);
        };
        if !notes.trim().is_empty() {
            let joined = match description.take() {
                Some(text) if !text.trim().is_empty() => format!("{text}\n\nNotes: {notes}"),
                _ => format!("Notes: {notes}"),
            };
            description = Some(joined);
        }
    }
    Ok(description)
}

/// Whether the entry is done: `passes`, else a yes-or-no `done`, else a
/// status word; missing means not done.
fn progress(entry: &Map<String, Value>) -> Result<bool, (&'static str, &'static str)> {
    if let Some((key, value)) = first(entry, &["passes", "passed"]) {
        return passes_of(value).ok_or((key, "must be true or false"));
    }
    if let Some(done) = done_flag(entry) {
        return Ok(done);
    }
    match first(entry, &["status", "state"]) {
        Some((key, value)) => status_of(value).ok_or((
            key,
            "must be a status such as \"open\", \"in progress\" or \"done\"",
        )),
        None => Ok(false),
    }
}

/// The keys of an entry that say whether it is done.
pub(super) const PROGRESS_KEYS: &[&str] = &["passes", "done", "completed", "complete", "status"];

/// A `done`, `completed` or `complete` that holds a yes or no. Other values
/// there (a date, a name) say nothing sure, and the status decides.
fn done_flag(entry: &Map<String, Value>) -> Option<bool> {
    ["done", "completed", "complete"]
        .iter()
        .filter_map(|key| entry.get(*key))
        .find_map(|value| match value {
            Value::Bool(done) => Some(*done),
            Value::String(_) => passes_of(value),
            _ => None,
        })
}

/// The first sentence (or line) of `text`, cut at a word near
/// [`TITLE_FROM_TEXT`] characters.
fn first_sentence(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    let sentence = line
        .find(". ")
        .map_or(line, |end| &line[..end])
        .trim_end_matches('.');
    if sentence.chars().count() <= TITLE_FROM_TEXT {
        return Some(sentence.to_owned());
    }
    let cut: String = sentence.chars().take(TITLE_FROM_TEXT).collect();
    let at_word = cut.rfind(' ').map_or(cut.as_str(), |space| &cut[..space]);
    Some(format!("{at_word}…"))
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
        Value::Array(items) => items.iter().map(item_text).collect(),
        _ => None,
    }
}

fn item_text(item: &Value) -> Option<String> {
    match item {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Criteria: like [`strings`], and objects with a text field too
/// (`{"description": "…", "passes": false}`).
fn criteria(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Object(fields) => first(fields, CRITERION_TEXT_KEYS)
                    .and_then(|(_, text)| text.as_str().map(str::to_owned)),
                other => item_text(other),
            })
            .collect(),
        other => strings(other),
    }
}

/// A priority as a number to order by: lower first. Fractions are kept
/// (9.5 runs between 9 and 10).
fn priority_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64().filter(|n| n.is_finite()),
        Value::String(text) => {
            let text = text.trim().to_ascii_lowercase();
            let named = match text.as_str() {
                "critical" | "urgent" | "highest" | "blocker" => Some(0.0),
                "high" | "must" | "must have" => Some(1.0),
                "medium" | "normal" | "moderate" | "should" | "should have" => Some(2.0),
                "low" | "could" | "could have" => Some(3.0),
                "lowest" | "trivial" | "won't" | "wont" | "won't have" => Some(4.0),
                _ => None,
            };
            named
                .or_else(|| text.trim_start_matches('p').parse().ok())
                .filter(|n: &f64| n.is_finite())
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

/// A status as a word to compare: lower case, `_` and `-` as spaces,
/// leading marks dropped.
fn status_word(text: &str) -> String {
    text.trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim()
        .to_lowercase()
        .replace(['_', '-'], " ")
}

/// Whether a status word means the story needs no more work. Case, `_`,
/// `-` and leading marks (`✅ Done`) do not matter.
fn status_of(value: &Value) -> Option<bool> {
    let Value::String(text) = value else {
        return None;
    };
    let status = status_word(text);
    if SET_ASIDE_STATUSES.contains(&status.as_str()) {
        return Some(false);
    }
    match status.as_str() {
        // Finished.
        "done" | "complete" | "completed" | "passed" | "passes" | "pass" | "passing" | "closed"
        | "finished" | "merged" | "resolved" | "verified" | "shipped" | "implemented" | "fixed"
        | "accepted" | "delivered" | "released" => Some(true),
        // Not to be done: nothing is left for an agent.
        "cancelled" | "canceled" | "obsolete" | "dropped" | "rejected" | "duplicate" => Some(true),
        // Still to do.
        "open" | "todo" | "to do" | "pending" | "in progress" | "inprogress" | "started"
        | "not started" | "ready" | "new" | "failed" | "failing" | "review" | "in review"
        | "needs review" | "wip" | "doing" | "active" | "backlog" | "planned" | "draft"
        | "queued" | "waiting" | "on hold" | "paused" | "incomplete" | "not done" | "partial"
        | "partially done" | "proposed" | "assigned" | "reopened" | "needs work"
        | "in development" | "in qa" | "testing" | "" => Some(false),
        _ => None,
    }
}
