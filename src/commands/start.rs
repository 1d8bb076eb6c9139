//! `git ralph start <change>`: begin a run (or resume a stopped one), drive
//! the loop with a live view, handle Ctrl-C / `q` / SIGTERM, and offer keep or
//! cleanup when the loop ends.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::config::{self, OnFinish};
use crate::exit::{CommandError, ErrorKind, Exit};
use crate::git::{ChangeName, HeadState, Repo};
use crate::presets::{self, AgentSpec};
use crate::prompt;
use crate::state::{RunDir, RunLock, RunState, RunStatus, Settings, StopReason, now};
use crate::stories::{self, SourceKind, StorySource};
use crate::story_loop::{LoopEnd, LoopSettings, StoryLoop};
use crate::ui::{self, FinishChoice, KeyListener, Renderer};

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
    pub on_finish: Option<OnFinish>,
    /// Print events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
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

/// An agent the demo or tests inject in place of a preset.
pub struct Overrides {
    pub agent: Option<AgentSpec>,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = Repo::open(&super::current_dir()?)?;
    run_in(repo, args, Overrides { agent: None })
}

/// Start or resume in an already-open repository.
pub fn run_in(mut repo: Repo, args: Args, overrides: Overrides) -> Result<ExitCode, CommandError> {
    let change = ChangeName::parse(&args.change)?;
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    let lock = RunLock::acquire(&super::lock_path(&repo), change.as_str())?;
    if let Some((pid, other)) = &lock.took_over_from {
        ui::warn(&format!(
            "took over the lock of a loop that is no longer running (pid {pid}, change '{other}')"
        ));
    }

    let previous = if run_dir.exists() {
        Some(run_dir.load()?)
    } else {
        None
    };
    let resumable = previous
        .as_ref()
        .filter(|state| matches!(state.status, RunStatus::Running | RunStatus::Stopped));
    let (state, resumed) = match resumable {
        Some(state) => (prepare_resume(&repo, &change, state.clone(), &args)?, true),
        None => {
            if previous.is_some() {
                archive(&run_dir)?;
            }
            (
                begin_fresh(&mut repo, &change, &run_dir, &args, &overrides)?,
                false,
            )
        }
    };
    let settings = loop_settings(&repo, &change, &state.settings, &args, overrides)?;
    let source = source_for(&repo, &change, &state.settings)?;
    let on_finish = OnFinish::parse(&state.settings.on_finish).unwrap_or(OnFinish::Ask);
    let json = args.json;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CommandError::from_error(ErrorKind::Internal, &err))?;
    let workdir = repo.workdir().to_owned();
    let ending = runtime.block_on(drive(
        repo,
        source,
        run_dir.clone(),
        state,
        settings,
        json,
        resumed,
    ))?;
    drop(runtime);

    let end = match ending {
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

/// The loop has ended on its own: keep, clean up, or ask.
fn finish_after_loop(
    mut repo: Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    mut state: RunState,
    on_finish: OnFinish,
) -> Result<(), CommandError> {
    let choice = match on_finish {
        OnFinish::Keep => Some(FinishChoice::Keep),
        OnFinish::Cleanup => Some(FinishChoice::Cleanup),
        OnFinish::Ask => ui::ask_finish(&state.branch, &state.original.head.reflog_name()),
    };
    match choice {
        None => {
            ui::note(&format!(
                "the run stays on {}. Finish it with:\n  git ralph finish {change} --cleanup   # back to {}, all work uncommitted\n  git ralph finish {change} --keep      # stay on {}",
                state.branch,
                state.original.head.reflog_name(),
                state.branch
            ));
            Ok(())
        }
        Some(choice) => super::finish::apply(&mut repo, change, run_dir, &mut state, choice),
    }
}

/// A new run: read the stories (refusing before anything is touched), then
/// begin the branch and record the state.
fn begin_fresh(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    args: &Args,
    overrides: &Overrides,
) -> Result<RunState, CommandError> {
    let mut settings = resolve_settings(repo, args, None)?;
    let source = source_for(repo, change, &settings)?;
    // Status states the source that was found, not "auto".
    settings.source = source.kind().as_str().to_owned();
    if let Some(agent) = &overrides.agent {
        settings.agent = agent.name.clone();
    }
    let stories = source.load()?;
    if !stories.iter().any(|story| !story.is_complete()) {
        return Err(CommandError::user(format!(
            "every story of '{change}' is already done ({} stories in {})",
            stories.len(),
            source.tracking_file().display()
        ))
        .hint("untick a box, or add a story, to give the agent work"));
    }
    prompt::validate(&template_text(repo, &settings)?)?;
    if overrides.agent.is_none() {
        check_agent_installed(&agent_spec(repo, &settings)?)?;
    }

    let begin = repo.begin(change)?;
    let state = RunState {
        version: 1,
        change: change.to_string(),
        branch: change.branch_short(),
        status: RunStatus::Running,
        reason: None,
        original: begin.original,
        initial_commit: begin.initial.commit,
        checkpoint: begin.initial.commit,
        stories: Vec::new(),
        current_story: None,
        current_attempt: 0,
        last_failure: None,
        totals: Default::default(),
        settings,
        started_at: now(),
        updated_at: now(),
        pid: Some(std::process::id()),
        finished_with: None,
    };
    run_dir.save(&state)?;
    Ok(state)
}

/// A stopped or killed run: HEAD must still be on its branch.
fn prepare_resume(
    repo: &Repo,
    change: &ChangeName,
    mut state: RunState,
    args: &Args,
) -> Result<RunState, CommandError> {
    match repo.head()? {
        HeadState::Branch { name, .. } if name == change.branch_ref() => {}
        other => {
            return Err(CommandError::user(format!(
                "the run '{change}' is stopped, but HEAD is on {}, not on {}",
                other.describe(),
                change.branch_short()
            ))
            .hint(format!(
                "switch back with 'git switch {}' to resume, or 'git ralph abort {change}' to restore the pre-start state",
                change.branch_short()
            )));
        }
    }
    state.settings = resolve_settings(repo, args, Some(&state.settings))?;
    Ok(state)
}

/// Settings for this start: flags, then (on resume) the run's own settings,
/// then git config, then defaults.
fn resolve_settings(
    repo: &Repo,
    args: &Args,
    stored: Option<&Settings>,
) -> Result<Settings, CommandError> {
    let integer = |key: &str| config::integer(repo, key);
    let (agent, agent_command) = match (&args.agent, &args.agent_command, stored) {
        (Some(agent), _, _) => (agent.clone(), None),
        (None, Some(command), _) => ("command".to_owned(), Some(command.clone())),
        (None, None, Some(stored)) => (stored.agent.clone(), stored.agent_command.clone()),
        (None, None, None) => match repo.config_string("ralph.agentCommand") {
            Some(command) => ("command".to_owned(), Some(command)),
            None => (
                repo.config_string("ralph.agent")
                    .unwrap_or_else(|| config::DEFAULT_AGENT.to_owned()),
                None,
            ),
        },
    };
    let max_retries = match (args.max_retries, stored) {
        (Some(n), _) => n,
        (None, Some(stored)) => stored.max_retries,
        (None, None) => match integer("ralph.maxRetries")? {
            Some(n) => {
                u32::try_from(n).map_err(|_| CommandError::user("ralph.maxRetries is too large"))?
            }
            None => config::DEFAULT_MAX_RETRIES,
        },
    };
    let command_timeout = match (args.command_timeout, stored) {
        (Some(n), _) => n,
        (None, Some(stored)) => stored.command_timeout_secs,
        (None, None) => integer("ralph.commandTimeout")?.unwrap_or(config::DEFAULT_COMMAND_TIMEOUT),
    };
    let agent_timeout = match (args.agent_timeout, stored) {
        (Some(n), _) => n,
        (None, Some(stored)) => stored.agent_timeout_secs,
        (None, None) => integer("ralph.agentTimeout")?.unwrap_or(config::DEFAULT_AGENT_TIMEOUT),
    };
    let on_finish = match (args.on_finish, stored) {
        (Some(choice), _) => choice.as_str().to_owned(),
        (None, Some(stored)) => stored.on_finish.clone(),
        (None, None) => config::on_finish(repo)?
            .unwrap_or(OnFinish::Ask)
            .as_str()
            .to_owned(),
    };
    if command_timeout == 0 || agent_timeout == 0 {
        return Err(CommandError::usage("timeouts must be at least one second"));
    }
    let source = match (args.source, stored) {
        (Some(kind), _) => SourceKind::from(kind).as_str().to_owned(),
        (None, Some(stored)) => stored.source.clone(),
        (None, None) => "auto".to_owned(),
    };
    let path_arg = |path: &Option<PathBuf>| path.as_ref().map(|p| p.to_string_lossy().into_owned());
    Ok(Settings {
        agent,
        agent_command,
        model: args
            .model
            .clone()
            .or_else(|| stored.and_then(|s| s.model.clone())),
        max_retries,
        command_timeout_secs: command_timeout,
        agent_timeout_secs: agent_timeout,
        on_finish,
        prompt_template: args
            .prompt_template
            .as_ref()
            .map(|p| absolute(p).to_string_lossy().into_owned())
            .or_else(|| stored.and_then(|s| s.prompt_template.clone())),
        source,
        tasks_file: path_arg(&args.tasks).or_else(|| stored.and_then(|s| s.tasks_file.clone())),
        prd_file: path_arg(&args.prd).or_else(|| stored.and_then(|s| s.prd_file.clone())),
    })
}

fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_owned())
}

