//! `start --serve`: `git ralph serve` started beside the run, as a process
//! of its own, so that nothing it does (a crash included) can disturb the
//! run, and the run never waits for it. It serves the run's page until
//! `start` ends, however it ends. A server that cannot start is said so,
//! and the run goes on without it.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::git::ChangeName;
use crate::process::{Companion, CompanionError};
use crate::ui;

/// How long the server may take to say where it listens.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// The server beside the run, and the URL of the run's page.
pub struct Beside {
    pub url: String,
    _server: Companion,
}

/// Start the server of `change`'s run on `bind`, or say why not.
pub fn start(workdir: &Path, change: &ChangeName, bind: SocketAddr) -> Option<Beside> {
    let started = std::env::current_exe()
        .map_err(|source| CompanionError::Spawn {
            program: "git-ralph".to_owned(),
            source,
        })
        .and_then(|exe| {
            let bind = bind.to_string();
            let args = ["serve", change.as_str(), "--bind", &bind, "--companion"];
            let mut server = Companion::spawn(&exe, &args, workdir)?;
            let url = server.first_line(READY_WITHIN)?;
            Ok(Beside {
                url,
                _server: server,
            })
        });
    match started {
        Ok(beside) => {
            ui::note(&format!("serving the run at {}", beside.url));
            Some(beside)
        }
        Err(err) => {
            ui::warn(&format!(
                "the server did not start ({err}); the run goes on without it, and 'git ralph serve {change}' serves it from any terminal"
            ));
            None
        }
    }
}
