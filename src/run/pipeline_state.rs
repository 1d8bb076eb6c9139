//! Where a story stands in its role pipeline, as the record holds it:
//! the role of an attempt, the iterations a role spent, the work passed so
//! far (the pipeline's base) and what an iteration starts from. The steps
//! that prompt, judge and settle an attempt read it here; moving a story
//! through its roles is [`super::pipeline`]'s.

use super::context::Run;
use super::error::RunError;
use crate::contract::Role;
use crate::events::now_ms;
use crate::git::ObjectId;

/// The iterations `role` spent on `story`: stops and usage limits do
/// not count.
pub(super) fn iterations(run: &Run, story: &str, role: Role) -> u32 {
    run.state
        .stories()
        .iter()
        .find(|record| record.id == story)
        .map_or(0, |record| record.iterations(role))
}

/// The work the current story's pipeline has passed so far, if any.
pub(super) fn pipeline_base(run: &Run) -> Option<ObjectId> {
    run.state.pipeline().as_ref().and_then(|state| state.base)
}

/// What an iteration starts from: the pipeline's base, or the last
/// checkpoint.
pub(super) fn iteration_base(run: &Run) -> ObjectId {
    pipeline_base(run).unwrap_or(run.state.checkpoint())
}

/// The role an attempt played, as recorded.
pub(super) fn attempt_role(run: &Run, story: &str, attempt: u32) -> Option<Role> {
    run.attempt_record(story, attempt).and_then(|a| a.role)
}

/// On resume, or after a bug: what the user changed in the worktree
/// while a pipeline was stopped joins its work so far, as its new
/// base; it is never reverted, and checkpointed only with the story.
pub(super) async fn keep_changes_in_pipeline(run: &mut Run) -> Result<(), RunError> {
    let Some(state) = run.state.pipeline().clone() else {
        return Ok(());
    };
    let refname = run.settings.refs().pipeline_changes(&state.story, now_ms());
    let message = format!(
        "ralph({}): changes made while story {} was stopped in its pipeline",
        run.settings.change(),
        state.story
    );
    let name = refname.clone();
    let commit = run
        .with_repo(move |repo| repo.preserve(&name, &message))
        .await
        .map_err(|err| RunError::git("keep the changes made while stopped", err))?;
    run.state.pipeline_base_moved(commit);
    run.save()?;
    run.warn(format!(
        "the changes made while the run was stopped join story {}'s work in progress (kept at {refname}); they are checkpointed with the story",
        state.story
    ));
    Ok(())
}
