//! The formats and trackers stories come from, as users name them
//! (`--source`) and as a run's settings keep them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::StoriesError;

/// The file formats stories can be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// `openspec/changes/<change>/tasks.md`. Serialized as `openspec`, the
    /// name users type, rather than the mechanical `open_spec`.
    #[serde(rename = "openspec")]
    OpenSpec,
    Prd,
    Markdown,
    /// Prompt mode: no stories, one prompt repeated until the contract passes.
    Prompt,
    /// Open GitHub issues with a label, one story each.
    Github,
    /// Open issues of the beads tracker (`.beads/issues.jsonl`), one story
    /// each.
    Beads,
    /// Open issues of a GitLab project, through its REST API.
    Gitlab,
    /// Open issues of Linear, through its GraphQL API.
    Linear,
    /// The issues a Jira query (JQL) finds, through Jira's REST API.
    Jira,
}

impl SourceKind {
    pub const ALL: [SourceKind; 8] = [
        SourceKind::OpenSpec,
        SourceKind::Prd,
        SourceKind::Markdown,
        SourceKind::Github,
        SourceKind::Beads,
        SourceKind::Gitlab,
        SourceKind::Linear,
        SourceKind::Jira,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::OpenSpec => "openspec",
            SourceKind::Prd => "prd",
            SourceKind::Markdown => "markdown",
            SourceKind::Prompt => "prompt",
            SourceKind::Github => "github",
            SourceKind::Beads => "beads",
            SourceKind::Gitlab => "gitlab",
            SourceKind::Linear => "linear",
            SourceKind::Jira => "jira",
        }
    }

    /// Whether the stories are issues of a tracker, tracked in the run's
    /// own record rather than in a file of the worktree.
    pub fn is_tracker(self) -> bool {
        matches!(
            self,
            SourceKind::Github
                | SourceKind::Beads
                | SourceKind::Gitlab
                | SourceKind::Linear
                | SourceKind::Jira
        )
    }

    /// Whether the issues live on a service that takes comments and closes
    /// issues (`--comment`, `--close`): every tracker but beads, whose
    /// issues are closed with `bd` once the run is kept.
    pub fn is_remote_tracker(self) -> bool {
        self.is_tracker() && self != SourceKind::Beads
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SourceKind {
    type Err = StoriesError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SourceKind::ALL
            .into_iter()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| StoriesError::UnknownSourceKind { name: s.to_owned() })
    }
}
