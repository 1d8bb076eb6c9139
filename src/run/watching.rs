//! The worktree watched while agents run, so that judging, checkpointing
//! and reverting an attempt cost what the agent touched rather than what
//! the repository holds. The watch belongs to the repository the loop
//! holds and lives as long as the loop: each attempt's snapshots build on
//! what the previous one learned, and a watch that began only with this
//! attempt could not vouch for the moments before it. Whether what it saw
//! can be trusted is the git layer's call; `--full-scan` turns it off.

use super::context::Run;

/// Watch the worktree before the agent runs, unless `--full-scan`; a
/// watch that cannot start is reported once, and the run goes on with
/// full scans.
pub(super) async fn watch_worktree(run: &mut Run) {
    if run.settings.full_scan() {
        return;
    }
    if let Err(lost) = run.with_repo(|repo| repo.watch_worktree()).await {
        run.warn(format!(
            "could not watch the worktree ({lost}); every checkpoint looks at every file"
        ));
    }
}
