//! Judging an attempt inside the loop: its evidence gathered in stages,
//! weighed by the pure [`judge`], and the verdict recorded and settled into
//! git. The cheap facts come first (how the agent ended, what changed, the
//! story's mark in its file); verification and the checks run only when
//! the judge asks for them, which it does once every gate before them has
//! passed. Whatever gathering shows on the way (a verifier's warnings, the
//! checks that ran) is reported as it happens.

use std::time::Duration;

use super::blocking;
use super::error::RunError;
use super::guardrails;
use super::judge::{
    AgentEnding, Changes, Evidence, Judgement, Marked, Need, Rules, Verdict, judge,
};
use super::story_loop::StoryLoop;
use super::ticks;
use crate::agent::{self, AgentRun, Conclusion};
use crate::contract::{self, CheckOutcome, Method, StoryRules, VerifyContext};
use crate::events::Event;
use crate::git::{ChangedFile, GitFailure, ObjectId, Repo};
use crate::state::{AttemptOutcome, Flag};
use crate::stories::{SourceKind, Story};

/// Tracking files larger than this are not compared for ticks.
const TRACKING_FILE_LIMIT: usize = 4 * 1024 * 1024;

impl StoryLoop {
    /// Decide what the attempt amounted to, then checkpoint or preserve and
    /// revert.
    pub(super) async fn judge_attempt(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: AgentRun,
        timeout: Duration,
    ) -> Result<(), RunError> {
        crate::bug::trip("judge");
        let checkpoint = self.state.checkpoint;
        let trees = self
            .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
            .await
            .map_err(|err| RunError::git("read the worktree after the attempt", err))?;
        let rules = self.rules(story);
        let mut evidence = self.evidence(story, &run, timeout, &rules, trees).await?;
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.asked = evidence.agent.question.clone();
        }
        let verdict = loop {
            match judge(&evidence, &rules) {
                Judgement::Verdict(verdict) => break verdict,
                Judgement::Needs(Need::Verification) => {
                    let verification = self
                        .verification(story, attempt, story_key, &run, &rules.story, trees)
                        .await;
                    evidence.verification = Some(verification);
                }
                Judgement::Needs(Need::Checks) => {
                    evidence.checks = Some(self.run_checks(story, attempt, &rules.story).await);
                }
            }
        };
        self.record_verdict(story, attempt, trees.0 != trees.1, &verdict);
        match verdict {
            Verdict::Accepted { .. } => self.accept(story, attempt, None).await,
            Verdict::KeptDespite(failure) => self.accept(story, attempt, Some(failure)).await,
            Verdict::Failed(failure) => self.reject(story, attempt, story_key, failure).await,
        }
    }

    /// What the story's attempt is weighed against.
    fn rules(&self, story: &Story) -> Rules {
        Rules {
            story: self
                .settings
                .contract
                .rules_for(&story.id, &story.acceptance_criteria),
            require_change: self.settings.require_change,
            once: self.settings.once,
            keep_failed: self.source.kind() == SourceKind::Prompt && !self.settings.revert_failed,
        }
    }

    /// The cheap evidence: how the agent ended, what the attempt changed,
    /// and the story's mark in its file.
    async fn evidence(
        &self,
        story: &Story,
        run: &AgentRun,
        timeout: Duration,
        rules: &Rules,
        trees: (ObjectId, ObjectId),
    ) -> Result<Evidence, RunError> {
        let (paths, flag) = self.changes(trees).await?;
        Ok(Evidence {
            story_id: story.id.clone(),
            agent: AgentEnding {
                exit: run.exit,
                conclusion: run.conclusion.clone(),
                question: asked(run),
                timeout,
            },
            tracking_file: self.tracking_file(),
            marked: self.marked(story).await,
            changes: Changes {
                flag,
                violation: self.settings.contract.violation(&rules.story, &paths),
            },
            verification: None,
            checks: None,
        })
    }

    /// The verdict into the attempt's record, the events and the
    /// no-progress streak.
    fn record_verdict(&mut self, story: &Story, attempt: u32, progress: bool, verdict: &Verdict) {
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.progress = progress;
        }
        // Only a claim that is accepted as it stands earns a flag; work
        // kept despite a failure is already named by that failure.
        if let Verdict::Accepted { flag: Some(flag) } = *verdict {
            if let Some(record) = self.attempt_record(&story.id, attempt) {
                record.flag = Some(flag);
            }
            self.emit(Event::Flag {
                story_id: story.id.clone(),
                attempt,
                flag,
            });
        }
        let interrupted = verdict
            .failure()
            .is_some_and(|failure| failure.outcome == AttemptOutcome::Interrupted);
        self.state.no_progress_streak = guardrails::next_streak(
            self.state.no_progress_streak,
            progress,
            matches!(verdict, Verdict::Accepted { .. }),
            interrupted,
        );
    }

    /// Whether the story's own file marks it done after the attempt.
    async fn marked(&self, story: &Story) -> Marked {
        if self.source.kind() == SourceKind::Prompt {
            return Marked::Untracked;
        }
        match self.load_stories().await {
            Err(err) => Marked::Unreadable(err.to_string()),
            Ok(stories) if stories.iter().any(|s| s.id == story.id && s.is_complete()) => {
                Marked::Done
            }
            Ok(_) => Marked::NotDone,
        }
    }

    /// Every path the attempt changed, and what an acceptance would be
    /// flagged for.
    async fn changes(
        &self,
        (old, new): (ObjectId, ObjectId),
    ) -> Result<(Vec<String>, Option<Flag>), RunError> {
        let kind = self.source.kind();
        let tracking = self
            .source
            .tracking_file()
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let (paths, flag) = self
            .with_repo(move |repo| -> Result<_, GitFailure> {
                let changed = repo.changed_files(old, new)?;
                let flag = change_flag(repo, kind, &tracking, &changed);
                let paths = changed.into_iter().map(|file| file.path).collect();
                Ok((paths, flag))
            })
            .await
            .map_err(|err| RunError::git("compare the attempt's changes", err))?;
        if flag != Some(Flag::NoChange) {
            return Ok((paths, flag));
        }
        // Nothing changed in the worktree; tracking kept outside it may
        // still have been ticked, which is a tick and no more.
        let source = self.source.clone();
        let ticked = blocking(move || source.tracking_change())
            .await
            .map_err(RunError::from)?
            .is_some();
        Ok((
            paths,
            Some(if ticked {
                Flag::TickOnly
            } else {
                Flag::NoChange
            }),
        ))
    }

    /// The verification method's verdict (a promise, a verifier agent, a
    /// multi-stage pipeline); its warnings are reported at once.
    async fn verification(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        run: &AgentRun,
        rules: &StoryRules,
        (old, new): (ObjectId, ObjectId),
    ) -> contract::Verdict {
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
        let (contract::Verdict::Pass { warnings } | contract::Verdict::Fail { warnings, .. }) =
            &verdict;
        for warning in warnings.clone() {
            self.warn(warning);
        }
        verdict
    }

    /// Every objective check, run on the worktree; all of them run, so the
    /// report names every failure at once. Which passed goes into the
    /// attempt's record and an event.
    pub(super) async fn run_checks(
        &mut self,
        story: &Story,
        attempt: u32,
        rules: &StoryRules,
    ) -> Vec<CheckOutcome> {
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
        outcomes
    }
}

/// An attempt that changed nothing at all, or nothing but the boxes (or
/// `passes`) of the tracking file, `tracking` as a repository path.
fn change_flag(
    repo: &Repo,
    kind: SourceKind,
    tracking: &str,
    changed: &[ChangedFile],
) -> Option<Flag> {
    let [file] = changed else {
        return changed.is_empty().then_some(Flag::NoChange);
    };
    if kind == SourceKind::Prompt || file.path != tracking {
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
