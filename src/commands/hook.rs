//! `git ralph hook claude-stop`: a Claude Code Stop hook. Registered in
//! `.claude/settings.json`, it runs the active run's checks when the agent
//! wants to stop, and if they fail answers `{"decision":"block","reason":…}`
//! so the agent keeps working in the same session. It never blocks when no
//! run is active, honours `stop_hook_active`, and caps the blocks.
//!
//! ```json
//! { "hooks": { "Stop": [ { "hooks": [
//!     { "type": "command", "command": "git ralph hook claude-stop" }
//! ] } ] } }
//! ```

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde::Deserialize;

use crate::contract::{Contract, run_checks};
use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::state::{RunDir, RunStatus, lock_holder, write_atomically};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[command(subcommand)]
    pub hook: Hook,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum Hook {
    /// The Claude Code Stop hook: block the stop while the run's checks fail.
    ClaudeStop {
        /// Blocks in a row (while stop_hook_active) before the agent may stop anyway.
        #[arg(long, value_name = "N", default_value_t = 3)]
        max_blocks: u32,
    },
}

/// What Claude Code sends the hook on stdin.
#[derive(Debug, Default, Deserialize)]
struct StopInput {
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    stop_hook_active: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let Hook::ClaudeStop { max_blocks } = args.hook;
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    let input: StopInput = serde_json::from_str(&input).unwrap_or_default();
    let dir = match input.cwd {
        Some(dir) => dir,
        None => super::current_dir()?,
    };
    // Anything unexpected means "no opinion": a hook must never trap the agent.
    let Some(reason) = failing_checks(&dir, input.stop_hook_active, max_blocks) else {
        return Ok(Exit::Success.code());
    };
    crate::ui::out(&serde_json::json!({ "decision": "block", "reason": reason }).to_string());
    Ok(Exit::Success.code())
}

/// The block reason, when an active run's checks fail and a block is allowed.
fn failing_checks(
    dir: &std::path::Path,
    stop_hook_active: bool,
    max_blocks: u32,
) -> Option<String> {
    let repo = Repo::open_for_recovery(dir).ok()?;
    let (_, change) = lock_holder(&super::lock_path(&repo))?;
    let run_dir = RunDir::new(&repo.ralph_dir(), &change);
    let state = run_dir.load().ok()?;
    if state.status() != RunStatus::Running {
        return None;
    }
    let story = state.current_story().clone()?;
    let contract = Contract::load_snapshot(&run_dir.dir).ok()??;
    let rules = contract.rules_for(&story, &[]);
    if rules.checks.is_empty() {
        return None;
    }
    // Blocks are counted per chain of continuations: a stop while
    // `stop_hook_active` continues the chain, any other stop starts anew.
    let counter = run_dir
        .dir
        .join(format!("hook-blocks-{}-{}", story, state.current_attempt()));
    let blocks: u32 = if stop_hook_active {
        std::fs::read_to_string(&counter)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    } else {
        0
    };
    if blocks >= max_blocks {
        return None;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let timeout = Duration::from_secs(state.settings().command_timeout_secs);
    let outcomes = runtime.block_on(run_checks(&rules.checks, repo.workdir(), timeout));
    let failed: Vec<_> = outcomes.into_iter().filter(|o| !o.passed).collect();
    if failed.is_empty() {
        return None;
    }
    let _ = write_atomically(&counter, (blocks + 1).to_string().as_bytes());
    let mut reason = String::from("git-ralph checks still fail; keep working until they pass:\n");
    for outcome in failed {
        reason.push_str(&format!(
            "\n- {} ({})\n{}\n",
            outcome.name,
            outcome.why.unwrap_or_default(),
            outcome.output_tail
        ));
    }
    Some(reason)
}
