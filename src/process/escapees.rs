//! What a child started that left its process group.
//!
//! Killing a child's process group ends what it started, unless something
//! moved into a group or session of its own (`setsid`, a daemon's double
//! fork): that keeps running, and keeps writing into the worktree after
//! the attempt that started it was judged, into the next story's work. So
//! every child gets a mark in its environment, which whatever it starts
//! inherits whatever group it moves to, and when the child is over every
//! process still carrying its mark is killed, until none is left. A cgroup
//! would hold them more surely, but one can rarely be made without
//! privileges; the mark works for every user, on any Linux. Only a process
//! that also drops its environment (`env -i`) escapes it. Where there is
//! no `/proc`, nothing is found.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The variable that carries the mark.
pub(super) const MARK_VARIABLE: &str = "GIT_RALPH_CHILD";

/// How often the processes carrying a mark are looked for again, at most:
/// each pass kills what it finds, and something may fork meanwhile.
const PASSES: usize = 100;
/// The pause between two passes, for the killed to die.
const PAUSE: Duration = Duration::from_millis(10);

/// A mark no other child of any git-ralph carries.
pub(super) fn new_mark() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kill every process carrying `mark` (git-ralph itself aside), until none
/// is left alive. Best effort: a process that cannot be read or signalled
/// is not one of ours.
pub(super) fn end_marked(mark: &str) {
    let entry = format!("{MARK_VARIABLE}={mark}");
    for _ in 0..PASSES {
        let found = marked(entry.as_bytes());
        if found.is_empty() {
            return;
        }
        for pid in found {
            let _ = kill(pid, Signal::SIGKILL);
        }
        std::thread::sleep(PAUSE);
    }
}

/// The processes whose environment holds `entry`. A zombie's environment
/// reads empty: it writes nothing any more and is not counted.
fn marked(entry: &[u8]) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| carries(&Path::new("/proc").join(pid.to_string()), entry))
        .filter_map(|pid| i32::try_from(pid).ok().map(Pid::from_raw))
        .collect()
}

fn carries(process: &Path, entry: &[u8]) -> bool {
    std::fs::read(process.join("environ"))
        .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(|var| var == entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_carrying_the_mark_is_ended_one_without_it_is_not() {
        let mark = new_mark();
        let mut marked_child = std::process::Command::new("sleep")
            .arg("60")
            .env(MARK_VARIABLE, &mark)
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("60")
            .env(MARK_VARIABLE, new_mark())
            .spawn()
            .unwrap();
        end_marked(&mark);
        let status = marked_child.wait().unwrap();
        assert!(!status.success(), "{status:?}");
        assert!(other.try_wait().unwrap().is_none(), "the other still runs");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
