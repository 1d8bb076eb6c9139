//! A story done in a worktree of its own is not done until its work is on
//! the run's branch and the story's checks pass there. Here one story's
//! work is merged onto the branch's tip in the run's worktree: the code by
//! a three-way merge, the tracking file by setting the story's own marks
//! on the branch's copy. A conflict, or a check that fails on the merged
//! tree, leaves the branch where it was and the merged state kept under a
//! ref; the story then runs again on top of the branch, told why.

use super::super::context::Run;
use super::super::error::RunError;
use super::super::settle;
use super::board::{Board, MergedStory};
use super::worker;
use crate::contract;
use crate::events::Event;
use crate::git::{ObjectId, StoryMerge};
use crate::state::{AttemptOutcome, WorkerRecord};
use crate::stories::{Story, slash_path};

/// What came of merging a story's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::run) enum Merged {
    /// On the branch, its checks passing: the story is done.
    Done { checkpoint: ObjectId },
    /// Not merged: why, for the story's next prompt, and where its work is.
    Refused {
        reason: String,
        kept: Option<String>,
    },
    /// The user's stop ended the checks on the merged tree: nothing is
    /// decided, the run's worktree is back at the branch's tip, and the
    /// story, done in its own worktree, is merged again on resume.
    Stopped,
}

/// Merge the work of `worker`'s story, which ended at `tip`, onto the
/// run's branch.
pub(in crate::run) async fn merge_story(
    run: &mut Run,
    worker: &WorkerRecord,
    tip: ObjectId,
    merged_since: &[MergedStory],
) -> Result<Merged, RunError> {
    let (base, ours, story_id) = (worker.base, run.state.checkpoint(), worker.story.clone());
    let tracking = slash_path(run.source.tracking_file());
    let keep = tracking.clone();
    let outcome = run
        .with_repo(move |repo| repo.merge_work(base, ours, tip, &keep))
        .await
        .map_err(|err| RunError::git(format!("merge story {story_id}"), err))?;
    let tree = match outcome {
        StoryMerge::Clean { tree } => tree,
        StoryMerge::Conflicted { paths } => return Ok(conflicted(&paths, merged_since)),
    };
    let message = merged_message(run, tip).await?;
    let staged_message = message.clone();
    run.with_repo(move |repo| -> Result<(), crate::git::OpError> {
        let staged = repo.commit_detached(&staged_message, tree, ours)?;
        repo.revert_to(staged)?;
        Ok(())
    })
    .await
    .map_err(|err| RunError::git("bring the merged work into the run's worktree", err))?;
    let story = settle::carry_marks(run, &worker.story, tip, &tracking).await?;
    let Some(failed) = checks_on_merged(run, &story).await else {
        run.with_repo(|repo| repo.revert())
            .await
            .map_err(|err| RunError::git("put the run's worktree back at its branch", err))?;
        return Ok(Merged::Stopped);
    };
    if !failed.is_empty() {
        let kept = set_merge_aside(run, &worker.story).await?;
        return Ok(Merged::Refused {
            reason: format!(
                "its work merged onto the run's branch, but there {} failed: {}",
                if failed.len() == 1 {
                    "a check"
                } else {
                    "checks"
                },
                failed.join(", ")
            ),
            kept: Some(kept),
        });
    }
    let (moved, checkpoint) = commit_merged(run, message, ours).await?;
    if let Some(found) = moved {
        run.warn(format!(
            "while story {} was merged, {}; the merge went onto the branch's last checkpoint",
            worker.story,
            super::super::settle::found_words(&found)
        ));
    }
    run.state.checkpointed(checkpoint.commit);
    run.save()?;
    Ok(Merged::Done {
        checkpoint: checkpoint.commit,
    })
}

/// A merge that conflicts: the story runs again, told which stories merged
/// meanwhile touched the same paths.
fn conflicted(paths: &[String], merged_since: &[MergedStory]) -> Merged {
    // Only the stories whose merge touched a conflicting path.
    let clashing: Vec<&str> = merged_since
        .iter()
        .filter(|merged| merged.paths.iter().any(|path| paths.contains(path)))
        .map(|merged| merged.story.as_str())
        .collect();
    let since = match clashing.as_slice() {
        [] => "the run's branch".to_owned(),
        stories => format!("the work of story {}", stories.join(", ")),
    };
    Merged::Refused {
        reason: format!(
            "its work conflicts with {since}, merged while it ran, in {}; do the story again on top of that work",
            paths.join(", ")
        ),
        kept: None,
    }
}

