//! `git ralph finish [<change>] (--keep | --cleanup)`: close a stopped or
//! finished loop. Keep stays on `ralph/<change>`; cleanup goes back to the
//! original branch with all the work as uncommitted changes. What that
//! takes is [`crate::run::ending::finish`]'s to decide.

use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::run::ending::{self, FinishChoice};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
#[command(group = clap::ArgGroup::new("how").required(true).args(["keep", "cleanup"]))]
pub struct Args {
    /// The change whose run to finish; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Stay on ralph/<change>, one commit per story.
    #[arg(long)]
    pub keep: bool,
    /// Back to the original branch with all the work uncommitted; the
    /// branch is deleted, its tip kept at refs/ralph/<change>/finished.
    #[arg(long)]
    pub cleanup: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let (repo, change, run_dir) = super::open_run(args.change.as_deref())?;
    let choice = if args.cleanup {
        FinishChoice::Cleanup
    } else {
        FinishChoice::Keep
    };
    let finished = ending::finish(repo, &change, &run_dir, choice, &mut ui::ending::Console)?;
    ui::ending::finished(&finished);
    Ok(Exit::Success.code())
}
