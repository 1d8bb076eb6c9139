//! A story through its role pipeline: the coder, then the reviewer, the
//! tester and qa, each a loop of its own until its gate passes. Which role
//! runs next, what a passing or failing iteration does to the story's work,
//! and when the pipeline is done are decided here; an iteration itself is
//! an attempt like any other (`attempt`), judged by the role's gates
//! (`judge`).
//!
//! The work every role so far has passed is the pipeline's *base*: a
//! commit kept under the passing attempt's ref, not on the branch. Each
//! iteration starts from it; a failed one goes back to it; a reviewer's or
//! qa's edits are undone to it. Only when the last role passes does the
//! base become the story's one checkpoint. A role that does not pass sends
//! the story back to the coder with its findings, and the pipeline goes on
//! at that role once the coder passes again. Every iteration counts against
//! its role's bound, and a role out of iterations stops the run, named.

use super::attempt::{Attempt, Turn};
use super::context::Run;
use super::error::RunError;
use super::judge::{Failure, Verdict};
use super::pipeline_state::{iteration_base, iterations};
use super::settle;
use crate::contract::Role;
use crate::events::Event;
use crate::state::{AttemptNote, AttemptOutcome, Ending, Findings, PipelineState, StopReason};
use crate::stories::Story;

/// The role whose iteration comes next at `story`, its pipeline begun
/// if it has none under way; `None` when the run has no roles (or the
/// story turned all of them off).
pub(super) fn turn(run: &mut Run, story: &Story) -> Result<Option<Turn>, RunError> {
    if run.settings.roles().is_empty() {
        return Ok(None);
    }
    let mut pipeline = run.settings.contract().pipeline_for(
        &story.id,
        run.settings.roles(),
        run.settings.role_agents(),
    )?;
    // Resuming with more retries gave every role more iterations.
    for rules in &mut pipeline {
        rules.max_iterations = rules
            .max_iterations
            .saturating_add(run.state.role_iterations_added());
    }
    let Some(first) = pipeline.first().cloned() else {
        return Ok(None);
    };
    let state = match &run.state.pipeline() {
        Some(state) if state.story == story.id => state.clone(),
        _ => PipelineState {
            story: story.id.clone(),
            role: first.role,
            resume_at: None,
            base: None,
            findings: None,
        },
    };
    // A role the story no longer has (its settings changed) gives way
    // to the first.
    let rules = pipeline
        .iter()
        .find(|rules| rules.role == state.role)
        .cloned()
        .unwrap_or(first);
    let iteration = iterations(run, &story.id, rules.role) + 1;
    let findings = state.findings.clone();
    run.state.pipeline_at(state);
    Ok(Some(Turn {
        rules,
        pipeline,
        iteration,
        findings,
    }))
}

/// The stop when the turn's role has used up its iterations.
pub(super) fn role_bound(story: &Story, turn: &Turn) -> Option<(StopReason, String)> {
    let max = turn.rules.max_iterations;
    (turn.iteration > max).then(|| {
        (
            StopReason::MaxRetries,
            format!(
                "the {} did not pass story {} within its {max} iteration{}",
                turn.role(),
                story.id,
                if max == 1 { "" } else { "s" }
            ),
        )
    })
}

/// Settle an iteration of `turn` by its verdict: the pipeline moves on,
/// sends the story back, or ends in the story's checkpoint. Returns how
/// the iteration ended.
pub(super) async fn settle_turn(
    run: &mut Run,
    attempt: &Attempt,
    turn: &Turn,
    verdict: Verdict,
) -> Result<AttemptOutcome, RunError> {
    match verdict {
        Verdict::Accepted { .. } | Verdict::KeptDespite(_) => match next_role(run, turn) {
            None => {
                run.state.pipeline_over();
                settle::accept(run, attempt, None).await?;
                Ok(AttemptOutcome::Complete)
            }
            Some(next) => {
                pass_on(run, attempt, turn, next).await?;
                Ok(AttemptOutcome::Passed)
            }
        },
        Verdict::Failed(failure) => {
            if turn.role().edits() {
                settle::reject(run, attempt, failure.clone()).await?;
            } else {
                let kept = edits_kept_at(run, attempt);
                settle::record_failure(run, attempt, failure.clone(), kept)?;
            }
            if failure.outcome != AttemptOutcome::Interrupted {
                send_back(run, attempt, turn, &failure)?;
            }
            Ok(failure.outcome)
        }
    }
}

