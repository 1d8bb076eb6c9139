//! A parallel run after a crash, or ended while stories were at work: the
//! run's worktree put back at its branch's tip, and every story's
//! worktree the run's state still records retired, what it left kept. A
//! story its worktree had verified done is merged, in story order; any
//! other runs again. Finish and abort retire what is left the same way.

use super::super::context::Run;
use super::board::{Board, Waiting};
use super::merge;
use super::worker;
use crate::git::ObjectId;
use crate::run::error::RunError;
use crate::state::{AttemptOutcome, WorkerRecord};

/// On resume: the run's worktree back at its branch's tip (a merge
/// cut short is kept under a ref first), and every story's worktree
/// that a crash left retired, what it left kept. A story its worktree
/// had done is merged now, in story order; any other runs again.
pub(in crate::run) async fn recover_parallel(run: &mut Run) -> Result<(), RunError> {
    let refs = crate::git::RunRefs::of(run.settings.change());
    let namespace = refs.namespace().to_owned();
    let repo = run.repo.clone();
    let tip = crate::run::runtime::blocking(move || {
        let mut repo = repo.lock().unwrap_or_else(|p| p.into_inner());
        back_at_tip(&mut repo, &refs)
    })
    .await
    .map_err(|err| RunError::git("put the run's worktree back at its branch", err))?;
    run.state.checkpointed(tip);
    let workers = run
        .state
        .parallel()
        .as_ref()
        .map(|p| p.workers.clone())
        .unwrap_or_default();
    let stories = run.load_stories().await?;
    let mut done = Vec::new();
    for worker in workers {
        let verified = done_at(&worker);
        let worker = merge::adopt(run, worker)?;
        let merged_already = stories
            .iter()
            .any(|story| story.id == worker.story && story.is_complete());
        if let (Some(tip), false) = (verified, merged_already) {
            done.push(Waiting { worker, tip });
            continue;
        }
        merge::retire_worker(run, &worker)?;
        if merged_already {
            continue;
        }
        run.state.worker_interrupted(&worker.story);
        run.warn(format!(
            "story {} was at work in {} when the run stopped; what it left is kept under {namespace}/stories/, and it runs again",
            worker.story,
            worker.linked.path.display()
        ));
    }
    run.save()?;
    tell_merges_cut_short(run, tip).await?;
    done.sort_by_key(|waiting| stories.iter().position(|s| s.id == waiting.worker.story));
    let mut board = Board::default();
    for Waiting { worker, tip } in done {
        merge::merge_done_story(run, &mut board, &worker, tip, &[]).await?;
    }
    Ok(())
}

/// Stories a killed loop merged onto the branch and never told of: told
/// now, in the order they were merged, as the merge would have (the
/// attempt's checkpoint, its events, its hooks). A story is told once its
/// last attempt names its merge commit.
async fn tell_merges_cut_short(run: &mut Run, tip: ObjectId) -> Result<(), RunError> {
    let initial = run.state.initial_commit();
    // Stories are told in the order they were merged: older than the
    // newest commit told of, every one was.
    let told = told_checkpoints(&run.state);
    let merges = run
        .with_repo(move |repo| story_commits(repo, tip, initial, &told))
        .await
        .map_err(|err| RunError::git("read the run's branch", err))?;
    for (story, commit) in merges {
        let commit = commit.to_string();
        let Some(attempt) = merge::last_attempt(run, &story) else {
            continue;
        };
        let told = attempt.checkpoint.as_deref() == Some(commit.as_str());
        // Until its merge is told, a story's last attempt runs in the
        // run's record (or was interrupted by a stop before a resume
        // merged it).
        let awaiting = matches!(
            attempt.outcome,
            AttemptOutcome::Running | AttemptOutcome::Interrupted | AttemptOutcome::Complete
        );
        if told || !awaiting {
            continue;
        }
        let _ = run.state.story_merged(&story, commit.clone());
        merge::tell_merge(
            run,
            story,
            AttemptOutcome::Complete,
            merge::Told {
                checkpoint: Some(commit),
                reason: None,
                preserved: None,
            },
        );
    }
    Ok(())
}

