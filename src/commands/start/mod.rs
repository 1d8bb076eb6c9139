//! `git ralph start <change>`: the command line of a run. It turns the flags
//! into a [`Requested`], opens the run's [`Session`], drives it with a view
//! and the `q` key, and offers keep or cleanup when the loop ends. The
//! decisions live in [`crate::run`] and [`crate::settings`].

use std::process::ExitCode;

use tokio::sync::mpsc;

use crate::agent::AgentSpec;
use crate::exit::{CommandError, Exit};
use crate::git::{ChangeName, Repo};
use crate::run::{Ending, Session, drive};
use crate::state::{RunDir, RunLock, StopReason};
use crate::ui::tui::RunScreen;
use crate::ui::{self, KeyListener, Renderer};

mod args;
mod serve_beside;
mod story;
pub use args::Args;

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = Repo::open(&crate::commands::current_dir()?)?;
    if args.dry_run {
        let change = ChangeName::parse(&args.change)?;
        crate::state::check_run_name(change.as_str())?;
        let plan = crate::run::plan::plan(&repo, &change, &args.requested()?)?;
        if args.json {
            ui::print_json(&plan)?;
        } else {
            ui::preview::print(&plan);
        }
        return Ok(Exit::Success.code());
    }
    if args.story.is_some() {
        return story::run(repo, args);
    }
    let Some(remote) = args.from.clone() else {
        return Ok(start(repo, args)?.exit().code());
    };
    let mut repo = repo;
    let change = ChangeName::parse(&args.change)?;
    crate::state::check_run_name(change.as_str())?;
    let (taken, lease) = crate::remote::take_up(&mut repo, &change, &remote)?;
    ui::note(&ui::travel::taken_up(&change, &taken));
    let workdir = repo.workdir().to_owned();
    let started = start(repo, args);
    // The lease goes back however the run ended; one that cannot expires.
    if let Ok(repo) = Repo::open_for_recovery(&workdir)
        && !crate::remote::lease::release(&repo, &change, &remote, lease)
    {
        ui::warn(&format!(
            "could not give the lease of '{change}' on '{remote}' back; it expires on its own"
        ));
    }
    Ok(started?.exit().code())
}

/// How a start that ran its loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// The loop ended, was stopped, or was finished; with this status.
    Ended(Exit),
    /// The user force-quit: the agent was killed mid-attempt.
    ForceQuit,
}

impl Started {
    pub fn exit(self) -> Exit {
        match self {
            Started::Ended(exit) => exit,
            Started::ForceQuit => Exit::Interrupted,
        }
    }
}

/// Start or resume a run in `repo`: what `start` does once the flags are
/// read, and what R on the preview screen does.
pub fn start(repo: Repo, args: Args) -> Result<Started, CommandError> {
    let ralph_dir = crate::state::RalphDirBefore::note(&repo.ralph_dir());
    let result = run_in(repo, args, None);
    if result.is_err() {
        // A refused start leaves no trace: the lock was all it put there.
        ralph_dir.leave_as_found();
    }
    result
}

/// Start or resume in an already-open repository; `agent` replaces the
/// configured agent (the demo's scripted one).
pub fn run_in(
    mut repo: Repo,
    args: Args,
    agent: Option<AgentSpec>,
) -> Result<Started, CommandError> {
    let change = args.run_name()?;
    let requested = args.requested()?;
    // The lock comes before anything else is written, and the run's
    // directory is shown writable before the branch moves.
    let lock = RunLock::acquire(&crate::commands::lock_path(&repo), change.as_str())?;
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    let _prepared = run_dir.prepare()?;
    crate::commands::warn_dead_loop(&repo, &lock, Some(&run_dir.dir))?;
    let session = Session::open(&mut repo, &change, &requested, agent)?;
    for notice in &session.notices {
        ui::note(notice);
    }
    let on_finish = session.state.settings().on_finish;
    let workdir = repo.workdir().to_owned();
    // Started once the run is recorded, so that it has a page to show.
    let server = args
        .serve
        .and_then(|bind| serve_beside::start(&workdir, &change, bind));
    let end = match drive_shown(repo, &args, session, &run_dir, server.as_ref())? {
        Ending::Finished(end) => end,
        Ending::ForceQuit => {
            drop(lock);
            ui::warn(&format!(
                "force-quit: the agent was killed mid-attempt; 'git ralph start {change}' resumes (the attempt's work is preserved first), 'git ralph abort {change}' restores the pre-start state"
            ));
            return Ok(Started::ForceQuit);
        }
        Ending::Terminated(end) => {
            // `git ralph abort` asked us to stop; it takes over from here.
            drop(lock);
            return Ok(Started::Ended(Exit::for_reason(end.reason)));
        }
    };
    let ended = after_the_loop(end, &change, &run_dir, &workdir, on_finish);
    drop(lock);
    ended
}

