//! Settling an attempt's work into git, so that nothing is ever lost: an
//! accepted attempt becomes a checkpoint commit with its receipt; a failed one is preserved
//! under its attempt ref before the worktree goes back to the last
//! checkpoint. On resume, whatever a killed loop left in the worktree is
//! preserved the same way, and HEAD is brought back onto the run's branch
//! if an agent moved it. Tracking the story source keeps outside the
//! worktree (the run's record of a tracker's issues) follows each
//! checkpoint and each revert, as the worktree does.

use super::attempt::Attempt;
use super::checkpoint_record::{
    Made, note_checkpoint_due, record_checkpoint, tracking_checkpointed,
};
use super::context::Run;
use super::pipeline_state;
use super::receipts;

use super::error::RunError;
use super::judge::{self, Failure};
use super::runtime::blocking;
use crate::events::now_ms;
use crate::git::{Carried, ObjectId};
use crate::state::{AttemptOutcome, Ending, now};
use crate::stories::Story;

/// Checkpoint the story. `kept` is a failed attempt whose work is
/// kept all the same (a single pass, or a prompt-mode iteration): it is
/// recorded with its own outcome, and so is its event. The checkpoint is
/// noted as due before it is committed, so that a loop killed in between
/// leaves a commit recovery can tell for its own.
pub(super) async fn accept(
    run: &mut Run,
    attempt: &Attempt,
    kept: Option<Failure>,
) -> Result<(), RunError> {
    let (story, attempt) = (&attempt.story, attempt.number);
    let suffix = match &kept {
        None => String::new(),
        Some(failure) => run
            .settings
            .policy()
            .kept_suffix(attempt, failure.outcome.describe()),
    };
    let subject = format!(
        "ralph({}): story {} {}{suffix}",
        run.settings.change(),
        story.id,
        story.title
    );
    let receipt = receipts::receipt(run, &story.id, attempt).await;
    let message = format!("{subject}\n\n{receipt}");
    let due = note_checkpoint_due(run, &story.id, attempt, kept).await?;
    let checkpoint = run
        .with_repo(move |repo| repo.checkpoint(&message))
        .await
        .map_err(|err| RunError::git(format!("checkpoint story {}", story.id), err))?;
    crate::bug::halt("checkpoint:committed");
    let made = Made {
        commit: checkpoint.commit,
        subject: &subject,
        receipt: &receipt,
    };
    record_checkpoint(run, story, &due, made).await
}

/// The source's tracking outside the worktree follows a revert.
pub(super) async fn tracking_reverted(run: &Run) -> Result<(), RunError> {
    let source = run.source.clone();
    Ok(blocking(move || source.reverted()).await?)
}

/// Preserve the attempt under its ref and go back to the checkpoint.
pub(super) async fn reject(
    run: &mut Run,
    attempt: &Attempt,
    failure: Failure,
) -> Result<(), RunError> {
    let preserved = attempt.work_ref();
    let message = format!(
        "ralph({}): attempt {} at story {} ({})\n\n{}",
        run.settings.change(),
        attempt.number,
        attempt.story.id,
        attempt.story.title,
        failure.reason
    );
    preserve_and_revert(run, preserved.clone(), message, "preserve the attempt").await?;
    record_failure(run, attempt, failure, Some(preserved))
}

/// A failed attempt into its record, the state and the events; its
/// work, if any, is kept at `preserved`.
pub(super) fn record_failure(
    run: &mut Run,
    attempt: &Attempt,
    failure: Failure,
    preserved: Option<String>,
) -> Result<(), RunError> {
    let (story, attempt) = (&attempt.story, attempt.number);
    let ending = Ending {
        outcome: failure.outcome,
        reason: Some(failure.reason),
        preserved,
        checkpoint: None,
    };
    let change = run
        .state
        .attempt_failed(&story.id, attempt, ending, failure.checks);
    run.commit(change)
}

/// Commit the worktree under `refname`, then revert to the last
/// checkpoint, or to the work a story's pipeline has passed so far.
pub(super) async fn preserve_and_revert(
    run: &Run,
    refname: String,
    message: String,
    what: &'static str,
) -> Result<(), RunError> {
    keep_and_revert(run, refname, message, what, false).await
}

