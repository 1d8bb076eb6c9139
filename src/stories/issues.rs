//! Stories from an issue tracker: open GitHub issues with a label
//! (`--source github`, read by [`github`](super::github)) or the open issues
//! of beads (`--source beads`, read by [`beads`](super::beads)). Each issue
//! is one story, its id the tracker's own (`12` for GitHub issue #12,
//! `bd-a1b2` in beads), worked in priority order with its dependencies
//! honoured.
//!
//! The issues are read once, when the run begins. From then on the run
//! keeps its own record of them under `.git/ralph/<change>/` (see
//! `ledger`): the worktree gains no file that could end up in the user's
//! commits, and no tick reaches the tracker. Its tracking file is a task
//! list with one `## <id>: <title>` section per issue, holding the boxes of
//! the issue's task list (see `body`), or, for an issue without one, a
//! single box that stands for the whole issue. The agent ticks that file,
//! by its absolute path, like any task file; every load re-reads it.
//!
//! Git does not revert a file outside the worktree, so the loop tells the
//! source when it commits a checkpoint ([`StorySource::checkpointed`]) and
//! when it puts the worktree back ([`StorySource::reverted`]): a failed
//! attempt's ticks go with its work.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::checklist::{self, SectionRules};
use super::{
    ContextFile, SourceKind, StoriesError, Story, StorySet, StorySource, Warning, check_unique_ids,
    next_ready,
};

mod body;
mod error;
mod ledger;

pub use error::IssuesError;
use ledger::Ledger;
#[cfg(test)]
use ledger::{CHECKPOINT_FILE, SNAPSHOT_FILE, TRACKING_FILE};

/// Largest part of an issue's text given to the agent as the story's
/// description.
const TEXT_LIMIT: usize = 64 * 1024;

/// One open issue, as the run works on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// The story's id: the issue number on GitHub, the id in beads.
    pub id: String,
    pub title: String,
    /// What the tracker says about the issue, in one line, for the prompt:
    /// `GitHub issue #12 (labels: ralph, bug)`.
    pub summary: String,
    /// The issue's text: its body on GitHub; in beads its description, with
    /// its design and notes after it.
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Ids of the issues of the run this one waits for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_criteria: Vec<String>,
}

/// The issues of a run, in the order they are worked, as read when it
/// began; kept as `issues.json` in the run's directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// `github` or `beads`.
    pub tracker: SourceKind,
    /// Where the issues were read: the `gh` command, or the file.
    pub read_from: String,
    pub issues: Vec<Issue>,
    /// What reading them gave to say: issues left out, dependencies taken
    /// as met.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// The stories of a run whose work is a tracker's issues.
pub struct IssueSource {
    snapshot: Snapshot,
    ledger: Ledger,
    /// The tracking file's text until the run begins and writes it, so that
    /// a preview or a refused start writes nothing.
    pending: Mutex<Option<String>>,
}

impl IssueSource {
    /// A new run of `change` over `snapshot`'s issues, whose directory will
    /// be `run_dir`; nothing is written until [`StorySource::begin`]. The
    /// issues must give the run work and their dependencies no cycle.
    pub fn new(change: &str, run_dir: &Path, snapshot: Snapshot) -> Result<Self, StoriesError> {
        if snapshot.issues.is_empty() {
            return Err(IssuesError::NoIssues {
                from: snapshot.read_from.clone(),
                label: None,
            }
            .into());
        }
        let text = tracking_text(change, &snapshot);
        let source = IssueSource {
            snapshot,
            ledger: Ledger::in_run_dir(run_dir),
            pending: Mutex::new(Some(text)),
        };
        let stories = source.load()?;
        let from = PathBuf::from(&source.snapshot.read_from);
        check_unique_ids(&from, &stories)?;
        super::prd::check_dependencies(&from, &stories).map_err(|error| match error {
            StoriesError::DependencyCycle { cycle, .. } => {
                StoriesError::from(IssuesError::DependencyCycle {
                    from: source.snapshot.read_from.clone(),
                    tracker: source.snapshot.tracker,
                    cycle: cycle
                        .iter()
                        .map(|id| reference(source.snapshot.tracker, id))
                        .collect(),
                })
            }
            other => other,
        })?;
        Ok(source)
    }

    /// The record a run already began with, in `run_dir`.
    pub fn resume(run_dir: &Path) -> Result<Self, StoriesError> {
        let ledger = Ledger::in_run_dir(run_dir);
        let snapshot = ledger.read_snapshot()?;
        ledger.read_tracking()?;
        Ok(IssueSource {
            snapshot,
            ledger,
            pending: Mutex::new(None),
        })
    }

