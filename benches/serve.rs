//! Pages following a live run cost the run nothing: the same run, whose
//! agent prints a line every 20 ms, once alone and once with `git ralph
//! serve` running and 50 clients following its page's events, timed from
//! start to end. Alone and followed alternate; the medians and their
//! ratio are printed (the target is at most 1.05), with what the clients
//! were sent and the server's CPU time.
//!
//! ```sh
//! cargo bench --bench serve                     # 4 stories, 2 s each, 3 of each
//! RALPH_BENCH_CLIENTS=200 RALPH_BENCH_REPS=5 cargo bench --bench serve
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[path = "support/measure.rs"]
mod measure;
use measure::story_project;

const STORIES: usize = 4;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The agent: a line every 20 ms for `lines` lines, then its file, its
/// box and its promise.
fn agent(lines: usize) -> String {
    format!(
        "cat >/dev/null; i=0; while [ $i -lt {lines} ]; do echo \"line $i of story $RALPH_STORY\"; \
         sleep 0.02; i=$((i+1)); done; echo \"work of $RALPH_STORY\" > \"story-$RALPH_STORY.txt\"; \
         sed -i \"s/^- \\[ \\] $RALPH_STORY\\./- [x] $RALPH_STORY./\" openspec/changes/bench/tasks.md; \
         echo '<promise>COMPLETE</promise>'"
    )
}

fn ralph() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_git-ralph"));
    cmd.env("NO_COLOR", "1").stdin(Stdio::null());
    cmd
}

/// The server of `dir`, and its address and token.
struct Server {
    child: Child,
    addr: String,
    token: String,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let mut child = ralph()
            .args(["serve", "--bind", "127.0.0.1:0"])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("git ralph serve starts");
        let mut url = String::new();
        let mut stdout = child.stdout.take().expect("its stdout");
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).is_ok_and(|n| n == 1) && byte[0] != b'\n' {
            url.push(byte[0] as char);
        }
        let rest = url.strip_prefix("http://").expect("a URL");
        Server {
            addr: rest.split('/').next().expect("a host").to_owned(),
            token: url.split("token=").nth(1).expect("a token").to_owned(),
            child,
        }
    }

    /// CPU time it used so far, in milliseconds (Linux).
    fn cpu_ms(&self) -> u64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|i| fields.get(*i)?.parse::<u64>().ok())
            .sum();
        ticks * 10
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client following `path`'s events until told to stop; returns the
/// bytes and the `main` events it was sent.
fn follow(addr: String, token: String, path: &str, stop: Arc<AtomicBool>) -> (u64, u64) {
    let mut stream = TcpStream::connect(&addr).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("a timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .expect("the request is sent");
    let (mut bytes, mut events) = (0u64, 0u64);
    let mut buf = vec![0u8; 64 << 10];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n as u64;
                events += buf[..n]
                    .windows(11)
                    .filter(|w| *w == b"event: main")
                    .count() as u64;
            }
            Err(_) => {}
        }
    }
    (bytes, events)
}

/// What one followed run gave.
struct Followed {
    wall: Duration,
    cpu_ms: u64,
    bytes: Vec<u64>,
    events: Vec<u64>,
}

/// One run in a new project; with `clients`, followed by that many.
fn timed_run(root: &Path, name: &str, lines: usize, clients: usize) -> Followed {
    let dir = root.join(name);
    story_project(&dir, STORIES, None);
    let server = (clients > 0).then(|| Server::start(&dir));
    let started = Instant::now();
    let mut run = ralph()
        .args(["start", "bench", "--agent-command", &agent(lines)])
        .args(["--on-finish", "keep", "--plain"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("git ralph start runs");
    let stop = Arc::new(AtomicBool::new(false));
    let mut followers = Vec::new();
    if let Some(server) = &server {
        while !dir.join(".git/ralph/bench/state.json").exists() {
            std::thread::sleep(Duration::from_millis(5));
        }
        for _ in 0..clients {
            let (addr, token, stop) = (server.addr.clone(), server.token.clone(), stop.clone());
            followers.push(std::thread::spawn(move || {
                follow(addr, token, "/runs/bench/events", stop)
            }));
        }
    }
    let status = run.wait().expect("the run ends");
    let wall = started.elapsed();
    assert!(status.success(), "the run {name} failed");
    stop.store(true, Ordering::Relaxed);
    let (bytes, events) = followers
        .into_iter()
        .map(|follower| follower.join().expect("a client"))
        .unzip();
    Followed {
        wall,
        cpu_ms: server.as_ref().map_or(0, Server::cpu_ms),
        bytes,
        events,
    }
}

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

fn main() {
    let clients = setting("RALPH_BENCH_CLIENTS", 50);
    let reps = setting("RALPH_BENCH_REPS", 3).max(1);
    let lines = setting("RALPH_BENCH_LINES", 100);
    let root: PathBuf = tempfile::tempdir().expect("a temporary directory").keep();
    println!("serve-load clients={clients} stories={STORIES} lines_per_story={lines} reps={reps}");
    let (mut alone, mut followed) = (Vec::new(), Vec::new());
    let (mut cpu, mut events, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        // Which goes first alternates, so that a machine getting busier
        // favours neither.
        let order = if rep % 2 == 0 {
            [0, clients]
        } else {
            [clients, 0]
        };
        for n in order {
            let run = timed_run(&root, &format!("run-{rep}-{n}"), lines, n);
            eprintln!("rep {rep}: {n} clients: {:?}", run.wall);
            if n == 0 {
                alone.push(run.wall.as_millis() as u64);
            } else {
                followed.push(run.wall.as_millis() as u64);
                cpu.push(run.cpu_ms);
                events.push(median(run.events.clone()));
                bytes.push(median(run.bytes));
                assert!(
                    run.events.iter().all(|n| *n >= 2),
                    "a client was not sent the run's moves: {:?}",
                    run.events
                );
            }
        }
    }
    let (alone, followed) = (median(alone), median(followed));
    println!(
        "run alone_ms={alone} followed_ms={followed} ratio={:.3}",
        followed as f64 / alone.max(1) as f64
    );
    println!(
        "per-client main_events={} bytes={} server_cpu_ms={}",
        median(events),
        median(bytes),
        median(cpu)
    );
    let _ = std::fs::remove_dir_all(&root);
}
