//! `git ralph serve [<change>] [--bind ADDR:PORT]`: the runs for a browser.
//! It binds before it writes anything (its one file is the token), prints
//! the URL to open on stdout, and serves until Ctrl-C; the runs go on
//! without it. What it serves is [`crate::serve`]'s.

use std::net::SocketAddr;
use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::serve::{DEFAULT_BIND, Route, ServeError, Server, Site, Token, Until};
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The run the printed URL opens on (a change, or `history/<dir>`);
    /// without it, the list of runs.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Where to listen [default: 127.0.0.1:7574]; port 0 takes any free
    /// one. An address other machines can reach is only taken from here,
    /// with a warning: the token is all that guards it, over plain HTTP.
    #[arg(long, value_name = "ADDR:PORT")]
    pub bind: Option<SocketAddr>,
    /// Make a new token, which shuts out every page opened with the old one,
    /// on a server already running too.
    #[arg(long)]
    pub new_token: bool,
    /// Started by `start --serve`: end when standard input closes.
    #[arg(long, hide = true)]
    pub companion: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = super::open_repo()?;
    let route = match args.change.as_deref() {
        Some(named) => Route::Run(crate::audit::find_run(&repo.ralph_dir(), Some(named))?.label),
        None => Route::Runs,
    };
    let addr = args
        .bind
        .unwrap_or_else(|| DEFAULT_BIND.parse().expect("the default address parses"));
    let server = Server::bind(addr, Site::of(&repo))?;
    let token = Token::kept_at(&Token::path(&repo.ralph_dir()), args.new_token)
        .map_err(ServeError::from)?;
    drop(repo);
    ui::out(&server.url(&token, &route));
    warn_if_others_reach(server.addr());
    if !args.companion {
        ui::note("open that URL in a browser; Ctrl-C stops the server, the runs go on");
    }
    let until = if args.companion {
        Until::InputClosed
    } else {
        Until::Signal
    };
    server.serve(token, until)?;
    Ok(Exit::Success.code())
}

/// Say so when a server listens on `addr`, where other machines can reach
/// it: the token is all that guards it, over plain HTTP.
pub(crate) fn warn_if_others_reach(addr: SocketAddr) {
    if !addr.ip().is_loopback() {
        ui::warn(&format!(
            "listening on {addr}, which other machines can reach: anyone who has the URL can read the runs and stop them, and the connection is not encrypted"
        ));
    }
}
