//! Judging an attempt inside the loop: its evidence gathered in stages,
//! weighed by the pure [`judge`], and the verdict recorded and settled into
//! git. The cheap facts come first (how the agent ended, what changed, the
//! story's mark in its file); verification and the checks run only when
//! the judge asks for them, which it does once every gate before them has
//! passed. Whatever gathering shows on the way (a verifier's warnings, the
//! checks that ran) is reported as it happens.

use super::context::Run;
use super::pipeline;
use super::pipeline_state;
use super::settle;
use std::time::Duration;

use super::attempt::Attempt;
use super::attempt::Ran;
use super::attempt::Turn;
use super::error::RunError;
use super::guardrails;
use super::judge::{
    AgentEnding, Changes, Evidence, Judgement, Marked, Need, Rules, Verdict, judge,
};
use super::mode::{Marks, Standard};
use super::runtime::blocking;
use super::ticks;
use crate::agent::{self, AgentRun, Conclusion};
use crate::contract::{self, Method, Role, StoryRules, VerifyContext};
use crate::events::{AddedTask, Event, TickedStory};
use crate::git::{ChangedFile, GitFailure, ObjectId, Repo};
use crate::state::{AttemptNote, AttemptOutcome, Flag};
use crate::stories::changes::{self, ListChanges};
use crate::stories::{SourceKind, Story};

/// Where the judge gathers evidence: the attempt and what it is weighed
/// against.
struct Gathering<'a> {
    attempt: &'a Attempt,
    run: &'a AgentRun,
    rules: &'a Rules,
    trees: (ObjectId, ObjectId),
}

/// Tracking files larger than this are not compared for ticks.
const TRACKING_FILE_LIMIT: usize = 4 * 1024 * 1024;

/// Decide what the attempt amounted to, then checkpoint or preserve and
/// revert. `before` is the list as it stood when the attempt began.
pub(super) async fn judge_attempt(
    run: &mut Run,
    attempt: &Attempt,
    before: &[Story],
    ran: Ran,
) -> Result<AttemptOutcome, RunError> {
    crate::bug::trip("judge");
    let Ran {
        run: agent_run,
        git_dir,
        submodules,
        timeout,
        ..
    } = ran;
    let story = &attempt.story;
    if attempt.role().is_some_and(|role| !role.edits()) {
        pipeline::undo_role_edits(run, attempt).await?;
    }
    let base = pipeline_state::iteration_base(run);
    let (trees, scan) = run
        .with_repo(move |repo| {
            let trees = repo.checkpoint_tree_and_fingerprint(base);
            (trees, repo.last_scan())
        })
        .await;
    let trees = trees.map_err(|err| RunError::git("read the worktree after the attempt", err))?;
    run.state
        .attempt_noted(attempt.id(), attempt.number, AttemptNote::Scanned(scan));
    let rules = rules(run, story, attempt.turn.as_ref());
    let (mut evidence, tracking_before) =
        evidence(run, story, before, &agent_run, timeout, &rules, trees).await?;
    evidence.changes.git_dir = git_dir;
    let submodules_changed = !submodules.is_empty();
    evidence.changes.submodules = submodules;
    let asked = AttemptNote::Asked(evidence.agent.question.clone());
    run.state.attempt_noted(attempt.id(), attempt.number, asked);
    let gathering = Gathering {
        attempt,
        run: &agent_run,
        rules: &rules,
        trees,
    };
    let verdict = weigh(run, gathering, &mut evidence).await;
    record_verdict(
        run,
        attempt,
        trees.0 != trees.1 || submodules_changed,
        &verdict,
    );
    settle_list(
        run,
        attempt,
        &evidence.changes.list,
        &verdict,
        tracking_before,
    )
    .await?;
    let outcome = match &verdict {
        Verdict::Accepted { .. } => AttemptOutcome::Complete,
        Verdict::KeptDespite(failure) | Verdict::Failed(failure) => failure.outcome,
    };
    match (&attempt.turn, verdict) {
        (Some(turn), verdict) => return pipeline::settle_turn(run, attempt, turn, verdict).await,
        (None, Verdict::Accepted { .. }) => settle::accept(run, attempt, None).await?,
        (None, Verdict::KeptDespite(failure)) => {
            settle::accept(run, attempt, Some(failure)).await?
        }
        (None, Verdict::Failed(failure)) if failure.outcome == AttemptOutcome::Question => {
            super::questions::park(run, attempt, failure).await?
        }
        (None, Verdict::Failed(failure)) => settle::reject(run, attempt, failure).await?,
    }
    Ok(outcome)
}

