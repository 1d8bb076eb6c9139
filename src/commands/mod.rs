//! One file per subcommand, each with its clap `Args` and one `run`. They
//! glue the domain modules to the ui; the decisions live in the domain.

pub mod abort;
pub mod agents;
pub mod demo;
pub mod finish;
pub mod home;
pub mod hook;
pub mod log;
pub mod show;
pub mod standin;
pub mod start;
pub mod status;
pub mod values;
pub mod watch;

use crate::exit::CommandError;
use crate::git::{ChangeName, Repo};
use crate::state::{RunDir, list_runs};

/// The change a command is about: the one named, or the only run there is.
pub fn pick_change(repo: &Repo, named: Option<&str>) -> Result<ChangeName, CommandError> {
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
    let repo = Repo::open_for_recovery(&current_dir()?)?;
    let change = pick_change(&repo, named)?;
    let run_dir = existing_run(&repo, &change)?;
    Ok((repo, change, run_dir))
}

/// The run directory of `change`, which must exist.
pub fn existing_run(repo: &Repo, change: &ChangeName) -> Result<RunDir, CommandError> {
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
