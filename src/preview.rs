//! What a run would read and send, without running anything.
//!
//! `git ralph start --dry-run` shows the stories git-ralph reads from a task
//! file, what it warns about, and the first prompt exactly as the agent
//! would receive it, so a user can check a new file before spending money.
//! The prompt is made by [`prompt::render`] from the same inputs the loop
//! gives it for a first attempt, so the preview cannot drift from the real
//! thing. This module reads files and nothing else: no branch, no state, no
//! terminal; the command layer prints the [`Preview`].

use std::path::Path;

use serde::Serialize;

use crate::prompt::{self, PromptError, PromptInput};
use crate::stories::{self, SourceKind, StoriesError, Story, StorySource, Warning};

/// The prompt template and promise token a run would use.
#[derive(Debug, Clone, Copy, Default)]
pub struct PreviewOptions<'a> {
    /// The project's template; [`prompt::DEFAULT_TEMPLATE`] when `None`.
    pub template: Option<&'a str>,
    /// The contract's promise token; the agent default when `None` (also
    /// what a run uses when string matching is off).
    pub promise_token: Option<&'a str>,
    /// The learnings file a new run would start with; `None` with
    /// `--no-learnings`.
    pub learnings: Option<&'a prompt::Learnings>,
    /// Whether a question for a person parks the story (not
    /// `--no-questions`).
    pub questions: bool,
}

/// Where a story stands before the run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoryStatus {
    Done,
    /// The story the first prompt is for.
    Next,
    Open,
    /// It holds a box-like line that cannot be read, so it cannot be done
    /// until that line is rewritten.
    Unreadable,
}

/// One story as the preview shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoryPreview {
    pub id: String,
    pub title: String,
    /// Number of tasks (checkboxes); 0 for prd.json stories.
    pub tasks: usize,
    /// Number of tasks ticked.
    pub done: usize,
    pub status: StoryStatus,
    /// Lines of the story file the story was read from (checklists).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(usize, usize)>,
    /// The tasks themselves, in file order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub task_list: Vec<TaskPreview>,
    /// The story's role pipeline, in a run with roles.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pipeline: Vec<RolePreview>,
}

/// One role of a story's pipeline, with its resolved settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RolePreview {
    pub role: crate::contract::Role,
    /// The preset or command that plays it, or `the run's agent`.
    pub agent: String,
    pub promise: String,
    pub max_iterations: u32,
    /// What decides that it passed, in words.
    pub verification: String,
}

/// One task (checkbox) of a story.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskPreview {
    pub text: String,
    pub done: bool,
}

