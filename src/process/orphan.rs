//! A child whose supervisor died: a killed git-ralph leaves its agent
//! running, still writing into the worktree. While a child runs, its
//! process group and its mark are recorded in a file, so that the next
//! git-ralph ends the orphan, and what it started outside its group,
//! before it looks at the worktree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};

use super::{TERMINATE_GRACE, child_group, escapees, signal_group};

/// End the process group recorded in `pid_file` by a supervisor that died
/// without cleaning up: SIGTERM, then SIGKILL after the grace period; then
/// whatever the child started outside its group, by the mark recorded
/// beside the file. Returns whether a live group was found.
pub fn end_orphaned_group(pid_file: &Path) -> bool {
    let mark_file = mark_path(pid_file);
    if let Ok(mark) = std::fs::read_to_string(&mark_file) {
        let _ = std::fs::remove_file(&mark_file);
        escapees::end_marked(mark.trim());
    }
    let Some(pid) = std::fs::read_to_string(pid_file)
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
    else {
        return false;
    };
    let _ = std::fs::remove_file(pid_file);
    end_orphan(pid)
}

/// Where the mark of the child recorded in `pid_file` is kept: beside it,
/// so that the pid file reads as every release wrote it.
fn mark_path(pid_file: &Path) -> PathBuf {
    let mut name = pid_file.as_os_str().to_owned();
    name.push(".mark");
    PathBuf::from(name)
}

/// End the orphaned group led by `pid`; whether it was alive.
fn end_orphan(pid: u32) -> bool {
    // A file that names no group a child could have (0 is our own, 1
    // init's) names no orphan either.
    let Some(group) = child_group(pid) else {
        return false;
    };
    let alive = || killpg(group, None).is_ok();
    if !alive() {
        return false;
    }
    let _ = signal_group(pid, Signal::SIGTERM);
    let deadline = std::time::Instant::now() + TERMINATE_GRACE;
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive() {
        let _ = signal_group(pid, Signal::SIGKILL);
    }
    true
}

/// The child's group, and beside it its mark, recorded on disk for as
/// long as it runs.
pub(super) struct PidFile(PathBuf);

impl PidFile {
    pub(super) fn write(path: &Path, pid: u32, mark: &str) -> Option<PidFile> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).ok()?;
        }
        std::fs::write(mark_path(path), format!("{mark}\n")).ok()?;
        std::fs::write(path, format!("{pid}\n")).ok()?;
        Some(PidFile(path.to_owned()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_file(mark_path(&self.0));
    }
}
