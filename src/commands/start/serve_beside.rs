//! `start --serve`: `git ralph serve` started beside the run, as a process
//! of its own, so that nothing it does (a crash included) can disturb the
//! run, and the run never waits for it. It serves the run's page until
//! `start` ends, however it ends. A server that cannot start is said so,
//! and the run goes on without it. An address other machines can reach is warned
//! of here, as `serve` does, since the server's own words are not shown.

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
            let port = port_of(&beside.url).unwrap_or(bind.port());
            crate::commands::serve::warn_if_others_reach(SocketAddr::new(bind.ip(), port));
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

/// The port a URL the server printed names (`http://host:port/…`): the
/// one it took when asked for port 0.
fn port_of(url: &str) -> Option<u16> {
    let host = url.strip_prefix("http://")?.split('/').next()?;
    host.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::port_of;

    #[test]
    fn the_port_is_read_from_the_printed_url() {
        assert_eq!(port_of("http://127.0.0.1:7574/runs/a?token=x"), Some(7574));
        assert_eq!(port_of("http://[::1]:80/?token=x"), Some(80));
        assert_eq!(port_of("https://x/"), None);
    }
}
