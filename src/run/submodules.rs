//! Submodules in a run. A submodule is a repository of its own: the
//! superproject's checkpoints record only the commit it has checked out,
//! and its reverts never enter it, so what is written there would be
//! neither kept nor undone. A run therefore changes no submodule. It does
//! not start (nor resume) while one holds anything of the user's that is
//! not committed there, or has another commit checked out than the
//! superproject records; and after every attempt, whatever the agent left
//! in a submodule is committed under the attempt's ref in the submodule's
//! own repository, the submodule is put back as it stood, and the attempt
//! fails (the judge's `submodules` gate) with a reason naming where the
//! work is. A story that needs a submodule moved is not one a run can do.

use super::attempt::Attempt;
use super::context::Run;
use super::error::RunError;
use super::start_error::{StartError, UnsettledSubmodules};
use crate::git::{Repo, SubmoduleHeads, SubmoduleSetAside};
use crate::state::{AttemptOutcome, RunState};

/// Refuse to go on while a submodule is not at its recorded commit,
/// clean; reads only.
pub(super) fn check_settled(repo: &Repo) -> Result<(), StartError> {
    let found = repo
        .unsettled_submodules()
        .map_err(|err| StartError::git("read the submodules", err))?;
    if found.is_empty() {
        return Ok(());
    }
    Err(StartError::from(UnsettledSubmodules(found)))
}

/// [`check_settled`] on resume, unless the loop stopped during an
/// attempt: what a submodule holds then is that attempt's, set aside when
/// the loop takes up the run.
pub(super) fn check_settled_on_resume(repo: &Repo, state: &RunState) -> Result<(), StartError> {
    let interrupted = state.stories().iter().any(|story| {
        story
            .attempts
            .iter()
            .any(|attempt| attempt.outcome == AttemptOutcome::Running)
    });
    if interrupted {
        return Ok(());
    }
    check_settled(repo)
}

/// Where each submodule's HEAD stands before the agent starts.
pub(super) async fn heads_before(run: &Run) -> Result<SubmoduleHeads, RunError> {
    run.with_repo(|repo| repo.submodule_heads())
        .await
        .map_err(|err| RunError::git("read the submodules", err))
}

/// Set aside what the attempt left in any submodule, tell where it is
/// kept, and return the words the attempt's failure carries, one per
/// submodule it changed.
pub(super) async fn set_aside(
    run: &mut Run,
    attempt: &Attempt,
    before: SubmoduleHeads,
) -> Result<Vec<String>, RunError> {
    let message = format!(
        "ralph({}): attempt {} at story {} ({})",
        run.settings.change(),
        attempt.number,
        attempt.story.id,
        attempt.story.title
    );
    let words = set_aside_at(run, attempt.work_ref(), message, before).await?;
    for said in &words {
        run.warn(format!("the agent changed {said}"));
    }
    Ok(words)
}

/// On resume after a loop stopped during attempt `number` at `story`:
/// whatever is in a submodule is that attempt's, set aside as after any
/// attempt.
pub(super) async fn set_aside_interrupted(
    run: &mut Run,
    story: &str,
    number: u32,
) -> Result<(), RunError> {
    let message = format!(
        "ralph({}): work left by an interrupted loop",
        run.settings.change()
    );
    let refname = run.settings.refs().attempt(story, number);
    let words = set_aside_at(run, refname, message, SubmoduleHeads::default()).await?;
    for said in words {
        run.warn(format!(
            "the previous loop stopped while its agent had changed {said}"
        ));
    }
    Ok(())
}

/// Set aside every changed submodule under `refname` of its own
/// repository, each in words.
async fn set_aside_at(
    run: &Run,
    refname: String,
    message: String,
    before: SubmoduleHeads,
) -> Result<Vec<String>, RunError> {
    let set_aside = run
        .with_repo(move |repo| repo.set_aside_submodules(&before, &refname, &message))
        .await
        .map_err(|err| RunError::git("set aside what the agent changed in a submodule", err))?;
    Ok(set_aside.iter().map(words).collect())
}

/// `submodule lib (its work is kept there at <ref>; the submodule is back
/// at <commit>)`.
fn words(set_aside: &SubmoduleSetAside) -> String {
    format!(
        "submodule {} (its work is kept there at {}; the submodule is back at {})",
        set_aside.path,
        set_aside.kept_at,
        set_aside.back_at.to_hex_with_len(10)
    )
}
