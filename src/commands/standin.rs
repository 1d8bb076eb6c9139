//! `git ralph __standin --script FILE`: the scripted model stand-in of
//! `agents --verify`, on its own, for tests and for recording a CLI's
//! transcripts. It prints its base URL on the first line of stdout and
//! serves until interrupted or terminated. Hidden: not a user command.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::standin::{Script, Standin};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// A JSON script: {"turns": [{"kind": "text", "text": …}, {"kind": "shell",
    /// "command": …}, {"kind": "error", "status": 429, "message": …}, {"kind": "limit",
    /// "message": …, "code": …, "reset_unix": …}], "tools": true}.
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let text = std::fs::read_to_string(&args.script).map_err(|err| {
        CommandError::user(format!("cannot read {}: {err}", args.script.display()))
    })?;
    let script: Script = serde_json::from_str(&text).map_err(|err| {
        CommandError::user(format!("{} is not a script: {err}", args.script.display()))
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| CommandError::internal(format!("cannot start the async runtime: {err}")))?;
    runtime.block_on(async {
        let standin = Standin::start(script)
            .await
            .map_err(|err| CommandError::internal(err.to_string()))?;
        ui::out(&standin.base_url());
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|err| CommandError::internal(err.to_string()))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        standin.stop().await;
        Ok(Exit::Success.code())
    })
}