/// [`preserve_and_revert`]; with `index`, what was staged apart from the
/// worktree (the user may have staged while a killed loop lay there) is
/// kept too, as the ref's parent.
async fn keep_and_revert(
    run: &Run,
    refname: String,
    message: String,
    what: &'static str,
    index: bool,
) -> Result<(), RunError> {
    let base = pipeline_state::pipeline_base(run);
    run.with_repo(move |repo| -> Result<(), RunError> {
        let set_aside = match index {
            true => repo
                .set_aside(&refname, &message)
                .map_err(|err| RunError::git(what, err))?,
            false => None,
        };
        if set_aside.is_none() {
            repo.preserve(&refname, &message)
                .map_err(|err| RunError::git(what, err))?;
        }
        match base {
            Some(base) => repo.revert_to(base),
            None => repo.revert(),
        }
        .map_err(|err| RunError::git("revert to the last checkpoint", err))?;
        Ok(())
    })
    .await?;
    tracking_reverted(run).await
}

/// On resume. An attempt the state records as running was cut off (a
/// killed loop, a force-quit): its work is preserved and the worktree
/// goes back to the last checkpoint. Otherwise the run stopped cleanly,
/// and whatever is in the worktree now is the user's: it is committed
/// as a checkpoint of its own, never reverted.
pub(super) async fn recover(run: &mut Run) -> Result<(), RunError> {
    end_orphaned_agent(run).await;
    put_back_kept_refs(run).await?;
    // The checkpoint a killed loop committed but never recorded is its
    // own: recorded now, what the user committed above it stays theirs.
    super::adopt::adopt_noted_checkpoint(run).await?;
    let running = running_attempt(run);
    let cut_short = running.as_ref().is_some_and(|(_, _, unsettled)| *unsettled);
    if running.is_none() {
        // Commits the user made on the branch while stopped are theirs
        // too: HEAD is taken as it is.
        adopt_user_commits(run).await?;
    }
    guard_head(run, "on resume").await?;
    if let Some((story, attempt, _)) = &running {
        super::submodules::set_aside_interrupted(run, story, *attempt).await?;
    }
    let dirty = worktree_dirty(run, "read the worktree on resume").await?;
    let stopped_cleanly = running.is_none();
    match running {
        Some((story, attempt, _)) => {
            let kept = set_aside_attempt(
                run,
                &story,
                attempt,
                dirty,
                "the loop was stopped during this attempt",
            )
            .await?;
            if let Some(kept) = kept {
                let how = if cut_short {
                    "git-ralph's own error cut the previous loop short"
                } else {
                    "the previous loop stopped"
                };
                let message = format!(
                    "{how} during attempt {attempt} at story {story}; what it left is kept at {kept} and the worktree is back at the last checkpoint"
                );
                run.warn(message);
            }
        }
        // In a pipeline, the story's uncommitted work is the base: what
        // the user changed beyond it joins it.
        None if dirty && pipeline_state::pipeline_base(run).is_some() => {
            pipeline_state::keep_changes_in_pipeline(run).await?;
        }
        None if dirty => commit_user_changes(run).await?,
        None => {}
    }
    if stopped_cleanly {
        adopt_tracking(run).await?;
    }
    Ok(())
}

/// The run stopped cleanly, so what its tracking outside the worktree
/// says now is the user's, as the worktree is: it is kept.
async fn adopt_tracking(run: &mut Run) -> Result<(), RunError> {
    let source = run.source.clone();
    let changed = blocking(move || source.tracking_change()).await?;
    if changed.is_some() {
        let message = format!(
            "{} was changed while the run was stopped; its marks are kept",
            run.tracking_file()
        );
        run.warn(message);
    }
    tracking_checkpointed(run).await
}

/// After a bug in git-ralph cut the loop short: as after a clean stop,
/// the attempt under way is preserved and the worktree reverted, and
/// anything else beyond the checkpoint is set aside too, since nothing
/// says whose it is.
pub(super) async fn set_aside_after_bug(run: &mut Run) -> Result<(), RunError> {
    end_orphaned_agent(run).await;
    guard_head(run, "after a bug").await?;
    let dirty = worktree_dirty(run, "read the worktree after a bug").await?;
    match running_attempt(run) {
        Some((story, attempt, _)) => {
            set_aside_attempt(
                run,
                &story,
                attempt,
                dirty,
                "git-ralph hit a bug during this attempt",
            )
            .await?;
            Ok(())
        }
        None if dirty => {
            let base = run.settings.refs().interrupted(now_ms());
            let refname = run
                .with_repo(move |repo| repo.unused_ref(&base))
                .await
                .map_err(|err| RunError::git("name a ref", err))?;
            let message = format!(
                "ralph({}): work set aside after a bug in git-ralph",
                run.settings.change()
            );
            preserve_and_revert(run, refname, message, "set the work aside").await
        }
        None => Ok(()),
    }
}

