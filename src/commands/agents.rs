//! `git ralph agents [--json]`: the agent presets, whether each one's program
//! is on PATH, and the exact command line each would run here, with this
//! repository's `ralph.<agent>.args`. It answers "what will git-ralph run?"
//! before a run starts, and never changes anything.

use std::process::ExitCode;

use serde::Serialize;

use crate::config;
use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::presets::{self, AgentSpec, Preset};
use crate::ui::{self, Styles};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// Print the presets as one JSON array.
    #[arg(long)]
    pub json: bool,
}

/// One preset as `agents --json` prints it.
#[derive(Serialize)]
struct Row {
    name: &'static str,
    title: &'static str,
    program: &'static str,
    on_path: bool,
    /// `git ralph start` without --agent runs this one.
    default: bool,
    /// The option `--model` is passed with, if the CLI has one.
    model_option: Option<&'static str>,
    command_line: String,
    /// The agent's own files, left out of checkpoints and reverts.
    scratch: &'static [&'static str],
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    // Outside a repository the presets are still worth listing, without
    // any repository's configuration.
    let repo = super::current_dir()
        .ok()
        .and_then(|dir| Repo::open_for_recovery(&dir).ok());
    let agent_command = repo
        .as_ref()
        .and_then(|repo| repo.config_string("ralph.agentCommand"));
    let default_agent = repo
        .as_ref()
        .and_then(|repo| repo.config_string("ralph.agent"))
        .unwrap_or_else(|| crate::settings::DEFAULT_AGENT.to_owned());

    let rows = presets::TABLE
        .iter()
        .map(|preset| {
            let extra = repo
                .as_ref()
                .map(|repo| config::agent_args(repo, preset.name))
                .unwrap_or_default();
            row(
                preset,
                &extra,
                agent_command.is_none() && default_agent == preset.name,
            )
        })
        .collect::<Result<Vec<Row>, CommandError>>()?;

    if args.json {
        ui::out(
            &serde_json::to_string_pretty(&rows)
                .map_err(|err| CommandError::internal(err.to_string()))?,
        );
        return Ok(Exit::Success.code());
    }
    print_human(&rows);
    if let Some(command) = agent_command {
        ui::note(&format!(
            "ralph.agentCommand is set, so 'git ralph start' runs it instead of a preset:\n  {}",
            presets::command(&command).command_line()
        ));
    } else if presets::lookup(&default_agent).is_none() {
        ui::warn(&format!(
            "ralph.agent is '{default_agent}', which is not a preset; 'git ralph start' will refuse it"
        ));
    }
    if repo.is_none() {
        ui::note("not in a git repository: no ralph.<agent>.args were read");
    }
    Ok(Exit::Success.code())
}

fn row(preset: &'static Preset, extra: &[String], default: bool) -> Result<Row, CommandError> {
    let spec: AgentSpec = presets::preset(preset.name, None, extra)?;
    Ok(Row {
        name: preset.name,
        title: preset.title,
        program: preset.program,
        on_path: crate::process::is_runnable(preset.program),
        default,
        model_option: preset.model_flag,
        command_line: spec.command_line(),
        scratch: preset.scratch,
    })
}

fn print_human(rows: &[Row]) {
    let term = console::Term::stdout();
    let s = Styles::for_term(&term);
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0);
    for row in rows {
        let found = if row.on_path {
            s.good.apply_to("on PATH".to_owned())
        } else {
            s.dim.apply_to(format!("{} not found", row.program))
        };
        let default = if row.default { " · default" } else { "" };
        ui::out(&format!(
            "{} {} · {found}{default}",
            s.bold.apply_to(format!("{:width$}", row.name)),
            row.title,
        ));
        ui::out(&format!("  {}", row.command_line));
    }
    let without_model: Vec<&str> = rows
        .iter()
        .filter(|row| row.model_option.is_none())
        .map(|row| row.name)
        .collect();
    let mut footer = String::from(
        "--model <M> is passed with each CLI's model option; extra arguments come from git config ralph.<agent>.args",
    );
    if !without_model.is_empty() {
        footer.push_str(&format!(
            "\nno model option, so --model is refused: {}",
            without_model.join(", ")
        ));
    }
    ui::out(&s.dim.apply_to(footer).to_string());
}
