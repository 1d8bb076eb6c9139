//! `git ralph abort [<change>]`: stop a running loop (through the lock's PID)
//! and restore the exact pre-start state: the original branch and HEAD, the
//! original index, and the user's uncommitted and untracked work. What
//! that takes is [`crate::run::ending::abort`]'s to decide. With no run,
//! a plan whose process was killed is put back as it stood before, or,
//! when the user went on since it began, let go.

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
    if let Some(code) = abort_cut_short_plan(args.change.as_deref())? {
        return Ok(code);
    }
    let (repo, change, run_dir) = super::open_run(args.change.as_deref())?;
    let aborted = ending::abort(repo, &change, &run_dir, &mut ui::ending::Console)?;
    ui::ending::aborted(&aborted);
    Ok(Exit::Success.code())
}

/// With no run to abort, a plan of the change (or, unnamed, any) whose
/// process was killed is put back instead, as the next `plan` would.
fn abort_cut_short_plan(named: Option<&str>) -> Result<Option<ExitCode>, CommandError> {
    use crate::planning::cut_short;
    let mut repo = super::open_repo()?;
    let runs = crate::state::list_runs(&repo.ralph_dir());
    let has_run = match named {
        Some(change) => runs.iter().any(|run| run == change),
        None => !runs.is_empty(),
    };
    let found = cut_short::find(&repo, named);
    let Some(first) = found.first().filter(|_| !has_run) else {
        return Ok(None);
    };
    let change = crate::git::ChangeName::parse(&first.change)?;
    let _lock = crate::state::RunLock::acquire(&super::lock_path(&repo), change.as_str())?;
    for cut in &found {
        // What the user did since the plan began is theirs: a plan that
        // cannot be put back without it is let go instead.
        let recovered = match cut_short::recover(&mut repo, cut) {
            Err(crate::planning::PlanError::MovedOnSinceCutShort { .. }) => {
                cut_short::let_go(&repo, cut)
            }
            recovered => recovered,
        }
        .map_err(|err| CommandError::from_error(crate::exit::ErrorKind::Internal, err))?;
        ui::plan_view::print_recovered(&recovered);
    }
    Ok(Some(Exit::Success.code()))
}
