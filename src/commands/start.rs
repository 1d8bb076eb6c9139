//! `git ralph start <change>`: the command line of a run. It turns the flags
//! into a [`Requested`], opens the run's [`Session`], drives it with a view
//! and the `q` key, and offers keep or cleanup when the loop ends. The
//! decisions live in [`crate::run`] and [`crate::settings`].

use std::path::PathBuf;
use std::process::ExitCode;

use tokio::sync::mpsc;

use crate::exit::{CommandError, Exit};
use crate::git::{ChangeName, Repo};
use crate::presets::AgentSpec;
use crate::run::{Ending, Session, drive};
use crate::settings::{OnFinish, Requested};
use crate::state::{RunDir, RunLock, RunState, StopReason};
use crate::stories::SourceKind;
use crate::ui::tui::RunScreen;
use crate::ui::{self, EndChoice, FinishChoice, KeyListener, Renderer};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// The change to work on: the OpenSpec change `openspec/changes/<CHANGE>/`,
    /// or the run's name with --prd or --tasks.
    #[arg(value_name = "CHANGE")]
    pub change: String,
    /// Agent preset to run [default: claude; config: ralph.agent].
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Run this command through `sh -c` instead of a preset, with the prompt
    /// on stdin [config: ralph.agentCommand].
    #[arg(long, value_name = "CMD", conflicts_with = "agent")]
    pub agent_command: Option<String>,
    /// Model passed to the agent's --model flag.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Retries per story after its first attempt [default: 3; config: ralph.maxRetries].
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// Seconds any external command may run [default: 30; config: ralph.commandTimeout].
    #[arg(long, value_name = "SECS")]
    pub command_timeout: Option<u64>,
    /// Seconds one agent attempt may run [default: 3600; config: ralph.agentTimeout].
    #[arg(long, value_name = "SECS")]
    pub agent_timeout: Option<u64>,
    /// What to do when the loop ends [default: ask; config: ralph.onFinish].
    #[arg(long, value_enum, value_name = "WHAT")]
    pub on_finish: Option<OnFinishArg>,
    /// Print events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// The one-line progress view instead of the loop screen, even on a
    /// terminal [config: ralph.ui = plain].
    #[arg(long)]
    pub plain: bool,
    /// Prompt template to use instead of `<git-dir>/ralph/prompt.md` or the built-in one.
    #[arg(long, value_name = "FILE")]
    pub prompt_template: Option<PathBuf>,
    /// Where the stories come from [default: detected].
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub source: Option<SourceArg>,
    /// A prd.json file of user stories (implies --source prd).
    #[arg(long, value_name = "FILE")]
    pub prd: Option<PathBuf>,
    /// A markdown checklist file (implies --source markdown).
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// Prompt mode: repeat this prompt, a fresh agent each time, until the
    /// contract passes; no stories.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "prd", "tasks"])]
    pub prompt: Option<PathBuf>,
    /// One attempt per story, no checks, no retries: the plain flow.
    #[arg(long)]
    pub once: bool,
    /// Show the stories as read, any warnings, and the first prompt exactly
    /// as the agent would receive it; change nothing (with --json: one object).
    #[arg(long, conflicts_with = "prompt")]
    pub dry_run: bool,
    /// Prompt mode: revert an iteration the contract does not accept,
    /// instead of keeping it as an iteration checkpoint to build on.
    #[arg(long, requires = "prompt")]
    pub revert_failed: bool,
    /// A check every story must pass: a command run through `sh -c` in the
    /// worktree (repeatable) [config: ralph.check].
    #[arg(long = "check", value_name = "CMD")]
    pub checks: Vec<String>,
    /// The promise token for string matching, or `none` to rely on checks
    /// alone [default: COMPLETE; config: ralph.promise].
    #[arg(long, value_name = "TOKEN")]
    pub promise: Option<String>,
    /// Attempts across the whole run [config: ralph.maxIterations].
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Consecutive attempts that change nothing before the run stops; 0 is
    /// no limit [default: 3; config: ralph.noProgressLimit].
    #[arg(long, value_name = "N")]
    pub no_progress_limit: Option<u32>,
    /// Total time the run may take, e.g. 90m, 2h, 1h30m [config: ralph.maxRuntime].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub max_runtime: Option<u64>,
    /// Money the agents may spend, in USD, summed from their reports [config: ralph.maxCost].
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Tokens the agents may use, summed from their reports [config: ralph.maxTokens].
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// The most the run waits out usage limits, in total [default: 6h; config: ralph.maxRateLimitWait].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub max_rate_limit_wait: Option<u64>,
    /// Refuse a claim of completion whose only change is ticking boxes in
    /// the tracking file; by default it is accepted and flagged
    /// [config: ralph.requireChange; per story: require_change in ralph.toml].
    #[arg(long)]
    pub require_change: bool,
    /// No learnings file: prompts neither show nor ask for one
    /// [config: ralph.learnings = false].
    #[arg(long)]
    pub no_learnings: bool,
}