/// The user's branches, tags and stash an agent moved before its loop
/// was killed go back where they were.
pub(super) async fn put_back_kept_refs(run: &mut Run) -> Result<(), RunError> {
    let (change, run_dir) = (run.settings.change().clone(), run.run_dir.clone());
    let restored = run
        .with_repo(move |repo| super::kept_refs::put_back(repo, &change, &run_dir))
        .await
        .map_err(|err| RunError::git("put back what an agent moved", err))?;
    for moved in restored {
        run.warn(format!(
            "before the loop stopped, the agent {}",
            super::kept_refs::words(&moved)
        ));
    }
    Ok(())
}

/// An agent a killed loop left running may still be writing: end it.
async fn end_orphaned_agent(run: &mut Run) {
    let pid_file = run.run_dir.agent_pid_file();
    if blocking(move || crate::process::end_orphaned_group(&pid_file)).await {
        run.warn("stopped the agent the previous loop left running".into());
    }
}

/// The attempt the state records as running, or as cut short by
/// git-ralph's own error with its work still in the worktree (then
/// `true`), if any.
fn running_attempt(run: &Run) -> Option<(String, u32, bool)> {
    run.state.stories().iter().find_map(|story| {
        story
            .attempts
            .iter()
            .find(|a| a.outcome == AttemptOutcome::Running || a.unsettled)
            .map(|a| (story.id.clone(), a.attempt, a.unsettled))
    })
}

/// git-ralph's own error (`told`) ended the loop: the attempt under way,
/// if any, is recorded as cut short by it, its work left in the worktree
/// for the resume to set aside, as after a killed loop. Nothing is
/// written to git here: the disk may be full, a revert may have just
/// failed.
pub(super) fn cut_short_by_error(run: &mut Run, told: &str) {
    let Some((story, attempt, _)) = running_attempt(run) else {
        return;
    };
    let reason = format!("cut short by git-ralph's own error: {told}");
    let change = run.state.attempt_cut_short(&story, attempt, reason);
    // The loop is failing already: a state that cannot be saved is only
    // warned of.
    run.commit_or_warn(change);
}

fn attempt_ref(run: &Run, story: &str, attempt: u32) -> String {
    run.settings.refs().attempt(story, attempt)
}

/// Whether the worktree holds anything beyond the last checkpoint (or
/// a pipeline's work so far).
async fn worktree_dirty(run: &Run, what: &'static str) -> Result<bool, RunError> {
    let checkpoint = pipeline_state::iteration_base(run);
    let (checkpoint_tree, worktree_tree) = run
        .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
        .await
        .map_err(|err| RunError::git(what, err))?;
    Ok(checkpoint_tree != worktree_tree)
}

/// An attempt cut off: its work (if any) under a ref of its own, the
/// worktree back at the checkpoint, the attempt recorded as interrupted
/// (`why`, unless its record already says why). Returns where the work
/// went.
async fn set_aside_attempt(
    run: &mut Run,
    story: &str,
    attempt: u32,
    dirty: bool,
    why: &str,
) -> Result<Option<String>, RunError> {
    let own = attempt_ref(run, story, attempt);
    let (refname, own_taken) = unwritten_ref(run, own.clone()).await?;
    let mut kept = None;
    if dirty {
        let message = format!(
            "ralph({}): work left by an interrupted loop",
            run.settings.change()
        );
        keep_and_revert(
            run,
            refname.clone(),
            message,
            "preserve the interrupted work",
            true,
        )
        .await?;
        kept = Some(refname);
    } else {
        tracking_reverted(run).await?;
    }
    // A ref the attempt's own judgement wrote before git-ralph's error
    // holds all its work and its agent's reason: the record names it.
    let own = own_taken.then_some(own);
    run.state
        .attempt_set_aside(story, attempt, why, kept.clone(), own);
    Ok(kept)
}