/// Ask the judge until it has a verdict, gathering what it needs on
/// the way: verification, then the checks.
async fn weigh(run: &mut Run, at: Gathering<'_>, evidence: &mut Evidence) -> Verdict {
    loop {
        match judge(evidence, at.rules) {
            Judgement::Verdict(verdict) => return verdict,
            Judgement::Needs(Need::Verification) => {
                let verification =
                    verification(run, at.attempt, at.run, &at.rules.story, at.trees).await;
                evidence.verification = Some(verification);
            }
            Judgement::Needs(Need::Checks) => {
                let checks = super::checks::run_checks(
                    run,
                    &at.attempt.story,
                    at.attempt.number,
                    &at.rules.story,
                )
                .await;
                evidence.checks = Some(checks);
            }
        }
    }
}

/// What the attempt did to the task list beyond its own story, told
/// and recorded; ticks in other stories are put back in the file when
/// its work is kept (a failed attempt's go with its revert).
async fn settle_list(
    run: &mut Run,
    attempt: &Attempt,
    list: &ListChanges,
    verdict: &Verdict,
    tracking_before: Option<String>,
) -> Result<(), RunError> {
    let (story, attempt) = (&attempt.story, attempt.number);
    let kept = !matches!(verdict, Verdict::Failed(_));
    if !list.ticked_elsewhere.is_empty() {
        if kept {
            reopen_elsewhere(run, list, tracking_before.as_deref().unwrap_or_default()).await?;
        }
        let stories = list.ticked_elsewhere.iter().map(|t| t.story.clone());
        let note = AttemptNote::TickedOutside(stories.collect());
        run.state.attempt_noted(&story.id, attempt, note);
        run.emit(Event::TicksOutsideStory {
            story_id: story.id.clone(),
            attempt,
            stories: list
                .ticked_elsewhere
                .iter()
                .map(|ticked| TickedStory {
                    id: ticked.story.clone(),
                    boxes: ticked.boxes,
                })
                .collect(),
        });
    }
    if kept && !list.added_tasks.is_empty() {
        let tasks = list.added_tasks.iter();
        let tasks = tasks.map(|task| format!("{}: {}", task.story, task.text));
        let note = AttemptNote::AddedTasks(tasks.collect());
        run.state.attempt_noted(&story.id, attempt, note);
        run.emit(Event::TasksAdded {
            story_id: story.id.clone(),
            attempt,
            tasks: list
                .added_tasks
                .iter()
                .map(|task| AddedTask {
                    story: task.story.clone(),
                    text: task.text.clone(),
                })
                .collect(),
        });
    }
    Ok(())
}

/// Open again, in the tracking file, what the attempt ticked in stories
/// it was not given; `before` is the file's text at the checkpoint.
async fn reopen_elsewhere(run: &Run, list: &ListChanges, before: &str) -> Result<(), RunError> {
    let path = run.repo_lock().workdir().join(run.source.tracking_file());
    let after = std::fs::read_to_string(&path)
        .map_err(|err| RunError::io(format!("read {}", path.display()), err))?;
    let mut text = after.clone();
    for ticked in &list.ticked_elsewhere {
        match run.source.reopen(before, &text, ticked) {
            Some(reopened) => text = reopened,
            None => {
                return Err(RunError::io(
                    format!("put back the ticks of story {}", ticked.story),
                    std::io::Error::other("the tracking file could not be edited"),
                ));
            }
        }
    }
    if text != after {
        crate::state::write_atomically(&path, text.as_bytes())
            .map_err(|err| RunError::io(format!("write {}", path.display()), err))?;
    }
    Ok(())
}

