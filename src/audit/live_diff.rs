//! The diff of the attempt at work, taken on a thread of its own: reading a
//! large worktree takes a quarter of a second (100,000 files), and whoever
//! asks (the loop screen) must not wait for it. Asking returns the newest
//! diff finished for that attempt and asks for a fresher one; requests that
//! arrive while one is being taken are folded into it.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use crate::git::Repo;
use crate::state::{RunDir, RunStatus};

/// (story, attempt) and its diff.
type Taken = Option<(String, u32, String)>;

pub(super) struct LiveDiff {
    wanted: Sender<(String, u32)>,
    taken: Arc<Mutex<Taken>>,
}

impl LiveDiff {
    /// Start the thread that reads the worktree of `workdir` for the run in
    /// `run_dir`. It ends when this is dropped.
    pub(super) fn start(workdir: PathBuf, run_dir: RunDir) -> LiveDiff {
        let (wanted, requests) = channel();
        let taken = Arc::new(Mutex::new(None));
        let shared = taken.clone();
        std::thread::spawn(move || serve(workdir, run_dir, requests, shared));
        LiveDiff { wanted, taken }
    }

    /// The newest diff taken of `attempt` at `story`, if any; a fresher
    /// one is asked for.
    pub(super) fn diff(&self, story: &str, attempt: u32) -> Option<String> {
        let _ = self.wanted.send((story.to_owned(), attempt));
        let taken = self.taken.lock().ok()?;
        match taken.as_ref() {
            Some((s, a, diff)) if s == story && *a == attempt => Some(diff.clone()),
            _ => None,
        }
    }
}

fn serve(
    workdir: PathBuf,
    run_dir: RunDir,
    requests: Receiver<(String, u32)>,
    taken: Arc<Mutex<Taken>>,
) {
    let Ok(repo) = Repo::open_for_recovery(&workdir) else {
        return;
    };
    while let Ok(mut request) = requests.recv() {
        // Only the newest request matters.
        while let Ok(newer) = requests.try_recv() {
            request = newer;
        }
        let (story, attempt) = request;
        if let Some(diff) = take(&repo, &run_dir, &story, attempt)
            && let Ok(mut slot) = taken.lock()
        {
            *slot = Some((story, attempt, diff));
        }
        // Requests made while the diff was being taken are answered by it.
        while requests.try_recv().is_ok() {}
    }
}

/// The worktree against the checkpoint the attempt started from, while it
/// is the attempt at work.
fn take(repo: &Repo, run_dir: &RunDir, story: &str, attempt: u32) -> Option<String> {
    let state = run_dir.load().ok()?;
    let at_work = state.current_story().as_deref() == Some(story)
        && state.current_attempt() == attempt
        && state.status() == RunStatus::Running;
    if !at_work {
        return None;
    }
    repo.worktree_patch(state.checkpoint()).ok()
}
