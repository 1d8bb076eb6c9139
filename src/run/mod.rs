//! The run engine: everything between "start this change" and "the loop
//! ended for this reason", in small files with one idea each.
//!
//! - [`plan`]: what a run would do, shown before it starts;
//! - [`session`]: a run begun fresh or resumed, and everything a loop
//!   needs assembled and validated before anything is written;
//! - `earlier`: an earlier run of the same change, taken up again when it
//!   is still open (or kept unfinished), else moved to history;
//! - `beside`: a run in a worktree of its own, beside the user's: where it
//!   goes, and found or made again on resume;
//! - [`story_loop`]: the state machine alone: which story next, when to
//!   stop, what the state and event log say;
//! - `attempt`: one attempt: its prompt, the agent process, the accounting,
//!   a usage-limit pause;
//! - `judge`: the verdict on an attempt, decided from its evidence without
//!   I/O: how the agent ended, classified once, then the gates in order:
//!   marked done, protected paths, a change besides ticked boxes,
//!   verification, checks;
//! - `evidence`: an attempt's evidence gathered in stages for the judge,
//!   and its verdict recorded; `ticks` tells ticking from work;
//! - `settle`: the attempt's work into git: a checkpoint, or preserved and
//!   reverted; and the worktree made safe again on resume;
//! - `tracker`: what the run tells the tracker its stories came from (a
//!   comment per finished GitHub issue, with `--comment`);
//! - `fallback`: the agents a story goes to when the agent's usage limit
//!   outlasts the wait, and which agent runs an attempt;
//! - `guardrails`: the limits every run ends within;
//! - `hooks`: the user's lifecycle hooks, run at the moments they name;
//! - `notifications`: the desktop and the webhook told when a run ends;
//! - [`driver`]: the async runtime, signals, keys and force-quit around a
//!   loop, feeding a [`driver::View`];
//! - [`ending`]: how a run ends: finish (keep or cleanup), abort, or left
//!   stopped after its loop, each returned as a typed outcome.
//!
//! The engine knows neither clap nor the terminal. It reports typed events
//! and returns typed errors ([`RunError`]); the command layer decides how
//! they look.

mod attempt;
mod attempt_steps;
mod beside;
mod checks;
mod containment;
mod context;
pub mod driver;
mod earlier;
pub mod ending;
mod error;
mod evidence;
mod fallback;
mod guardrails;
mod hooks;
mod judge;
pub(crate) mod kept_refs;
mod lifecycle;
mod notifications;
pub(crate) mod parallel;
mod pending;
mod pipeline;
mod pipeline_state;
pub mod plan;
mod prompting;
mod receipts;
mod run_settings;
pub mod session;
mod settle;
mod sources;
pub mod story_loop;
mod ticks;
mod tracker;
mod watching;

pub(crate) use containment::git_dirs_of;
pub use driver::{Control, Ending, View, drive};
pub use error::RunError;
pub use lifecycle::LoopEnd;
pub use session::Session;

/// Runs `future` to its end, or to the panic that cuts it short: the bug
/// the panic hook recorded. What the future held (an agent's process group
/// among it) is dropped before this returns.
async fn catching<T>(future: impl std::future::Future<Output = T>) -> Result<T, crate::bug::Bug> {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::task::Poll;
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(crate::bug::caught(payload.as_ref()))),
        },
    )
    .await
}

/// Blocking work (gix, file parsing) off the async runtime, so that stop
/// requests and event forwarding stay live.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}
