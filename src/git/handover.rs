//! A run's watch outlives the repository value that started it, for as
//! long as the process lives. The loop holds the repository while stories
//! run; what ends the run (finish, keep or clean up, a preserve of
//! unfinished work) opens it again, and without the watch would look at
//! every file once more just to learn that nothing changed since the last
//! checkpoint. So a repository that started its watch with
//! [`Repo::start_watching`] leaves the watch, with what it knows, here when
//! it is dropped, and the next [`Repo::open`] of the same worktree in this
//! process takes it up. The watch kept running in between, so the chain it
//! vouches for is unbroken.

use std::path::PathBuf;
use std::sync::Mutex;

use super::open::Repo;

/// What a dropped repository left for the next one.
struct Parked {
    workdir: PathBuf,
    watching: super::repo_state::Watching,
    index_cache: Option<super::repo_state::IndexCache>,
}

static PARKED: Mutex<Vec<Parked>> = Mutex::new(Vec::new());

impl Drop for Repo {
    fn drop(&mut self) {
        if !self.hands_over {
            return;
        }
        let Some(watching) = self.watching.get_mut().take() else {
            return;
        };
        let parked = Parked {
            workdir: self.workdir().to_owned(),
            watching,
            index_cache: self.index_cache.get_mut().take(),
        };
        let mut all = PARKED.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|other| other.workdir != parked.workdir);
        all.push(parked);
    }
}

impl Repo {
    /// Take up the watch a dropped repository of this worktree left.
    pub(crate) fn take_over(&mut self) {
        let workdir = self.workdir().to_owned();
        let mut all = PARKED.lock().unwrap_or_else(|p| p.into_inner());
        let Some(at) = all.iter().position(|parked| parked.workdir == workdir) else {
            return;
        };
        let parked = all.swap_remove(at);
        *self.watching.get_mut() = Some(parked.watching);
        *self.index_cache.get_mut() = parked.index_cache;
        self.hands_over = true;
    }
}
