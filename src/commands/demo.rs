//! `git ralph demo`: see the real loop work in under a minute, offline, with
//! no API key — a throwaway repository, a three-story change, and the
//! built-in scripted agent, which fails one story once.

use std::process::ExitCode;
use std::time::Duration;

use super::values::OnFinishArg;
use crate::agent::{AgentSpec, PromptPassing};
use crate::demo;
use crate::exit::{CommandError, ErrorKind};
use crate::git::Repo;
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// What to do when the loop ends [default: ask].
    #[arg(long, value_enum, value_name = "WHAT")]
    pub on_finish: Option<OnFinishArg>,
    /// Print events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// Milliseconds the scripted agent pauses between steps.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub pace: u64,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let internal = |err: std::io::Error| CommandError::from_error(ErrorKind::Internal, err);
    let dir = demo::fresh_dir().map_err(internal)?;
    crate::git::init(&dir)?;
    append_identity(&dir).map_err(internal)?;
    demo::write_project(&dir).map_err(internal)?;
    let mut repo = Repo::open(&dir)?;
    repo.checkpoint("Initial commit")?;

    ui::note(&format!("demo repository: {}\n", dir.display()));
    let exe = std::env::current_exe().map_err(internal)?;
    let agent = AgentSpec {
        name: "demo".into(),
        program: exe.to_string_lossy().into_owned(),
        args: vec![
            "__demo-agent".into(),
            "--pace".into(),
            args.pace.to_string(),
        ],
        // The demo agent prints what Claude Code prints.
        format: crate::agent::presets::claude::PRESET.format(),
        prompt: PromptPassing::Stdin,
        env: Vec::new(),
        scratch: Vec::new(),
    };
    let start = super::start::Args {
        change: demo::CHANGE.into(),
        on_finish: args.on_finish,
        json: args.json,
        ..Default::default()
    };
    let exit = super::start::run_in(repo, start, Some(agent))?;
    ui::note(&format!(
        "\nThe demo repository is {dir}. Have a look:\n  cd {dir}\n  git log --oneline --all     # the initial-state and per-story checkpoint commits\n  git ralph status            # the run, story by story\n  git show refs/ralph/{change}/attempts/2/1   # the failed attempt, preserved before its revert",
        dir = dir.display(),
        change = demo::CHANGE
    ));
    Ok(exit.exit().code())
}

/// The demo commits as its own author, whatever the user's config says.
fn append_identity(dir: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(".git/config"))?;
    writeln!(
        config,
        "[user]\n\tname = git-ralph demo\n\temail = demo@git-ralph.invalid"
    )
}

/// `git ralph __demo-agent`: the scripted agent the demo runs.
pub fn run_agent(pace_ms: u64) -> Result<ExitCode, CommandError> {
    demo::run_agent(Duration::from_millis(pace_ms))
        .map_err(|err| CommandError::from_error(ErrorKind::Internal, err))?;
    Ok(ExitCode::SUCCESS)
}
