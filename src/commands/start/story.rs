//! `git ralph start <change> --story ID [--from REMOTE] [--push]`: one
//! story of a change, run alone in a run of its own (a CI job of a
//! matrix). What may run is decided in [`crate::remote::story_job`]
//! before anything is written; here the story's run is started as any
//! run is, then pushed, and the lease given back however it ended.

use std::process::ExitCode;

use crate::exit::CommandError;
use crate::git::{ChangeName, Repo};
use crate::remote::lease;
use crate::remote::story_job::{self, StoryJob};
use crate::state::RunDir;
use crate::ui;

use super::{Args, start};

pub fn run(mut repo: Repo, mut args: Args) -> Result<ExitCode, CommandError> {
    let change = ChangeName::parse(&args.change)?;
    crate::state::check_run_name(change.as_str())?;
    let story = args.story.clone().unwrap_or_default();
    let job = StoryJob::of(&change, &story)?;
    // A story's run ends kept, unless told otherwise: nobody is asked.
    if args.on_finish.is_none() {
        args.on_finish = Some(crate::commands::values::OnFinishArg::Keep);
    }
    let requested = args.requested()?;
    let from = args.from.take();
    let (ready, lease) = story_job::prepare(&mut repo, &job, &requested, from.as_deref())?;
    ui::note(&ui::travel::story_ready(&job, &ready));
    let workdir = repo.workdir().to_owned();
    let push_to = args
        .push
        .then(|| push_remote(&repo, &args, from.as_deref()));
    let started = start(repo, args);
    let pushed = match (&started, push_to) {
        (Ok(_), Some(remote)) => Some(push(&workdir, &job, &remote)),
        _ => None,
    };
    if let (Some(remote), Some(lease)) = (from.as_deref(), lease)
        && let Ok(repo) = Repo::open_for_recovery(&workdir)
        && !lease::release(&repo, &job.name, remote, lease)
    {
        ui::warn(&format!(
            "could not give the lease of story {} on '{remote}' back; it expires on its own",
            job.story
        ));
    }
    let exit = started?.exit();
    if let Some(pushed) = pushed {
        pushed?;
    }
    Ok(exit.code())
}

/// Where `--push` goes: `--remote`, else the remote the story came from,
/// else `ralph.remote`, else `origin`.
fn push_remote(repo: &Repo, args: &Args, from: Option<&str>) -> String {
    args.remote
        .clone()
        .or_else(|| from.map(str::to_owned))
        .or_else(|| repo.config_string("ralph.remote"))
        .unwrap_or_else(|| "origin".to_owned())
}

/// Push the story's branch with its record, in one atomic push.
fn push(workdir: &std::path::Path, job: &StoryJob, remote: &str) -> Result<(), CommandError> {
    let repo = Repo::open_for_recovery(workdir)?;
    let run_dir = RunDir::new(&repo.ralph_dir(), job.name.as_str());
    let again = format!(
        "git ralph start {} --story {} --push --remote {remote}",
        job.change, job.story
    );
    let to = crate::run::ending::handoff::PushTo {
        remote,
        again: &again,
    };
    let pushed = crate::run::ending::handoff::push_run_to(&repo, &job.name, &run_dir, to)
        .map_err(crate::run::ending::EndingError::from)?;
    ui::note(&ui::travel::story_pushed(job, &pushed));
    Ok(())
}