fn source_for(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
) -> Result<Box<dyn StorySource>, CommandError> {
    let explicit = match settings.source.as_str() {
        "auto" => None,
        other => Some(other.parse::<SourceKind>()?),
    };
    let prd = settings.prd_file.as_deref().map(Path::new);
    let tasks = settings.tasks_file.as_deref().map(Path::new);
    Ok(stories::detect(
        repo.workdir(),
        change.as_str(),
        explicit,
        prd,
        tasks,
    )?)
}

fn agent_spec(repo: &Repo, settings: &Settings) -> Result<AgentSpec, CommandError> {
    match &settings.agent_command {
        Some(command) => Ok(presets::command(command)),
        None => Ok(presets::preset(
            &settings.agent,
            settings.model.as_deref(),
            &config::agent_args(repo, &settings.agent),
        )?),
    }
}

fn check_agent_installed(spec: &AgentSpec) -> Result<(), CommandError> {
    if super::on_path(&spec.program) {
        return Ok(());
    }
    Err(CommandError::user(format!("the agent '{}' is not installed: '{}' is not on PATH", spec.name, spec.program))
        .hint("install it, pick another with --agent (see 'git ralph agents'), or run any CLI with --agent-command '<command>'"))
}

/// The prompt template: `--prompt-template`, `<git-dir>/ralph/prompt.md`, or
/// the built-in one.
fn template_text(repo: &Repo, settings: &Settings) -> Result<String, CommandError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|err| {
            CommandError::user(format!(
                "cannot read the prompt template {}: {err}",
                path.display()
            ))
            .hint("check the path given to --prompt-template")
        })
    };
    if let Some(path) = &settings.prompt_template {
        return read(Path::new(path));
    }
    let custom = repo.ralph_dir().join("prompt.md");
    if custom.is_file() {
        return read(&custom);
    }
    Ok(prompt::DEFAULT_TEMPLATE.to_owned())
}

