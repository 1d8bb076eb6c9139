//! `git ralph merge <change>`: the stories of a change done one per
//! machine (`start --story`), each on its own branch, brought onto
//! `ralph/<change>` by the rules a parallel run merges its stories by,
//! with its own merge code: in the order the stories wait for each other,
//! the code by a three-way merge and the tracking file by the story's
//! marks, the story's checks run on the merged tree. A story whose work
//! conflicts with a story merged before it, or whose checks fail there, is
//! sent back: recorded as not done, with the reason naming the stories
//! whose work touched the paths, its work kept under a ref, to be run
//! again. The run of the change records each story merged as done, with
//! the attempts its own run spent.

use std::path::PathBuf;

use super::context::Run;
use super::error::RunError;
use super::parallel::board::MergedStory;
use super::parallel::merge::{Merged, Told, merge_story, paths_between, tell_merge};
use super::session::Session;
use crate::git::{ObjectId, Repo, RunRefs};
use crate::state::{RunDir, StopReason, StoryRecord, Totals, WorkerRecord};

/// One story's finished branch, as its own run recorded it.
#[derive(Debug, Clone)]
pub struct StoryBranch {
    pub story: String,
    /// `refs/heads/ralph/<change>.story-<ID>`.
    pub branch: String,
    pub tip: ObjectId,
    /// Where the story's run began: the three-way merge's base.
    pub base: ObjectId,
    /// Its run's record of the story, attempts and all.
    pub record: Option<StoryRecord>,
    pub totals: Totals,
}

/// What came of a merge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// The stories merged, in order, with their checkpoint.
    pub merged: Vec<(String, ObjectId)>,
    /// The stories sent back: why, and where their work is kept.
    pub sent_back: Vec<SentBack>,
}

/// A story whose work could not be merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentBack {
    pub story: String,
    pub reason: String,
    pub kept: String,
}

/// Merge `branches` onto the branch of the run `session` opened, in the
/// order its stories wait for each other; the run is left stopped.
pub fn merge_all(
    repo: Repo,
    run_dir: RunDir,
    session: Session,
    branches: Vec<StoryBranch>,
) -> Result<MergeReport, RunError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| RunError::io("start the async runtime", err))?;
    let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let sink: super::context::EventSink = std::sync::Arc::new(|_| {});
    let mut run = Run::new(
        repo,
        session.source,
        run_dir,
        session.state,
        session.settings,
        sink,
        stop_rx,
    )
    .map_err(|err| RunError::io("open the event log", err))?;
    runtime.block_on(merge_in_order(&mut run, branches))
}

async fn merge_in_order(
    run: &mut Run,
    mut branches: Vec<StoryBranch>,
) -> Result<MergeReport, RunError> {
    let stories = run.load_stories().await?;
    run.sync_stories(&stories);
    let matrix = super::matrix::matrix(run.settings.contract(), run.source.kind(), &stories);
    let order: Vec<&String> = matrix.waves.iter().flatten().collect();
    branches.retain(|branch| order.contains(&&branch.story));
    branches.sort_by_key(|branch| order.iter().position(|id| **id == branch.story));
    let mut report = MergeReport::default();
    let mut merged_since: Vec<MergedStory> = Vec::new();
    for branch in branches {
        merge_one(run, branch, &mut merged_since, &mut report).await?;
    }
    let stories = run.load_stories().await?;
    run.sync_stories(&stories);
    let message = match report.sent_back.len() {
        0 => "the stories done on their own branches are merged".to_owned(),
        _ => "stories sent back: run them again".to_owned(),
    };
    if let Err(err) = run.with_repo(Repo::settle_index).await {
        run.warn(format!(
            "could not write the index whole again ({err}); git reads it as it is"
        ));
    }
    let runtime_ms = run.runtime_ms();
    let change = run
        .state
        .loop_ended(StopReason::Stopped, &message, runtime_ms);
    run.commit_or_warn(change);
    run.save()?;
    Ok(report)
}

/// Merge one story's branch, and record what came of it.
async fn merge_one(
    run: &mut Run,
    branch: StoryBranch,
    merged_since: &mut Vec<MergedStory>,
    report: &mut MergeReport,
) -> Result<(), RunError> {
    let story = branch.story.clone();
    run.state
        .worker_adopted(&story, branch.record.clone(), &branch.totals);
    let worker = WorkerRecord {
        story: story.clone(),
        branch: branch.branch.clone(),
        base: branch.base,
        linked: crate::git::LinkedWorktree {
            path: PathBuf::new(),
            id: String::new(),
        },
        run_dir: PathBuf::new(),
        ended: true,
    };
    let before = run.state.checkpoint();
    let merged = merge_story(run, &worker, branch.tip, merged_since).await?;
    let (outcome, told) = match merged {
        Merged::Done { checkpoint } => {
            let paths = paths_between(run, before, checkpoint).await?;
            merged_since.push(MergedStory {
                story: story.clone(),
                paths,
            });
            report.merged.push((story.clone(), checkpoint));
            let outcome = run.state.story_merged(&story, checkpoint.to_string());
            let told = Told {
                checkpoint: Some(checkpoint.to_string()),
                reason: None,
                preserved: None,
            };
            (outcome, told)
        }
        Merged::Refused { reason, kept } => {
            let kept = match kept {
                Some(kept) => kept,
                None => keep_work(run, &story, branch.tip).await?,
            };
            report.sent_back.push(SentBack {
                story: story.clone(),
                reason: reason.clone(),
                kept: kept.clone(),
            });
            let outcome = run
                .state
                .merge_refused(&story, Some(reason.clone()), Some(kept.clone()));
            let told = Told {
                checkpoint: None,
                reason: Some(reason),
                preserved: Some(kept),
            };
            (Some(outcome), told)
        }
        Merged::Stopped => return Ok(()),
    };
    if let Some(outcome) = outcome {
        tell_merge(run, story, outcome, told);
    }
    Ok(())
}

/// Keep a story's work that was sent back under the run's refs.
async fn keep_work(run: &Run, story: &str, tip: ObjectId) -> Result<String, RunError> {
    let name = RunRefs::of(run.settings.change()).story_kept(story, crate::events::now_ms());
    let kept = name.clone();
    let message = format!("ralph: keep the work of story {story}, sent back");
    run.with_repo(move |repo| repo.keep_at(&kept, tip, &message))
        .await
        .map_err(|err| RunError::git("keep a story's work", err))?;
    Ok(name)
}
