//! One file per subcommand, each with its clap `Args` and one `run`. They
//! glue the domain modules to the ui; the decisions live in the domain.

pub mod abort;
mod agent_flags;
pub mod agents;
pub mod answer;
pub mod demo;
pub mod finish;
pub mod home;
pub mod hook;
pub mod log;
pub mod merge;
pub mod plan;
mod run_errors;
pub mod serve;
pub mod show;
pub mod standin;
pub mod start;
pub mod status;
pub mod values;
pub mod watch;

use crate::audit::{self, FoundRun};
use crate::exit::CommandError;
use crate::git::{ChangeName, Repo};
use crate::state::{RunDir, RunState, list_runs};

/// The change a command is about: the one named, or the only run there is.
fn pick_change(repo: &Repo, named: Option<&str>) -> Result<ChangeName, CommandError> {
    if let Some(name) = named {
        return Ok(ChangeName::parse(name)?);
    }
    let runs = list_runs(&repo.ralph_dir());
    match runs.as_slice() {
        [only] => Ok(ChangeName::parse(only)?),
        [] => Err(
            CommandError::user("there is no git-ralph run in this repository")
                .hint("start one with 'git ralph start <change>'"),
        ),
        many => Err(CommandError::usage(format!(
            "there are {} runs ({}); name the change",
            many.len(),
            many.join(", ")
        ))
        .hint(format!("e.g. 'git ralph status {}'", many[0]))),
    }
}

/// The repository (opened even mid-operation, to report or close a run)
/// and the run a command is about: its change and its directory.
pub fn open_run(named: Option<&str>) -> Result<(Repo, ChangeName, RunDir), CommandError> {
    let repo = open_repo()?;
    let (change, run_dir) = run_of(&repo, named)?;
    Ok((repo, change, run_dir))
}

/// The repository around the current directory, opened even in the middle
/// of a git operation, as the commands that report or close a run need.
pub fn open_repo() -> Result<Repo, CommandError> {
    Ok(Repo::open_for_recovery(&current_dir()?)?)
}

/// The change named, or the only run there is, and its run directory.
pub fn run_of(repo: &Repo, named: Option<&str>) -> Result<(ChangeName, RunDir), CommandError> {
    let change = pick_change(repo, named)?;
    let run_dir = existing_run(repo, &change)?;
    Ok((change, run_dir))
}

/// The repository and a recorded run, live or in the history (`named` is
/// a change, `history/<dir>`, or nothing for the only run), with its
/// state: where the commands that only read a run begin.
pub fn open_recorded_run(named: Option<&str>) -> Result<(Repo, FoundRun, RunState), CommandError> {
    let repo = open_repo()?;
    let (found, state) = recorded_run(&repo, named)?;
    Ok((repo, found, state))
}

/// The recorded run `named` of `repo`, and its state.
pub fn recorded_run(
    repo: &Repo,
    named: Option<&str>,
) -> Result<(FoundRun, RunState), CommandError> {
    let found = audit::find_run(&repo.ralph_dir(), named)?;
    let state = found.load()?;
    Ok((found, state))
}

/// The run directory of `change`, which must exist.
fn existing_run(repo: &Repo, change: &ChangeName) -> Result<RunDir, CommandError> {
    let dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    if !dir.exists() {
        return Err(
            CommandError::user(format!("there is no git-ralph run for '{change}'"))
                .hint(format!("start one with 'git ralph start {change}'")),
        );
    }
    Ok(dir)
}

/// The lock shared by every run of this repository.
pub fn lock_path(repo: &Repo) -> std::path::PathBuf {
    crate::state::lock_path(&repo.ralph_dir())
}

pub fn current_dir() -> Result<std::path::PathBuf, CommandError> {
    std::env::current_dir().map_err(|err| {
        CommandError::user(format!("cannot read the current directory: {err}"))
            .hint("cd into your repository and try again")
    })
}

/// Set right what a loop that is no longer running left when `lock` was
/// taken over from it, saying so: what `start` and `plan` do first.
pub fn warn_dead_loop(
    repo: &Repo,
    lock: &crate::state::RunLock,
    aside_dir: Option<&std::path::Path>,
) -> Result<(), crate::git::OpError> {
    let Some(dead) = crate::run::dead_loop::take_over(repo, lock, aside_dir)? else {
        return Ok(());
    };
    crate::ui::warn(&format!(
        "took over the lock of a loop that is no longer running (pid {}, change '{}')",
        dead.pid, dead.change
    ));
    for left in &dead.left_locks {
        crate::ui::warn(&crate::ui::ending::left_lock(&left.was, &left.kept_at));
    }
    Ok(())
}
