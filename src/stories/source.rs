//! The one shape every format of stories takes for the run: a source that
//! reads its stories afresh on every call, says how an agent marks one
//! done, and keeps its tracking in step with the run's checkpoints.

use std::path::Path;

use super::{ContextFile, SourceKind, StoriesError, Story, StorySet, changes, checklist};

/// A format of stories, bound to one change in one worktree.
pub trait StorySource: Send + Sync {
    fn kind(&self) -> SourceKind;

    /// Reads the stories from disk; every call re-reads, so the result
    /// reflects what the agent has ticked so far.
    fn load(&self) -> Result<Vec<Story>, StoriesError>;

    /// Like [`load`](Self::load), with the warnings and unreadable lines.
    fn load_set(&self) -> Result<StorySet, StoriesError> {
        self.load().map(StorySet::from_stories)
    }

    /// The story to work on next: by default the first incomplete one in
    /// file order.
    fn next_story<'a>(&self, stories: &'a [Story]) -> Option<&'a Story> {
        stories.iter().find(|story| !story.is_complete())
    }

    /// The indices of the open stories in the order a run takes them, one
    /// after the other, each taken as done before the next is chosen. By
    /// default, [`next_story`](Self::next_story) asked again after each;
    /// a source whose order is a graph gives it in one pass.
    fn order_of_work(&self, stories: &[Story]) -> Vec<usize> {
        let mut run: Vec<Story> = stories.to_vec();
        let mut taken: Vec<usize> = Vec::new();
        let mut seen = vec![false; stories.len()];
        while let Some(next) = self.next_story(&run) {
            let Some(index) = run.iter().position(|story| story.id == next.id) else {
                break;
            };
            if std::mem::replace(&mut seen[index], true) {
                break;
            }
            taken.push(index);
            // Done, as far as choosing the next one goes.
            run[index].passes = Some(true);
            run[index].unreadable.clear();
        }
        taken
    }

    /// The repository-relative file the agent updates to record progress.
    fn tracking_file(&self) -> &Path;

    /// Background files for the agent, read fresh, capped in size.
    fn context_files(&self) -> Result<Vec<ContextFile>, StoriesError>;

    /// How the agent marks progress on `story`, as an imperative clause.
    fn done_instruction(&self, story: &Story) -> String;

    /// How many checkboxes [`load`](Self::load) skipped because they sit in
    /// code fences (see [`checklist`]); the OpenSpec CLI counts them, so a
    /// cross-check needs the number.
    fn fenced_checkboxes(&self) -> Result<usize, StoriesError> {
        Ok(0)
    }

    /// The tracking file's text after an attempt (`after`), with the ticks
    /// it made in a story it was not given put back as `before` had them;
    /// `None` when that cannot be done. A checklist's boxes are opened
    /// again line by line; every other byte stays as the attempt left it.
    fn reopen(
        &self,
        before: &str,
        after: &str,
        ticked: &changes::TickedElsewhere,
    ) -> Option<String> {
        let _ = before;
        Some(ticked.lines.iter().fold(after.to_owned(), |text, line| {
            checklist::untick(&text, *line)
        }))
    }
    /// `onto` (the tracking file as the run's branch has it, `story` read
    /// from it) with `story` marked as `from` (the file where the story
    /// was done in a worktree of its own) marks it; `None` when that
    /// cannot be done. A checklist story done is every box of it ticked.
    fn carry_marks(&self, from: &str, onto: &str, story: &Story) -> Option<String> {
        let _ = from;
        Some(
            story
                .tasks
                .iter()
                .filter(|task| !task.done)
                .fold(onto.to_owned(), |text, task| {
                    checklist::tick(&text, task.line)
                }),
        )
    }

    /// Whether `text`, the tracking file as another tree has it (where an
    /// agent worked after rewinding the run's branch), marks `story` done:
    /// `None` when the story is not in it, or when this source's tracking
    /// is no file of the worktree (a rewind cannot have touched it).
    fn marked_done_in(&self, text: &str, story: &Story) -> Option<bool> {
        let _ = (text, story);
        None
    }

    /// The run has begun: a source that keeps the run's own record of its
    /// stories (issues from a tracker) writes it now, so that a refused
    /// start writes nothing. Sources tracked in the worktree have nothing
    /// to write.
    fn begin(&self) -> Result<(), StoriesError> {
        Ok(())
    }

    /// An attempt's work became a checkpoint. Tracking kept outside the
    /// worktree is in no commit, so its source keeps a copy of it as of
    /// this checkpoint; tracking in the worktree is committed with it.
    fn checkpointed(&self) -> Result<(), StoriesError> {
        Ok(())
    }

    /// The worktree went back to the last checkpoint. Tracking kept outside
    /// it goes back to its copy of that checkpoint, so that the marks of a
    /// failed attempt do not outlive its work; git reverts tracking in the
    /// worktree.
    fn reverted(&self) -> Result<(), StoriesError> {
        Ok(())
    }

    /// Tracking kept outside the worktree as of the last checkpoint and as
    /// it is now, when the two differ: what an attempt did to it. `None`
    /// when they agree, and for tracking in the worktree, which git
    /// compares.
    fn tracking_change(&self) -> Result<Option<(String, String)>, StoriesError> {
        Ok(None)
    }
}
