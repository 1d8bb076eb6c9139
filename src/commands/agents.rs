//! `git ralph agents [--json]`: the agent presets, whether each one's program
//! is on PATH (with its version, and whether that version was verified on
//! this machine), and the exact command line each would run here, with this
//! repository's `ralph.<agent>.args`. It answers "what will git-ralph run?"
//! before a run starts, and never changes anything.
//!
//! `git ralph agents --verify [NAME…]` runs each installed CLI against a
//! local scripted stand-in of its model API and reports whether git-ralph
//! understands it (see `verification`); its verdicts are cached per version.
//! It succeeds only when every CLI it checked was verified.

use std::process::ExitCode;

use crate::agent::AgentSpec;
use crate::agent::presets::{self, Preset};
use crate::config;
use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::ui::{self, AgentRow};
use crate::verification::{self, Cache, Report};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// Print the presets (with --verify, the verdicts) as one JSON array.
    #[arg(long)]
    pub json: bool,
    /// Run each installed agent CLI against a local scripted stand-in of its
    /// model API, offline, and check that git-ralph reads its completions,
    /// failures, echoed promises and rate limits right. Exits 1 unless every
    /// CLI checked is verified (one not understood, one that cannot be
    /// pointed at a local API, one named but not installed).
    #[arg(long)]
    pub verify: bool,
    /// With --verify: the presets to check (default: every one on PATH).
    #[arg(value_name = "NAME", requires = "verify")]
    pub names: Vec<String>,
    /// With --verify: keep what each CLI printed in each scenario under
    /// DIR/<name>/: the transcript, its exit code and the conclusion
    /// expected (for a bug report, or as test fixtures).
    #[arg(long, value_name = "DIR", requires = "verify")]
    pub record: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| CommandError::internal(format!("cannot start the async runtime: {err}")))?;
    if args.verify {
        return runtime.block_on(verify(&args));
    }
    runtime.block_on(list(&args))
}

async fn verify(args: &Args) -> Result<ExitCode, CommandError> {
    let targets: Vec<&'static Preset> = if args.names.is_empty() {
        presets::TABLE
            .iter()
            .filter(|preset| crate::process::is_runnable(preset.program))
            .collect()
    } else {
        args.names
            .iter()
            .map(|name| {
                presets::lookup(name)
                    .ok_or_else(|| presets::PresetError::Unknown(name.clone()).into())
            })
            .collect::<Result<_, CommandError>>()?
    };
    if targets.is_empty() {
        return Err(CommandError::user("no agent CLI of a preset is on PATH")
            .hint(format!("install one of: {}", presets::PRESETS.join(", "))));
    }
    let mut cache = Cache::load();
    let mut reports: Vec<Report> = Vec::new();
    let quiet = args.json;
    for preset in targets {
        let recording = args.record.as_ref().map(|dir| verification::Recording {
            dir: dir.join(preset.name),
        });
        let report = verification::verify(preset, recording.as_ref(), &mut |progress| {
            if !quiet {
                ui::print_progress(&progress);
            }
        })
        .await
        .map_err(|err| CommandError::internal(err.to_string()))?;
        cache.record(&report, now());
        reports.push(report);
    }
    if let Err(err) = cache.save() {
        ui::warn(&format!("the verdicts were not cached: {err}"));
    }
    if args.json {
        ui::out(
            &serde_json::to_string_pretty(&reports)
                .map_err(|err| CommandError::internal(err.to_string()))?,
        );
    } else {
        ui::print_verdicts(&reports);
    }
    // Only a CLI that was verified passes: one that cannot be pointed at
    // a local API, or that was asked for by name and is not installed, is
    // as unproven as one whose format was not understood.
    let all_verified = reports.iter().all(|report| report.verdict.is_verified());
    Ok(if all_verified {
        Exit::Success
    } else {
        Exit::Error
    }
    .code())
}

async fn list(args: &Args) -> Result<ExitCode, CommandError> {
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
    let cache = Cache::load();

    let mut rows = Vec::new();
    for preset in presets::TABLE {
        let extra = repo
            .as_ref()
            .map(|repo| config::agent_args(repo, preset.name))
            .unwrap_or_default();
        let mut row = row(
            preset,
            &extra,
            agent_command.is_none() && default_agent == preset.name,
        )?;
        if row.on_path {
            row.version = verification::version(preset.program).await;
            row.verified = row
                .version
                .as_deref()
                .and_then(|version| cache.get(preset.name, version))
                .map(|entry| entry.verdict.clone());
        }
        rows.push(row);
    }

    if args.json {
        ui::out(
            &serde_json::to_string_pretty(&rows)
                .map_err(|err| CommandError::internal(err.to_string()))?,
        );
        return Ok(Exit::Success.code());
    }
    ui::print_agents(&rows);
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

fn row(preset: &'static Preset, extra: &[String], default: bool) -> Result<AgentRow, CommandError> {
    let spec: AgentSpec = presets::preset(preset.name, None, extra)?;
    Ok(AgentRow {
        name: preset.name,
        title: preset.title,
        program: preset.program,
        verified_release: preset.verified,
        oldest_release: preset.oldest,
        releases: preset.releases(),
        on_path: crate::process::is_runnable(preset.program),
        default,
        model_option: preset.model_flag,
        command_line: spec.command_line(),
        scratch: preset.scratch,
        version: None,
        verified: None,
    })
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
