//! Running one agent attempt and deciding what it amounted to.
//!
//! git-ralph drives agent CLIs it does not control, each with its own output
//! format. This module runs one agent process ([`run`]), turns whatever it
//! prints into agent-neutral [`AgentEvent`]s (one [`StreamParser`] per
//! format), and reduces the run to a [`Conclusion`] through the promise
//! protocol ([`parse_promise`], [`conclude`]); a final message that asks
//! instead of working is told apart ([`trailing_question`]). It neither
//! prints nor knows about the command line: callers receive events and
//! typed results.
//!
//! Everything particular to one agent CLI lives in one file under
//! [`presets`]: its command line and environment, its stream parser and
//! usage-limit notices, and how `agents --verify` points it at the
//! stand-in. The rest of this module is agent-neutral:
//!
//! - `presets/`: the [`Preset`] descriptor, the registry of presets, and
//!   one module per agent CLI;
//! - `spec`: a resolved agent ([`AgentSpec`]) and the invocation of one
//!   attempt built from it;
//! - `stream`: the [`StreamParser`] trait, [`StreamFormat`], auto-detection
//!   and what the JSON-lines parsers share;
//! - `plain`: plain text output, and the bounded `TextTail` the
//!   parsers keep;
//! - `events`, `promise`, `question`: what happened, and what it means;
//! - `runner`: one supervised attempt, output streamed to a log;
//! - `setup`: an agent that cannot work at all, told from one that failed.

mod events;
mod plain;
pub mod presets;
mod promise;
mod question;
mod runner;
pub(crate) mod setup;
mod spec;
mod stream;

pub use events::{AgentEvent, Done, ExitStatusKind, RateLimit, ToolUse, Usage};
pub use presets::{Preset, PresetError, PromptPassing};
pub use promise::{
    Conclusion, DEFAULT_TOKEN, PromiseScope, Signal, conclude, other_promise, parse_promise,
    parse_promise_on_last_line,
};
pub use question::trailing_question;
pub use runner::{AgentRun, Invocation, RunnerError, StdinSource, run};
pub use spec::AgentSpec;
pub use stream::{StreamFormat, StreamParser, UnknownFormat, parser_for, sniff_format};