/// What a run would read and send. Serialises as one JSON object:
/// `{"source", "tracking_file", "stories": [{"id", "title", "tasks",
/// "done", "status", "lines"}], "warnings": [{"line", "kind", "message"}],
/// "all_done", "prompt"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    pub source: SourceKind,
    /// Repository-relative, with `/` separators.
    pub tracking_file: String,
    /// In the order the run takes them (see `run_order`): the file's
    /// order for a checklist, priorities and dependencies for prd.json and
    /// issues.
    pub stories: Vec<StoryPreview>,
    pub warnings: Vec<Warning>,
    /// Every story is done and no unreadable box is left: no agent would
    /// start.
    pub all_done: bool,
    /// The first prompt, exactly as the agent would receive it; `None` when
    /// there is no story to work on.
    pub prompt: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error(transparent)]
    Stories(#[from] StoriesError),
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

impl PreviewError {
    pub fn hint(&self) -> Option<String> {
        match self {
            PreviewError::Stories(error) => error.hint(),
            PreviewError::Prompt(error) => error.hint(),
        }
    }
}

/// Picks the story source the way `start` does ([`stories::detect`]) and
/// previews it. `change` is the change name given to `start`; `prd` and
/// `tasks` are the `--prd` and `--tasks` files, relative to `workdir` or
/// absolute inside it.
pub fn preview(
    workdir: &Path,
    change: &str,
    explicit: Option<SourceKind>,
    prd: Option<&Path>,
    tasks: Option<&Path>,
    options: PreviewOptions<'_>,
) -> Result<Preview, PreviewError> {
    let source = stories::detect(workdir, change, explicit, prd, tasks)?;
    preview_source(source.as_ref(), change, options)
}

/// Previews an already chosen source.
pub fn preview_source(
    source: &dyn StorySource,
    change: &str,
    options: PreviewOptions<'_>,
) -> Result<Preview, PreviewError> {
    let set = source.load_set()?;
    let next = source.next_story(&set.stories);
    let prompt = match next {
        Some(story) => Some(first_prompt(source, change, &set.stories, story, options)?),
        None => None,
    };
    let stories = run_order(source, &set.stories)
        .into_iter()
        .map(|index| &set.stories[index])
        .map(|story| {
            let (done, tasks) = story.task_counts();
            let status = if next.is_some_and(|next| next.id == story.id) {
                StoryStatus::Next
            } else if !story.unreadable.is_empty() {
                StoryStatus::Unreadable
            } else if story.is_complete() {
                StoryStatus::Done
            } else {
                StoryStatus::Open
            };
            StoryPreview {
                id: story.id.clone(),
                title: story.title.clone(),
                tasks,
                done,
                status,
                lines: story
                    .section
                    .as_ref()
                    .map(|section| (section.first_line, section.last_line)),
                task_list: story
                    .tasks
                    .iter()
                    .map(|task| TaskPreview {
                        text: task.text.clone(),
                        done: task.done,
                    })
                    .collect(),
                pipeline: Vec::new(),
            }
        })
        .collect();
    Ok(Preview {
        source: source.kind(),
        tracking_file: stories::slash_path(source.tracking_file()),
        stories,
        all_done: set.all_done(),
        warnings: set.warnings,
        prompt,
    })
}

/// The indices of `stories` in the order a run takes them: the open ones
/// as the source picks them one after the other (priorities and
/// dependencies honoured), each story already done just before the first
/// of those that follows it in the file. For a checklist, whose stories
/// are worked in file order, this is the file's order.
fn run_order(source: &dyn StorySource, stories: &[Story]) -> Vec<usize> {
    let taken = source.order_of_work(stories);
    let mut is_taken = vec![false; stories.len()];
    for index in &taken {
        is_taken[*index] = true;
    }
    let mut placed = vec![false; stories.len()];
    let mut order = Vec::with_capacity(stories.len());
    let mut done = (0..stories.len()).filter(|i| stories[*i].is_complete() && !is_taken[*i]);
    let mut pending = done.next();
    for index in taken.iter().copied() {
        while let Some(earlier) = pending.filter(|earlier| *earlier < index) {
            order.push(earlier);
            pending = done.next();
        }
        order.push(index);
    }
    order.extend(pending);
    order.extend(done);
    for index in &order {
        placed[*index] = true;
    }
    // Stories the run would never reach, in file order.
    order.extend((0..stories.len()).filter(|i| !placed[*i]));
    order
}

/// The prompt of a first attempt at `story`, built as the loop builds it.
fn first_prompt(
    source: &dyn StorySource,
    change: &str,
    stories: &[Story],
    story: &Story,
    options: PreviewOptions<'_>,
) -> Result<String, PreviewError> {
    let context_files = source.context_files()?;
    let index = stories.iter().position(|s| s.id == story.id).unwrap_or(0) + 1;
    let input = PromptInput {
        change,
        story,
        story_index: index,
        story_total: stories.len(),
        attempt: 1,
        source,
        context_files: &context_files,
        retry: None,
        promise_token: options.promise_token.unwrap_or(crate::agent::DEFAULT_TOKEN),
        learnings: options.learnings,
        role: None,
        questions: options.questions,
        answers: &[],
    };
    let template = options.template.unwrap_or(prompt::DEFAULT_TEMPLATE);
    Ok(prompt::render(template, &input)?)
}

#[cfg(test)]
mod tests;