    /// The issues as read when the run began.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    fn text(&self) -> Result<String, StoriesError> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        match pending {
            Some(text) => Ok(text),
            None => self.ledger.read_tracking(),
        }
    }

    /// The tracking file read as a task list, each section's story given
    /// its issue's id, title, text, priority and dependencies. An issue
    /// whose section lost all its boxes is still a story, one that cannot
    /// be done, so that the run never ends without it.
    fn read(&self) -> Result<StorySet, StoriesError> {
        let text = self.text()?;
        let parsed = checklist::parse_with(&text, &SectionRules::all_work());
        let lines: Vec<&str> = text.lines().collect();
        let issues: HashMap<&str, &Issue> = self
            .snapshot
            .issues
            .iter()
            .map(|issue| (issue.id.as_str(), issue))
            .collect();
        let mut seen = HashSet::new();
        let mut stories = Vec::with_capacity(parsed.stories.len());
        for mut story in parsed.stories {
            let heading = story
                .section
                .as_ref()
                .and_then(|section| lines.get(section.first_line.wrapping_sub(1)))
                .and_then(|line| heading_id(line));
            if let Some(issue) = heading.and_then(|id| issues.get(id)) {
                seen.insert(issue.id.as_str());
                self.describe(&mut story, issue);
            }
            stories.push(story);
        }
        for issue in &self.snapshot.issues {
            if !seen.contains(issue.id.as_str()) {
                let mut story =
                    Story::from_tasks(issue.id.clone(), issue.title.clone(), Vec::new());
                self.describe(&mut story, issue);
                stories.push(story);
            }
        }
        let mut warnings = self.snapshot.warnings.clone();
        warnings.extend(parsed.warnings);
        Ok(StorySet {
            stories,
            warnings,
            unreadable: parsed.unreadable,
        })
    }

    /// The story as the issue has it.
    fn describe(&self, story: &mut Story, issue: &Issue) {
        story.id = issue.id.clone();
        story.title = super::unix_lines(&issue.title).into_owned();
        let text = super::truncate(super::unix_lines(&issue.text).trim(), TEXT_LIMIT);
        story.description = Some(if text.is_empty() {
            issue.summary.clone()
        } else {
            format!("{}\n\n{text}", issue.summary)
        });
        story.priority = issue.priority;
        story.depends_on = issue.depends_on.clone();
        story.acceptance_criteria = issue
            .acceptance_criteria
            .iter()
            .map(|criterion| super::unix_lines(criterion).into_owned())
            .collect();
    }
}

/// How an issue is named where people read it: `#12` on GitHub, `bd-a1b2`
/// in beads.
pub fn reference(tracker: SourceKind, id: &str) -> String {
    match tracker {
        SourceKind::Github | SourceKind::Gitlab => format!("#{id}"),
        _ => id.to_owned(),
    }
}

/// The id a heading of the tracking file names: `## 12: Title` gives `12`.
fn heading_id(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?;
    let rest = rest.trim_start_matches('#').trim_start();
    let token = rest.split_whitespace().next()?;
    Some(token.trim_end_matches(':'))
}

/// The tracking file a run begins with: a title, a word on what the file
/// is, then one section per issue in the order of work.
fn tracking_text(change: &str, snapshot: &Snapshot) -> String {
    let tracker = match snapshot.tracker {
        SourceKind::Github => "GitHub",
        SourceKind::Gitlab => "GitLab",
        SourceKind::Linear => "Linear",
        SourceKind::Jira => "Jira",
        _ => "beads",
    };
    let mut text = format!(
        "# The {tracker} issues of the run '{change}'\n\n<!-- git-ralph keeps this file for the run, outside the worktree, and reads the run's progress from it: tick a box ([ ] -> [x]) when its task is done. The issues themselves are not changed. -->\n"
    );
    for issue in &snapshot.issues {
        let title = issue.title.split_whitespace().collect::<Vec<_>>().join(" ");
        text.push_str(&format!("\n## {}: {title}\n\n", issue.id));
        let mut tasks = body::task_lines(&issue.text);
        if tasks.is_empty() {
            tasks.push(format!(
                "- [ ] Resolve {} as its description asks",
                reference(snapshot.tracker, &issue.id)
            ));
        }
        for task in tasks {
            text.push_str(&task);
            text.push('\n');
        }
    }
    text
}

impl StorySource for IssueSource {
    fn kind(&self) -> SourceKind {
        self.snapshot.tracker
    }

    fn load(&self) -> Result<Vec<Story>, StoriesError> {
        self.read().map(|set| set.stories)
    }

    fn load_set(&self) -> Result<StorySet, StoriesError> {
        self.read()
    }

    /// In priority order (GitHub issues have none: oldest first), among the
    /// issues whose dependencies are done.
    fn next_story<'a>(&self, stories: &'a [Story]) -> Option<&'a Story> {
        next_ready(stories)
    }

    fn order_of_work(&self, stories: &[Story]) -> Vec<usize> {
        super::ready_order(stories)
    }

    /// Absolute: the file is in the run's directory, not the worktree.
    fn tracking_file(&self) -> &Path {
        &self.ledger.tracking
    }

    /// The issue's text is the story's description; there is nothing else
    /// to read.
    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError> {
        Ok(Vec::new())
    }

    fn done_instruction(&self, story: &Story) -> String {
        format!(
            "tick each box under \"## {}: {}\" in {} (`[ ]` -> `[x]`) as you finish its task; that file is this run's own record of {}, so leave the issue itself as it is",
            story.id,
            story.title.split_whitespace().collect::<Vec<_>>().join(" "),
            self.ledger.tracking.display(),
            reference(self.snapshot.tracker, &story.id)
        )
    }

    fn begin(&self) -> Result<(), StoriesError> {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(text) = pending.as_deref() {
            self.ledger.create(&self.snapshot, text)?;
        }
        *pending = None;
        Ok(())
    }

    fn checkpointed(&self) -> Result<(), StoriesError> {
        self.ledger.checkpointed()
    }

    fn reverted(&self) -> Result<(), StoriesError> {
        self.ledger.reverted()
    }

    fn tracking_change(&self) -> Result<Option<(String, String)>, StoriesError> {
        self.ledger.change()
    }
}

#[cfg(test)]
mod tests;
