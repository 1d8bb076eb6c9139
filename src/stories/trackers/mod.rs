//! The one interface every issue tracker is read and told through. A
//! [`Tracker`] lists the open issues a query names, as a [`Snapshot`] the
//! run keeps as its own record, in the tracker's own order (its dependency
//! links, then its priority), each sub-issue a task of its parent; and,
//! when the user asks, posts a comment on an issue whose story is finished
//! and closes it; and reads the `/answer` replies on the issue of a story
//! that waits for one (see [`replies`]). GitHub (through `gh`) and beads (a file) were the first
//! two; GitLab, Linear and Jira speak HTTP (see [`http`]), one small
//! module each.
//!
//! Credentials are read from each tool's usual environment variables when
//! a request is made, and go nowhere else: not into the run's settings,
//! not into its record, not into a message.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::issues::{IssuesError, Snapshot};
use super::{SourceKind, StoriesError};

mod api;
mod error;
mod github_cli;
mod gitlab;
mod http;
mod jira;
mod linear;
pub(crate) mod replies;

pub use error::TrackerError;

/// What the user asked of the tracker besides its label: which issues
/// (`--project`, `--milestone`, `--team`, `--cycle`, `--jql`) and whether a
/// finished issue is closed (`--close`). Kept in the run's settings, so a
/// resumed run comments and closes as the started one would.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrackerQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milestone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jql: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub close: bool,
}

impl TrackerQuery {
    pub fn is_empty(&self) -> bool {
        *self == TrackerQuery::default()
    }

    /// The flags given, by name, each with the sources it belongs to.
    pub fn flags(&self) -> Vec<(&'static str, &'static [SourceKind])> {
        use SourceKind::{Github, Gitlab, Jira, Linear};
        let given = [
            (
                self.project.is_some(),
                "project",
                &[Gitlab, Linear, Jira][..],
            ),
            (self.milestone.is_some(), "milestone", &[Gitlab][..]),
            (self.team.is_some(), "team", &[Linear][..]),
            (self.cycle.is_some(), "cycle", &[Linear][..]),
            (self.jql.is_some(), "jql", &[Jira][..]),
            (self.close, "close", &[Github, Gitlab, Linear, Jira][..]),
        ];
        given
            .into_iter()
            .filter(|(given, _, _)| *given)
            .map(|(_, flag, kinds)| (flag, kinds))
            .collect()
    }
}

/// Where and how a run reads its issues.
pub struct Reading<'a> {
    /// The repository's worktree, where `gh` and `bd` run.
    pub workdir: &'a Path,
    pub label: Option<&'a str>,
    /// `--issues`: a file instead of the tracker (GitHub, beads).
    pub issues_file: Option<&'a Path>,
    pub query: &'a TrackerQuery,
    pub timeout: Duration,
}

/// An issue tracker.
pub trait Tracker: Send + Sync {
    /// The open issues the query names, in the order the run takes them.
    fn list(&self) -> Result<Snapshot, StoriesError>;

    /// Posts `body` as a comment on issue `id`.
    fn comment(&self, id: &str, body: &str) -> Result<(), IssuesError>;

    /// Closes issue `id`, or moves it to the tracker's done state.
    fn close(&self, id: &str) -> Result<(), IssuesError>;

    /// The answers given on issue `id` at `since` (seconds since the
    /// epoch) or later: the text of each reply that starts with `/answer`,
    /// oldest first.
    fn answers_since(&self, id: &str, since: u64) -> Result<Vec<String>, IssuesError>;
}

/// The tracker of `kind`, as `reading` names it; nothing is asked of it
/// yet. A flag the tracker does not take, or a query it cannot run, is
/// refused here.
pub fn connect(kind: SourceKind, reading: &Reading) -> Result<Box<dyn Tracker>, IssuesError> {
    for (flag, kinds) in reading.query.flags() {
        if !kinds.contains(&kind) {
            return Err(refused_flag(flag, kinds, kind));
        }
    }
    if reading.issues_file.is_some() && !matches!(kind, SourceKind::Github | SourceKind::Beads) {
        return Err(refused_flag(
            "issues",
            &[SourceKind::Github, SourceKind::Beads],
            kind,
        ));
    }
    Ok(match kind {
        SourceKind::Gitlab => Box::new(gitlab::Gitlab::new(reading)?),
        SourceKind::Linear => Box::new(linear::Linear::new(reading)?),
        SourceKind::Jira => Box::new(jira::Jira::new(reading)?),
        SourceKind::Beads => Box::new(github_cli::Beads::new(reading)),
        _ => Box::new(github_cli::Github::new(reading)),
    })
}

fn refused_flag(flag: &'static str, kinds: &[SourceKind], kind: SourceKind) -> IssuesError {
    let wants: Vec<&str> = kinds.iter().map(|kind| kind.as_str()).collect();
    IssuesError::FlagNeedsSource {
        flag,
        wants: wants.join(" or --source "),
        source_name: kind.as_str().to_owned(),
    }
}

/// The summary line of an issue, for the prompt: `GitLab issue #2 (labels:
/// ralph, bug)`.
fn summary(tracker: &str, reference: &str, labels: &[String]) -> String {
    if labels.is_empty() {
        format!("{tracker} issue {reference}")
    } else {
        format!(
            "{tracker} issue {reference} (labels: {})",
            labels.join(", ")
        )
    }
}

/// An issue's text with its sub-issues after it as a task list, each
/// ticked when it is done: the run works them as the parent's tasks.
fn with_sub_issues(text: &str, subs: &[(String, String, bool)]) -> String {
    if subs.is_empty() {
        return text.to_owned();
    }
    let mut text = text.trim_end().to_owned();
    text.push_str("\n\nSub-issues:\n\n");
    for (id, title, done) in subs {
        let mark = if *done { 'x' } else { ' ' };
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        text.push_str(&format!("- [{mark}] {id}: {title}\n"));
    }
    text
}
