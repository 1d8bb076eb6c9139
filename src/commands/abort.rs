//! `git ralph abort [<change>]`: stop a running loop (through the lock's PID)
//! and restore the exact pre-start state: the original branch and HEAD, the
//! original index, and the user's uncommitted and untracked work. What
//! that takes is [`crate::run::ending::abort`]'s to decide.

use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::run::ending;
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to abort; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let (repo, change, run_dir) = super::open_run(args.change.as_deref())?;
    let aborted = ending::abort(repo, &change, &run_dir, &mut ui::ending::Console)?;
    ui::ending::aborted(&aborted);
    Ok(Exit::Success.code())
}
