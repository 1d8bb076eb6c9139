//! Where the stories of a change come from.
//!
//! A change is worked through story by story, and each story has to be read
//! from a file the agent itself updates as it goes: an OpenSpec `tasks.md`, a
//! `prd.json` in the Ralph style, any markdown checklist, or the run's own
//! record of the issues it took from GitHub or beads ([`issues`]). This
//! module gives those formats one shape ([`Story`], [`Task`]) behind one
//! trait ([`StorySource`]), picks the right file source for a run
//! ([`detect`]), and re-reads the file from disk on every call, because the
//! file on disk — not what the agent says — is what decides whether a story
//! is done.

pub mod beads;
pub(crate) mod changes;
pub mod checklist;
mod error;
pub(crate) mod github;
pub(crate) mod issues;
pub(crate) mod json_edit;
mod kind;
pub(crate) mod markdown;
pub(crate) mod openspec;
pub(crate) mod openspec_cli;
pub mod prd;
pub(crate) mod prompt_file;
mod source;
pub(crate) mod trackers;

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use checklist::{Checklist, SectionRules};
pub use error::StoriesError;
pub use issues::{IssueSource, IssuesError};
pub use kind::SourceKind;
pub use markdown::MarkdownSource;
pub use openspec::OpenSpecSource;
pub use prd::PrdSource;
pub use prompt_file::PromptFileSource;
pub use source::StorySource;

/// One checkbox of a checklist story.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub text: String,
    pub done: bool,
    /// 1-based line number in the file the task was read from.
    pub line: usize,
}

/// A line that looks like a checkbox but is not one the parser can read,
/// such as `- [partial] …` or `[ ] …` without a list marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnreadableLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// The line, trimmed.
    pub text: String,
}

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A line looks like a box but cannot be read; its story is never done.
    UnreadableBox,
    /// A section that held boxes was skipped as not work.
    SkippedSection,
    /// Two sections carried the same label; the later one was renamed.
    RenamedId,
    /// An open issue of the tracker is not a story of the run: it waits on
    /// an issue the run will not work on.
    LeftOut,
    /// An issue depends on one that is not among the run's stories; the
    /// dependency is taken as met.
    OutsideDependency,
    /// An advisory value (a priority, notes) could not be read as written;
    /// the story is read without it.
    OddValue,
    /// A story that is not done is not run: it is marked to be skipped,
    /// cannot be read, or depends on one that is not run.
    SetAside,
}

/// Something the reader of a story file wants the user to know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// 1-based line in the story file, when the warning is about one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub kind: WarningKind,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The part of a checklist file a story was read from, for the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorySection {
    /// 1-based, inclusive.
    pub first_line: usize,
    /// 1-based, inclusive.
    pub last_line: usize,
    /// The section as written, from its heading on (cut at
    /// [`checklist::SECTION_LIMIT`], with a note saying so).
    pub text: String,
    /// The heading and intro of each enclosing section, outermost first.
    pub parents: Vec<String>,
}

/// One unit of work the agent is given per attempt.
///
/// Checklist sources fill `tasks` and `section` and leave `passes` at
/// `None`; `prd.json` fills `passes`, `description`, `acceptance_criteria`,
/// `priority` and `depends_on` and has no tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Story {
    pub id: String,
    pub title: String,
    pub tasks: Vec<Task>,
    pub description: Option<String>,
    pub acceptance_criteria: Vec<String>,
    pub depends_on: Vec<String>,
    pub priority: Option<i64>,
    pub passes: Option<bool>,
    /// Box-like lines in the story's section that could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<UnreadableLine>,
    /// Where the story was written, for checklist sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<StorySection>,
}

impl Story {
    /// A story whose progress is a list of checkboxes.
    pub fn from_tasks(id: impl Into<String>, title: impl Into<String>, tasks: Vec<Task>) -> Self {
        Story {
            id: id.into(),
            title: title.into(),
            tasks,
            description: None,
            acceptance_criteria: Vec::new(),
            depends_on: Vec::new(),
            priority: None,
            passes: None,
            unreadable: Vec::new(),
            section: None,
        }
    }

    /// A story with an unreadable box line is never done: nobody can tell
    /// what that box says. Otherwise a story with an explicit `passes` flag
    /// is done when the flag is set, and one without is done when it has
    /// tasks and every one is ticked. A story without tasks and without a
    /// flag is never done, so an empty story cannot slip through as finished.
    pub fn is_complete(&self) -> bool {
        if !self.unreadable.is_empty() {
            return false;
        }
        match self.passes {
            Some(passes) => passes,
            None => !self.tasks.is_empty() && self.tasks.iter().all(|task| task.done),
        }
    }

