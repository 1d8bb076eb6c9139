//! Settling an attempt's work into git, so that nothing is ever lost: an
//! accepted attempt becomes a checkpoint commit with its receipt; a failed one is preserved
//! under its attempt ref before the worktree goes back to the last
//! checkpoint. On resume, whatever a killed loop left in the worktree is
//! preserved the same way, and HEAD is brought back onto the run's branch
//! if an agent moved it. Tracking the story source keeps outside the
//! worktree (the run's record of a tracker's issues) follows each
//! checkpoint and each revert, as the worktree does.

use super::receipts;
use super::tracker;

use super::blocking;
use super::error::RunError;
use super::judge::{self, Failure};
use super::story_loop::StoryLoop;
use crate::events::{Event, now_ms};
use crate::git::Carried;
use crate::state::{AttemptOutcome, now};
use crate::stories::Story;

impl StoryLoop {
    /// Checkpoint the story. `kept` is a failed attempt whose work is
    /// kept all the same (a single pass, or a prompt-mode iteration): it is
    /// recorded with its own outcome, and so is its event.
    pub(super) async fn accept(
        &mut self,
        story: &Story,
        attempt: u32,
        kept: Option<Failure>,
    ) -> Result<(), RunError> {
        let suffix = match &kept {
            None => String::new(),
            Some(_) if self.settings.once => " (single pass)".to_owned(),
            Some(failure) => format!(
                " (iteration {attempt}, kept: {})",
                failure.outcome.describe()
            ),
        };
        let subject = format!(
            "ralph({}): story {} {}{suffix}",
            self.settings.change, story.id, story.title
        );
        let receipt = receipts::receipt(self, &story.id, attempt).await;
        let message = format!("{subject}\n\n{receipt}");
        let checkpoint = self
            .with_repo(move |repo| repo.checkpoint(&message))
            .await
            .map_err(|err| RunError::git(format!("checkpoint story {}", story.id), err))?;
        self.state.checkpoint = checkpoint.commit;
        self.tracking_checkpointed().await?;
        let commit = checkpoint.commit.to_string();
        receipts::keep_receipt(self, &commit, &subject, &receipt);
        let finished = kept.is_none();
        let (outcome, reason, checks) = match kept {
            None => (AttemptOutcome::Complete, None, Vec::new()),
            Some(failure) => (failure.outcome, Some(failure.reason), failure.checks),
        };
        self.finish_attempt(
            &story.id,
            attempt,
            outcome,
            reason.clone(),
            None,
            Some(commit.clone()),
        );
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.failed_checks = checks;
        }
        self.state.last_failure = reason.clone();
        // The record says what the branch now holds before anyone is
        // told: the story's marks as checkpointed, and no story at work.
        let stories = self.load_stories().await?;
        self.sync_stories(&stories);
        if finished {
            self.state.current_story = None;
            self.state.current_attempt = 0;
            // A prompt has no file to mark it done: the contract met is.
            if self.source.kind() == crate::stories::SourceKind::Prompt {
                let record = self.story_record(&story.id);
                record.done = true;
                record.tasks_done = record.tasks_total;
            }
        }
        self.save()?;
        let role = self.attempt_role(&story.id, attempt);
        self.emit(Event::AttemptFinished {
            story_id: story.id.clone(),
            attempt,
            outcome,
            reason,
            preserved: None,
            checkpoint: Some(commit.clone()),
            role,
        });
        if finished {
            tracker::tell_tracker(self, story, attempt, &commit).await;
        }
        Ok(())
    }

    /// The source's tracking outside the worktree follows the checkpoint.
    async fn tracking_checkpointed(&self) -> Result<(), RunError> {
        let source = self.source.clone();
        Ok(blocking(move || source.checkpointed()).await?)
    }

    /// The source's tracking outside the worktree follows a revert.
    pub(super) async fn tracking_reverted(&self) -> Result<(), RunError> {
        let source = self.source.clone();
        Ok(blocking(move || source.reverted()).await?)
    }

    /// Preserve the attempt under its ref and go back to the checkpoint.
    pub(super) async fn reject(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        failure: Failure,
    ) -> Result<(), RunError> {
        let preserved = self.settings.refs().attempt(story_key, attempt);
        let message = format!(
            "ralph({}): attempt {attempt} at story {} ({})\n\n{}",
            self.settings.change, story.id, story.title, failure.reason
        );
        self.preserve_and_revert(preserved.clone(), message, "preserve the attempt")
            .await?;
        self.record_failure(story, attempt, failure, Some(preserved))
    }

    /// A failed attempt into its record, the state and the events; its
    /// work, if any, is kept at `preserved`.
    pub(super) fn record_failure(
        &mut self,
        story: &Story,
        attempt: u32,
        failure: Failure,
        preserved: Option<String>,
    ) -> Result<(), RunError> {
        self.finish_attempt(
            &story.id,
            attempt,
            failure.outcome,
            Some(failure.reason.clone()),
            preserved.clone(),
            None,
        );
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.failed_checks = failure.checks;
        }
        self.state.last_failure = Some(failure.reason.clone());
        self.save()?;
        let role = self.attempt_role(&story.id, attempt);
        self.emit(Event::AttemptFinished {
            story_id: story.id.clone(),
            attempt,
            outcome: failure.outcome,
            reason: Some(failure.reason),
            preserved,
            checkpoint: None,
            role,
        });
        Ok(())
    }

    /// Commit the worktree under `refname`, then revert to the last
    /// checkpoint, or to the work a story's pipeline has passed so far.
    pub(super) async fn preserve_and_revert(
        &self,
        refname: String,
        message: String,
        what: &'static str,
    ) -> Result<(), RunError> {
        let base = self.pipeline_base();
        self.with_repo(move |repo| -> Result<(), RunError> {
            repo.preserve(&refname, &message)
                .map_err(|err| RunError::git(what, err))?;
            match base {
                Some(base) => repo.revert_to(base),
                None => repo.revert(),
            }
            .map_err(|err| RunError::git("revert to the last checkpoint", err))?;
            Ok(())
        })
        .await?;
        self.tracking_reverted().await
    }

    /// On resume. An attempt the state records as running was cut off (a
    /// killed loop, a force-quit): its work is preserved and the worktree
    /// goes back to the last checkpoint. Otherwise the run stopped cleanly,
    /// and whatever is in the worktree now is the user's: it is committed
    /// as a checkpoint of its own, never reverted.
    pub(super) async fn recover(&mut self) -> Result<(), RunError> {
        self.end_orphaned_agent().await;
        self.put_back_kept_refs().await?;
        let running = self.running_attempt();
        if running.is_none() {
            // Commits the user made on the branch while stopped are theirs
            // too: HEAD is taken as it is.
            self.adopt_user_commits().await?;
        }
        self.guard_head("on resume").await?;
        let dirty = self.worktree_dirty("read the worktree on resume").await?;
        let stopped_cleanly = running.is_none();
        match running {
            Some((story, attempt)) => {
                self.set_aside_attempt(
                    &story,
                    attempt,
                    dirty,
                    "the loop was stopped during this attempt",
                )
                .await?;
                if dirty {
                    let message = format!(
                        "the previous loop stopped during attempt {attempt} at story {story}; its work is kept at {} and the worktree is back at the last checkpoint",
                        self.attempt_ref(&story, attempt)
                    );
                    self.warn(message);
                }
            }
            // In a pipeline, the story's uncommitted work is the base: what
            // the user changed beyond it joins it.
            None if dirty && self.pipeline_base().is_some() => {
                self.keep_changes_in_pipeline().await?;
            }
            None if dirty => self.commit_user_changes().await?,
            None => {}
        }
        if stopped_cleanly {
            self.adopt_tracking().await?;
        }
        Ok(())
    }

    /// The run stopped cleanly, so what its tracking outside the worktree
    /// says now is the user's, as the worktree is: it is kept.
    async fn adopt_tracking(&mut self) -> Result<(), RunError> {
        let source = self.source.clone();
        let changed = blocking(move || source.tracking_change()).await?;
        if changed.is_some() {
            let message = format!(
                "{} was changed while the run was stopped; its marks are kept",
                self.tracking_file()
            );
            self.warn(message);
        }
        self.tracking_checkpointed().await
    }

    /// After a bug in git-ralph cut the loop short: as after a clean stop,
    /// the attempt under way is preserved and the worktree reverted, and
    /// anything else beyond the checkpoint is set aside too, since nothing
    /// says whose it is.
    pub(super) async fn set_aside_after_bug(&mut self) -> Result<(), RunError> {
        self.end_orphaned_agent().await;
        self.guard_head("after a bug").await?;
        let dirty = self.worktree_dirty("read the worktree after a bug").await?;
        match self.running_attempt() {
            Some((story, attempt)) => {
                self.set_aside_attempt(
                    &story,
                    attempt,
                    dirty,
                    "git-ralph hit a bug during this attempt",
                )
                .await
            }
            None if dirty => {
                let base = self.settings.refs().interrupted(now_ms());
                let refname = self
                    .with_repo(move |repo| repo.unused_ref(&base))
                    .await
                    .map_err(|err| RunError::git("name a ref", err))?;
                let message = format!(
                    "ralph({}): work set aside after a bug in git-ralph",
                    self.settings.change
                );
                self.preserve_and_revert(refname, message, "set the work aside")
                    .await
            }
            None => Ok(()),
        }
    }

    /// The user's branches, tags and stash an agent moved before its loop
    /// was killed go back where they were.
    pub(super) async fn put_back_kept_refs(&mut self) -> Result<(), RunError> {
        let (change, run_dir) = (self.settings.change.clone(), self.run_dir.clone());
        let restored = self
            .with_repo(move |repo| super::kept_refs::put_back(repo, &change, &run_dir))
            .await
            .map_err(|err| RunError::git("put back what an agent moved", err))?;
        for moved in restored {
            self.warn(format!(
                "before the loop stopped, the agent {}",
                super::kept_refs::words(&moved)
            ));
        }
        Ok(())
    }

    /// An agent a killed loop left running may still be writing: end it.
    async fn end_orphaned_agent(&mut self) {
        let pid_file = self.run_dir.agent_pid_file();
        if blocking(move || crate::process::end_orphaned_group(&pid_file)).await {
            self.warn("stopped the agent the previous loop left running".into());
        }
    }

    /// The attempt the state records as running, if any.
    fn running_attempt(&self) -> Option<(String, u32)> {
        self.state.stories.iter().find_map(|story| {
            story
                .attempts
                .iter()
                .find(|a| a.outcome == AttemptOutcome::Running)
                .map(|a| (story.id.clone(), a.attempt))
        })
    }

    fn attempt_ref(&self, story: &str, attempt: u32) -> String {
        self.settings.refs().attempt(story, attempt)
    }

    /// Whether the worktree holds anything beyond the last checkpoint (or
    /// a pipeline's work so far).
    async fn worktree_dirty(&self, what: &'static str) -> Result<bool, RunError> {
        let checkpoint = self.iteration_base();
        let (checkpoint_tree, worktree_tree) = self
            .with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
            .await
            .map_err(|err| RunError::git(what, err))?;
        Ok(checkpoint_tree != worktree_tree)
    }

    /// An attempt cut off: its work (if any) under its ref, the worktree
    /// back at the checkpoint, the attempt recorded as interrupted.
    async fn set_aside_attempt(
        &mut self,
        story: &str,
        attempt: u32,
        dirty: bool,
        why: &str,
    ) -> Result<(), RunError> {
        let refname = self.attempt_ref(story, attempt);
        if dirty {
            let message = format!(
                "ralph({}): work left by an interrupted loop",
                self.settings.change
            );
            self.preserve_and_revert(refname.clone(), message, "preserve the interrupted work")
                .await?;
        } else {
            self.tracking_reverted().await?;
        }
        self.finish_attempt(
            story,
            attempt,
            AttemptOutcome::Interrupted,
            Some(why.into()),
            dirty.then_some(refname),
            None,
        );
        Ok(())
    }

    /// The run's branch moved past the checkpoint while the run was
    /// stopped, by the user's own commits: they become the checkpoint.
    async fn adopt_user_commits(&mut self) -> Result<(), RunError> {
        let change = self.settings.change.clone();
        let checkpoint = self.state.checkpoint;
        let adopted = self
            .with_repo(move |repo| repo.descendant_tip(&change, checkpoint))
            .await
            .map_err(|err| RunError::git("read the run's branch on resume", err))?;
        if let Some(tip) = adopted {
            self.state.checkpoint = tip;
            self.save()?;
            let message = format!(
                "{} has commits made while the run was stopped; they are kept, and the run goes on from {}",
                self.state.branch,
                tip.to_hex_with_len(10)
            );
            self.warn(message);
        }
        Ok(())
    }

    /// Commit what the user changed while the run was stopped, and judge
    /// any story they marked done like any other: its checks must pass.
    async fn commit_user_changes(&mut self) -> Result<(), RunError> {
        let before: Vec<(String, bool)> = self
            .state
            .stories
            .iter()
            .map(|story| (story.id.clone(), story.done))
            .collect();
        let message = format!(
            "ralph({}): user changes while stopped",
            self.settings.change
        );
        let checkpoint = self
            .with_repo(move |repo| repo.checkpoint(&message))
            .await
            .map_err(|err| RunError::git("commit the changes made while stopped", err))?;
        self.state.checkpoint = checkpoint.commit;
        let commit = checkpoint.commit.to_string();
        self.save()?;
        let message = format!(
            "the changes made while the run was stopped are committed on {} as {}",
            self.state.branch,
            checkpoint.commit.to_hex_with_len(10)
        );
        self.warn(message);
        let stories = self.load_stories().await?;
        let ticked: Vec<_> = stories
            .iter()
            .filter(|story| {
                story.is_complete() && before.iter().any(|(id, done)| *id == story.id && !*done)
            })
            .cloned()
            .collect();
        for story in ticked {
            let attempt = self.story_record(&story.id).attempts.len() as u32 + 1;
            let rules = self
                .settings
                .contract
                .rules_for(&story.id, &story.acceptance_criteria);
            let outcomes = self.run_checks(&story, attempt, &rules).await;
            if let Some(failure) = judge::failed_checks(&outcomes) {
                return Err(RunError::UserChangesRejected {
                    story: story.id.clone(),
                    reason: failure.reason,
                });
            }
            self.story_record(&story.id)
                .attempts
                .push(crate::state::AttemptRecord {
                    reason: Some("marked done by the user while the run was stopped".into()),
                    checkpoint: Some(commit.clone()),
                    ..crate::state::AttemptRecord::new(attempt, AttemptOutcome::Complete, now())
                });
            self.save()?;
        }
        Ok(())
    }

    /// HEAD must be on the run's branch at the last checkpoint. If the agent
    /// committed or switched branches, bring the work back; never lose it.
    /// Returns where HEAD was found, if not there.
    pub(super) async fn guard_head(
        &mut self,
        when: &str,
    ) -> Result<Option<crate::git::Reattached>, RunError> {
        let change = self.settings.change.clone();
        let strays = self.settings.refs().strays(now_ms());
        let checkpoint = self.state.checkpoint;
        self.with_repo(move |repo| {
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
        &mut self,
        found: crate::git::ObjectId,
        story: &str,
    ) -> Result<String, RunError> {
        let onto = self.state.checkpoint;
        let tracking = crate::stories::slash_path(self.source.tracking_file());
        let keep = tracking.clone();
        let carried = self
            .with_repo(move |repo| repo.carry_work_onto(found, onto, &keep))
            .await
            .map_err(|err| RunError::git("carry the attempt's work onto the checkpoint", err))?;
        Ok(match carried {
            Carried::NotNeeded => format!("its work was brought back onto {}", self.state.branch),
            Carried::Onto { work } => {
                self.carry_marks(story, work, &tracking).await?;
                format!(
                    "what it did there was carried onto the last checkpoint of {}, whose work stays",
                    self.state.branch
                )
            }
            Carried::Conflicted { paths, .. } => format!(
                "what it did there does not merge onto the last checkpoint of {} (in {}), so the attempt is judged as it stands",
                self.state.branch,
                paths.join(", ")
            ),
        })
    }
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
