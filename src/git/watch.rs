//! Which worktree paths changed, told by the operating system instead of
//! found by looking at every file. The watch only collects paths; whether
//! they can be trusted is decided in `scope.rs`, and whenever they cannot
//! (the kernel's queue overflowed, the watch broke, the platform has none)
//! the engine looks at everything, as before.
//!
//! Events arrive late, so a reader first writes a cookie file and waits for
//! its event: every change made before the cookie was written has then been
//! reported ([`WorktreeWatch::cut`]). This is how git's own file system
//! monitor synchronises.
//!
//! Two ways to watch, one per kind of system:
//! - on Linux (`inotify.rs`), each directory is watched on its own, and
//!   only the ones that matter: those the index tracks, and the untracked
//!   ones that are not ignored, found by reading the tracked ones
//!   ([`WorktreeWatch::cover`], before a full scan), and those that appear
//!   later (covered at the cut that reports them). Starting costs a
//!   system call per directory, where watching the whole tree costs a stat
//!   of every file, and builds writing into ignored directories raise no
//!   events;
//! - elsewhere (`recursive.rs`), the `notify` crate watches the whole tree
//!   (FSEvents on macOS), and covering is a no-op.

mod cut;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod inotify;
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod recursive;

pub(crate) use cut::Ignored;
pub use cut::WatchLost;
#[cfg(target_os = "linux")]
pub(crate) use inotify::WorktreeWatch;
#[cfg(not(target_os = "linux"))]
pub(crate) use recursive::WorktreeWatch;