    /// Tasks ticked so far, and all tasks.
    pub fn task_counts(&self) -> (usize, usize) {
        let done = self.tasks.iter().filter(|task| task.done).count();
        (done, self.tasks.len())
    }
}

/// Everything one reading of a story file gives: the stories, what the
/// reader warns about, and every box-like line it could not read.
///
/// The run may be called done only when [`StorySet::all_done`] holds: every
/// story complete and no unreadable box line anywhere in the file, even one
/// outside every story.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorySet {
    pub stories: Vec<Story>,
    pub warnings: Vec<Warning>,
    pub unreadable: Vec<UnreadableLine>,
}

impl StorySet {
    /// A set with no warnings, for sources that have nothing to warn about.
    pub fn from_stories(stories: Vec<Story>) -> Self {
        StorySet {
            stories,
            ..StorySet::default()
        }
    }

    /// Whether the run may be called done.
    pub fn all_done(&self) -> bool {
        self.unreadable.is_empty() && self.stories.iter().all(Story::is_complete)
    }
}

/// A file given to the agent as background for the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFile {
    /// Repository-relative, with `/` separators.
    pub path: String,
    /// The file's text, possibly cut short with a `[truncated…]` marker.
    pub content: String,
}

/// The incomplete story with the lowest priority number whose dependencies
/// are all complete; unnumbered stories come last and ties go to the
/// earlier story. The order of work of sources that carry priorities and
/// dependencies (prd.json, issues).
pub(crate) fn next_ready(stories: &[Story]) -> Option<&Story> {
    let complete: std::collections::HashMap<&str, bool> = stories
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

/// The indices of the open stories in the order [`next_ready`] would take
/// them one after the other: Kahn's algorithm with the ready stories in a
/// priority queue keyed by (priority, file order), so n stories with d
/// dependencies are ordered in O((n + d) log n). A story that waits on an
/// id no story has, or on itself, or on a cycle, is never taken.
pub(crate) fn ready_order(stories: &[Story]) -> Vec<usize> {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    let at: HashMap<&str, usize> = stories
        .iter()
        .enumerate()
        .map(|(index, story)| (story.id.as_str(), index))
        .collect();
    let mut waiting = vec![0usize; stories.len()];
    let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); stories.len()];
    let mut ready = BinaryHeap::new();
    for (index, story) in stories.iter().enumerate() {
        if story.is_complete() {
            continue;
        }
        for dependency in &story.depends_on {
            match at.get(dependency.as_str()) {
                Some(other) if stories[*other].is_complete() => {}
                Some(other) if *other != index => {
                    waiting[index] += 1;
                    unblocks[*other].push(index);
                }
                // Unknown, or itself: never ready.
                _ => waiting[index] += 1,
            }
        }
        if waiting[index] == 0 {
            ready.push(Reverse((story.priority.unwrap_or(i64::MAX), index)));
        }
    }
    let mut order = Vec::new();
    while let Some(Reverse((_, index))) = ready.pop() {
        order.push(index);
        for next in &unblocks[index] {
            waiting[*next] -= 1;
            if waiting[*next] == 0 {
                let priority = stories[*next].priority.unwrap_or(i64::MAX);
                ready.push(Reverse((priority, *next)));
            }
        }
    }
    order
}