/// `refname`, or when something is already kept there (the attempt's own
/// judgement preserved it before git-ralph's error cut the attempt
/// short), a ref of its own beside the run's interrupted work, and
/// `true`: a ref is never written over.
async fn unwritten_ref(run: &Run, refname: String) -> Result<(String, bool), RunError> {
    let beside = run.settings.refs().interrupted(now_ms());
    run.with_repo(
        move |repo| -> Result<(String, bool), crate::git::GitFailure> {
            match repo.resolve_ref(&refname)? {
                None => Ok((refname, false)),
                Some(_) => Ok((repo.unused_ref(&beside)?, true)),
            }
        },
    )
    .await
    .map_err(|err| RunError::git("name a ref", err))
}

/// The run's branch moved past the checkpoint while the run was
/// stopped, by the user's own commits: they become the checkpoint.
async fn adopt_user_commits(run: &mut Run) -> Result<(), RunError> {
    let change = run.settings.change().clone();
    let checkpoint = run.state.checkpoint();
    let adopted = run
        .with_repo(move |repo| repo.descendant_tip(&change, checkpoint))
        .await
        .map_err(|err| RunError::git("read the run's branch on resume", err))?;
    if let Some(tip) = adopted {
        run.state.checkpointed(tip);
        run.save()?;
        let message = format!(
            "{} has commits made while the run was stopped; they are kept, and the run goes on from {}",
            run.state.branch(),
            tip.to_hex_with_len(10)
        );
        run.warn(message);
    }
    Ok(())
}

/// Commit what the user changed while the run was stopped, and judge
/// any story they marked done like any other: its checks must pass.
async fn commit_user_changes(run: &mut Run) -> Result<(), RunError> {
    let before: Vec<(String, bool)> = run
        .state
        .stories()
        .iter()
        .map(|story| (story.id.clone(), story.done))
        .collect();
    let message = format!(
        "ralph({}): user changes while stopped",
        run.settings.change()
    );
    let staged = format!("{message} (as staged)");
    let checkpoint = run
        .with_repo(move |repo| {
            // What the user staged apart from the worktree is committed
            // first, so that `git add -A` does not write over it.
            repo.commit_staged_apart(&staged)?;
            repo.checkpoint(&message)
        })
        .await
        .map_err(|err| RunError::git("commit the changes made while stopped", err))?;
    run.state.checkpointed(checkpoint.commit);
    let commit = checkpoint.commit.to_string();
    run.save()?;
    let message = format!(
        "the changes made while the run was stopped are committed on {} as {}",
        run.state.branch(),
        checkpoint.commit.to_hex_with_len(10)
    );
    run.warn(message);
    let stories = run.load_stories().await?;
    let ticked: Vec<_> = stories
        .iter()
        .filter(|story| {
            story.is_complete() && before.iter().any(|(id, done)| *id == story.id && !*done)
        })
        .cloned()
        .collect();
    for story in ticked {
        let attempt = run.story_record(&story.id).attempts.len() as u32 + 1;
        let rules = run
            .settings
            .contract()
            .rules_for(&story.id, &story.acceptance_criteria);
        let outcomes = super::checks::run_checks(run, &story, attempt, &rules).await;
        if let Some(failure) = judge::failed_checks(&outcomes) {
            return Err(RunError::UserChangesRejected {
                story: story.id.clone(),
                reason: failure.reason,
            });
        }
        run.state
            .marked_done_by_user(&story.id, attempt, commit.clone(), now());
        // Its pipeline, stopped part-way, is over: the user did the story,
        // and no role takes it up again over their work.
        if run
            .state
            .pipeline()
            .as_ref()
            .is_some_and(|pipeline| pipeline.story == story.id)
        {
            run.state.pipeline_over();
        }
        run.save()?;
    }
    Ok(())
}

/// HEAD must be on the run's branch at the last checkpoint. If the agent
/// committed or switched branches, bring the work back; never lose it.
/// Returns where HEAD was found, if not there.
pub(super) async fn guard_head(
    run: &mut Run,
    when: &str,
) -> Result<Option<crate::git::Reattached>, RunError> {
    let change = run.settings.change().clone();
    let strays = run.settings.refs().strays(now_ms());
    let checkpoint = run.state.checkpoint();
    run.with_repo(move |repo| {
        let keep = repo.unused_ref(&strays)?;
        repo.reattach(&change, checkpoint, &keep)
    })
    .await
    .map_err(|err| RunError::git(format!("check HEAD {when}"), err))
}