/// What the story's attempt is weighed against: the story's contract,
/// and in a role pipeline the role's promise and verification. A role
/// whose verification has nothing to run falls back to the contract's
/// (its checks, or the promise alone); one that has its own is judged
/// by it, the coder by the contract's checks as well.
fn rules(run: &Run, story: &Story, turn: Option<&Turn>) -> Rules {
    let mut story_rules = run
        .settings
        .contract()
        .rules_for(&story.id, &story.acceptance_criteria);
    if let Some(turn) = turn {
        story_rules.promise = Some(turn.rules.promise.clone());
        if let Some(method) = &turn.rules.verification {
            story_rules.verify = Some(method.clone());
            if turn.role() != Role::Coder {
                story_rules.checks.clear();
            }
        }
    }
    Rules {
        story: story_rules,
        require_change: run.settings.require_change(),
        standard: match turn {
            Some(turn) => Standard::Role(turn.role()),
            None => run.settings.policy().standard,
        },
    }
}

/// The cheap evidence: how the agent ended, what the attempt changed
/// (in the worktree and in the task list), and the story's mark in its
/// file; with the tracking file's text before the attempt when the
/// attempt changed it.
async fn evidence(
    run: &Run,
    story: &Story,
    before: &[Story],
    agent_run: &AgentRun,
    timeout: Duration,
    rules: &Rules,
    trees: (ObjectId, ObjectId),
) -> Result<(Evidence, Option<String>), RunError> {
    let (paths, flag, tracking_before) = changes(run, trees).await?;
    let (marked, list) = read_list(run, story, before).await;
    let evidence = Evidence {
        story_id: story.id.clone(),
        agent: AgentEnding {
            exit: agent_run.exit,
            conclusion: agent_run.conclusion.clone(),
            question: asked(agent_run),
            other_promise: agent_run.done.as_ref().and_then(|done| {
                let token = rules.story.promise.as_deref();
                agent::other_promise(&done.final_text, token.unwrap_or(agent::DEFAULT_TOKEN))
            }),
            timeout,
            idle: run.settings.idle_timeout(),
        },
        tracking_file: run.tracking_file(),
        marked,
        changes: Changes {
            flag,
            violation: run.settings.contract().violation(&rules.story, &paths),
            list,
            ..Changes::default()
        },
        verification: None,
        checks: None,
    };
    Ok((evidence, tracking_before))
}

/// The verdict into the attempt's record, the events and the
/// no-progress streak.
fn record_verdict(run: &mut Run, attempt: &Attempt, progress: bool, verdict: &Verdict) {
    let (story, attempt) = (&attempt.story, attempt.number);
    run.state
        .attempt_noted(&story.id, attempt, AttemptNote::Progress(progress));
    // Only a claim that is accepted as it stands earns a flag; work
    // kept despite a failure is already named by that failure. In a
    // pipeline, only the coder's claim is about the story's work.
    let coding = pipeline_state::attempt_role(run, &story.id, attempt)
        .is_none_or(|role| role == Role::Coder);
    if let Verdict::Accepted { flag: Some(flag) } = *verdict
        && coding
    {
        run.state
            .attempt_noted(&story.id, attempt, AttemptNote::Flagged(flag));
        run.emit(Event::Flag {
            story_id: story.id.clone(),
            attempt,
            flag,
        });
    }
    // A stop, or a question for a person, says nothing of progress.
    let interrupted = verdict.failure().is_some_and(|failure| {
        matches!(
            failure.outcome,
            AttemptOutcome::Interrupted | AttemptOutcome::Question
        )
    });
    let streak = guardrails::next_streak(
        run.state.no_progress_streak(),
        progress,
        matches!(verdict, Verdict::Accepted { .. }),
        interrupted,
    );
    run.state.streak_now(streak);
}

/// The list after the attempt: whether it marks the story done, and
/// what else the attempt did to it.
async fn read_list(run: &Run, story: &Story, before: &[Story]) -> (Marked, ListChanges) {
    if run.settings.policy().marks == Marks::Contract {
        return (Marked::Untracked, ListChanges::default());
    }
    match run.load_stories().await {
        Err(err) => (Marked::Unreadable(err.to_string()), ListChanges::default()),
        Ok(after) => {
            let done = after.iter().any(|s| s.id == story.id && s.is_complete());
            let marked = if done { Marked::Done } else { Marked::NotDone };
            (marked, changes::compare(before, &after, &story.id))
        }
    }
}