/// Checks a change name before it is joined into a path, so a name can never
/// reach outside `openspec/changes/`.
pub fn validate_change_name(name: &str) -> Result<(), StoriesError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.contains('/') || name.contains('\\') {
        Some("it contains a path separator")
    } else if name.contains("..") {
        Some("it contains `..`")
    } else if name.starts_with('.') {
        Some("it starts with `.`")
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoriesError::InvalidChangeName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Picks the source of stories for a run.
///
/// An explicit `kind` wins; then `--tasks` (markdown), then `--prd`; then
/// `openspec/changes/<change>/tasks.md`, then `prd.json` at the root. OpenSpec
/// is preferred over a root `prd.json` because the change name names it.
/// Relative `prd` and `tasks` paths are taken relative to `workdir`.
pub fn detect(
    workdir: &Path,
    change: &str,
    explicit: Option<SourceKind>,
    prd: Option<&Path>,
    tasks: Option<&Path>,
) -> Result<Box<dyn StorySource>, StoriesError> {
    match explicit {
        Some(SourceKind::OpenSpec) => {
            if prd.is_some() {
                return Err(conflict(SourceKind::OpenSpec, "--prd"));
            }
            if tasks.is_some() {
                return Err(conflict(SourceKind::OpenSpec, "--tasks"));
            }
            Ok(Box::new(OpenSpecSource::new(workdir, change)?))
        }
        Some(SourceKind::Prd) => {
            if tasks.is_some() {
                return Err(conflict(SourceKind::Prd, "--tasks"));
            }
            Ok(Box::new(PrdSource::new(workdir, prd)?))
        }
        Some(SourceKind::Markdown) => {
            if prd.is_some() {
                return Err(conflict(SourceKind::Markdown, "--prd"));
            }
            let tasks = tasks.ok_or(StoriesError::MissingTasksPath)?;
            Ok(Box::new(MarkdownSource::new(workdir, tasks)?))
        }
        Some(SourceKind::Prompt) => Err(StoriesError::UnknownSourceKind {
            name: "prompt (use --prompt <FILE>)".to_owned(),
        }),
        // Issues are read when a run begins, into the run's own record;
        // see [`issues`].
        Some(
            kind @ (SourceKind::Github
            | SourceKind::Beads
            | SourceKind::Gitlab
            | SourceKind::Linear
            | SourceKind::Jira),
        ) => Err(StoriesError::UnknownSourceKind {
            name: format!("{kind} (issues are read by `git ralph start --source {kind}`)"),
        }),
        None => detect_implicit(workdir, change, prd, tasks),
    }
}

fn conflict(kind: SourceKind, flag: &'static str) -> StoriesError {
    StoriesError::ConflictingSource { kind, flag }
}

fn detect_implicit(
    workdir: &Path,
    change: &str,
    prd: Option<&Path>,
    tasks: Option<&Path>,
) -> Result<Box<dyn StorySource>, StoriesError> {
    if let Some(tasks) = tasks {
        return Ok(Box::new(MarkdownSource::new(workdir, tasks)?));
    }
    if let Some(prd) = prd {
        return Ok(Box::new(PrdSource::new(workdir, Some(prd))?));
    }
    validate_change_name(change)?;
    let change_dir = openspec::change_dir(change);
    let tasks_file = change_dir.join(openspec::TASKS_FILE);
    if workdir.join(&tasks_file).is_file() {
        return Ok(Box::new(OpenSpecSource::new(workdir, change)?));
    }
    let prd_file = Path::new(prd::DEFAULT_FILE);
    if workdir.join(prd_file).is_file() {
        return Ok(Box::new(PrdSource::new(workdir, None)?));
    }
    // Neither exists: say the most specific thing we can.
    if workdir.join(&change_dir).is_dir() {
        return Err(StoriesError::TasksFileMissing {
            change: change.to_owned(),
            path: tasks_file,
        });
    }
    if workdir.join(openspec::CHANGES_DIR).is_dir() {
        return Err(openspec::change_not_found(workdir, change));
    }
    Err(StoriesError::NoSource {
        change: change.to_owned(),
        looked_for: vec![tasks_file, prd_file.to_path_buf()],
    })
}

/// Turns a user-given path into one relative to `workdir`, refusing paths
/// that leave the repository, and checks that it names a file.
pub(crate) fn repo_relative_file(workdir: &Path, path: &Path) -> Result<PathBuf, StoriesError> {
    let relative = repo_relative_path(workdir, path)?;
    if relative.as_os_str().is_empty() || !workdir.join(&relative).is_file() {
        return Err(StoriesError::FileNotFound {
            path: workdir.join(path),
        });
    }
    Ok(relative)
}

/// Turns a user-given path into one relative to `workdir`, refusing paths
/// that leave the repository; the file need not exist yet (a plan is
/// about to write it).
pub fn repo_relative_path(workdir: &Path, path: &Path) -> Result<PathBuf, StoriesError> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        workdir.join(path)
    };
    normalize(&joined)
        .strip_prefix(normalize(workdir))
        .map(Path::to_path_buf)
        .ok()
        .or_else(|| {
            // `workdir` or `path` may go through a symlink (e.g. /tmp on macOS).
            let real_workdir = workdir.canonicalize().ok()?;
            let real_path = joined.canonicalize().ok()?;
            real_path
                .strip_prefix(real_workdir)
                .map(Path::to_path_buf)
                .ok()
        })
        .ok_or_else(|| StoriesError::OutsideRepository {
            path: path.to_path_buf(),
            workdir: workdir.to_path_buf(),
        })
}