/// The role after `turn`'s: where a story sent back resumes once the
/// coder passes, else the next in the pipeline; `None` after the last.
fn next_role(run: &Run, turn: &Turn) -> Option<Role> {
    let resume_at = run.state.pipeline().as_ref().and_then(|p| p.resume_at);
    if let Some(role) = resume_at.filter(|_| turn.role() == Role::Coder)
        && turn.pipeline.iter().any(|rules| rules.role == role)
    {
        return Some(role);
    }
    turn.pipeline
        .iter()
        .map(|rules| rules.role)
        .find(|role| *role > turn.role())
}

/// The role passed and the story goes on to `next`: a role whose work
/// is files has it kept under the attempt's ref as the pipeline's new
/// base.
async fn pass_on(run: &mut Run, at: &Attempt, turn: &Turn, next: Role) -> Result<(), RunError> {
    let (story, attempt) = (&at.story, at.number);
    let role = turn.role();
    let kept = if role.edits() {
        let refname = at.work_ref();
        let message = format!(
            "ralph({}): story {} ({}) passed by the {role}, attempt {attempt}\n\nThe work so far, before the {next} goes on.",
            run.settings.change(),
            story.id,
            story.title
        );
        let (name, base) = (refname.clone(), message);
        let commit = run
            .with_repo(move |repo| repo.preserve(&name, &base))
            .await
            .map_err(|err| RunError::git("keep the work that passed", err))?;
        Some((refname, commit))
    } else {
        None
    };
    run.state
        .role_passed(role, next, kept.as_ref().map(|(_, commit)| *commit));
    let ending = Ending {
        preserved: kept.map(|(refname, _)| refname),
        ..Ending::bare(AttemptOutcome::Passed)
    };
    let change = run.state.attempt_finished(&story.id, attempt, ending);
    run.commit(change)
}

/// The role did not pass: its findings go to the coder, and the
/// pipeline goes on at this role once the coder passes again. The
/// coder's own failure is retried as the coder.
fn send_back(run: &mut Run, at: &Attempt, turn: &Turn, failure: &Failure) -> Result<(), RunError> {
    let (story, attempt) = (&at.story, at.number);
    let role = turn.role();
    let coder = turn.pipeline.iter().any(|rules| rules.role == Role::Coder);
    // A role out of iterations stops the story where it stands: the
    // coder's work could never pass it.
    let spent = iterations(run, &story.id, role) >= turn.rules.max_iterations;
    if role == Role::Coder || !coder || spent {
        return Ok(());
    }
    let text = findings_text(failure);
    let change = run.state.sent_back(
        &story.id,
        Findings {
            role,
            attempt,
            text,
        },
    );
    run.commit(change)
}

/// A reviewer's or qa's edits, kept under the attempt's ref when it
/// made any (see [`undo_role_edits`]).
fn edits_kept_at(run: &Run, attempt: &Attempt) -> Option<String> {
    let refname = attempt.work_ref();
    run.attempt_record(attempt.id(), attempt.number)
        .is_some_and(|record| record.preserved.as_deref() == Some(refname.as_str()))
        .then_some(refname)
}

/// A role that only looks (reviewer, qa) changed files: they are kept
/// under the attempt's ref and undone, back to the pipeline's base,
/// before the role is judged.
pub(super) async fn undo_role_edits(run: &mut Run, at: &Attempt) -> Result<(), RunError> {
    let (story, attempt) = (&at.story, at.number);
    let Some(role) = at.role() else {
        return Ok(());
    };
    let base = iteration_base(run);
    let (old, new) = run
        .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(base))
        .await
        .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
    if old == new {
        return Ok(());
    }
    let paths: Vec<String> = run
        .with_repo(move |repo| repo.changed_files(old, new))
        .await
        .map_err(|err| RunError::git("list the role's edits", err))?
        .into_iter()
        .map(|file| file.path)
        .collect();
    let refname = at.work_ref();
    let message = format!(
        "ralph({}): what the {role} changed at story {} (attempt {attempt}), undone",
        run.settings.change(),
        story.id
    );
    settle::preserve_and_revert(run, refname.clone(), message, "keep the role's edits").await?;
    run.state
        .attempt_noted(&story.id, attempt, AttemptNote::Preserved(refname.clone()));
    run.emit(Event::RoleEditsUndone {
        story_id: story.id.clone(),
        attempt,
        role,
        paths,
        kept_at: refname,
    });
    Ok(())
}

/// What a role found, as the coder reads it: the reason, then each
/// failing check's output.
fn findings_text(failure: &Failure) -> String {
    let mut text = failure.reason.clone();
    for (name, tail) in &failure.checks {
        if tail.trim().is_empty() {
            continue;
        }
        text.push_str(&format!(
            "\n\n`{name}` printed:\n\n```\n{}\n```",
            tail.trim_end()
        ));
    }
    text
}
