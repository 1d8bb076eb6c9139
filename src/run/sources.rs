//! Where a run's stories come from: a task file of the repository (found,
//! or named with `--tasks`/`--prd`), a prompt file, or a tracker's issues
//! (GitHub, beads), read afresh when a run begins and from the run's own
//! record when it resumes. A run, a story of a parallel run and a plan
//! all read their stories through here.

use std::path::Path;
use std::time::Duration;

use super::start_error::StartError;
use crate::git::{ChangeName, Repo};
use crate::settings::Settings;
use crate::state::RunDir;
use crate::stories::{self, SourceKind, StorySource};

/// Whether the stories are read for a run that begins, or one already
/// under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// Read afresh: the issues of a tracker are asked for now.
    Fresh,
    /// The run's own record of its stories, when it keeps one.
    Resume,
}

/// Where the stories of this run come from.
pub fn source_for(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
    begin: Begin,
) -> Result<Box<dyn StorySource>, StartError> {
    match settings.source {
        Some(kind) if kind.is_tracker() => {
            return Ok(Box::new(issue_source(repo, change, settings, kind, begin)?));
        }
        other => refuse_tracker_flags(settings, other)?,
    }
    if let Some(file) = &settings.prompt_file {
        return Ok(Box::new(stories::PromptFileSource::new(
            repo.workdir(),
            Path::new(file),
            change.as_str(),
        )?));
    }
    let explicit = settings.source.filter(|kind| *kind != SourceKind::Prompt);
    let prd = settings.prd_file.as_deref().map(Path::new);
    let tasks = settings.tasks_file.as_deref().map(Path::new);
    Ok(stories::detect(
        repo.workdir(),
        stories_of(change, settings),
        explicit,
        prd,
        tasks,
    )?)
}

/// The change whose stories a run works on: its own, or for one story's
/// run (`--story`), the change the story belongs to.
pub fn stories_of<'a>(change: &'a ChangeName, settings: &'a Settings) -> &'a str {
    settings
        .job
        .as_ref()
        .map_or(change.as_str(), |job| job.change.as_str())
}

/// The stories of a run whose work is a tracker's issues: read from the
/// tracker (or the file given) for a new run, from the run's own record
/// on resume.
fn issue_source(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
    kind: SourceKind,
    begin: Begin,
) -> Result<stories::IssueSource, StartError> {
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str()).dir;
    if begin == Begin::Resume {
        return Ok(stories::IssueSource::resume(&run_dir)?);
    }
    if kind == SourceKind::Beads && (settings.label.is_some() || settings.comment) {
        let flag = if settings.comment { "comment" } else { "label" };
        return Err(flag_needs_remote(flag, kind.as_str()).into());
    }
    let snapshot = tracker_of(repo, settings, kind)
        .map_err(stories::StoriesError::from)?
        .list()?;
    Ok(stories::IssueSource::new(
        change.as_str(),
        &run_dir,
        snapshot,
    )?)
}

/// The tracker of a run over `kind`'s issues, as its settings name it.
pub fn tracker_of(
    repo: &Repo,
    settings: &Settings,
    kind: SourceKind,
) -> Result<Box<dyn stories::trackers::Tracker>, stories::IssuesError> {
    let reading = stories::trackers::Reading {
        workdir: repo.workdir(),
        label: settings.label.as_deref(),
        issues_file: settings.issues_file.as_deref().map(Path::new),
        query: &settings.tracker,
        timeout: Duration::from_secs(settings.command_timeout_secs),
    };
    stories::trackers::connect(kind, &reading)
}

/// `--issues`, `--label`, `--comment` and the tracker's query belong to the
/// tracker sources.
fn refuse_tracker_flags(settings: &Settings, source: Option<SourceKind>) -> Result<(), StartError> {
    let name = source.map_or("a file of the repository", SourceKind::as_str);
    if settings.comment {
        return Err(flag_needs_remote("comment", name).into());
    }
    if settings.label.is_some() {
        return Err(flag_needs_remote("label", name).into());
    }
    if let Some((flag, _)) = settings.tracker.flags().first() {
        return Err(flag_needs_remote(flag, name).into());
    }
    if settings.issues_file.is_some() {
        return Err(
            stories::StoriesError::from(stories::IssuesError::FlagNeedsSource {
                flag: "issues",
                wants: "github or --source beads".to_owned(),
                source_name: name.to_owned(),
            })
            .into(),
        );
    }
    Ok(())
}

fn flag_needs_remote(flag: &'static str, source: &str) -> stories::StoriesError {
    stories::IssuesError::FlagNeedsSource {
        flag,
        wants: "github, gitlab, linear or jira".to_owned(),
        source_name: source.to_owned(),
    }
    .into()
}
