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

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod inotify;
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod recursive;

use std::collections::BTreeSet;
use std::time::Duration;

use gix::bstr::{BStr, BString};

#[cfg(target_os = "linux")]
pub(crate) use inotify::WorktreeWatch;
#[cfg(not(target_os = "linux"))]
pub(crate) use recursive::WorktreeWatch;

/// How long a cookie may take to come back before the watch is distrusted.
const COOKIE_PATIENCE: Duration = Duration::from_secs(2);
/// How long, once a cookie did not come back: a watch that died would
/// otherwise cost every later checkpoint and revert the whole wait, and one
/// that only stalled is trusted again at its next cookie.
const DISTRUSTED_PATIENCE: Duration = Duration::from_millis(100);
/// More touched paths than this are not worth remembering one by one: a
/// full scan is as cheap by then.
const MAX_TOUCHED: usize = 50_000;

/// Why the watch cannot say what changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WatchLost {
    #[error("the kernel dropped events (its queue overflowed)")]
    Overflowed,
    #[error("the watch failed: {0}")]
    Failed(String),
    #[error("more than {MAX_TOUCHED} paths were touched")]
    TooMany,
    #[error("the watch did not answer within {}s", COOKIE_PATIENCE.as_secs())]
    Silent,
}

/// The paths touched between two cuts.
#[derive(Debug, Default)]
pub(crate) struct Cut {
    pub touched: BTreeSet<BString>,
    /// Directories that appeared before the cut; what is written in them
    /// right after it may not be reported, so they count in the next cut
    /// too.
    pub new_dirs: BTreeSet<BString>,
}

/// Whether a directory (relative to the worktree) is ignored, and so need
/// not be watched: nothing in it can become part of a snapshot without a
/// rule changing, which widens the scope by itself.
pub(crate) type Ignored<'a> = dyn FnMut(&BStr) -> bool + 'a;

/// The name of this process's cookie `number`.
fn cookie_name(number: u64) -> String {
    format!("{}-{number}", std::process::id())
}

/// The number of a cookie of this process named `name`.
fn cookie_number(name: &std::ffi::OsStr) -> Option<u64> {
    let (pid, number) = name.to_str()?.split_once('-')?;
    (pid.parse::<u32>().ok()? == std::process::id())
        .then(|| number.parse().ok())
        .flatten()
}
