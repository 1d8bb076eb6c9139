//! git-ralph drives an AI coding agent through the stories of a change until
//! each one is verifiably done, checkpointing every finished story as a
//! commit on `ralph/<change>`.
//!
//! Domain modules (`git`, `stories`, `agent`, `run`, `settings`, `state`,
//! `contract`, and `serve`, the web view) know neither clap nor the terminal; `process` is the one
//! supervisor of child processes; `commands` alone know clap and glue the
//! domain to the command line; `ui` alone prints.

pub mod agent;
pub mod audit;
pub(crate) mod bug;
pub mod cli;
pub(crate) mod commands;
pub mod config;
pub mod contract;
pub mod demo;
pub mod events;
pub mod exit;
pub mod git;
pub(crate) mod notify;
pub mod pace;
pub(crate) mod planning;
pub mod preview;
pub mod process;
pub mod prompt;
pub mod reference;
pub(crate) mod remote;
pub(crate) mod run;
pub(crate) mod sandbox;
pub(crate) mod serve;
pub mod settings;
pub(crate) mod standin;
pub mod state;
pub mod stories;
pub mod timings;
pub mod ui;
pub mod verification;
pub mod version;

use std::process::ExitCode;

use cli::{Cli, Command};
use exit::CommandError;

/// Run a parsed command line and map the outcome to an exit status. A
/// panic is a bug in git-ralph: it is reported as an internal error, not
/// printed raw.
pub fn run(cli: Cli) -> ExitCode {
    timings::start();
    bug::install_hook();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(cli)))
        .unwrap_or_else(|payload| Err(CommandError::bug(&bug::caught(payload.as_ref()), None)));
    let code = finish(result);
    // The command line up to the change's name: an agent command can be
    // long, and it is not what the table is about.
    let words: Vec<String> = std::iter::once("git-ralph".to_owned())
        .chain(std::env::args().skip(1).take(2))
        .collect();
    timings::report(&words.join(" "));
    code
}

fn dispatch(cli: Cli) -> Result<ExitCode, CommandError> {
    bug::trip("command");
    let Some(command) = cli.command else {
        return commands::home::run();
    };
    match command {
        Command::Start(args) => commands::start::run(*args),
        Command::Plan(args) => commands::plan::run(*args),
        Command::Status(args) => commands::status::run(args),
        Command::Watch(args) => commands::watch::run(args),
        Command::Log(args) => commands::log::run(args),
        Command::Show(args) => commands::show::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Answer(args) => commands::answer::run(args),
        Command::Abort(args) => commands::abort::run(args),
        Command::Finish(args) => commands::finish::run(args),
        Command::Merge(args) => commands::merge::run(args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Agents(args) => commands::agents::run(args),
        Command::Hook(args) => commands::hook::run(args),
        Command::Standin(args) => commands::standin::run(args),
        Command::DemoAgent { pace } => commands::demo::run_agent(pace),
    }
}

/// The exit status of a command, its error printed first.
fn finish(result: Result<ExitCode, CommandError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(err) => {
            ui::print_error(&err);
            err.exit().code()
        }
    }
}
