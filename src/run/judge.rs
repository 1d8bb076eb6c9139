//! Judging a finished attempt. First one classification of how the agent
//! ended (stopped, timed out, failed, errored, silent, asking a question
//! instead of working, or claiming completion); then, for a claim, the
//! gates in order: the story is marked done in its own file, no protected
//! path was touched, something besides the boxes changed (only when the
//! contract or `--require-change` asks; otherwise a tick-only claim is
//! flagged, not refused), the verification method agrees, and every
//! objective check passes. The first gate that fails names the reason the
//! next prompt will carry.

use std::time::Duration;

use super::error::RunError;
use super::guardrails;
use super::story_loop::StoryLoop;
use super::ticks;
use crate::agent::{self, AgentRun, Conclusion, ExitStatusKind};
use crate::contract::{self, Method, StoryRules as Rules, Verdict, VerifyContext};
use crate::events::Event;
use crate::git::ObjectId;
use crate::state::{AttemptOutcome, Flag};
use crate::stories::{SourceKind, Story};

/// Tracking files larger than this are not compared for ticks.
const TRACKING_FILE_LIMIT: usize = 4 * 1024 * 1024;

/// Why an attempt did not complete.
pub(super) struct Failure {
    pub outcome: AttemptOutcome,
    pub reason: String,
    /// Failed checks as (name, output tail), for the next prompt.
    pub checks: Vec<(String, String)>,
}

impl Failure {
    fn new(outcome: AttemptOutcome, reason: impl Into<String>) -> Failure {
        Failure {
            outcome,
            reason: reason.into(),
            checks: Vec::new(),
        }
    }

    fn rejected(reason: impl Into<String>) -> Failure {
        Failure::new(AttemptOutcome::Rejected, reason)
    }
}

/// What the attempt changed: the checkpoint's tree and the worktree's, and
/// what an acceptance would be flagged for.
struct Changes {
    trees: (ObjectId, ObjectId),
    flag: Option<Flag>,
}

/// How the agent ended, before any gate is looked at.
enum Ending {
    /// It ended without the promise; whether that fails depends on the
    /// contract.
    Silent,
    /// It ended without the promise, asking a question nobody will answer;
    /// a silence with a name.
    Asked(String),
    /// It claimed completion (or the contract does not rely on a promise).
    Claimed,
    /// It ended in a way that is never a completion.
    Failed(Failure),
}

/// One classification of the agent's ending, for every mode.
fn classify(run: &AgentRun, timeout: Duration) -> Ending {
    let failed = |outcome, reason: String| Ending::Failed(Failure::new(outcome, reason));
    match (&run.exit, &run.conclusion) {
        (ExitStatusKind::Stopped, _) => {
            failed(AttemptOutcome::Interrupted, "stopped by the user".into())
        }
        (ExitStatusKind::TimedOut, _) => failed(
            AttemptOutcome::TimedOut,
            format!(
                "the agent ran past its time limit ({}s) and was stopped",
                timeout.as_secs()
            ),
        ),
        (_, Conclusion::Failed { reason }) => failed(AttemptOutcome::Failed, reason.clone()),
        (_, Conclusion::AgentError { message }) => failed(
            AttemptOutcome::AgentError,
            format!("the agent failed: {message}"),
        ),
        (_, Conclusion::NoSignal) => asked(run).map_or(Ending::Silent, Ending::Asked),
        (_, Conclusion::Complete) => Ending::Claimed,
    }
}

const NO_PROMISE: &str = "the agent ended without a promise";

/// The reason an attempt that asked instead of working failed.
pub(super) fn asked_reason(question: &str) -> String {
    format!("the agent asked instead of working: {question}")
}

/// Silence, named when it was a question.
fn no_signal(ending_question: Option<String>) -> Failure {
    match ending_question {
        Some(question) => Failure::new(AttemptOutcome::NoSignal, asked_reason(&question)),
        None => Failure::new(AttemptOutcome::NoSignal, NO_PROMISE),
    }
}