/// Resolves `.` and `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A repository-relative path spelled with `/`, whatever the platform; an
/// absolute path (the run's own record of its issues) as it is.
pub(crate) fn slash_path(path: &Path) -> String {
    if path.is_absolute() {
        return path.to_string_lossy().into_owned();
    }
    path.components()
        .map(|component| component.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A story file's text; bytes that are not UTF-8 are an error naming the
/// line, not a guess at the encoding.
pub(crate) fn read_text(path: &Path) -> Result<String, StoriesError> {
    let bytes = std::fs::read(path).map_err(|source| StoriesError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|err| {
        let (line, column, byte) = crate::contract::first_bad_byte(&err);
        StoriesError::NotUtf8 {
            path: path.to_path_buf(),
            line,
            column,
            byte,
        }
    })
}

/// Reads a checklist file and turns it into stories, rejecting files that
/// give the agent nothing to do (no checkbox, or every box in sections that
/// are not work) or that name two stories alike.
pub(crate) fn load_checklist(
    workdir: &Path,
    relative: &Path,
    rules: &SectionRules,
) -> Result<Checklist, StoriesError> {
    let text = read_text(&workdir.join(relative))?;
    let parsed = checklist::parse_with(&text, rules);
    if parsed.stories.is_empty() {
        let path = relative.to_path_buf();
        return Err(match parsed.skipped.is_empty() {
            true => StoriesError::NoCheckboxes {
                path,
                fenced: parsed.fenced_checkboxes,
            },
            false => StoriesError::NoWork {
                path,
                sections: parsed.skipped,
            },
        });
    }
    check_unique_ids(relative, &parsed.stories)?;
    Ok(parsed)
}

impl From<Checklist> for StorySet {
    fn from(checklist: Checklist) -> Self {
        StorySet {
            stories: checklist.stories,
            warnings: checklist.warnings,
            unreadable: checklist.unreadable,
        }
    }
}

/// The `[stories]` rules of the repository's `ralph.toml` files (the root
/// one, then the change's). A file that cannot be read gives the defaults
/// here: the contract, assembled from the same files, reports the error.
pub fn section_rules(workdir: &Path, change_dir: Option<&Path>) -> SectionRules {
    crate::contract::stories_settings(workdir, change_dir)
        .map(|settings| SectionRules {
            skip: settings.skip,
            keep: settings.keep,
            all_work: false,
        })
        .unwrap_or_default()
}

pub(crate) fn check_unique_ids(path: &Path, stories: &[Story]) -> Result<(), StoriesError> {
    let mut seen = HashSet::new();
    for story in stories {
        if !seen.insert(story.id.as_str()) {
            return Err(StoriesError::DuplicateId {
                path: path.to_path_buf(),
                id: story.id.clone(),
            });
        }
    }
    Ok(())
}

/// The same wording for every checklist-backed source.
pub(crate) fn checklist_done_instruction(tracking_file: &Path, story: &Story) -> String {
    format!(
        "tick each box of story {} (\"{}\") in {} (`[ ]` or `[~]` -> `[x]`) as you finish it",
        story.id,
        story.title,
        slash_path(tracking_file)
    )
}

/// Largest share of the prompt one context file may take.
pub const CONTEXT_FILE_LIMIT: usize = 64 * 1024;
/// Largest share of the prompt all context files together may take.
pub const CONTEXT_TOTAL_LIMIT: usize = 256 * 1024;

/// Reads context files in order, skipping those that do not exist and
/// cutting the rest down to the per-file and total budgets, so one huge spec
/// cannot push the story itself out of the agent's view.
pub(crate) fn read_context_files(
    workdir: &Path,
    relatives: &[PathBuf],
) -> Result<Vec<ContextFile>, StoriesError> {
    let mut files = Vec::new();
    let mut used = 0;
    for relative in relatives {
        let path = workdir.join(relative);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(StoriesError::Io { path, source }),
        };
        let text = String::from_utf8_lossy(&bytes);
        let text = unix_lines(&text);
        let limit = CONTEXT_FILE_LIMIT.min(CONTEXT_TOTAL_LIMIT - used);
        let content = truncate(&text, limit);
        used += content.len().min(limit);
        files.push(ContextFile {
            path: slash_path(relative),
            content,
        });
    }
    Ok(files)
}

/// `text` with its line ends as `\n` alone: a file written on Windows
/// (CRLF) or an old Mac (CR) reads as what it says, and no carriage return
/// reaches a prompt.
pub(crate) fn unix_lines(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

pub(crate) fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    if limit == 0 {
        return "[truncated: the context budget is used up; read this file yourself]".to_owned();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[truncated: {} of {} bytes shown; read the file for the rest]",
        &text[..cut],
        cut,
        text.len()
    )
}

#[cfg(test)]
pub(crate) mod tests;
