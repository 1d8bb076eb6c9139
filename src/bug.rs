//! What git-ralph knows of its own bugs. A panic is a bug in git-ralph, not
//! a crash the user should see: the hook installed here records what
//! panicked and where, instead of printing Rust's raw message, so that the
//! command layer can report it as an internal error and the run engine can
//! leave a run as after a clean stop. Nothing here prints.
//!
//! [`trip`] is the test suite's way of forcing a panic at a named point of
//! a real run (`GIT_RALPH_PANIC_AT=<point>`), and [`halt`] its way of
//! dying there as a kill -9 would (`GIT_RALPH_KILL_AT=<point>`); no user
//! has a reason to set either.

use std::backtrace::{Backtrace, BacktraceStatus};
use std::fmt;
use std::sync::Mutex;

/// A panic, as the hook saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bug {
    pub message: String,
    /// `file:line:column` in git-ralph's sources.
    pub location: String,
    /// Captured only when `RUST_BACKTRACE` asks for it.
    pub backtrace: Option<String>,
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.location)
    }
}

impl std::error::Error for Bug {}

/// The first panic of the process; later ones follow from it.
static FIRST: Mutex<Option<Bug>> = Mutex::new(None);

/// Record panics instead of printing them. Call once, first thing.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        let location = info
            .location()
            .map_or_else(|| "an unknown place".to_owned(), ToString::to_string);
        let backtrace = Backtrace::capture();
        let backtrace =
            (backtrace.status() == BacktraceStatus::Captured).then(|| backtrace.to_string());
        let mut first = FIRST
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        first.get_or_insert(Bug {
            message,
            location,
            backtrace,
        });
    }));
}

/// The bug behind a panic that was caught: the one the hook recorded, or
/// what the payload says when no hook ran (a library user's process).
pub fn caught(payload: &(dyn std::any::Any + Send)) -> Bug {
    let recorded = FIRST
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    recorded.unwrap_or_else(|| Bug {
        message: payload
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned()),
        location: "an unknown place".to_owned(),
        backtrace: None,
    })
}

/// The variable that names the point at which [`trip`] panics.
pub const PANIC_AT: &str = "GIT_RALPH_PANIC_AT";

/// Panic here when the test suite asks for it, so that what follows a bug
/// can be tested on the real binary. The bug is located at the caller.
#[track_caller]
pub fn trip(point: &str) {
    if std::env::var_os(PANIC_AT).is_some_and(|value| value == point) {
        panic!("forced by {PANIC_AT}={point}");
    }
}

/// The variable that names the point at which [`halt`] kills the process.
pub const KILL_AT: &str = "GIT_RALPH_KILL_AT";

/// Die here as a kill -9 would, when the test suite asks for it: nothing
/// after this point runs, no destructor and no panic hook, so that what
/// a crash at this very moment leaves can be tested on the real binary.
pub fn halt(point: &str) {
    if std::env::var_os(KILL_AT).is_some_and(|value| value == point) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
