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

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::json_edit::{self, Step};

use super::{
    ContextFile, SourceKind, StoriesError, Story, StorySet, StorySource, Warning, WarningKind,
    check_unique_ids, read_context_files, read_text, repo_relative_file, slash_path,
};

/// The file looked for at the repository root when no `--prd` is given.
pub const DEFAULT_FILE: &str = "prd.json";

mod dialect;
mod order;
mod reopen;

pub use reopen::reopen;

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
/// How the dialects of other loops are read is told in `prd/dialect.rs`.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Story>, StoriesError> {
    parse_set(path, text).map(|set| set.stories)
}

/// [`parse`], with what the reading has to say: dependencies of finished
/// stories on ids the file no longer holds are dropped and reported, as
/// nothing waits on them any more.
pub fn parse_set(path: &Path, text: &str) -> Result<StorySet, StoriesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let file: Value = serde_json::from_str(text).map_err(|error| malformed(path, &error))?;
    let entries =
        dialect::story_entries(path, &file).map_err(|error| with_line(error, text, &[], false))?;
    let mut warnings = Vec::new();
    let mut read = Vec::new();
    let mut unreadable = Vec::new();
    let mut refusal = None;
    for (result, (at, entry)) in entries.stories(path).into_iter().zip(&entries.entries) {
        match result {
            Ok(parsed) => read.push(parsed),
            // One story that cannot be read is set aside; the file is
            // refused only when nothing in it can be run.
            Err(error) => {
                let error = with_line(error, text, at, true);
                warnings.push(Warning {
                    line: None,
                    kind: WarningKind::SetAside,
                    message: format!("{error}; the story is not run"),
                });
                unreadable.extend(dialect::entry_id(entry));
                refusal.get_or_insert(error);
            }
        }
    }
    let mut stories = order::settle(path, read, &unreadable, &mut warnings);
    if let Some(error) = refusal.filter(|_| stories.is_empty()) {
        return Err(error);
    }
    check_unique_ids(path, &stories)?;
    warnings.extend(drop_stale_dependencies(&mut stories));
    check_dependencies(path, &stories)?;
    Ok(StorySet {
        stories,
        warnings,
        unreadable: Vec::new(),
    })
}

/// Takes out of each finished story its dependencies on ids no story of
/// the file has, with a warning for each: a story already done waits for
/// nothing, and an id deleted since must not stop the run.
fn drop_stale_dependencies(stories: &mut [Story]) -> Vec<Warning> {
    let ids: HashSet<String> = stories.iter().map(|story| story.id.clone()).collect();
    let mut warnings = Vec::new();
    for story in stories.iter_mut().filter(|story| story.is_complete()) {
        let id = story.id.clone();
        story.depends_on.retain(|dependency| {
            let known = ids.contains(dependency);
            if !known {
                warnings.push(Warning {
                    line: None,
                    kind: WarningKind::OutsideDependency,
                    message: format!(
                        "story {id:?} is done and depends on {dependency:?}, which is not a story in the file; the dependency is dropped"
                    ),
                });
            }
            known
        });
    }
    warnings
}

/// `error` with the line of the value it is about: the field of the entry
/// at `at` when `entry` holds (that entry when it has no such field), or
/// the list at `at`.
fn with_line(mut error: StoriesError, text: &str, at: &[Step<'_>], entry: bool) -> StoriesError {
    let StoriesError::PrdField {
        line: line @ None,
        field,
        ..
    } = &mut error
    else {
        return error;
    };
    let mut path: Vec<Step<'_>> = at.to_vec();
    let span = match entry {
        true => {
            path.push(Step::Key(field));
            json_edit::span(text, &path).or_else(|| json_edit::span(text, at))
        }
        false => json_edit::span(text, at),
    };
    *line = span.map(|span| 1 + text[..span.start].matches('\n').count());
    error
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

pub(crate) fn check_dependencies(path: &Path, stories: &[Story]) -> Result<(), StoriesError> {
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
        self.load_set().map(|set| set.stories)
    }

    fn load_set(&self) -> Result<StorySet, StoriesError> {
        let text = read_text(&self.workdir.join(&self.file))?;
        parse_set(&self.file, &text)
    }

    /// The incomplete story with the lowest priority number whose
    /// dependencies are all complete; ties go to the earlier story.
    fn next_story<'a>(&self, stories: &'a [Story]) -> Option<&'a Story> {
        super::next_ready(stories)
    }

    fn order_of_work(&self, stories: &[Story]) -> Vec<usize> {
        super::ready_order(stories)
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

    fn reopen(
        &self,
        before: &str,
        after: &str,
        ticked: &super::changes::TickedElsewhere,
    ) -> Option<String> {
        reopen(before, after, &ticked.story)
    }

    fn marked_done_in(&self, text: &str, story: &Story) -> Option<bool> {
        parse(&self.file, text)
            .ok()?
            .iter()
            .find(|other| other.id == story.id)
            .map(Story::is_complete)
    }

    fn carry_marks(&self, from: &str, onto: &str, story: &Story) -> Option<String> {
        reopen(from, onto, &story.id)
    }
}

#[cfg(test)]
mod tests;