/// Commit the merged tree onto the branch at `ours`, the tip it was made
/// on. A story's agent may move the branch meanwhile: the branch is put
/// back there first (what it pointed at kept aside) and the commit only
/// lands while the branch still points at `ours`.
async fn commit_merged(
    run: &Run,
    message: String,
    ours: ObjectId,
) -> Result<(Option<crate::git::Reattached>, crate::git::Checkpoint), RunError> {
    let (change, strays) = (
        run.settings.change().clone(),
        run.settings.refs().strays(crate::events::now_ms()),
    );
    run.with_repo(move |repo| -> Result<_, crate::git::OpError> {
        let mut moved = None;
        let mut tries = 0;
        loop {
            let keep = repo.unused_ref(&strays)?;
            moved = repo.reattach(&change, ours, &keep)?.or(moved);
            match repo.checkpoint_on(&message, Some(ours)) {
                Ok(checkpoint) => return Ok((moved, checkpoint)),
                Err(_) if tries < 3 => tries += 1,
                Err(err) => return Err(err),
            }
        }
    })
    .await
    .map_err(|err| RunError::git("commit the merged story", err))
}

/// The story's commit message, as the run's own.
async fn merged_message(run: &Run, tip: ObjectId) -> Result<String, RunError> {
    let message = run
        .with_repo(move |repo| repo.commit_message(tip))
        .await
        .map_err(|err| RunError::git("read the story's commit", err))?;
    let change = run.settings.change().to_string();
    Ok(match message.split_once("): ") {
        Some((head, rest)) if head.starts_with("ralph(") => format!("ralph({change}): {rest}"),
        _ => message,
    })
}

/// The names of the story's checks that fail on the merged tree; `None`
/// when the user's stop ended them, as it ends an agent.
async fn checks_on_merged(run: &mut Run, story: &Story) -> Option<Vec<String>> {
    let rules = run.rules_for(story);
    let outcomes = super::super::checks::run_until_stopped(run, &rules).await;
    if contract::any_stopped(&outcomes) {
        return None;
    }
    Some(
        outcomes
            .into_iter()
            .filter(|outcome| !outcome.passed)
            .map(|outcome| outcome.name)
            .collect(),
    )
}

/// Keep the merged state that failed its checks, and put the run's
/// worktree back at the branch's tip.
async fn set_merge_aside(run: &mut Run, story: &str) -> Result<String, RunError> {
    let refname = run.settings.refs().merge(story, crate::events::now_ms());
    let message = format!(
        "ralph({}): story {story} merged, its checks failing",
        run.settings.change()
    );
    let kept = refname.clone();
    run.with_repo(move |repo| -> Result<(), crate::git::OpError> {
        repo.preserve(&kept, &message)?;
        repo.revert()?;
        Ok(())
    })
    .await
    .map_err(|err| RunError::git("set the failed merge aside", err))?;
    Ok(refname)
}
/// Merge a story done in its own worktree, retire its worktree, and
/// say how that went. Its worktree goes only once the merge is
/// decided: a crash before that finds it done on resume. The story
/// becomes done here, once its work is on the branch and the state
/// says so; only then is it announced.
pub(super) async fn merge_done_story(
    run: &mut Run,
    board: &mut Board,
    worker: &WorkerRecord,
    tip: ObjectId,
    merged_since: &[MergedStory],
) -> Result<(), RunError> {
    let story = worker.story.clone();
    let before = run.state.checkpoint();
    let merged = merge_story(run, worker, tip, merged_since).await?;
    if merged == Merged::Stopped {
        // Its worktree stays, recorded: the resume merges it.
        return Ok(());
    }
    crate::bug::halt("merged:committed");
    let kept = retire_worker(run, worker)?;
    crate::bug::halt("merged:retired");
    let (checkpoint, reason, preserved) = match merged {
        Merged::Done { checkpoint } => {
            let paths = paths_between(run, before, checkpoint).await?;
            board.merged.push(MergedStory {
                story: story.clone(),
                paths,
            });
            (Some(checkpoint.to_string()), None, None)
        }
        Merged::Refused {
            reason,
            kept: merge_kept,
        } => (None, Some(reason), merge_kept.or(kept)),
        Merged::Stopped => return Ok(()),
    };
    let merged = checkpoint
        .clone()
        .and_then(|checkpoint| run.state.story_merged(&story, checkpoint));
    let outcome = match merged {
        Some(outcome) => outcome,
        None => run
            .state
            .merge_refused(&story, reason.clone(), preserved.clone()),
    };
    let stories = run.load_stories().await?;
    run.sync_stories(&stories);
    tell_merge(
        run,
        story,
        outcome,
        Told {
            checkpoint,
            reason,
            preserved,
        },
    );
    Ok(())
}

