//! Kilo Code's CLI (`@kilocode/cli`): its preset and how it is pointed at
//! the stand-in.
//!
//! Kilo's CLI is a fork of opencode: `kilo run --format json` prints
//! opencode's events (`step_start`, `text`, `tool_use`, `step_finish`,
//! `error`), so opencode's parser reads it, and auto-detection reads it as
//! opencode's. Its configuration is opencode's too, under its own names:
//! `~/.config/kilo/kilo.json` and `KILO_*` variables.
//!
//! Checked against transcripts recorded from Kilo 7.7.7 (see
//! `tests/fixtures/kilo/README.md`). Its traps:
//! - as with opencode, without `--auto` a tool call that needs a permission
//!   is rejected and the run ends with exit 0 and no answer;
//! - it starts slowly: on two cores, ten to twenty seconds pass before the
//!   first model call (its database, session bootstrap, a snapshot of the
//!   project), and it reports telemetry unless `KILO_TELEMETRY_LEVEL` is
//!   other than `all`;
//! - the npm package installs its binary from a platform package of the
//!   same version, and the registry lacked `@kilocode/cli-linux-x64` for
//!   the newest release (7.8.1): its install fails, 7.7.7 is pinned.

use std::io;

use super::opencode::{self, point_fork};
use super::{Pointing, Preset, StandinSetup};
use crate::standin::Protocol;

/// opencode's preset under Kilo's names: the same `run --auto --format
/// json` (without `--auto`, `kilo run` rejects every permission it would
/// have asked for and ends with exit 0 and no answer), the same
/// `provider/model` names, the same parser.
pub const PRESET: Preset = Preset {
    name: "kilo",
    title: "Kilo Code CLI",
    program: "kilo",
    verified: Some("7.7.7"),
    oldest: None,
    // Its stream is opencode's, which opencode's check claims.
    first_event: None,
    standin: Some(StandinSetup::with_tools(Protocol::AnthropicMessages, point)),
    ..opencode::PRESET
};

/// Kilo's anthropic provider, given the stand-in's URL in its config, as
/// opencode's is, and its telemetry off.
fn point(at: &Pointing) -> io::Result<Vec<(String, String)>> {
    let mut env = point_fork(at, "kilo", "https://app.kilo.ai/config.json")?;
    env.push(("KILO_TELEMETRY_LEVEL".to_owned(), "off".to_owned()));
    Ok(env)
}