fn loop_settings(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
    _args: &Args,
    overrides: Overrides,
) -> Result<LoopSettings, CommandError> {
    let agent = match overrides.agent {
        Some(agent) => agent,
        None => agent_spec(repo, settings)?,
    };
    let template = template_text(repo, settings)?;
    prompt::validate(&template)?;
    Ok(LoopSettings {
        change: change.clone(),
        agent,
        max_retries: settings.max_retries,
        agent_timeout: Duration::from_secs(settings.agent_timeout_secs),
        command_timeout: Duration::from_secs(settings.command_timeout_secs),
        template,
        promise_token: crate::agent::DEFAULT_TOKEN.to_owned(),
    })
}

/// Keep a finished or aborted run's files, out of the way of the new one.
fn archive(run_dir: &RunDir) -> Result<(), CommandError> {
    let Some(parent) = run_dir.dir.parent() else {
        return Ok(());
    };
    let name = run_dir
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let target = parent.join("history").join(format!("{name}-{}", now()));
    std::fs::create_dir_all(target.parent().unwrap_or(parent))?;
    std::fs::rename(&run_dir.dir, &target)?;
    Ok(())
}

enum Ending {
    Finished(LoopEnd),
    /// SIGTERM (from `git ralph abort`): stopped gracefully, no finish menu.
    Terminated(LoopEnd),
    /// Three stop requests within three seconds.
    ForceQuit,
}

async fn drive(
    repo: Repo,
    source: Box<dyn StorySource>,
    run_dir: RunDir,
    state: RunState,
    settings: LoopSettings,
    json: bool,
    resumed: bool,
) -> Result<Ending, CommandError> {
    use tokio::signal::unix::{SignalKind, signal};

    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let story_loop = StoryLoop::new(repo, source, run_dir, state, settings, events_tx, stop_rx)?;
    let run = story_loop.run(resumed);
    tokio::pin!(run);

    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (keys_tx, mut keys_rx) = mpsc::unbounded_channel();
    let keys = if json {
        None
    } else {
        KeyListener::start(keys_tx)
    };
    let mut renderer = Renderer::new(json);
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let mut presses: Vec<Instant> = Vec::new();
    let mut stopping_since: Option<Instant> = None;
    let mut hinted = false;
    let mut terminated = false;

    let end = loop {
        let pressed = tokio::select! {
            end = &mut run => break end,
            Some(record) = events_rx.recv() => {
                renderer.render(&record);
                false
            }
            _ = interrupt.recv() => true,
            Some(()) = keys_rx.recv() => true,
            _ = terminate.recv() => {
                terminated = true;
                let _ = stop_tx.send(true);
                stopping_since.get_or_insert_with(Instant::now);
                false
            }
            _ = ticker.tick() => {
                renderer.tick();
                if let Some(since) = stopping_since
                    && !hinted
                    && since.elapsed() >= Duration::from_secs(5)
                {
                    hinted = true;
                    renderer.clear();
                    ui::note("still stopping… press Ctrl-C twice more to force quit");
                }
                false
            }
        };
        if pressed {
            let now = Instant::now();
            presses.retain(|at| now.duration_since(*at) < Duration::from_secs(3));
            presses.push(now);
            if presses.len() >= 3 {
                renderer.clear();
                drop(keys);
                // Dropping the loop kills the agent's process group.
                return Ok(Ending::ForceQuit);
            }
            if stopping_since.is_none() {
                stopping_since = Some(now);
                let _ = stop_tx.send(true);
                renderer.clear();
                ui::note("stopping: the agent is being stopped, completed work is kept…");
            }
        }
    };
    while let Ok(record) = events_rx.try_recv() {
        renderer.render(&record);
    }
    renderer.clear();
    drop(keys);
    Ok(if terminated {
        Ending::Terminated(end)
    } else {
        Ending::Finished(end)
    })
}
