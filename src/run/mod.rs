//! The run engine: everything between "start this change" and "the loop
//! ended for this reason", in small files with one idea each. Read in this
//! order, they follow one story from the command to its checkpoint; each
//! file imports only files above it in the story's way, never the loop it
//! serves.
//!
//! **Before the loop.** [`plan`]: what a run would do, shown before it
//! starts; [`story_job`]: whether one story may run on a machine of its
//! own. [`session`]: a run begun fresh or resumed, everything it needs
//! read and validated before anything is written; `opening` (what the
//! session and the plan both read first: an earlier record, the settings,
//! what they name), `sources` (where the stories come from), `earlier` (an
//! earlier run of the change, taken up or moved to history), `beside` (a
//! run in a worktree of its own), `run_settings` (the settings resolved
//! once; the loop reads nothing else) and `mode` (the run's one mode,
//! turned there into the policies the steps follow).
//!
//! **What every step works on.** `context`: the [`Run`](context::Run) (its
//! repository, stories, settings, state and event log), and the one place
//! that saves the state and then publishes what it tells of; `pending`:
//! hooks and notifications owed to the user; `attempt`: an attempt as a
//! value (its story, number, role, agent, files and refs).
//!
//! **One attempt.** `attempt_steps`: the prompt (`prompting`), the agent
//! (`fallback` chooses which, `watching` and `containment` keep an eye on
//! the worktree and `.git`), then `evidence`: what the attempt did,
//! gathered for `judge` (the verdict, without I/O; `ticks`, `checks`).
//!
//! **Settling.** `settle`: the work into git, a checkpoint or preserved and
//! reverted, the story recorded done before anyone is told; `receipts` (the
//! checkpoint's trailers), `tracker` (a comment on the story's issue),
//! `kept_refs` (refs an agent moved, put back); `submodules` (what an
//! agent left in a submodule, set aside in the submodule's own repository
//! and put back; a start refused while one holds the user's work); `questions` (a question
//! for a person parks its story while the rest goes on, until answered). With roles, `pipeline`
//! moves a story through its roles, reading where it stands from
//! `pipeline_state`.
//!
//! **The loop.** [`story_loop`]: which story next and when to stop, within
//! `guardrails`; `lifecycle`: what every loop does first and last, with
//! `hooks` and `notifications`. `parallel`: the coordinator of stories run
//! at once, each an ordinary story loop in its own worktree, merged onto
//! the run's branch only when its checks pass there.
//!
//! **Around and after.** [`driver`]: the runtime, signals, keys and
//! force-quit around a loop, feeding a [`driver::View`]; [`ending`]: finish
//! (keep or cleanup), abort, hand-off, or left stopped.
//!
//! The engine knows neither clap nor the terminal. It reports typed events
//! and returns typed errors ([`RunError`]); the command layer decides how
//! they look.

mod adopt;
mod asked;
mod attempt;
mod attempt_steps;
mod beside;
mod checkpoint_record;
mod checks;
mod containment;
mod context;
pub mod dead_loop;
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
pub mod matrix;
mod mode;
mod notifications;
mod opening;
mod pacing;
pub(crate) mod parallel;
mod pending;
mod pipeline;
mod pipeline_state;
pub mod plan;
mod prompting;
mod push_each;
mod questions;
mod receipts;
mod run_settings;
mod runtime;
pub mod session;
mod settle;
mod sources;
mod start_error;
pub mod story_job;
pub mod story_loop;
pub mod story_merge;
mod submodules;
mod task_file;
mod ticks;
mod tracker;
mod watching;

pub(crate) use containment::git_dirs_of;
pub use driver::{Control, Ending, View, drive};
pub use error::RunError;
pub use lifecycle::LoopEnd;
pub use session::Session;
pub use start_error::{StartError, TaskFileError, UnsettledSubmodules};