/// The agent left HEAD at `found`, a commit the last checkpoint does
/// not descend from (it rewound the run's branch, or worked on another):
/// what it did there is carried onto the checkpoint, so that its own
/// work is judged, not the stories it took away. Says what was done.
pub(super) async fn carry_work(
    run: &mut Run,
    found: crate::git::ObjectId,
    story: &str,
) -> Result<String, RunError> {
    let onto = run.state.checkpoint();
    let tracking = crate::stories::slash_path(run.source.tracking_file());
    let keep = tracking.clone();
    let carried = run
        .with_repo(move |repo| repo.carry_work_onto(found, onto, &keep))
        .await
        .map_err(|err| RunError::git("carry the attempt's work onto the checkpoint", err))?;
    Ok(match carried {
        Carried::NotNeeded => format!("its work was brought back onto {}", run.state.branch()),
        Carried::Onto { work } => {
            carry_own_marks(run, story, work, &tracking).await?;
            format!(
                "what it did there was carried onto the last checkpoint of {}, whose work stays",
                run.state.branch()
            )
        }
        Carried::Conflicted { paths, .. } => format!(
            "what it did there does not merge onto the last checkpoint of {} (in {}), so the attempt is judged as it stands",
            run.state.branch(),
            paths.join(", ")
        ),
    })
}

/// The marks `story` had where the agent worked (`tip`), carried onto
/// the run's worktree only when they mark it done there: the attempt is
/// not judged yet, so a story it never marked must stay unmarked.
async fn carry_own_marks(
    run: &mut Run,
    story: &str,
    tip: ObjectId,
    tracking: &str,
) -> Result<(), RunError> {
    let from = tracking_text_at(run, tip, tracking).await?;
    let stories = run.load_stories().await?;
    let marked = stories
        .iter()
        .find(|s| s.id == story)
        .and_then(|s| run.source.marked_done_in(&from, s));
    if marked == Some(true) {
        carry_marks(run, story, tip, tracking).await?;
    }
    Ok(())
}

/// The tracking file as commit `tip` has it; empty when it has none.
async fn tracking_text_at(run: &Run, tip: ObjectId, tracking: &str) -> Result<String, RunError> {
    let wanted = tracking.to_owned();
    Ok(run
        .with_repo(move |repo| repo.text_at(tip, &wanted))
        .await
        .map_err(|err| RunError::git("read the story's tracking file", err))?
        .unwrap_or_default())
}

/// Where HEAD was found, in words.
pub(super) fn found_words(found: &crate::git::Reattached) -> String {
    match &found.kept_at {
        Some(kept) => format!(
            "HEAD was found at {} (its commits are kept at {kept})",
            found.found
        ),
        None => format!("HEAD was found at {}", found.found),
    }
}

/// Set the story's marks in the run's worktree as its own worktree had
/// them at `tip`; returns the story as the run's tracking file has it.
pub(super) async fn carry_marks(
    run: &mut Run,
    story: &str,
    tip: ObjectId,
    tracking: &str,
) -> Result<Story, RunError> {
    let path = run.repo_lock().workdir().join(run.source.tracking_file());
    let from = tracking_text_at(run, tip, tracking).await?;
    let stories = run.load_stories().await?;
    let unmarked = || {
        RunError::io(
            format!("mark story {story} done in {}", path.display()),
            std::io::Error::other("the tracking file could not be edited"),
        )
    };
    let story = stories
        .into_iter()
        .find(|s| s.id == story)
        .ok_or_else(unmarked)?;
    let onto = std::fs::read_to_string(&path)
        .map_err(|err| RunError::io(format!("read {}", path.display()), err))?;
    let text = run
        .source
        .carry_marks(&from, &onto, &story)
        .ok_or_else(unmarked)?;
    if text != onto {
        crate::state::write_atomically(&path, text.as_bytes())
            .map_err(|err| RunError::io(format!("write {}", path.display()), err))?;
    }
    Ok(story)
}
