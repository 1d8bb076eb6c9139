//! What the stories of a prd.json leave to the reader once each is read:
//! the priorities ranked among the file's own, the stories set aside, and
//! the warnings that say so.
//!
//! Priorities are advisory. They are compared as the numbers written, so
//! `9.5` runs between 9 and 10; a value that cannot be read orders its
//! story after those with one, with a warning. A file whose numeric
//! priorities fall all the way down (100, 95, … 65) lists its most
//! important story first: those numbers are scores, and the highest runs
//! first. A story set aside (a skip mark, a status such as `blocked`) is
//! not run, nor is anything that depends on it; each is named with why.

use std::collections::HashSet;
use std::path::Path;

use super::dialect::Parsed;
use crate::stories::{Story, Warning, WarningKind};

/// The fewest stories whose falling priorities are read as scores.
const SCORES_FROM: usize = 3;

/// The stories to run, ranked, with a warning for each odd value and each
/// story set aside. `unreadable` are the ids of entries that could not be
/// read at all (set aside already, with their own warning).
pub(super) fn settle(
    path: &Path,
    read: Vec<Parsed>,
    unreadable: &[String],
    warnings: &mut Vec<Warning>,
) -> Vec<Story> {
    let file = path.display();
    let scores = falling(&read);
    if let Some((high, low)) = scores {
        warnings.push(warning(
            WarningKind::OddValue,
            format!(
                "{file}: the priorities fall from {high} to {low} down the file, so they are read as scores: the highest runs first"
            ),
        ));
    }
    let mut values: Vec<f64> = read
        .iter()
        .filter_map(|parsed| parsed.priority)
        .map(|p| if scores.is_some() { -p } else { p })
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    // Whole numbers stay as written; fractions and scores are ranked.
    let whole = scores.is_none()
        && read
            .iter()
            .filter_map(|parsed| parsed.priority)
            .all(|p| p.fract() == 0.0 && p.abs() < 1e15);
    let mut aside: HashSet<String> = unreadable.iter().cloned().collect();
    let mut stories = Vec::with_capacity(read.len());
    for parsed in read {
        let id = parsed.story.id.clone();
        for (field, value) in &parsed.odd {
            warnings.push(warning(
                WarningKind::OddValue,
                odd_value(path, &id, field, value),
            ));
        }
        if let Some(why) = &parsed.set_aside {
            warnings.push(warning(
                WarningKind::SetAside,
                format!(
                    "{file}: story {id:?} ({}) is not run: {why}",
                    parsed.story.title
                ),
            ));
            aside.insert(id);
            continue;
        }
        let mut story = parsed.story;
        story.priority = parsed.priority.map(|p| {
            if whole {
                return p as i64;
            }
            let p = if scores.is_some() { -p } else { p };
            values.partition_point(|v| v.total_cmp(&p).is_lt()) as i64
        });
        stories.push(story);
    }
    set_aside_dependents(path, &mut stories, aside, warnings);
    stories
}

/// The first and last priority when every story has a number, they fall
/// strictly down the file, and they are not ranks (the first is larger
/// than the number of stories: `3, 2, 1` may still mean "1 first").
fn falling(read: &[Parsed]) -> Option<(f64, f64)> {
    let numbers: Vec<f64> = read
        .iter()
        .map(|parsed| parsed.numeric_priority.then_some(parsed.priority).flatten())
        .collect::<Option<_>>()?;
    (numbers.len() >= SCORES_FROM
        && numbers[0] > numbers.len() as f64
        && numbers.windows(2).all(|pair| pair[0] > pair[1]))
    .then(|| (numbers[0], numbers[numbers.len() - 1]))
}

/// Takes out what depends on a story set aside, and what depends on that.
fn set_aside_dependents(
    path: &Path,
    stories: &mut Vec<Story>,
    mut aside: HashSet<String>,
    warnings: &mut Vec<Warning>,
) {
    loop {
        let mut removed = Vec::new();
        stories.retain(|story| {
            let Some(on) = story
                .depends_on
                .iter()
                .find(|dependency| aside.contains(*dependency))
            else {
                return true;
            };
            warnings.push(warning(
                WarningKind::SetAside,
                format!(
                    "{}: story {:?} ({}) is not run: it depends on {on:?}, which is not run",
                    path.display(),
                    story.id,
                    story.title
                ),
            ));
            removed.push(story.id.clone());
            false
        });
        if removed.is_empty() {
            return;
        }
        aside.extend(removed);
    }
}

fn odd_value(path: &Path, id: &str, field: &str, value: &str) -> String {
    let what = match field {
        "priority" => {
            "is neither a number nor a known word (critical, high, medium, low, P0…); the story runs after those with a priority"
        }
        _ => "is not text; it is left out of the prompt",
    };
    format!("{}: story {id:?}: {field} {value} {what}", path.display())
}

fn warning(kind: WarningKind, message: String) -> Warning {
    Warning {
        line: None,
        kind,
        message,
    }
}
