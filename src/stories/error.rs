//! Everything that can go wrong reading stories, each with what the user
//! can do about it.

use std::io;
use std::path::{Path, PathBuf};

use super::SourceKind;
use super::checklist::SkippedSection;

/// Everything that can go wrong reading stories.
#[derive(Debug, thiserror::Error)]
pub enum StoriesError {
    #[error("invalid change name {name:?}: {reason}")]
    InvalidChangeName { name: String, reason: &'static str },

    #[error("unknown story source {name:?} (expected openspec, prd, markdown, github or beads)")]
    UnknownSourceKind { name: String },

    #[error("no OpenSpec change named {change:?} in {}", changes_dir.display())]
    ChangeNotFound {
        change: String,
        changes_dir: PathBuf,
        existing: Vec<String>,
    },

    #[error("OpenSpec change {change:?} has no tasks file: {} does not exist", path.display())]
    TasksFileMissing { change: String, path: PathBuf },

    #[error("{} does not exist", path.display())]
    FileNotFound { path: PathBuf },

    #[error("{} has no checkbox (`- [ ] task`) outside code fences{}; write each task as a checkbox line, e.g. `- [ ] 1.1 Add the parser`", path.display(), fenced_note(*.fenced))]
    NoCheckboxes { path: PathBuf, fenced: usize },

    /// Every box of a checklist sits in sections that are not work.
    #[error("{}", no_work(path, sections))]
    NoWork {
        path: PathBuf,
        sections: Vec<SkippedSection>,
    },

    /// A prd.json without a story: `list` is the key of its empty list of
    /// stories, or `None` when it has no such list; `keys` are the file's
    /// top-level keys.
    #[error("{}", no_stories(path, list.as_deref(), keys))]
    NoStories {
        path: PathBuf,
        list: Option<String>,
        keys: Vec<String>,
    },

    #[error("{}:{line}:{column}: malformed prd.json: {message}", path.display())]
    MalformedPrd {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    #[error("{}{}: {story}: field \"{field}\" {problem}", path.display(), line_suffix(*line))]
    PrdField {
        path: PathBuf,
        /// Where the value is, when it can be found.
        line: Option<usize>,
        /// `story "US-3"`, or `story #3` when the id itself is unreadable.
        story: String,
        field: String,
        problem: String,
    },

    #[error("{}: story #{index} has an empty id", path.display())]
    EmptyId { path: PathBuf, index: usize },

    #[error("{}: story id {id:?} is used more than once", path.display())]
    DuplicateId { path: PathBuf, id: String },

    #[error("{}: story {story:?} depends on {dependency:?}, which is not a story in the file", path.display())]
    UnknownDependency {
        path: PathBuf,
        story: String,
        dependency: String,
    },

    #[error("{}: dependency cycle {}", path.display(), cycle.join(" -> "))]
    DependencyCycle { path: PathBuf, cycle: Vec<String> },

    #[error("no stories found for change {change:?}: looked for {}", looked_for.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" and "))]
    NoSource {
        change: String,
        looked_for: Vec<PathBuf>,
    },

    #[error("the markdown source needs a checklist file, and none was given")]
    MissingTasksPath,

    #[error("the story source was set to {kind}, but {flag} was also given")]
    ConflictingSource {
        kind: SourceKind,
        flag: &'static str,
    },

    #[error("{} is outside the repository at {}", path.display(), workdir.display())]
    OutsideRepository { path: PathBuf, workdir: PathBuf },

    #[error("{}:{line}:{column}: the file is not UTF-8 text (byte {byte:#04x})", path.display())]
    NotUtf8 {
        path: PathBuf,
        line: usize,
        column: usize,
        byte: u8,
    },

    #[error(transparent)]
    Issues(#[from] super::IssuesError),

    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// What a checklist whose boxes all sit in sections that are not work
/// holds, and what to do about it, in one sentence.
fn no_work(path: &Path, sections: &[SkippedSection]) -> String {
    let boxes: usize = sections.iter().map(|s| s.boxes).sum();
    let done: usize = sections.iter().map(|s| s.done).sum();
    let place = headings_in_words(sections);
    let path = path.display();
    match (boxes, done == boxes) {
        (1, true) => format!(
            "{path}: its only task is already done, under {place}; there is nothing left to work on, so add an open `- [ ]` task to give a run work"
        ),
        (_, true) => format!(
            "{path}: every one of the {boxes} tasks is already done, all of them under {place}; there is nothing left to work on, so add an open `- [ ]` task to give a run work"
        ),
        (_, false) => format!(
            "{path}: its {boxes} task{} ({} still open) sit under {place}, which {} not work; move the open tasks under a heading of their own, or add the section to `keep` under [stories] in ralph.toml",
            if boxes == 1 { "" } else { "s" },
            boxes - done,
            if sections.len() == 1 { "is" } else { "are" }
        ),
    }
}

/// `## A`, `## A and ## B`, `## A, ## B and ## C`, `## A, ## B, ## C and
/// 2 more`.
fn headings_in_words(sections: &[SkippedSection]) -> String {
    const SHOWN: usize = 3;
    let names: Vec<&str> = sections.iter().map(|s| s.heading.as_str()).collect();
    match names.as_slice() {
        [] => "no heading".to_owned(),
        [one] => (*one).to_owned(),
        _ if names.len() > SHOWN + 1 => format!(
            "{} and {} more",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        ),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What a prd.json without stories holds, and what to do, in one sentence.
fn no_stories(path: &Path, list: Option<&str>, keys: &[String]) -> String {
    const EXAMPLE: &str = "{\"id\": \"US-1\", \"title\": \"...\", \"passes\": false}";
    let path = path.display();
    match list {
        Some(list) => format!(
            "{path} lists no stories: its \"{list}\" list is empty; add a story to it, such as {EXAMPLE}"
        ),
        None if keys.is_empty() => format!(
            "{path} lists no stories: the file is empty; write its stories in a \"userStories\" list, such as [{EXAMPLE}]"
        ),
        None => format!(
            "{path} lists no stories: none of its keys ({}) holds a list of them; put the stories in a \"userStories\" list, such as [{EXAMPLE}]",
            keys.join(", ")
        ),
    }
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|line| format!(":{line}")).unwrap_or_default()
}

fn fenced_note(fenced: usize) -> String {
    match fenced {
        0 => String::new(),
        n => format!(" ({n} inside code fences do not count)"),
    }
}

impl StoriesError {
    /// What the user can do about the error, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            StoriesError::InvalidChangeName { .. } => Some(
                "use the directory name of the change under openspec/changes/, e.g. `add-login`"
                    .to_owned(),
            ),
            StoriesError::UnknownSourceKind { .. } => {
                Some("pass one of: openspec, prd, markdown, github, beads".to_owned())
            }
            StoriesError::ChangeNotFound { existing, .. } if existing.is_empty() => Some(
                "there are no changes yet; create one with `openspec new change <name>`, or pass --prd / --tasks".to_owned(),
            ),
            StoriesError::ChangeNotFound { existing, .. } => {
                Some(format!("existing changes: {}", existing.join(", ")))
            }
            StoriesError::TasksFileMissing { change, .. } => Some(format!(
                "write the task list first, e.g. `openspec instructions tasks --change {change}`"
            )),
            StoriesError::FileNotFound { .. } => Some("check the path you passed".to_owned()),
            StoriesError::NoCheckboxes { .. } => Some(
                "each story is a heading (`## 1. Title`) with its tasks as boxes under it; add them, then start again"
                    .to_owned(),
            ),
            // These say what to do in their one sentence.
            StoriesError::NoWork { .. } | StoriesError::NoStories { .. } => None,
            StoriesError::MalformedPrd { .. } => Some(
                "expected {\"userStories\": [{\"id\": \"US-1\", \"title\": \"...\", \"passes\": false}]}"
                    .to_owned(),
            ),
            StoriesError::PrdField { field, .. } => Some(format!(
                "fix \"{field}\" in that story, or remove the field if it is not needed"
            )),
            StoriesError::EmptyId { .. } => Some("give every story a non-empty \"id\"".to_owned()),
            StoriesError::DuplicateId { .. } => {
                Some("give every story (or `## N.` heading) a distinct id".to_owned())
            }
            StoriesError::UnknownDependency { .. } => {
                Some("fix the id in \"dependsOn\" or add the missing story".to_owned())
            }
            StoriesError::DependencyCycle { .. } => {
                Some("remove one of the \"dependsOn\" entries in the cycle".to_owned())
            }
            StoriesError::NoSource { .. } => Some(
                "create the OpenSpec change, or pass --prd <file> for a prd.json or --tasks <file> for a markdown checklist".to_owned(),
            ),
            StoriesError::MissingTasksPath => Some("pass --tasks <file>".to_owned()),
            StoriesError::ConflictingSource { .. } => {
                Some("pass either the source kind or the file flag that matches it".to_owned())
            }
            StoriesError::OutsideRepository { .. } => Some(
                "the agent's progress is checkpointed with the repository, so keep the file inside it"
                    .to_owned(),
            ),
            StoriesError::NotUtf8 { .. } => Some(
                "save the file as UTF-8 (for example `iconv -f LATIN1 -t UTF-8`), or fix the bytes on that line"
                    .to_owned(),
            ),
            StoriesError::Issues(error) => error.hint(),
            StoriesError::Io { .. } => None,
        }
    }
}
