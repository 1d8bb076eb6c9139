//! `git ralph finish [<change>] (--keep | --cleanup | --push | --pr)`: close
//! a stopped or finished loop. Keep stays on `ralph/<change>`; cleanup goes
//! back to the original branch with all the work as uncommitted changes;
//! push keeps and pushes the branch; pr also opens (or updates) a pull
//! request. What that takes is [`crate::run::ending`]'s to decide.

use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::run::ending::{self, FinishChoice};
use crate::settings::Configured;
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
#[command(group = clap::ArgGroup::new("how").required(true).args(["keep", "cleanup", "push", "pr"]))]
#[command(group = clap::ArgGroup::new("handoff").args(["push", "pr"]))]
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
    /// Keep, then push ralph/<change> to the remote. The push runs the git
    /// binary, never prompting; if it fails, the run is kept all the same
    /// (a remote that is not there is refused before anything is done).
    #[arg(long)]
    pub push: bool,
    /// Keep, push, then open a pull request with gh (glab for a GitLab
    /// remote), its description written from the run's record, or update
    /// the one already open for the branch; its address is printed on
    /// stdout.
    #[arg(long)]
    pub pr: bool,
    /// The remote to push to [default: the upstream remote of the branch
    /// the run started from, else origin; config: ralph.remote].
    #[arg(long, value_name = "NAME", requires = "handoff")]
    pub remote: Option<String>,
    /// Open the pull request as a draft [config: ralph.prDraft].
    #[arg(long, requires = "pr")]
    pub draft: bool,
    /// The branch the pull request asks to merge into [default: the branch
    /// the run started from; config: ralph.prBase].
    #[arg(long, value_name = "BRANCH", requires = "pr")]
    pub base: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let (repo, change, run_dir) = super::open_run(args.change.as_deref())?;
    if args.push || args.pr {
        let mut handoff = Configured::of(&repo).handoff(args.pr)?;
        if args.remote.is_some() {
            handoff.remote = args.remote;
        }
        if let Some(review) = handoff.review.as_mut() {
            review.draft |= args.draft;
            if args.base.is_some() {
                review.base = args.base;
            }
        }
        let done = ending::hand_off(repo, &change, &run_dir, &handoff, &mut ui::ending::Console)?;
        ui::ending::handed_off(&done, true);
        return Ok(Exit::Success.code());
    }
    let choice = if args.cleanup {
        FinishChoice::Cleanup
    } else {
        FinishChoice::Keep
    };
    let finished = ending::finish(repo, &change, &run_dir, choice, &mut ui::ending::Console)?;
    ui::ending::finished(&finished);
    Ok(Exit::Success.code())
}
