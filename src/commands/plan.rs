//! `git ralph plan <change> "<what to build>"`: the command line of a plan.
//! It turns the flags into a [`planning::Request`], takes the repository's
//! lock, makes the plan with its progress on the console, and shows what
//! was accepted as `start --dry-run` would, ending with the command that
//! runs it. The decisions live in [`crate::planning`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use super::agent_flags::AgentFlags;
use crate::exit::{CommandError, ErrorKind, Exit};
use crate::git::{ChangeName, Repo};
use crate::planning::{self, BriefSource, Format, Outcome, PlanError, Planned};
use crate::settings::{self, Requested};
use crate::state::RunLock;
use crate::stories::openspec_cli::OpenSpecCommand;
use crate::ui;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// The change to plan: the OpenSpec change `openspec/changes/<CHANGE>/`
    /// by default, or the name `git ralph start` runs --prd or --tasks
    /// under.
    #[arg(value_name = "CHANGE")]
    pub change: String,
    /// What to build, in a line or a paragraph.
    #[arg(value_name = "WHAT", conflicts_with_all = ["from", "issue"])]
    pub brief: Option<String>,
    /// Read what to build from this file.
    #[arg(long, value_name = "FILE", conflicts_with = "issue")]
    pub from: Option<PathBuf>,
    /// Take what to build from the title and body of this GitHub issue
    /// (through gh).
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// Write a prd.json at FILE, in the format `start --prd` reads,
    /// instead of an OpenSpec change.
    #[arg(long, value_name = "FILE", conflicts_with = "tasks")]
    pub prd: Option<PathBuf>,
    /// Write a markdown checklist at FILE instead of an OpenSpec change.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// Work on the change (or file) that exists instead of refusing it:
    /// the agent splits the stories that are too big and fills in what is
    /// missing, and every done mark must stay.
    #[arg(long)]
    pub refine: bool,
    #[command(flatten)]
    pub agent: AgentFlags,
    /// Tries after the first, each told what the reader said of the last
    /// [default: 3; config: ralph.maxRetries].
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// The most tasks a story may have, or acceptance criteria in a
    /// prd.json [default: 12; config: ralph.planMaxTasks].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tasks: Option<u32>,
    /// Seconds one try's agent may run [default: 3600; config: ralph.agentTimeout].
    #[arg(long, value_name = "SECS")]
    pub agent_timeout: Option<u64>,
    /// How long the agent may print nothing before it is stopped, e.g.
    /// 15m; 0 lets it be silent [default: 15m; config: ralph.idleTimeout].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub idle_timeout: Option<u64>,
    /// Seconds gh and openspec may run [default: 30; config: ralph.commandTimeout].
    #[arg(long, value_name = "SECS")]
    pub command_timeout: Option<u64>,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = Repo::open(&crate::commands::current_dir()?)?;
    let workdir = repo.workdir().to_owned();
    let planned = plan(repo, &args)?;
    let repo = Repo::open_for_recovery(&workdir)?;
    Ok(show(&repo, &args, &planned)?.code())
}

/// Make the plan `args` asks for in `repo`, its progress on the console:
/// what `plan` does, and what `n` does on the home screen.
pub fn plan(mut repo: Repo, args: &Args) -> Result<Planned, CommandError> {
    let change = ChangeName::parse(&args.change)?;
    let request = request(&repo, args, change.clone())?;
    put_back_cut_short(&mut repo, &change)?;
    let prepared = planning::prepare(&repo, request).map_err(plan_error)?;
    let ralph_dir = crate::state::RalphDirBefore::note(&repo.ralph_dir());
    let lock = match RunLock::acquire(&crate::commands::lock_path(&repo), change.as_str())
        .map_err(CommandError::from)
        .and_then(|lock| clear_the_index(&repo, lock))
    {
        Ok(lock) => lock,
        Err(err) => {
            ralph_dir.leave_as_found();
            return Err(err);
        }
    };
    let mut view = ui::plan_view::PlanView::new();
    let planned = prepared.run(repo, &mut |event| view.render(&event));
    view.clear();
    drop(lock);
    planned.map_err(plan_error)
}

/// Under the repository's lock and before the agent may touch the
/// worktree: what a dead loop left is set right as `start` does, and a
/// held `index.lock`, past which nothing the agent changed could be put
/// back, refuses the plan.
fn clear_the_index(repo: &Repo, lock: RunLock) -> Result<RunLock, CommandError> {
    crate::commands::warn_dead_loop(repo, &lock, None)?;
    repo.refuse_index_lock()?;
    Ok(lock)
}