/// Every path the attempt changed, what an acceptance would be flagged
/// for, and the tracking file's text before the attempt if it changed.
async fn changes(
    run: &Run,
    (old, new): (ObjectId, ObjectId),
) -> Result<(Vec<String>, Option<Flag>, Option<String>), RunError> {
    let (kind, marks) = (run.source.kind(), run.settings.policy().marks);
    let tracking = run
        .source
        .tracking_file()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    let (paths, flag, tracking_before) = run
        .with_repo(move |repo| -> Result<_, GitFailure> {
            let changed = repo.changed_files(old, new)?;
            let flag = change_flag(repo, (kind, marks), &tracking, &changed);
            let tracking_before = changed
                .iter()
                .find(|file| file.path == tracking)
                .and_then(|file| file.old)
                .and_then(|id| repo.blob_text(id, TRACKING_FILE_LIMIT));
            let paths = changed.into_iter().map(|file| file.path).collect();
            Ok((paths, flag, tracking_before))
        })
        .await
        .map_err(|err| RunError::git("compare the attempt's changes", err))?;
    // Tracking kept outside the worktree is compared by its source.
    let source = run.source.clone();
    let outside = blocking(move || source.tracking_change())
        .await
        .map_err(RunError::from)?;
    let Some((before, _)) = outside else {
        return Ok((paths, flag, tracking_before));
    };
    // Nothing changed in the worktree but the tracking: a tick and no
    // more.
    let flag = match flag {
        Some(Flag::NoChange) => Some(Flag::TickOnly),
        flag => flag,
    };
    Ok((paths, flag, Some(before)))
}

/// The verification method's verdict (a promise, a verifier agent, a
/// multi-stage pipeline); its warnings are reported at once.
async fn verification(
    run: &mut Run,
    attempt: &Attempt,
    agent_run: &AgentRun,
    rules: &StoryRules,
    (old, new): (ObjectId, ObjectId),
) -> contract::Verdict {
    let workdir = run.repo_lock().workdir().to_owned();
    let method = rules
        .verify
        .clone()
        .unwrap_or(Method::StringMatch { token: None });
    let diff = if uses_diff(&method) {
        run.with_repo(move |repo| contract::describe_changes(repo, old, new))
            .await
    } else {
        String::new()
    };
    let final_text = agent_run
        .done
        .as_ref()
        .map(|d| d.final_text.clone())
        .unwrap_or_default();
    let ctx = VerifyContext {
        workdir: &workdir,
        token: rules.promise.as_deref(),
        final_text: &final_text,
        promised: agent_run.conclusion == Conclusion::Complete,
        story: &attempt.story,
        criteria: &rules.acceptance_criteria,
        outcome: rules.outcome.as_deref(),
        diff: &diff,
        command_timeout: run.settings.command_timeout(),
        verifier_log: attempt.verifier_log.clone(),
        stop: run.stop.clone(),
    };
    let verdict = contract::verify(&method, &ctx).await;
    let (contract::Verdict::Pass { warnings } | contract::Verdict::Fail { warnings, .. }) =
        &verdict;
    for warning in warnings.clone() {
        run.warn(warning);
    }
    verdict
}

/// An attempt that changed nothing at all, or nothing but the boxes (or
/// `passes`) of the tracking file, `tracking` as a repository path.
fn change_flag(
    repo: &Repo,
    (kind, marks): (SourceKind, Marks),
    tracking: &str,
    changed: &[ChangedFile],
) -> Option<Flag> {
    let [file] = changed else {
        return changed.is_empty().then_some(Flag::NoChange);
    };
    if marks == Marks::Contract || file.path != tracking {
        return None;
    }
    let text = |id| repo.blob_text(id, TRACKING_FILE_LIMIT);
    let (before, after) = (file.old.and_then(text)?, file.new.and_then(text)?);
    let only = if kind == SourceKind::Prd {
        ticks::only_passes_changed(&before, &after)
    } else {
        ticks::only_boxes_ticked(&before, &after)
    };
    only.then_some(Flag::TickOnly)
}

/// The question the agent ended with instead of a promise, if any.
fn asked(run: &AgentRun) -> Option<String> {
    if run.conclusion != Conclusion::NoSignal {
        return None;
    }
    agent::trailing_question(&run.done.as_ref()?.final_text)
}

/// Does verifying with `method` need the attempt's diff?
fn uses_diff(method: &Method) -> bool {
    match method {
        Method::Semantic { .. } => true,
        Method::MultiStage { stages, .. } => stages.iter().any(|stage| uses_diff(&stage.method)),
        _ => false,
    }
}
