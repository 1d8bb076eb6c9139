//! `git ralph serve`: the repository's runs as a small web app, for a run
//! left going on a machine the user is not sitting at. It shows what
//! `status`, `log` and `show` show, read from the same files by the same
//! readers, pushes each change to the page as it happens (server-sent
//! events), and lets the user do two things the command line already
//! does: stop the run, as `q` on its screen does, and answer the question
//! a story waits on, as `git ralph answer` does (see [`actions`]). Nothing
//! else it does writes; its one file of its own is the token it keeps (see
//! [`token`]).
//!
//! It stays out of the run's way: it is a process of its own (`start
//! --serve` starts it beside the run, see `commands::start`), it only reads
//! what the run writes, and the run never waits for it. It knows neither
//! clap nor the terminal: `commands::serve` binds it and says where it is;
//! `ui::web` renders its pages.

mod actions;
mod feed;
mod http;
mod respond;
mod routes;
mod sse;
mod token;
mod views;

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

pub use routes::{Action, Asset, AttemptRef, Route, answer_path};
pub use token::{Token, TokenError};

use feed::{Feeds, Renderers};
use http::Hosts;

/// Where `serve` listens unless told otherwise: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:7574";
/// Connections served at once; more are closed unanswered.
const MAX_CONNECTIONS: usize = 512;
/// How long a client may take to send a request's head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send the body of an action, once its head
/// is in: the same bound as the head's.
const BODY_TIMEOUT: Duration = HEAD_TIMEOUT;
/// The largest request head (request line and headers) answered.
const MAX_HEAD_BYTES: usize = 16 << 10;

/// The repository whose runs are served.
#[derive(Debug, Clone)]
pub struct Site {
    /// Where the repository is opened for diffs.
    pub workdir: PathBuf,
    /// `<git-dir>/ralph`.
    pub ralph_dir: PathBuf,
    /// The name pages show it by.
    pub name: String,
}

impl Site {
    pub fn of(repo: &crate::git::Repo) -> Site {
        let workdir = repo.workdir().to_owned();
        Site {
            name: workdir
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_else(|| "repository".to_owned()),
            ralph_dir: repo.ralph_dir(),
            workdir,
        }
    }

    fn lock_path(&self) -> PathBuf {
        crate::state::lock_path(&self.ralph_dir)
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("could not listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("could not start the server")]
    Runtime(#[source] std::io::Error),
}

impl ServeError {
    pub fn hint(&self) -> Option<String> {
        match self {
            ServeError::Bind { source, .. }
                if source.kind() == std::io::ErrorKind::AddrInUse =>
            {
                Some("another server holds that port: pick another with --bind 127.0.0.1:PORT (port 0 takes any free one)".to_owned())
            }
            ServeError::Bind { .. } => {
                Some("pick an address of this machine with --bind ADDR:PORT".to_owned())
            }
            _ => None,
        }
    }
}

/// When a server stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// On Ctrl-C or SIGTERM.
    Signal,
    /// Also when its standard input closes: a server started beside a run
    /// ends with the process that started it, however that one ends.
    InputClosed,
}

/// A server bound to its address, not serving yet.
pub struct Server {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    site: Site,
}

impl Server {
    /// Listen on `addr`. Nothing is written.
    pub fn bind(addr: SocketAddr, site: Site) -> Result<Server, ServeError> {
        let failed = |source| ServeError::Bind { addr, source };
        let listener = std::net::TcpListener::bind(addr).map_err(failed)?;
        let addr = listener.local_addr().map_err(failed)?;
        Ok(Server {
            listener,
            addr,
            site,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether only this machine can reach it.
    pub fn loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }

    /// The address of `route` with the token, as the user opens it once.
    pub fn url(&self, token: &Token, route: &Route) -> String {
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        format!(
            "http://{}{}?token={}",
            SocketAddr::new(ip, self.addr.port()),
            route.path(),
            token.as_str()
        )
    }

    /// Serve until `until` says to stop.
    pub fn serve(self, token: Token, until: Until) -> Result<(), ServeError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(ServeError::Runtime)?;
        let hosts = if self.loopback() {
            Hosts::Loopback(self.addr)
        } else {
            Hosts::Any
        };
        let site = Arc::new(self.site);
        let shared = Arc::new(Shared {
            cookie: http::cookie_name(self.addr.port()),
            feeds: Arc::new(Feeds::new(
                site.clone(),
                Renderers {
                    run: views::run_main,
                    list: views::runs_main,
                },
            )),
            token: token::KeptToken::new(Token::path(&site.ralph_dir), token),
            site,
            hosts,
        });
        let listener = self.listener;
        let result = runtime.block_on(accept(listener, shared, until));
        // Pages still following are cut off; their browsers come back.
        runtime.shutdown_timeout(Duration::from_millis(200));
        result
    }
}

/// What every request is answered with.
struct Shared {
    site: Arc<Site>,
    token: token::KeptToken,
    cookie: String,
    hosts: Hosts,
    feeds: Arc<Feeds>,
}

async fn accept(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    until: Until,
) -> Result<(), ServeError> {
    listener
        .set_nonblocking(true)
        .map_err(ServeError::Runtime)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Runtime)?;
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let stop = stopped(until);
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            // Too many at once: this one is closed unanswered.
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(respond::answer(&shared, request).await) }
            });
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_header_size(MAX_HEAD_BYTES);
            // A client that hangs up or sends garbage is answered by hyper
            // (400, 431) or dropped; either way it is no concern here.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
}

/// Resolves when the server should stop.
async fn stopped(until: Until) {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    let input_closed = async {
        if until != Until::InputClosed {
            return std::future::pending::<()>().await;
        }
        let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin();
            while std::io::Read::read(&mut stdin, &mut sink).is_ok_and(|n| n > 0) {}
            let _ = closed.send(());
        });
        let _ = on_close.await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
        () = input_closed => {}
    }
}
