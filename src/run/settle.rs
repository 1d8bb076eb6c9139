//! Settling an attempt's work into git, so that nothing is ever lost: an
//! accepted attempt becomes a checkpoint commit with its receipt; a failed one is preserved
//! under its attempt ref before the worktree goes back to the last
//! checkpoint. On resume, whatever a killed loop left in the worktree is
//! preserved the same way, and HEAD is brought back onto the run's branch
//! if an agent moved it.

use super::attempt::safe_component;
use super::blocking;
use super::error::RunError;
use super::judge::Failure;
use super::story_loop::StoryLoop;
use crate::events::{Event, now_ms};
use crate::state::{AttemptOutcome, now};
use crate::stories::Story;

impl StoryLoop {
    /// Checkpoint the story.
    pub(super) async fn accept(
        &mut self,
        story: &Story,
        attempt: u32,
        suffix: &str,
    ) -> Result<(), RunError> {
        let subject = format!(
            "ralph({}): story {} {}{suffix}",
            self.settings.change, story.id, story.title
        );
        let receipt = self.receipt(&story.id, attempt);
        let message = format!("{subject}\n\n{receipt}");
        let checkpoint = self
            .with_repo(move |repo| repo.checkpoint(&message))
            .await
            .map_err(|err| RunError::git(format!("checkpoint story {}", story.id), err))?;
        self.state.checkpoint = checkpoint.commit;
        let commit = checkpoint.commit.to_string();
        self.keep_receipt(&commit, &subject, &receipt);
        self.finish_attempt(
            &story.id,
            attempt,
            AttemptOutcome::Complete,
            None,
            None,
            Some(commit.clone()),
        );
        self.state.last_failure = None;
        self.save()?;
        self.emit(Event::AttemptFinished {
            story_id: story.id.clone(),
            attempt,
            outcome: AttemptOutcome::Complete,
            reason: None,
            preserved: None,
            checkpoint: Some(commit),
        });
        Ok(())
    }

    /// Preserve the attempt under its ref and go back to the checkpoint.
    pub(super) async fn reject(
        &mut self,
        story: &Story,
        attempt: u32,
        story_key: &str,
        failure: Failure,
    ) -> Result<(), RunError> {
        let preserved = format!(
            "{}/attempts/{story_key}/{attempt}",
            self.settings.change.ref_namespace()
        );
        let message = format!(
            "ralph({}): attempt {attempt} at story {} ({})\n\n{}",
            self.settings.change, story.id, story.title, failure.reason
        );
        self.preserve_and_revert(preserved.clone(), message, "preserve the attempt")
            .await?;
        self.finish_attempt(
            &story.id,
            attempt,
            failure.outcome,
            Some(failure.reason.clone()),
            Some(preserved.clone()),
            None,
        );
        if let Some(record) = self.attempt_record(&story.id, attempt) {
            record.failed_checks = failure.checks;
        }
        self.state.last_failure = Some(failure.reason.clone());
        self.save()?;
        self.emit(Event::AttemptFinished {
            story_id: story.id.clone(),
            attempt,
            outcome: failure.outcome,
            reason: Some(failure.reason),
            preserved: Some(preserved),
            checkpoint: None,
        });
        Ok(())
    }

    /// Commit the worktree under `refname`, then revert to the checkpoint.
    async fn preserve_and_revert(
        &self,
        refname: String,
        message: String,
        what: &'static str,
    ) -> Result<(), RunError> {
        self.with_repo(move |repo| -> Result<(), RunError> {
            repo.preserve(&refname, &message)
                .map_err(|err| RunError::git(what, err))?;
            repo.revert()
                .map_err(|err| RunError::git("revert to the last checkpoint", err))?;
            Ok(())
        })
        .await
    }

    /// After a killed loop: the attempt that was running is preserved as
    /// interrupted and the worktree goes back to the last checkpoint.
    pub(super) async fn recover(&mut self) -> Result<(), RunError> {
        // An agent whose loop was killed may still be writing: end it first.
        let pid_file = self.run_dir.agent_pid_file();
        if blocking(move || crate::process::end_orphaned_group(&pid_file)).await {
            self.warn("stopped the agent the previous loop left running".into());
        }
        self.guard_head("on resume").await?;
        let running = self.state.stories.iter().find_map(|story| {
            story
                .attempts
                .iter()
                .find(|a| a.outcome == AttemptOutcome::Running)
                .map(|a| (story.id.clone(), a.attempt))
        });
        let (checkpoint_tree, worktree_tree) = {
            let checkpoint = self.state.checkpoint;
            self.with_repo(move |repo| repo.checkpoint_tree_and_fingerprint(checkpoint))
                .await
                .map_err(|err| RunError::git("read the worktree on resume", err))?
        };
        let dirty = checkpoint_tree != worktree_tree;
        let refname = match &running {
            Some((story, attempt)) => format!(
                "{}/attempts/{}/{attempt}",
                self.settings.change.ref_namespace(),
                safe_component(story)
            ),
            None => format!(
                "{}/interrupted/{}",
                self.settings.change.ref_namespace(),
                now()
            ),
        };
        if dirty {
            let message = format!(
                "ralph({}): work left by an interrupted loop",
                self.settings.change
            );
            self.preserve_and_revert(refname.clone(), message, "preserve the interrupted work")
                .await?;
            self.warn(format!(
                "the previous loop stopped mid-attempt; its work is kept at {refname} and the worktree is back at the last checkpoint"
            ));
        }
        if let Some((story, attempt)) = running {
            let preserved = dirty.then(|| refname.clone());
            self.finish_attempt(
                &story,
                attempt,
                AttemptOutcome::Interrupted,
                Some("the loop was stopped during this attempt".into()),
                preserved,
                None,
            );
        }
        Ok(())
    }

    /// HEAD must be on the run's branch at the last checkpoint. If the agent
    /// committed or switched branches, bring the work back; never lose it.
    pub(super) async fn guard_head(&mut self, when: &str) -> Result<Option<String>, RunError> {
        let change = self.settings.change.clone();
        let checkpoint = self.state.checkpoint;
        let keep = format!("{}/strays/{}", change.ref_namespace(), now_ms());
        let found = self
            .with_repo(move |repo| repo.reattach(&change, checkpoint, &keep))
            .await
            .map_err(|err| RunError::git(format!("check HEAD {when}"), err))?;
        Ok(found.map(|found| match found.kept_at {
            Some(kept) => format!(
                "HEAD was found at {} (its commits are kept at {kept})",
                found.found
            ),
            None => format!("HEAD was found at {}", found.found),
        }))
    }
}
