//! The prompt of one attempt: the story's (or, in a role pipeline, the
//! role's) template filled with the story, the learnings so far, why the
//! last attempt failed, and what a later role found. Prompt mode sends the
//! user's own prompt with the same notes.

use super::attempt::Turn;
use super::context::Run;
use super::error::RunError;
use super::pipeline_state;
use super::runtime::blocking;
use crate::agent;
use crate::prompt::{self, Learnings, PromptInput, RetryContext};
use crate::state::{AttemptOutcome, learnings};
use crate::stories::Story;

/// Where an attempt stands among the stories and the story's attempts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    /// 1-based position of the story.
    pub index: usize,
    pub total: usize,
    /// 1-based number of the attempt at the story.
    pub attempt: u32,
}

/// The prompt for this attempt: the classic prompt in prompt mode, the
/// story's own otherwise, with why the last attempt failed.
pub(super) async fn render_prompt(
    run: &Run,
    story: &Story,
    place: Place,
    token: Option<&str>,
    turn: Option<&Turn>,
) -> Result<String, RunError> {
    let retry = retry_context(run, &story.id, turn.map(Turn::role));
    let answers = super::asked::exchange(&run.state, &story.id);
    let learnings = learnings(run).await?;
    if let Some(text) = run.settings.classic_prompt() {
        let text = match &learnings {
            Some(learnings) => format!(
                "{}\n\n{}",
                text.trim_end(),
                prompt::learnings_section(learnings)
            ),
            None => text.to_owned(),
        };
        return Ok(prompt::render_classic(
            &text,
            retry.as_ref(),
            &answers,
            token,
        ));
    }
    let context_files = {
        let source = run.source.clone();
        blocking(move || source.context_files()).await?
    };
    let template = template_for(run, turn)?;
    let work = match turn {
        Some(turn) if turn.role() != crate::contract::Role::Coder => Some(work_so_far(run).await),
        _ => None,
    };
    Ok(prompt::render(
        &template,
        &PromptInput {
            change: run.settings.change_shown().as_str(),
            story,
            story_index: place.index,
            story_total: place.total,
            attempt: place.attempt,
            source: run.source.as_ref(),
            context_files: &context_files,
            retry,
            promise_token: token.unwrap_or(agent::DEFAULT_TOKEN),
            learnings: learnings.as_ref(),
            role: turn.map(|turn| prompt::RolePrompt {
                role: turn.role(),
                description: turn.rules.description.as_deref(),
                iteration: turn.iteration,
                max_iterations: turn.rules.max_iterations,
                findings: turn.findings.as_ref(),
                work: work.as_deref(),
            }),
            questions: run.settings.questions(),
            answers: &answers,
        },
    )?)
}

/// The template of an attempt: the role's own file when ralph.toml
/// gives one, the built-in prompt of a role that does not code, or the
/// story's prompt.
fn template_for(run: &Run, turn: Option<&Turn>) -> Result<String, RunError> {
    let Some(turn) = turn else {
        return Ok(run.settings.template().to_owned());
    };
    if let Some(file) = &turn.rules.prompt {
        let path = run.repo_lock().workdir().join(file);
        let text =
            std::fs::read_to_string(&path).map_err(|source| RunError::Template { path, source })?;
        prompt::validate(&text)?;
        return Ok(text);
    }
    Ok(prompt::role_template(turn.role())
        .map_or_else(|| run.settings.template().to_owned(), str::to_owned))
}

/// The story's change so far (the pipeline's base against the last
/// checkpoint), file by file, for the roles that review it.
async fn work_so_far(run: &Run) -> String {
    let (checkpoint, base) = (run.state.checkpoint(), pipeline_state::iteration_base(run));
    run.with_repo(move |repo| -> String {
        // The two commits' trees: the worktree is not read.
        let trees = repo
            .commit_tree(checkpoint)
            .ok()
            .zip(repo.commit_tree(base).ok());
        match trees {
            Some((old, new)) => crate::contract::describe_changes(repo, old, new),
            None => "(the work could not be read; see `git diff HEAD`)".to_owned(),
        }
    })
    .await
}

/// The learnings file as the prompt shows it, created empty so the
/// agent can append to it; `None` with `--no-learnings`.
async fn learnings(run: &Run) -> Result<Option<Learnings>, RunError> {
    if !run.settings.learnings() {
        return Ok(None);
    }
    let path = run.run_dir.learnings_path();
    let read = path.clone();
    let text = blocking(move || -> std::io::Result<String> {
        learnings::create(&read)?;
        std::fs::read_to_string(&read)
    })
    .await
    .map_err(|err| RunError::io(format!("read {}", path.display()), err))?;
    Ok(Some(Learnings {
        path: path.to_string_lossy().into_owned(),
        excerpt: learnings::excerpt(&text, learnings::CAP),
    }))
}

/// Why the story's last real attempt failed, for the next prompt.
/// Stops and usage limits say nothing about the work.
fn retry_context(
    run: &Run,
    story: &str,
    role: Option<crate::contract::Role>,
) -> Option<RetryContext> {
    let record = run.state.stories().iter().find(|s| s.id == story)?;
    // A usage limit says nothing about the work; a stop cut the last
    // attempt short, so there is no reason to quote for it. In a
    // pipeline, only the role's own last iteration counts: what other
    // roles found comes as findings.
    let last = record
        .attempts
        .iter()
        .rev()
        .filter(|a| a.role == role)
        .find(|a| a.outcome != AttemptOutcome::RateLimited)?;
    match last.outcome {
        // A question and its answer come in a section of their own.
        AttemptOutcome::Interrupted | AttemptOutcome::Question => None,
        _ if !last.failed_checks.is_empty() => {
            Some(RetryContext::ChecksFailed(last.failed_checks.clone()))
        }
        AttemptOutcome::Failed => last.reason.clone().map(RetryContext::FailedReason),
        AttemptOutcome::Rejected => last.reason.clone().map(RetryContext::Rejected),
        AttemptOutcome::TimedOut => Some(RetryContext::TimedOut),
        AttemptOutcome::NoSignal if last.asked.is_some() => {
            last.asked.clone().map(|question| RetryContext::Asked {
                question,
                learnings: run
                    .settings
                    .learnings()
                    .then(|| run.run_dir.learnings_path().to_string_lossy().into_owned()),
            })
        }
        // An attempt that ended without a promise, or in an error of
        // the agent's, is not accepted either: the next one hears why.
        AttemptOutcome::NoSignal | AttemptOutcome::AgentError => {
            last.reason.clone().map(RetryContext::Rejected)
        }
        _ => None,
    }
}
