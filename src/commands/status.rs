//! `git ralph status [<change>] [--json]`: report a run from any terminal.
//! It only reads `state.json` (written atomically, so never torn) and the
//! lock, so it is safe while a loop runs.

use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::state::{Report, RunDir, RunState, list_history, list_runs, lock_holder};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to show; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Print the run as one JSON object (with several runs or --all: an
    /// object with "runs" and "earlier").
    #[arg(long)]
    pub json: bool,
    /// List every run, the earlier ones kept in history included.
    #[arg(long, conflicts_with = "change")]
    pub all: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = super::open_repo()?;
    let runs = list_runs(&repo.ralph_dir());
    // Only told: putting it back is for `plan` or `abort`.
    let cut_short = crate::planning::cut_short::find(&repo, None);
    for cut in &cut_short {
        ui::plan_view::print_cut_short(cut);
    }
    if runs.is_empty() && args.change.is_none() && !cut_short.is_empty() {
        return Ok(Exit::Success.code());
    }
    if args.change.is_none() && (args.all || runs.len() > 1) {
        return list(&repo, &runs, args.all, args.json);
    }
    let (change, run_dir) = super::run_of(&repo, args.change.as_deref())?;
    let state = run_dir.load()?;
    let holder = lock_holder(&super::lock_path(&repo))
        .filter(|(_, c)| c == change.as_str())
        .map(|(pid, _)| pid);
    let report = Report::new(&state, holder)
        .with_learnings(&state, &run_dir.learnings_path())
        .with_answers(&state, &run_dir.answers_path());
    if args.json {
        ui::print_json(&report)?;
    } else {
        ui::status::print(&report);
    }
    Ok(Exit::Success.code())
}

/// Every run, one line each; with `all`, the earlier ones too.
fn list(repo: &Repo, runs: &[String], all: bool, json: bool) -> Result<ExitCode, CommandError> {
    let holder = lock_holder(&super::lock_path(repo));
    let current: Vec<(String, RunState)> = runs
        .iter()
        .filter_map(|name| {
            let state = RunDir::new(&repo.ralph_dir(), name).load().ok()?;
            Some((name.clone(), state))
        })
        .collect();
    let earlier: Vec<(String, RunState)> = if all {
        list_history(&repo.ralph_dir())
            .into_iter()
            .filter_map(|(name, dir)| Some((name, dir.load().ok()?)))
            .collect()
    } else {
        Vec::new()
    };
    if current.is_empty() && earlier.is_empty() {
        return Err(
            CommandError::user("there is no git-ralph run in this repository")
                .hint("start one with 'git ralph start <change>'"),
        );
    }
    fn report<'a>(
        holder: &Option<(u32, String)>,
        (name, state): &'a (String, RunState),
    ) -> (String, Report<'a>) {
        let pid = holder
            .as_ref()
            .filter(|(_, change)| change == state.change() && name == state.change())
            .map(|(pid, _)| *pid);
        (name.clone(), Report::new(state, pid))
    }
    let current: Vec<(String, Report)> = current.iter().map(|r| report(&holder, r)).collect();
    let earlier: Vec<(String, Report)> = earlier.iter().map(|r| report(&holder, r)).collect();
    if json {
        #[derive(serde::Serialize)]
        struct Listing<'a> {
            runs: Vec<&'a Report<'a>>,
            earlier: Vec<&'a Report<'a>>,
        }
        ui::print_json(&Listing {
            runs: current.iter().map(|(_, r)| r).collect(),
            earlier: earlier.iter().map(|(_, r)| r).collect(),
        })?;
    } else {
        ui::status::print_runs(&current, &earlier);
    }
    Ok(Exit::Success.code())
}