/// The newest commit of each story on the first-parent line from `tip`
/// back to `initial` or to a commit in `told`, by its `Ralph-Story`
/// trailer, oldest first.
fn story_commits(
    repo: &crate::git::Repo,
    tip: ObjectId,
    initial: ObjectId,
    told: &[String],
) -> Result<Vec<(String, ObjectId)>, crate::git::GitFailure> {
    let mut found: Vec<(String, ObjectId)> = Vec::new();
    let mut at = Some(tip);
    let known = |commit: &ObjectId| *commit == initial || told.contains(&commit.to_string());
    while let Some(commit) = at.filter(|commit| !known(commit)) {
        let message = repo.commit_message(commit)?;
        if let Some(story) = trailer(&message, "Ralph-Story")
            && !found.iter().any(|(known, _)| known == story)
        {
            found.push((story.to_owned(), commit));
        }
        at = repo.first_parent(commit)?;
    }
    found.reverse();
    Ok(found)
}

/// The value of the trailer `key` in a commit message.
fn trailer<'a>(message: &'a str, key: &str) -> Option<&'a str> {
    message.lines().rev().find_map(|line| {
        let (name, value) = line.split_once(": ")?;
        (name == key).then_some(value.trim())
    })
}

/// The commit a story's loop ended at when its story was verified done
/// in its worktree, by its own state.
fn done_at(worker: &WorkerRecord) -> Option<ObjectId> {
    let state = crate::state::RunDir {
        dir: worker.run_dir.clone(),
    }
    .load()
    .ok()?;
    let last = state
        .stories()
        .iter()
        .find(|record| record.id == worker.story)?
        .attempts
        .last()?;
    (last.outcome == AttemptOutcome::Complete).then_some(state.checkpoint())
}

/// Retire every story's worktree a parallel run that did not stop
/// cleanly left behind, keeping what each left under the run's refs:
/// finishing or aborting such a run leaves no worktree or branch of it.
/// Returns how many there were.
pub(crate) fn retire_left_behind(
    repo: &crate::git::Repo,
    change: &crate::git::ChangeName,
    run_dir: &crate::state::RunDir,
    state: &mut crate::state::RunState,
) -> Result<usize, RunError> {
    if state.parallel().is_none() {
        return Ok(0);
    }
    let workers = state.workers_taken_off(|worker| {
        let recorded = worker::recorded(worker);
        (recorded.story, recorded.totals)
    });
    for worker in &workers {
        if let Some(kept) = worker::retire(repo, change, run_dir, worker)? {
            state.worker_kept(&worker.story, kept);
        }
    }
    record_merges_cut_short(repo, change, state)
        .map_err(|err| RunError::git("read the run's branch", err))?;
    run_dir.save(state)?;
    Ok(workers.len())
}

/// Stories a killed loop merged onto the run's branch and never recorded
/// done: done now, at their merge commits, so that the ending's record
/// agrees with the tip it keeps.
fn record_merges_cut_short(
    repo: &crate::git::Repo,
    change: &crate::git::ChangeName,
    state: &mut crate::state::RunState,
) -> Result<(), crate::git::GitFailure> {
    let Some(tip) = repo.resolve_ref(&change.branch_ref())? else {
        return Ok(());
    };
    let told = told_checkpoints(state);
    for (story, commit) in story_commits(repo, tip, state.initial_commit(), &told)? {
        state.merge_found(&story, commit.to_string());
    }
    Ok(())
}

/// The checkpoints the record's stories' last attempts name.
fn told_checkpoints(state: &crate::state::RunState) -> Vec<String> {
    state
        .stories()
        .iter()
        .filter_map(|story| story.attempts.last()?.checkpoint.clone())
        .collect()
}

/// The run's worktree at its branch's tip, whatever a merge cut short
/// left in it kept under `<namespace>/merges/interrupted/`.
fn back_at_tip(
    repo: &mut crate::git::Repo,
    refs: &crate::git::RunRefs,
) -> Result<ObjectId, crate::git::OpError> {
    let Some(tip) = repo.head()?.commit() else {
        return Err(
            crate::git::GitFailure::new_io("read the run's branch", "it has no commit").into(),
        );
    };
    let (old, new) = repo.checkpoint_tree_and_fingerprint(tip)?;
    if old != new {
        let refname = refs.merge_interrupted(crate::events::now_ms());
        repo.preserve(&refname, "ralph: a merge cut short")?;
        repo.revert()?;
    }
    Ok(tip)
}
