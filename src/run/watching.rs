//! The worktree watched while agents run, so that judging, checkpointing
//! and reverting an attempt cost what the agent touched rather than what
//! the repository holds. The watch belongs to the repository the loop
//! holds and lives as long as the loop: each attempt's snapshots build on
//! what the previous one learned, and a watch that began only with this
//! attempt could not vouch for the moments before it. Whether what it saw
//! can be trusted is the git layer's call; `--full-scan` turns it off.
//!
//! The watch begins before anything of the run reads the worktree (its
//! initial state, a resumed run's first look, a run worktree's checkout),
//! so that the full scan every run needs once is the first attempt's
//! baseline, and the first attempt too costs only what it touched.

use super::context::Run;
use crate::git::Repo;
use crate::settings::Settings;

/// Watch `repo` from now on, unless `--full-scan`; a watch that cannot
/// start is reported by [`watch_worktree`], at the first attempt.
pub(super) fn watch_from_start(repo: &mut Repo, settings: &Settings) {
    if !settings.full_scan {
        repo.start_watching();
    }
}

/// [`watch_from_start`] for a run worktree just made, which nothing has
/// read yet: it is read once now.
pub(super) fn watch_fresh_worktree(repo: &mut Repo, settings: &Settings) {
    watch_from_start(repo, settings);
    // A worktree that cannot be read now is reported by the first look
    // that needs it.
    let _ = repo.fingerprint();
}

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