/// Put back every plan whose process was killed before it could, under
/// the repository's lock, saying what was done; the plan asked for is
/// then judged against the repository as the user had it. Refused,
/// nothing put back, when the user went on since one of them began.
pub fn put_back_cut_short(repo: &mut Repo, change: &ChangeName) -> Result<(), CommandError> {
    let found = planning::cut_short::find(repo, None);
    if found.is_empty() {
        return Ok(());
    }
    let _lock = RunLock::acquire(&crate::commands::lock_path(repo), change.as_str())?;
    // Each is judged before any is put back: a refusal changes nothing.
    for cut in &found {
        planning::cut_short::check(repo, cut).map_err(plan_error)?;
    }
    for cut in &found {
        let recovered = planning::cut_short::recover(repo, cut).map_err(plan_error)?;
        ui::plan_view::print_recovered(&recovered);
    }
    Ok(())
}

/// What was planned: the preview of its run and the command that starts
/// it, or why it is not accepted; and the exit status that says so.
fn show(repo: &Repo, args: &Args, planned: &Planned) -> Result<Exit, CommandError> {
    ui::plan_view::print_planned(planned);
    match &planned.outcome {
        Outcome::Accepted { .. } => {
            let change = ChangeName::parse(&args.change)?;
            let preview = crate::run::plan::plan(repo, &change, &start_requested(args)?)?;
            ui::preview::print(&preview);
            ui::plan_view::print_start_command(&start_command(args, planned));
            Ok(Exit::Success)
        }
        Outcome::NotValid { .. } => Ok(Exit::MaxRetries),
        Outcome::Stopped => Ok(Exit::Interrupted),
    }
}

/// The flags as a [`planning::Request`], settings resolved as `start`
/// resolves them.
fn request(
    repo: &Repo,
    args: &Args,
    change: ChangeName,
) -> Result<planning::Request, CommandError> {
    let cwd = crate::commands::current_dir()?;
    let requested = Requested {
        cwd: cwd.clone(),
        max_retries: args.max_retries,
        agent_timeout: args.agent_timeout,
        idle_timeout: args.idle_timeout,
        command_timeout: args.command_timeout,
        ..args.agent.requested()
    };
    let settings = settings::resolve(repo, &requested, None)?;
    let agent = crate::run::session::agent_spec(repo, &settings)?;
    let max_tasks = match args.max_tasks {
        Some(max) => max,
        None => crate::config::small_integer(repo, "ralph.planMaxTasks")?
            .filter(|max| *max > 0)
            .unwrap_or(planning::DEFAULT_MAX_TASKS as u32),
    };
    let (format, file) = match (&args.prd, &args.tasks) {
        (Some(prd), _) => (Format::Prd, Some(prd.clone())),
        (None, Some(tasks)) => (Format::Checklist, Some(tasks.clone())),
        (None, None) => (Format::OpenSpec, None),
    };
    let brief = match (&args.brief, &args.from, args.issue) {
        (Some(text), _, _) => Some(BriefSource::Text(text.clone())),
        (None, Some(file), _) => Some(BriefSource::File(cwd.join(file))),
        (None, None, Some(number)) => Some(BriefSource::Issue(number)),
        (None, None, None) => None,
    };
    Ok(planning::Request {
        change,
        format,
        file,
        cwd,
        brief,
        refine: args.refine,
        max_tasks: max_tasks as usize,
        max_retries: settings.max_retries,
        agent,
        agent_timeout: Duration::from_secs(settings.agent_timeout_secs),
        idle_timeout: (settings.idle_timeout_secs > 0)
            .then(|| Duration::from_secs(settings.idle_timeout_secs)),
        command_timeout: Duration::from_secs(settings.command_timeout_secs),
        openspec: OpenSpecCommand::from_env(),
    })
}

/// What `git ralph start` would be asked for to run the plan.
fn start_requested(args: &Args) -> Result<Requested, CommandError> {
    Ok(Requested {
        cwd: crate::commands::current_dir()?,
        prd: args.prd.clone(),
        tasks: args.tasks.clone(),
        ..args.agent.requested()
    })
}

/// The command that runs the plan, its words shell-quoted.
fn start_command(args: &Args, planned: &Planned) -> Vec<String> {
    let mut words = vec![
        "git".to_owned(),
        "ralph".to_owned(),
        "start".to_owned(),
        args.change.clone(),
    ];
    words.extend(planned.target.start_args());
    words.extend(args.agent.words());
    words
}

/// A plan's error as the command's, with its kind and hint.
fn plan_error(err: PlanError) -> CommandError {
    let kind = match &err {
        PlanError::AgentSetup { .. } => ErrorKind::Setup,
        PlanError::Runner(err) if err.is_setup() => ErrorKind::Setup,
        err if err.is_usage() => ErrorKind::Usage,
        err if err.is_user_error() => ErrorKind::User,
        _ => ErrorKind::Internal,
    };
    let hint = err.hint();
    CommandError::from_error(kind, err).maybe_hint(hint)
}
