//! `git ralph start <change>`: begin a run (or resume a stopped one), drive
//! the loop with a live view, handle Ctrl-C / `q` / SIGTERM, and offer keep or
//! cleanup when the loop ends.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::config::{self, OnFinish};
use crate::contract::Contract;
use crate::events::{Event, Record};
use crate::exit::{CommandError, ErrorKind, Exit};
use crate::git::{ChangeName, HeadState, Repo};
use crate::presets::{self, AgentSpec};
use crate::prompt;
use crate::state::{RunDir, RunLock, RunState, RunStatus, Settings, StopReason, now};
use crate::stories::{self, SourceKind, StorySource};
use crate::story_loop::{EventSink, LoopEnd, LoopSettings, StoryLoop};
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
    /// Prompt mode: repeat this prompt, a fresh agent each time, until the
    /// contract passes; no stories.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "prd", "tasks"])]
    pub prompt: Option<PathBuf>,
    /// One attempt per story, no checks, no retries: the plain flow.
    #[arg(long)]
    pub once: bool,
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
    let ralph_dir = repo.ralph_dir();
    let had_ralph_dir = ralph_dir.exists();
    let result = run_in(repo, args, Overrides { agent: None });
    if result.is_err() && !had_ralph_dir {
        // A refused start leaves no trace: the lock was all it put there,
        // and `remove_dir` only removes the directory if it is empty.
        let _ = std::fs::remove_dir(&ralph_dir);
    }
    result
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
    let settings = loop_settings(&repo, &change, &run_dir, &state.settings, overrides)?;
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
    let contract = assemble_contract(repo, change, &settings, source.as_ref())?;
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
        no_progress_streak: 0,
        runtime_ms: 0,
        paused_until: None,
        pause_reason: None,
        rate_limit_wait_secs: 0,
        rate_limit_pauses: 0,
    };
    run_dir.save(&state)?;
    contract.snapshot(repo.workdir(), &run_dir.dir)?;
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
                config::agent(repo)?.unwrap_or_else(|| config::DEFAULT_AGENT.to_owned()),
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
    let guardrails = resolve_guardrails(repo, args, stored.map(|s| &s.guardrails))?;
    let promise = args
        .promise
        .clone()
        .or_else(|| stored.and_then(|s| s.promise.clone()))
        .or_else(|| {
            if stored.is_none() {
                repo.config_string("ralph.promise")
            } else {
                None
            }
        });
    if let Some(token) = &promise
        && !token.eq_ignore_ascii_case(crate::contract::NO_PROMISE)
        && (token.is_empty()
            || !token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    {
        return Err(CommandError::usage(format!(
            "the promise token '{token}' must be letters, digits, '-' and '_'"
        ))
        .hint("e.g. --promise AUTH_IMPLEMENTED, or --promise none to rely on checks alone"));
    }
    let mut checks = stored.map(|s| s.checks.clone()).unwrap_or_default();
    checks.extend(args.checks.iter().cloned());
    let source = if args.prompt.is_some() {
        "prompt".to_owned()
    } else {
        source
    };
    Ok(Settings {
        guardrails,
        once: args.once || stored.is_some_and(|s| s.once),
        prompt_file: args
            .prompt
            .as_ref()
            .map(|p| absolute(p).to_string_lossy().into_owned())
            .or_else(|| stored.and_then(|s| s.prompt_file.clone())),
        checks,
        promise,
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

/// Guardrails: flag > the run's own (on resume) > git config > default.
fn resolve_guardrails(
    repo: &Repo,
    args: &Args,
    stored: Option<&crate::state::Guardrails>,
) -> Result<crate::state::Guardrails, CommandError> {
    let fresh = stored.is_none();
    let from_config = |key: &str| -> Result<Option<u64>, CommandError> {
        if fresh {
            config::integer(repo, key)
        } else {
            Ok(None)
        }
    };
    let duration_config = |key: &str| -> Result<Option<u64>, CommandError> {
        if fresh {
            config::duration(repo, key)
        } else {
            Ok(None)
        }
    };
    let money_config = |key: &str| -> Result<Option<f64>, CommandError> {
        if fresh {
            config::money(repo, key)
        } else {
            Ok(None)
        }
    };
    let stored = stored.cloned().unwrap_or_default();
    let max_iterations = match args.max_iterations {
        Some(n) => Some(n),
        None => match from_config("ralph.maxIterations")? {
            Some(n) => Some(
                u32::try_from(n)
                    .map_err(|_| CommandError::user("ralph.maxIterations is too large"))?,
            ),
            None => stored.max_iterations,
        },
    };
    let no_progress_limit = match args.no_progress_limit {
        Some(n) => n,
        None => match from_config("ralph.noProgressLimit")? {
            Some(n) => u32::try_from(n)
                .map_err(|_| CommandError::user("ralph.noProgressLimit is too large"))?,
            None if fresh => config::DEFAULT_NO_PROGRESS_LIMIT,
            None => stored.no_progress_limit,
        },
    };
    let max_rate_limit_wait_secs = match args.max_rate_limit_wait {
        Some(n) => n,
        None => match duration_config("ralph.maxRateLimitWait")? {
            Some(n) => n,
            None if fresh => config::DEFAULT_MAX_RATE_LIMIT_WAIT,
            None => stored.max_rate_limit_wait_secs,
        },
    };
    Ok(crate::state::Guardrails {
        max_iterations,
        no_progress_limit,
        max_runtime_secs: args
            .max_runtime
            .or(duration_config("ralph.maxRuntime")?)
            .or(stored.max_runtime_secs),
        max_cost: args
            .max_cost
            .or(money_config("ralph.maxCost")?)
            .or(stored.max_cost),
        max_tokens: args
            .max_tokens
            .or(from_config("ralph.maxTokens")?)
            .or(stored.max_tokens),
        max_rate_limit_wait_secs,
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
    if let Some(file) = &settings.prompt_file {
        return Ok(Box::new(stories::PromptFileSource::new(
            repo.workdir(),
            Path::new(file),
            change.as_str(),
        )?));
    }
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
    run_dir: &RunDir,
    settings: &Settings,
    overrides: Overrides,
) -> Result<LoopSettings, CommandError> {
    let agent = match overrides.agent {
        Some(agent) => agent,
        None => agent_spec(repo, settings)?,
    };
    let template = template_text(repo, settings)?;
    prompt::validate(&template)?;
    let classic_prompt = match &settings.prompt_file {
        Some(file) => Some(std::fs::read_to_string(file).map_err(|err| {
            CommandError::user(format!("cannot read the prompt file {file}: {err}"))
                .hint("check the path given to --prompt")
        })?),
        None => None,
    };
    // The rules are the ones snapshotted at start, not whatever the agent
    // may have done to the contract files since.
    let contract = Contract::load_snapshot(&run_dir.dir)?.unwrap_or_default();
    Ok(LoopSettings {
        change: change.clone(),
        agent,
        max_retries: settings.max_retries,
        agent_timeout: Duration::from_secs(settings.agent_timeout_secs),
        command_timeout: Duration::from_secs(settings.command_timeout_secs),
        template,
        classic_prompt,
        contract,
        guardrails: settings.guardrails.clone(),
        once: settings.once,
    })
}

/// The contract of a new run, assembled before anything is touched.
fn assemble_contract(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
    source: &dyn StorySource,
) -> Result<Contract, CommandError> {
    let change_dir = (source.kind() == SourceKind::OpenSpec).then(|| {
        repo.workdir()
            .join("openspec/changes")
            .join(change.as_str())
    });
    Ok(Contract::assemble(
        repo.workdir(),
        change_dir.as_deref(),
        &repo.config_strings("ralph.check"),
        &settings.checks,
        settings.promise.as_deref(),
    )?)
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

/// Agent output events a console view may fall behind on before dropping
/// some: it shows only the latest message, and `events.jsonl` has them all.
const AGENT_OUTPUT_BACKLOG: usize = 256;

/// How events reach the terminal. `--json` prints each one as it happens,
/// losslessly (a slow reader slows the loop, not memory). The console view
/// gets milestones through an unbounded queue (they are few) and agent
/// output through a bounded one, so a flooding agent costs disk, not memory.
fn event_sink(
    json: bool,
) -> (
    EventSink,
    mpsc::UnboundedReceiver<Record>,
    mpsc::Receiver<Record>,
) {
    let (milestones_tx, milestones) = mpsc::unbounded_channel();
    let (output_tx, agent_output) = mpsc::channel(AGENT_OUTPUT_BACKLOG);
    let sink: EventSink = if json {
        Arc::new(|record: Record| {
            if let Ok(line) = serde_json::to_string(&record) {
                ui::out(&line);
            }
        })
    } else {
        Arc::new(move |record: Record| {
            if matches!(record.event, Event::StoryEvent { .. }) {
                let _ = output_tx.try_send(record);
            } else {
                let _ = milestones_tx.send(record);
            }
        })
    };
    (sink, milestones, agent_output)
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

    let (stop_tx, stop_rx) = watch::channel(false);
    let (sink, mut milestones, mut agent_output) = event_sink(json);
    let story_loop = StoryLoop::new(repo, source, run_dir, state, settings, sink, stop_rx)?;
    // The loop runs on its own task, so rendering never holds it up and it
    // never holds up rendering.
    let mut run = tokio::spawn(story_loop.run(resumed));

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
            end = &mut run => break end.map_err(|err| CommandError::internal(format!("the loop failed: {err}")))?,
            Some(record) = milestones.recv() => {
                // Agent output that arrived before this milestone first.
                while let Ok(output) = agent_output.try_recv() {
                    renderer.render(&output);
                }
                renderer.render(&record);
                false
            }
            Some(record) = agent_output.recv() => {
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
                // Dropping the loop's future kills the agent's process group.
                run.abort();
                let _ = run.await;
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
    while let Ok(record) = agent_output.try_recv() {
        renderer.render(&record);
    }
    while let Ok(record) = milestones.try_recv() {
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
