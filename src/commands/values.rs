//! The value enums of the command line's options, and what they mean to
//! the domain.

use crate::settings::OnFinish;
use crate::stories::SourceKind;

/// `--on-finish`: what to do when a loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnFinishArg {
    /// Ask with a menu on a terminal; without one, keep and say how to finish.
    Ask,
    /// Stay on `ralph/<change>`.
    Keep,
    /// Back to the original branch with all the work uncommitted.
    Cleanup,
    /// Keep, then push `ralph/<change>` to the remote (see `git ralph finish --push`).
    Push,
    /// Keep, push, and open or update a pull request (see `git ralph finish --pr`).
    Pr,
}

impl From<OnFinishArg> for OnFinish {
    fn from(arg: OnFinishArg) -> Self {
        match arg {
            OnFinishArg::Ask => OnFinish::Ask,
            OnFinishArg::Keep => OnFinish::Keep,
            OnFinishArg::Cleanup => OnFinish::Cleanup,
            OnFinishArg::Push => OnFinish::Push,
            OnFinishArg::Pr => OnFinish::Pr,
        }
    }
}

/// `--source`: where the stories come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceArg {
    /// openspec/changes/<CHANGE>/tasks.md
    Openspec,
    /// a prd.json of user stories (--prd)
    Prd,
    /// a markdown checklist (--tasks)
    Markdown,
    /// open GitHub issues with a label (--label), through `gh` or --issues
    Github,
    /// open issues of the beads tracker, .beads/issues.jsonl
    Beads,
    /// open issues of a GitLab project (--project), GITLAB_TOKEN
    Gitlab,
    /// open issues of Linear (--team, --project, --cycle), LINEAR_API_KEY
    Linear,
    /// the issues a Jira query finds (--jql or --project), JIRA_API_TOKEN
    Jira,
}

impl From<SourceArg> for SourceKind {
    fn from(arg: SourceArg) -> Self {
        match arg {
            SourceArg::Openspec => SourceKind::OpenSpec,
            SourceArg::Prd => SourceKind::Prd,
            SourceArg::Markdown => SourceKind::Markdown,
            SourceArg::Github => SourceKind::Github,
            SourceArg::Beads => SourceKind::Beads,
            SourceArg::Gitlab => SourceKind::Gitlab,
            SourceArg::Linear => SourceKind::Linear,
            SourceArg::Jira => SourceKind::Jira,
        }
    }
}
