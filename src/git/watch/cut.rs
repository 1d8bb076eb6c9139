//! What both ways of watching share: what a cut reports, why a watch is
//! lost, how long a cookie is waited for and how cookies are named. Kept
//! apart from `watch.rs`, which chooses between the two, so that neither
//! way names the file that names it.

use std::collections::BTreeSet;
use std::time::Duration;

use gix::bstr::{BStr, BString};

/// How long a cookie may take to come back before the watch is distrusted.
pub(super) const COOKIE_PATIENCE: Duration = Duration::from_secs(2);
/// How long, once a cookie did not come back: a watch that died would
/// otherwise cost every later checkpoint and revert the whole wait, and one
/// that only stalled is trusted again at its next cookie.
pub(super) const DISTRUSTED_PATIENCE: Duration = Duration::from_millis(100);
/// More touched paths than this are not worth remembering one by one: a
/// full scan is as cheap by then.
pub(super) const MAX_TOUCHED: usize = 50_000;

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
pub(super) fn cookie_name(number: u64) -> String {
    format!("{}-{number}", std::process::id())
}

/// The number of a cookie of this process named `name`.
pub(super) fn cookie_number(name: &std::ffi::OsStr) -> Option<u64> {
    let (pid, number) = name.to_str()?.split_once('-')?;
    (pid.parse::<u32>().ok()? == std::process::id())
        .then(|| number.parse().ok())
        .flatten()
}
