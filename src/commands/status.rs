//! `git ralph status [<change>] [--json]`: report a run from any terminal.
//! It only reads `state.json` (written atomically, so never torn) and the
//! lock, so it is safe while a loop runs.

use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::state::{Report, lock_holder};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to show; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Print the run as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = Repo::open_for_recovery(&super::current_dir()?)?;
    let change = super::pick_change(&repo, args.change.as_deref())?;
    let run_dir = super::existing_run(&repo, &change)?;
    let state = run_dir.load()?;
    let holder = lock_holder(&super::lock_path(&repo))
        .filter(|(_, c)| c == change.as_str())
        .map(|(pid, _)| pid);
    let report = Report::new(&state, holder).with_learnings(&state, &run_dir.learnings_path());
    if args.json {
        ui::print_json(&report)?;
    } else {
        ui::status::print(&report);
    }
    Ok(Exit::Success.code())
}
