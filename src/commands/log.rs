//! `git ralph log [<change>] [--json]`: the audit trail of a run, live or in
//! the run history. It reads `state.json` only and changes nothing.

use std::process::ExitCode;

use crate::audit;
use crate::exit::{CommandError, Exit};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to list (or `history/<dir>`); may be omitted
    /// when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Print the trail as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let (_, found, state) = super::open_recorded_run(args.change.as_deref())?;
    let trail = audit::trail(&found, &state);
    if args.json {
        ui::print_json(&trail)?;
    } else {
        ui::print_trail(&trail);
    }
    Ok(Exit::Success.code())
}