/// `--on-finish`: what to do when a loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnFinishArg {
    /// Ask with a menu on a terminal; without one, keep and say how to finish.
    Ask,
    /// Stay on `ralph/<change>`.
    Keep,
    /// Back to the original branch with all the work uncommitted.
    Cleanup,
}

impl From<OnFinishArg> for OnFinish {
    fn from(arg: OnFinishArg) -> Self {
        match arg {
            OnFinishArg::Ask => OnFinish::Ask,
            OnFinishArg::Keep => OnFinish::Keep,
            OnFinishArg::Cleanup => OnFinish::Cleanup,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceArg {
    Openspec,
    Prd,
    Markdown,
}

impl From<SourceArg> for SourceKind {
    fn from(arg: SourceArg) -> Self {
        match arg {
            SourceArg::Openspec => SourceKind::OpenSpec,
            SourceArg::Prd => SourceKind::Prd,
            SourceArg::Markdown => SourceKind::Markdown,
        }
    }
}

impl Args {
    /// The flags as plain values for [`crate::settings::resolve`].
    fn requested(&self) -> Result<Requested, CommandError> {
        Ok(Requested {
            cwd: super::current_dir()?,
            agent: self.agent.clone(),
            agent_command: self.agent_command.clone(),
            model: self.model.clone(),
            max_retries: self.max_retries,
            command_timeout: self.command_timeout,
            agent_timeout: self.agent_timeout,
            on_finish: self.on_finish.map(OnFinish::from),
            prompt_template: self.prompt_template.clone(),
            source: self.source.map(SourceKind::from),
            prd: self.prd.clone(),
            tasks: self.tasks.clone(),
            prompt: self.prompt.clone(),
            once: self.once,
            revert_failed: self.revert_failed,
            checks: self.checks.clone(),
            promise: self.promise.clone(),
            max_iterations: self.max_iterations,
            no_progress_limit: self.no_progress_limit,
            max_runtime: self.max_runtime,
            max_cost: self.max_cost,
            max_tokens: self.max_tokens,
            max_rate_limit_wait: self.max_rate_limit_wait,
            require_change: self.require_change,
            no_learnings: self.no_learnings,
        })
    }
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = Repo::open(&super::current_dir()?)?;
    if args.dry_run {
        let change = ChangeName::parse(&args.change)?;
        let preview = crate::run::session::preview(&repo, &change, &args.requested()?)?;
        if args.json {
            ui::print_json(&preview)?;
        } else {
            ui::preview::print(&preview);
        }
        return Ok(Exit::Success.code());
    }
    let ralph_dir = repo.ralph_dir();
    let had_ralph_dir = ralph_dir.exists();
    let result = run_in(repo, args, None);
    if result.is_err() && !had_ralph_dir {
        // A refused start leaves no trace: the lock was all it put there,
        // and `remove_dir` only removes the directory if it is empty.
        let _ = std::fs::remove_dir(&ralph_dir);
    }
    result
}

/// Start or resume in an already-open repository; `agent` replaces the
/// configured agent (the demo's scripted one).
pub fn run_in(
    mut repo: Repo,
    args: Args,
    agent: Option<AgentSpec>,
) -> Result<ExitCode, CommandError> {
    let change = ChangeName::parse(&args.change)?;
    let requested = args.requested()?;
    let lock = RunLock::acquire(&super::lock_path(&repo), change.as_str())?;
    if let Some((pid, other)) = &lock.took_over_from {
        ui::warn(&format!(
            "took over the lock of a loop that is no longer running (pid {pid}, change '{other}')"
        ));
    }
    let session = Session::open(&mut repo, &change, &requested, agent)?;
    for notice in &session.notices {
        ui::note(notice);
    }
    let on_finish = session.state.settings.on_finish;
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    let workdir = repo.workdir().to_owned();

    let (controls_tx, controls_rx) = mpsc::unbounded_channel();
    let ending = if use_screen(&repo, &args)? {
        let (view, screen) = RunScreen::open(
            &session.state,
            workdir.clone(),
            run_dir.clone(),
            controls_tx,
        );
        let ending = drive(
            repo,
            run_dir.clone(),
            session,
            Box::new(view),
            Some(controls_rx),
        );
        // A run that ended on its own stays on screen to be browsed until
        // q; one stopped from outside or force-quit leaves at once.
        let stay =
            matches!(&ending, Ok(Ending::Finished(end)) if end.reason != StopReason::Stopped);
        screen.finish(stay)?;
        ending
    } else {
        let keys = if args.json {
            None
        } else {
            KeyListener::start(controls_tx)
        };
        let ending = drive(
            repo,
            run_dir.clone(),
            session,
            Box::new(Renderer::new(args.json)),
            keys.is_some().then_some(controls_rx),
        );
        // The terminal is given back before anything else is printed or read.
        drop(keys);
        ending
    };
    let end = match ending? {
        Ending::Finished(end) => end,
        Ending::ForceQuit => {
            drop(lock);
            ui::warn(&format!(
                "force-quit: the agent was killed mid-attempt; 'git ralph start {change}' resumes (the attempt's work is preserved first), 'git ralph abort {change}' restores the pre-start state"
            ));
            return Ok(Exit::Interrupted.code());
        }
        Ending::Terminated(end) => {
            // `git ralph abort` asked us to stop; it takes over from here.
            drop(lock);
            return Ok(Exit::for_reason(end.reason).code());
        }
    };
    let exit = Exit::for_reason(end.reason);
    if end.reason == StopReason::Stopped {
        ui::note(&format!(
            "stopped; completed stories are kept on {}.\n  resume:  git ralph start {change}\n  finish:  git ralph finish {change} --keep|--cleanup\n  abort:   git ralph abort {change}",
            end.state.branch
        ));
        return Ok(exit.code());
    }
    let repo = Repo::open_for_recovery(&workdir)?;
    finish_after_loop(repo, &change, &run_dir, end.state, on_finish)?;
    drop(lock);
    Ok(exit.code())
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

/// The loop has ended on its own: keep, clean up, or ask (and for a run
/// that did not complete, also leave it stopped or abort).
fn finish_after_loop(
    mut repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    mut state: RunState,
    on_finish: OnFinish,
) -> Result<(), CommandError> {
    let completed = state.reason == Some(StopReason::Completed);
    let choice = match on_finish {
        OnFinish::Keep => Some(EndChoice::Finish(FinishChoice::Keep)),
        OnFinish::Cleanup => Some(EndChoice::Finish(FinishChoice::Cleanup)),
        OnFinish::Ask => {
            ui::ask_finish(&state.branch, &state.original.head.reflog_name(), completed)
        }
    };
    match choice {
        Some(EndChoice::Finish(choice)) => {
            super::finish::apply(&mut repo, change, run_dir, &mut state, choice)
        }
        Some(EndChoice::Abort) => super::abort::apply(&mut repo, change, run_dir, &mut state),
        Some(EndChoice::LeaveStopped) | None => {
            let mut text = format!(
                "the run stays on {}. Finish it with:\n  git ralph finish {change} --cleanup   # back to {}, all work uncommitted\n  git ralph finish {change} --keep      # stay on {}\n  git ralph abort {change}              # back to exactly where you started",
                state.branch,
                state.original.head.reflog_name(),
                state.branch
            );
            if state.reason == Some(StopReason::MaxRetries) {
                text.push_str(&format!(
                    "\nor resume it with more retries:\n  git ralph start {change} --max-retries {}",
                    state.settings.max_retries + 2
                ));
            } else if !completed {
                text.push_str(&format!("\nor resume it:\n  git ralph start {change}"));
            }
            ui::note(&text);
            Ok(())
        }
    }
}