impl StoryLoop {
    /// Decide what the attempt amounted to, then checkpoint or preserve and
    /// revert.
    pub(super) async fn judge(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: AgentRun,
        timeout: Duration,
    ) -> Result<(), RunError> {
        crate::bug::trip("judge");
        let checkpoint = self.state.checkpoint;
        let (checkpoint_tree, worktree_tree) = self
            .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
            .await
            .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
        let progress = checkpoint_tree != worktree_tree;
        let flag = self.change_flag((checkpoint_tree, worktree_tree)).await?;
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.asked = asked(&run);
        }
        let failure = if self.settings.once {
            self.single_pass_verdict(story, &run, timeout).await
        } else {
            self.verdict(
                story,
                attempt,
                story_key,
                &run,
                timeout,
                Changes {
                    trees: (checkpoint_tree, worktree_tree),
                    flag,
                },
            )
            .await?
        };
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.progress = progress;
        }
        // Only a claim that is accepted as it stands earns a flag; work
        // kept despite a failure is already named by that failure.
        if let Some(flag) = flag.filter(|_| failure.is_none()) {
            if let Some(record) = self.attempt_record(&story.id, attempt) {
                record.flag = Some(flag);
            }
            self.emit(Event::Flag {
                story_id: story.id.clone(),
                attempt,
                flag,
            });
        }
        let interrupted = matches!(&failure, Some(f) if f.outcome == AttemptOutcome::Interrupted);
        self.state.no_progress_streak = guardrails::next_streak(
            self.state.no_progress_streak,
            progress,
            failure.is_none(),
            interrupted,
        );
        // A single pass intercepts nothing, and the classic loop builds on
        // each iteration's work unless asked to revert it: such work is kept
        // as a checkpoint under its own outcome.
        let keep_failed = self.settings.once
            || (self.source.kind() == SourceKind::Prompt && !self.settings.revert_failed);
        match failure {
            None => self.accept(story, attempt, None).await,
            Some(failure)
                if failure.outcome == AttemptOutcome::Interrupted && !self.settings.once =>
            {
                self.reject(story, attempt, story_key, failure).await
            }
            Some(failure) if keep_failed => self.accept(story, attempt, Some(failure)).await,
            Some(failure) => self.reject(story, attempt, story_key, failure).await,
        }
    }

    /// The contract's verdict on a finished attempt: `None` when accepted.
    async fn verdict(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: &AgentRun,
        timeout: Duration,
        Changes { trees, flag }: Changes,
    ) -> Result<Option<Failure>, RunError> {
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let promise_needed = rules.promise.is_some() && rules.verify.is_none();
        match classify(run, timeout) {
            Ending::Failed(failure) => return Ok(Some(failure)),
            Ending::Silent if promise_needed => return Ok(Some(no_signal(None))),
            Ending::Asked(question) if promise_needed => {
                return Ok(Some(no_signal(Some(question))));
            }
            Ending::Silent | Ending::Asked(_) | Ending::Claimed => {}
        }
        if let Some(failure) = self.unmarked(story).await {
            return Ok(Some(failure));
        }
        if let Some(failure) = self.protected_paths(&rules, trees).await? {
            return Ok(Some(failure));
        }
        if flag == Some(Flag::TickOnly)
            && rules.require_change.unwrap_or(self.settings.require_change)
        {
            return Ok(Some(Failure::rejected(format!(
                "{} in {}",
                Flag::TickOnly,
                self.tracking_file()
            ))));
        }
        if let Some(failure) = self
            .verification(story, attempt, story_key, run, &rules, trees)
            .await
        {
            return Ok(Some(failure));
        }
        Ok(self.checks(story, attempt, &rules).await)
    }

    /// `--once`: the plain flow. Nothing is intercepted; the verdict only
    /// names what happened.
    async fn single_pass_verdict(
        &mut self,
        story: &Story,
        run: &AgentRun,
        timeout: Duration,
    ) -> Option<Failure> {
        match classify(run, timeout) {
            Ending::Failed(failure) => Some(failure),
            Ending::Silent => Some(no_signal(None)),
            Ending::Asked(question) => Some(no_signal(Some(question))),
            Ending::Claimed => self.unmarked(story).await.map(|failure| Failure {
                outcome: AttemptOutcome::Failed,
                ..failure
            }),
        }
    }

    /// Gate 1: the story must be marked done in its own file.
    async fn unmarked(&self, story: &Story) -> Option<Failure> {
        if self.source.kind() == SourceKind::Prompt {
            return None;
        }
        match self.load_stories().await {
            Err(err) => Some(Failure::rejected(format!(
                "{} could not be read after the attempt: {err}",
                self.tracking_file()
            ))),
            Ok(stories) if !stories.iter().any(|s| s.id == story.id && s.is_complete()) => {
                Some(Failure::rejected(format!(
                    "story {} is not marked done in {}",
                    story.id,
                    self.tracking_file()
                )))
            }
            Ok(_) => None,
        }
    }

    /// What an accepted attempt would deserve a flag for: changing nothing
    /// at all, or nothing but the boxes (or `passes`) of the tracking file.
    async fn change_flag(
        &self,
        (old, new): (ObjectId, ObjectId),
    ) -> Result<Option<Flag>, RunError> {
        let kind = self.source.kind();
        let tracking = self
            .source
            .tracking_file()
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        self.with_repo(
            move |repo| -> Result<Option<Flag>, crate::git::GitFailure> {
                let changed = repo.changed_files(old, new)?;
                if changed.is_empty() {
                    return Ok(Some(Flag::NoChange));
                }
                let [file] = changed.as_slice() else {
                    return Ok(None);
                };
                if kind == SourceKind::Prompt || file.path != tracking {
                    return Ok(None);
                }
                let text = |id| repo.blob_text(id, TRACKING_FILE_LIMIT);
                let (Some(before), Some(after)) =
                    (file.old.and_then(text), file.new.and_then(text))
                else {
                    return Ok(None);
                };
                let only = if kind == SourceKind::Prd {
                    ticks::only_passes_changed(&before, &after)
                } else {
                    ticks::only_boxes_ticked(&before, &after)
                };
                Ok(only.then_some(Flag::TickOnly))
            },
        )
        .await
        .map_err(|err| RunError::git("compare the attempt's changes", err))
    }

    /// Gate 2: the contract itself, and the paths it protects, are off
    /// limits.
    async fn protected_paths(
        &self,
        rules: &Rules,
        (old, new): (ObjectId, ObjectId),
    ) -> Result<Option<Failure>, RunError> {
        let changed = self
            .with_repo(move |repo| repo.changed_files(old, new))
            .await
            .map_err(|err| RunError::git("list the attempt's changes", err))?;
        let paths: Vec<String> = changed.into_iter().map(|file| file.path).collect();
        Ok(self
            .settings
            .contract
            .violation(rules, &paths)
            .map(Failure::rejected))
    }

    /// Gate 3: the verification method (a promise, a verifier agent, a
    /// multi-stage pipeline).
    async fn verification(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: &AgentRun,
        rules: &Rules,
        (old, new): (ObjectId, ObjectId),
    ) -> Option<Failure> {
        let workdir = self.repo_lock().workdir().to_owned();
        let method = rules
            .verify
            .clone()
            .unwrap_or(Method::StringMatch { token: None });
        let diff = if uses_diff(&method) {
            self.with_repo(move |repo| contract::describe_changes(repo, old, new))
                .await
        } else {
            String::new()
        };
        let final_text = run
            .done
            .as_ref()
            .map(|d| d.final_text.clone())
            .unwrap_or_default();
        let ctx = VerifyContext {
            workdir: &workdir,
            token: rules.promise.as_deref(),
            final_text: &final_text,
            promised: run.conclusion == Conclusion::Complete,
            story,
            criteria: &rules.acceptance_criteria,
            outcome: rules.outcome.as_deref(),
            diff: &diff,
            command_timeout: self.settings.command_timeout,
            verifier_log: self
                .run_dir
                .dir
                .join("attempts")
                .join(format!("{story_key}-{attempt}.verify.jsonl")),
            stop: self.stop.clone(),
        };
        let verdict = contract::verify(&method, &ctx).await;
        let (Verdict::Pass { warnings } | Verdict::Fail { warnings, .. }) = &verdict;
        for warning in warnings.clone() {
            self.warn(warning);
        }
        match verdict {
            Verdict::Pass { .. } => None,
            Verdict::Fail {
                stage,
                reason,
                output_tail,
                ..
            } => Some(Failure {
                outcome: AttemptOutcome::Rejected,
                reason: format!("verification failed at {stage}: {reason}"),
                checks: output_tail
                    .map(|tail| vec![(stage, tail)])
                    .unwrap_or_default(),
            }),
        }
    }

    /// Gate 4: every objective check passes. All of them run, so the report
    /// names every failure at once.
    pub(super) async fn checks(
        &mut self,
        story: &Story,
        attempt: u32,
        rules: &Rules,
    ) -> Option<Failure> {
        let workdir = self.repo_lock().workdir().to_owned();
        let outcomes =
            contract::run_checks(&rules.checks, &workdir, self.settings.command_timeout).await;
        if !outcomes.is_empty() {
            let names = |passed: bool| {
                outcomes
                    .iter()
                    .filter(|o| o.passed == passed)
                    .map(|o| o.name.clone())
                    .collect()
            };
            let passed: Vec<String> = names(true);
            if let Some(record) = self.attempt_record(&story.id, attempt) {
                record.passed_checks = passed.clone();
            }
            self.emit(Event::Checks {
                story_id: story.id.clone(),
                attempt,
                passed,
                failed: names(false),
            });
        }
        let failed: Vec<_> = outcomes.into_iter().filter(|o| !o.passed).collect();
        if failed.is_empty() {
            return None;
        }
        let names: Vec<String> = failed
            .iter()
            .map(|o| format!("{} ({})", o.name, o.why.clone().unwrap_or_default()))
            .collect();
        Some(Failure {
            outcome: AttemptOutcome::Rejected,
            reason: format!("checks failed: {}", names.join(", ")),
            checks: failed
                .into_iter()
                .map(|o| (o.name, o.output_tail))
                .collect(),
        })
    }
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
