//! `git ralph show <story>[/<attempt>] [<change>]`: one attempt of a run, live
//! or in the run history: its prompt, the agent's messages and tool calls,
//! its diff against the checkpoint it started from, and its checks; or, with
//! `--patch`, only that diff, as `git diff` writes it, for `git apply`. It
//! reads the run's files and git objects only and changes nothing.

use std::process::ExitCode;

use crate::audit::{self, Parts};
use crate::exit::{CommandError, Exit};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The story, and optionally which attempt (default: its last), e.g. `2` or `2/1`.
    #[arg(value_name = "STORY[/ATTEMPT]")]
    pub attempt: String,
    /// The change whose run to read (or `history/<dir>`); may be omitted
    /// when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// The prompt the agent was given.
    #[arg(long)]
    pub prompt: bool,
    /// The agent's messages and tool calls.
    #[arg(long)]
    pub transcript: bool,
    /// The attempt against its checkpoint, as a patch (alone, the same as
    /// --patch).
    #[arg(long)]
    pub diff: bool,
    /// Only the patch, as `git diff` writes it, for `git apply`.
    #[arg(long, conflicts_with_all = ["prompt", "transcript", "checks", "json"])]
    pub patch: bool,
    /// The checks and their output.
    #[arg(long)]
    pub checks: bool,
    /// Print the attempt as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let (repo, found, state) = super::open_recorded_run(args.change.as_deref())?;
    let (story, record) = audit::pick_attempt(&state, &args.attempt)?;
    let mut parts = Parts {
        prompt: args.prompt,
        transcript: args.transcript,
        diff: args.diff,
        checks: args.checks,
    };
    // The patch alone: asked for, or the only part asked for people.
    let patch_only =
        args.patch || (args.diff && !(args.prompt || args.transcript || args.checks || args.json));
    if patch_only {
        parts.diff = true;
    }
    if !(parts.prompt || parts.transcript || parts.diff || parts.checks) {
        parts = Parts::all();
    }
    let detail = audit::attempt_detail(&repo, &found, &state, story, record, parts)?;
    if patch_only {
        ui::print_patch(&detail);
        return Ok(Exit::Success.code());
    }
    let mut printer = ui::AttemptPrinter::new(args.json);
    printer.head(&detail, parts.transcript);
    if parts.transcript {
        audit::RunFiles::new(found.dir.clone()).each_transcript_event(
            &story.id,
            record.attempt,
            |event| printer.event(&event),
        )?;
    }
    printer.tail(&detail, parts.transcript);
    Ok(Exit::Success.code())
}
