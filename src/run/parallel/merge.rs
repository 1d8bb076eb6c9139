//! A story done in a worktree of its own is not done until its work is on
//! the run's branch and the story's checks pass there. Here one story's
//! work is merged onto the branch's tip in the run's worktree: the code by
//! a three-way merge, the tracking file by setting the story's own marks
//! on the branch's copy. A conflict, or a check that fails on the merged
//! tree, leaves the branch where it was and the merged state kept under a
//! ref; the story then runs again on top of the branch, told why.

use super::super::error::RunError;
use super::super::settle;
use super::super::story_loop::StoryLoop;
use crate::contract;
use crate::git::{ObjectId, StoryMerge};
use crate::state::WorkerRecord;
use crate::stories::{Story, slash_path};

/// What came of merging a story's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Merged {
    /// On the branch, its checks passing: the story is done.
    Done { checkpoint: ObjectId },
    /// Not merged: why, for the story's next prompt, and where its work is.
    Refused {
        reason: String,
        kept: Option<String>,
    },
}

impl StoryLoop {
    /// Merge the work of `worker`'s story, which ended at `tip`, onto the
    /// run's branch.
    pub(super) async fn merge_story(
        &mut self,
        worker: &WorkerRecord,
        tip: ObjectId,
        merged_since: &[super::MergedStory],
    ) -> Result<Merged, RunError> {
        let (base, ours, story_id) = (worker.base, self.state.checkpoint, worker.story.clone());
        let tracking = slash_path(self.source.tracking_file());
        let keep = tracking.clone();
        let outcome = self
            .with_repo(move |repo| repo.merge_work(base, ours, tip, &keep))
            .await
            .map_err(|err| RunError::git(format!("merge story {story_id}"), err))?;
        let tree = match outcome {
            StoryMerge::Clean { tree } => tree,
            StoryMerge::Conflicted { paths } => {
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
                return Ok(Merged::Refused {
                    reason: format!(
                        "its work conflicts with {since}, merged while it ran, in {}; do the story again on top of that work",
                        paths.join(", ")
                    ),
                    kept: None,
                });
            }
        };
        let message = self.merged_message(tip).await?;
        let staged_message = message.clone();
        self.with_repo(move |repo| -> Result<(), crate::git::OpError> {
            let staged = repo.commit_detached(&staged_message, tree, ours)?;
            repo.revert_to(staged)?;
            Ok(())
        })
        .await
        .map_err(|err| RunError::git("bring the merged work into the run's worktree", err))?;
        let story = settle::carry_marks(self, &worker.story, tip, &tracking).await?;
        let failed = self.checks_on_merged(&story).await;
        if !failed.is_empty() {
            let kept = self.set_merge_aside(&worker.story).await?;
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
        let (change, strays) = (
            self.settings.change.clone(),
            self.settings.refs().strays(crate::events::now_ms()),
        );
        let (moved, checkpoint) = self
            .with_repo(move |repo| -> Result<_, crate::git::OpError> {
                // A story's agent may move the branch meanwhile: the merge
                // goes onto the tip it was made on, and only while the
                // branch still points there.
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
            .map_err(|err| RunError::git("commit the merged story", err))?;
        if let Some(found) = moved {
            self.warn(format!(
                "while story {} was merged, {}; the merge went onto the branch's last checkpoint",
                worker.story,
                super::super::settle::found_words(&found)
            ));
        }
        self.state.checkpoint = checkpoint.commit;
        self.save()?;
        Ok(Merged::Done {
            checkpoint: checkpoint.commit,
        })
    }

    /// The story's commit message, as the run's own.
    async fn merged_message(&self, tip: ObjectId) -> Result<String, RunError> {
        let message = self
            .with_repo(move |repo| repo.commit_message(tip))
            .await
            .map_err(|err| RunError::git("read the story's commit", err))?;
        let change = self.settings.change.to_string();
        Ok(match message.split_once("): ") {
            Some((head, rest)) if head.starts_with("ralph(") => format!("ralph({change}): {rest}"),
            _ => message,
        })
    }

    /// The names of the story's checks that fail on the merged tree.
    async fn checks_on_merged(&mut self, story: &Story) -> Vec<String> {
        let rules = self
            .settings
            .contract
            .rules_for(&story.id, &story.acceptance_criteria);
        let workdir = self.repo_lock().workdir().to_owned();
        contract::run_checks(&rules.checks, &workdir, self.settings.command_timeout)
            .await
            .into_iter()
            .filter(|outcome| !outcome.passed)
            .map(|outcome| outcome.name)
            .collect()
    }

    /// Keep the merged state that failed its checks, and put the run's
    /// worktree back at the branch's tip.
    async fn set_merge_aside(&mut self, story: &str) -> Result<String, RunError> {
        let refname = self.settings.refs().merge(story, crate::events::now_ms());
        let message = format!(
            "ralph({}): story {story} merged, its checks failing",
            self.settings.change
        );
        let kept = refname.clone();
        self.with_repo(move |repo| -> Result<(), crate::git::OpError> {
            repo.preserve(&kept, &message)?;
            repo.revert()?;
            Ok(())
        })
        .await
        .map_err(|err| RunError::git("set the failed merge aside", err))?;
        Ok(refname)
    }
}
