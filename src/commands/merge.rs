//! `git ralph merge <change> --from <remote> [--push]`: the stories of a
//! change done one per machine (`start --story ID --push`) brought onto
//! `ralph/<change>` in this clone, by the rules a parallel run merges by.
//! What the remote holds is gathered by [`crate::remote::story_merge`];
//! the merge itself is [`crate::run::story_merge`]'s.

use std::process::ExitCode;

use crate::commands::agent_flags::AgentFlags;
use crate::exit::{CommandError, Exit};
use crate::git::{ChangeName, Repo};
use crate::run::Session;
use crate::run::story_merge::{MergeReport, StoryBranch, merge_all};
use crate::settings::{OnFinish, Requested};
use crate::state::{RunDir, RunLock};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose stories to merge.
    #[arg(value_name = "CHANGE")]
    pub change: String,
    /// The remote the stories' branches were pushed to: the change's run
    /// is taken up from it (when it holds one), and each branch
    /// ralph/<CHANGE>.story-<ID> whose run finished its story is merged.
    #[arg(long, value_name = "REMOTE")]
    pub from: String,
    /// Then push ralph/<CHANGE> with the run's record to the remote.
    #[arg(long)]
    pub push: bool,
    /// With --push: the remote to push to [default: the --from remote].
    #[arg(long, value_name = "NAME", requires = "push")]
    pub remote: Option<String>,
    #[command(flatten)]
    pub agent: AgentFlags,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let mut repo = Repo::open(&crate::commands::current_dir()?)?;
    let change = ChangeName::parse(&args.change)?;
    crate::state::check_run_name(change.as_str())?;
    let gathered = crate::remote::story_merge::gather(&mut repo, &change, &args.from)?;
    if let Some((taken, _)) = &gathered.taken {
        ui::note(&ui::travel::taken_up(&change, taken));
    }
    let workdir = repo.workdir().to_owned();
    let merged = merge_here(repo, &change, &args, gathered.done);
    if let Some((_, lease)) = gathered.taken
        && let Ok(repo) = Repo::open_for_recovery(&workdir)
    {
        crate::remote::lease::release(&repo, &change, &args.from, lease);
    }
    let report = merged?;
    ui::note(&ui::travel::merged(&change, &report, &gathered.unfinished));
    if args.push {
        let repo = Repo::open_for_recovery(&workdir)?;
        let remote = args.remote.clone().unwrap_or_else(|| args.from.clone());
        let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
        let again = format!("git ralph merge {change} --from {} --push", args.from);
        let to = crate::run::ending::handoff::PushTo {
            remote: &remote,
            again: &again,
        };
        let pushed = crate::run::ending::handoff::push_run_to(&repo, &change, &run_dir, to)
            .map_err(crate::run::ending::EndingError::from)?;
        ui::note(&format!(
            "pushed {} ({}) with the run's record to '{}'",
            pushed.branch,
            pushed.commit.to_hex_with_len(12),
            pushed.remote
        ));
    }
    Ok(match report.sent_back.is_empty() {
        true => Exit::Success.code(),
        false => Exit::MaxRetries.code(),
    })
}

/// Open the change's run here (taken up, resumed, or begun) under its
/// lock, and merge `branches` onto its branch.
fn merge_here(
    mut repo: Repo,
    change: &ChangeName,
    args: &Args,
    branches: Vec<StoryBranch>,
) -> Result<MergeReport, CommandError> {
    let lock = RunLock::acquire(&crate::commands::lock_path(&repo), change.as_str())?;
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    let _prepared = run_dir.prepare()?;
    let requested = Requested {
        cwd: crate::commands::current_dir()?,
        on_finish: Some(OnFinish::Keep),
        ..args.agent.requested()
    };
    let session = Session::open(&mut repo, change, &requested, None)?;
    let report = merge_all(repo, run_dir, session, branches)?;
    drop(lock);
    Ok(report)
}