/// Drive the session to its end, shown on the loop screen or as lines,
/// with the `q` key of either stopping it.
fn drive_shown(
    repo: Repo,
    args: &Args,
    session: Session,
    run_dir: &RunDir,
    server: Option<&serve_beside::Beside>,
) -> Result<Ending, CommandError> {
    let (controls_tx, controls_rx) = mpsc::unbounded_channel();
    if use_screen(&repo, args)? {
        let (view, screen) = RunScreen::open(
            &session.state,
            repo.workdir().to_owned(),
            run_dir.clone(),
            controls_tx,
            server.map(|server| format!("served at {}", server.url)),
        );
        let ending = drive(
            repo,
            run_dir.clone(),
            session,
            Box::new(view),
            Some(controls_rx),
            super::run_errors::run_hint,
        );
        // A run that ended on its own stays on screen to be browsed until
        // q; one stopped from outside or force-quit leaves at once.
        let stay =
            matches!(&ending, Ok(Ending::Finished(end)) if end.reason != StopReason::Stopped);
        screen.finish(stay)?;
        return Ok(ending?);
    }
    let keys = if args.json {
        None
    } else {
        KeyListener::start(controls_tx)
    };
    let notify = session.state.settings().notify;
    let ending = drive(
        repo,
        run_dir.clone(),
        session,
        Box::new(Renderer::new(args.json).with_bell(notify)),
        keys.is_some().then_some(controls_rx),
        super::run_errors::run_hint,
    );
    // The terminal is given back before anything else is printed or read.
    drop(keys);
    Ok(ending?)
}

/// The loop ended on its own: say why when it was a bug, an agent that
/// could not work, or a stop; otherwise keep, clean up or ask.
fn after_the_loop(
    end: crate::run::LoopEnd,
    change: &ChangeName,
    run_dir: &RunDir,
    workdir: &std::path::Path,
    on_finish: crate::settings::OnFinish,
) -> Result<Started, CommandError> {
    if let Some(bug) = &end.bug {
        return Err(CommandError::bug(bug, Some(after_bug(change, &end.state))));
    }
    if let Some(err) = end.error {
        // The agent could not work at all: stopped, resumable once fixed.
        return Err(err.into());
    }
    if end.internal {
        // git-ralph's own error: nothing more is written until it is mended.
        ui::note(&format!(
            "stopped by git-ralph's own error; the attempt it cut short is set aside when the run resumes.\n  resume:  git ralph start {change}\n  abort:   git ralph abort {change}"
        ));
        return Ok(Started::Ended(Exit::Internal));
    }
    let exit = Exit::for_reason(end.reason);
    if left_stopped(&end, change) {
        return Ok(Started::Ended(exit));
    }
    let repo = Repo::open_for_recovery(workdir)?;
    let after = crate::run::ending::after_loop(
        repo,
        change,
        run_dir,
        end.state,
        on_finish,
        &mut ui::ending::Console,
    )?;
    ui::ending::after_loop(&after);
    Ok(Started::Ended(exit))
}

/// A run the user stopped, or whose stories left all wait for an
/// answer, is left stopped whatever --on-finish says; says how to go on.
fn left_stopped(end: &crate::run::LoopEnd, change: &ChangeName) -> bool {
    let how = match end.reason {
        StopReason::Stopped => format!(
            "stopped; completed stories are kept on {}.\n  resume:  git ralph start {change}",
            end.state.branch()
        ),
        StopReason::Questions => {
            let answer: String = end
                .state
                .stories()
                .iter()
                .filter(|story| !story.done && crate::state::answers::waiting(story, &[]).is_some())
                .map(|story| {
                    format!(
                        "\n  answer:  git ralph answer {change} {} \"...\"",
                        story.id
                    )
                })
                .collect();
            format!(
                "{}{answer}\n  resume:  git ralph start {change}",
                end.message
            )
        }
        _ => return false,
    };
    ui::note(&format!(
        "{how}\n  finish:  git ralph finish {change} --keep|--cleanup\n  abort:   git ralph abort {change}"
    ));
    true
}

/// What became of a run a bug cut short, and how to go on.
fn after_bug(change: &ChangeName, state: &crate::state::RunState) -> String {
    let kept = state
        .stories()
        .iter()
        .flat_map(|story| &story.attempts)
        .filter(|attempt| attempt.outcome == crate::state::AttemptOutcome::Interrupted)
        .filter_map(|attempt| attempt.preserved.as_deref())
        .next_back()
        .map(|refname| format!(" (the attempt's work is kept at {refname})"))
        .unwrap_or_default();
    format!(
        "the run is stopped as after Ctrl-C and nothing is lost{kept}: 'git ralph start {change}' resumes it, 'git ralph abort {change}' restores the pre-start state"
    )
}

/// The loop screen, or the line view: the screen on a terminal unless
/// `--plain`, `--json` or `ralph.ui = plain` says otherwise.
fn use_screen(repo: &Repo, args: &Args) -> Result<bool, CommandError> {
    use std::io::IsTerminal;
    if args.json || args.plain {
        return Ok(false);
    }
    if crate::config::ui(repo)? == Some(crate::config::UiChoice::Plain) {
        return Ok(false);
    }
    Ok(std::io::stdin().is_terminal() && std::io::stdout().is_terminal())
}
