//! An earlier run of the change being started: taken up again when it is
//! still open (stopped, or killed while running) or was kept before its
//! stories were all done (out of retries, stopped, then kept); otherwise
//! moved to history, out of the way of the new one, its files and refs
//! together and its record naming its refs where they now are.

use super::start_error::StartError;
use crate::git::{ChangeName, HeadState, Repo, RunRefs};
use crate::state::{RunDir, RunState, RunStatus};

/// Whether starting `change` again takes up `state` rather than beginning
/// anew: a run still open, or one kept unfinished whose branch is still
/// there, in a worktree of its own or with HEAD on it. A kept run the user
/// has left (HEAD on another branch) is begun anew as before.
pub fn resumes(repo: &Repo, change: &ChangeName, state: &RunState) -> Result<bool, StartError> {
    if matches!(state.status(), RunStatus::Running | RunStatus::Stopped) {
        return Ok(true);
    }
    if !state.kept_unfinished() {
        return Ok(false);
    }
    let branch = change.branch_ref();
    let read = |err| StartError::git("read the run's branch", err);
    if repo.resolve_ref(&branch).map_err(read)?.is_none() {
        return Ok(false);
    }
    if state.worktree().is_some() {
        return Ok(true);
    }
    let head = repo
        .head()
        .map_err(|err| StartError::git("read HEAD", err))?;
    Ok(matches!(head, HeadState::Branch { name, .. } if name == branch))
}

/// A kept run taken up again is open once more: stopped, no longer
/// finished, its worktree (if it had one) to be found or made again.
pub fn reopen(state: &mut RunState) {
    state.reopened();
}

/// Keep a finished or aborted run, out of the way of the new one: its
/// files go to `<git-dir>/ralph/history/<id>/`, its refs to
/// `refs/ralph/<change>/history/<id>/`, and its record names them there.
/// Returns what to tell the user.
pub fn archive(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    previous: &RunState,
) -> Result<String, StartError> {
    let history = repo.ralph_dir().join(crate::state::layout::HISTORY);
    let mut id = format!("{change}-{}", previous.started_at());
    let mut n = 1;
    while history.join(&id).exists() {
        n += 1;
        id = format!("{change}-{}-{n}", previous.started_at());
    }
    let target = history.join(&id);
    let archive = || -> std::io::Result<()> {
        std::fs::create_dir_all(&history)?;
        std::fs::rename(&run_dir.dir, &target)
    };
    archive().map_err(|err| StartError::io("archive the previous run", err))?;
    let refs = repo
        .archive_refs(&change.ref_namespace(), &id)
        .map_err(|err| StartError::git("keep the previous run's refs", err))?;
    // Read from the history, the record names the refs where they are now.
    let archived = RunDir { dir: target };
    let state = archived.load()?;
    archived.save(&state)?;
    let mut notice = format!(
        "the earlier run of '{change}' ({}) is kept in history: its files at {}",
        previous.status().as_str(),
        archived.dir.display()
    );
    if refs > 0 {
        notice.push_str(&format!(
            ", its refs under {}/",
            RunRefs::of(change).history(&id)
        ));
    }
    Ok(notice)
}
