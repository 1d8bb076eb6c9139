//! Everything that can go wrong taking stories from an issue tracker, each
//! with what the user can do about it.

use std::path::PathBuf;

use crate::process::{ExitStatusKind, ProcessError};
use crate::stories::SourceKind;

/// Everything that can go wrong reading issues or talking to `gh`.
#[derive(Debug, thiserror::Error)]
pub enum IssuesError {
    #[error("the GitHub CLI `gh` is not on PATH")]
    GhMissing,

    #[error("could not run `gh {args}`: {source}")]
    GhSpawn {
        args: String,
        #[source]
        source: ProcessError,
    },

    #[error("`gh {args}` {exit}{}", detail(stderr))]
    GhFailed {
        args: String,
        exit: ExitStatusKind,
        stderr: String,
    },

    #[error("`gh {args}` did not answer within --command-timeout ({secs}s)")]
    GhTimedOut { args: String, secs: u64 },

    #[error(
        "{from}:{line}: not the JSON `gh issue list --json number,title,body,labels,state,url` prints: {message}"
    )]
    MalformedGithub {
        from: String,
        line: usize,
        message: String,
    },

    #[error("{}:{line}: not a beads issue: {message}", path.display())]
    MalformedBeads {
        path: PathBuf,
        line: usize,
        message: String,
    },

    #[error("{from} holds no open issue{}", label_note(label.as_deref()))]
    NoIssues { from: String, label: Option<String> },

    #[error(
        "issue #{issue} depends on #{dependency}, which gh may have left out: it lists at most {limit} issues, the newest, and gave as many, down to #{oldest}"
    )]
    DependencyBeyondList {
        issue: u64,
        dependency: u64,
        limit: usize,
        oldest: u64,
    },

    #[error("{from}: the issues wait on each other: {}", cycle.join(" -> "))]
    DependencyCycle {
        from: String,
        tracker: SourceKind,
        /// The issues as people name them (`#1`), the first one again last.
        cycle: Vec<String>,
    },

    #[error("{} and {} are both issue {id}", first, second)]
    DuplicateIssue {
        id: String,
        first: String,
        second: String,
    },

    #[error("--{flag} is for --source {wants}, and the stories come from {source_name}")]
    FlagNeedsSource {
        flag: &'static str,
        wants: String,
        source_name: String,
    },

    #[error("this run's own record of its issues is missing: {}", path.display())]
    LedgerMissing { path: PathBuf },

    #[error("this run's record of its issues at {} cannot be read: {message}", path.display())]
    LedgerCorrupt { path: PathBuf, message: String },

    #[error(transparent)]
    Tracker(#[from] crate::stories::trackers::TrackerError),

    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn detail(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        text => format!(": {text}"),
    }
}

fn label_note(label: Option<&str>) -> String {
    label
        .map(|label| format!(" labelled `{label}`"))
        .unwrap_or_default()
}

impl IssuesError {
    /// What the user can do about the error, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            IssuesError::GhMissing => Some(
                "install the GitHub CLI (https://cli.github.com), or export the issues elsewhere with `gh issue list --label ralph --state open --limit 10000 --json number,title,body,labels,state,url > issues.json` and pass --issues issues.json".to_owned(),
            ),
            IssuesError::GhFailed { exit, .. } if exit.code() == Some(4) => {
                Some("log in first: `gh auth login`".to_owned())
            }
            IssuesError::GhFailed { .. } | IssuesError::GhSpawn { .. } => Some(
                "run the same `gh` command yourself to see what it needs".to_owned(),
            ),
            IssuesError::GhTimedOut { .. } => {
                Some("raise --command-timeout, or export the issues to a file and pass --issues".to_owned())
            }
            IssuesError::MalformedGithub { .. } => Some(
                "export the issues with `gh issue list --label ralph --state open --limit 10000 --json number,title,body,labels,state,url > issues.json`".to_owned(),
            ),
            IssuesError::MalformedBeads { .. } => Some(
                "each line of .beads/issues.jsonl is one issue as `bd` exports it; `bd export` writes the file anew".to_owned(),
            ),
            IssuesError::NoIssues { label: Some(label), .. } => Some(format!(
                "label the issues to work on `{label}`, or pass --label with the label they carry"
            )),
            IssuesError::NoIssues { label: None, .. } => {
                Some("open an issue (`bd create \"…\"`) to give the run work".to_owned())
            }
            IssuesError::DependencyBeyondList { issue, dependency, limit, .. } => Some(format!(
                "close #{dependency} if it is done, or take it out of the \"Depends on\" or \"Blocked by\" line of #{issue}; or label fewer issues, so that the newest {limit} are all of them"
            )),
            IssuesError::DependencyCycle { tracker: SourceKind::Github, cycle, .. } => Some(format!(
                "take {} out of the \"Depends on\" or \"Blocked by\" line of issue {} (or break the cycle at another of its issues)",
                cycle.get(1).map_or("", String::as_str),
                cycle.first().map_or("", String::as_str)
            )),
            IssuesError::DependencyCycle { .. } => Some(
                "remove one of the dependencies of the cycle in beads, then start again".to_owned(),
            ),
            IssuesError::DuplicateIssue { .. } => None,
            IssuesError::FlagNeedsSource { wants, .. } => {
                Some(format!("add --source {wants}, or leave the flag out"))
            }
            IssuesError::LedgerMissing { .. } | IssuesError::LedgerCorrupt { .. } => Some(
                "the run cannot go on without it: 'git ralph abort' restores the pre-start state, and a new start reads the issues again".to_owned(),
            ),
            IssuesError::Tracker(error) => error.hint(),
            IssuesError::Write { .. } => {
                Some("check that the .git directory is writable and the disk is not full".to_owned())
            }
        }
    }
}