/// What a story's merge came to, as its events tell it.
pub(in crate::run) struct Told {
    /// The commit on the run's branch, when the story is done.
    pub(in crate::run) checkpoint: Option<String>,
    pub(in crate::run) reason: Option<String>,
    pub(in crate::run) preserved: Option<String>,
}

/// Tell of a story's merge: its attempt's end, then the merge. The first
/// event saves the state with the story's record and the hooks it calls
/// for in one write, so that a crash leaves either both or neither.
pub(in crate::run) fn tell_merge(
    run: &mut Run,
    story: String,
    outcome: AttemptOutcome,
    told: Told,
) {
    let (attempt, role) =
        last_attempt(run, &story).map_or((0, None), |attempt| (attempt.attempt, attempt.role));
    run.emit(Event::AttemptFinished {
        story_id: story.clone(),
        attempt,
        outcome,
        reason: told.reason.clone(),
        preserved: told.preserved.clone(),
        checkpoint: told.checkpoint.clone(),
        role,
        unchanged: false,
    });
    run.emit(Event::Merged {
        story_id: story,
        merged: told.checkpoint.is_some(),
        checkpoint: told.checkpoint,
        reason: told.reason,
        preserved: told.preserved,
    });
}
/// The paths that differ between two commits.
pub(in crate::run) async fn paths_between(
    run: &Run,
    old: ObjectId,
    new: ObjectId,
) -> Result<Vec<String>, RunError> {
    run.with_repo(move |repo| -> Result<Vec<String>, crate::git::GitFailure> {
        let (old, new) = (repo.commit_tree(old)?, repo.commit_tree(new)?);
        Ok(repo
            .changed_files(old, new)?
            .into_iter()
            .map(|file| file.path)
            .collect())
    })
    .await
    .map_err(|err| RunError::git("read what a merge changed", err))
}
pub(super) fn last_attempt<'a>(
    run: &'a Run,
    story: &str,
) -> Option<&'a crate::state::AttemptRecord> {
    run.state
        .stories()
        .iter()
        .find(|record| record.id == story)?
        .attempts
        .last()
}
/// A story's loop ended: its record of the story (attempts, cost)
/// becomes the run's, once.
pub(super) fn adopt(run: &mut Run, mut worker: WorkerRecord) -> Result<WorkerRecord, RunError> {
    if worker.ended {
        return Ok(worker);
    }
    let recorded = worker::recorded(&worker);
    // Done is what the run's branch says, not the story's own.
    run.state
        .worker_adopted(&worker.story, recorded.story, &recorded.totals);
    worker.ended = true;
    run.save()?;
    Ok(worker)
}
/// Retire a story's loop: keep what it left, bring its files into the
/// run's, remove its worktree and branch. Returns the ref that keeps
/// the tip of its branch.
pub(super) fn retire_worker(
    run: &mut Run,
    worker: &WorkerRecord,
) -> Result<Option<String>, RunError> {
    let kept = {
        let repo = run.repo_lock();
        worker::retire(&repo, run.settings.change(), &run.run_dir, worker)?
    };
    run.state.worker_gone(&worker.story);
    run.save()?;
    Ok(kept)
}

/// The run's loop ends with stories done in their worktrees and not
/// merged (a stop asked before their turn, or during the checks on the
/// merged tree): none of them is done on the run's branch, so none is
/// in its record. Each attempt is told as interrupted, its work kept
/// under the run's refs, where the record says; its worktree stays, and
/// the resume merges it.
pub(super) fn unmerged_at_end(run: &mut Run) -> Result<(), RunError> {
    for (worker, attempt) in run.state.unmerged_workers() {
        let kept = {
            let repo = run.repo_lock();
            let tip = repo
                .resolve_ref(&worker.branch)
                .map_err(|err| RunError::git("read a story's branch", err))?;
            match tip {
                Some(tip) => {
                    let refname = run
                        .settings
                        .refs()
                        .story_kept(&worker.story, crate::events::now_ms());
                    repo.keep_at(
                        &refname,
                        tip,
                        &format!("ralph: keep the work of story {}", worker.story),
                    )
                    .map_err(|err| RunError::git("keep a story's branch", err))?;
                    Some(refname)
                }
                None => None,
            }
        };
        let reason = format!(
            "done in its worktree, not merged onto {} before the run stopped; the resume merges it",
            run.state.branch()
        );
        let change = run.state.attempt_finished(
            &worker.story,
            attempt,
            crate::state::Ending {
                outcome: AttemptOutcome::Interrupted,
                reason: Some(reason),
                preserved: kept,
                checkpoint: None,
            },
        );
        run.commit(change)?;
    }
    Ok(())
}
