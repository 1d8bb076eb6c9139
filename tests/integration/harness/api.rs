//! A local stand-in of a tracker's web API: a small HTTP/1.1 server on a
//! loopback port that answers each request with what a test's handler
//! gives, and keeps every request it received, so that a test can judge
//! what the run asked for and posted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path with its query, as sent: `/api/v4/projects/1/issues?page=2`.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The value of `name` in the query, percent-decoded.
    pub fn query(&self, name: &str) -> Option<String> {
        let query = self.target.split_once('?')?.1;
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| decode(value))
        })
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' if at + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        at += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        at += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                at += 1;
            }
            byte => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the stand-in answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(value: serde_json::Value) -> Reply {
        Reply::status(200, value)
    }

    pub fn status(status: u16, value: serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: value.to_string(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A running stand-in.
pub struct StandIn {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    received: Arc<Mutex<Vec<Request>>>,
}

impl StandIn {
    /// Serves `handler` on a loopback port until the test ends.
    pub fn serve(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the stand-in");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&received);
        let handler = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let kept = Arc::clone(&kept);
                let handler = Arc::clone(&handler);
                std::thread::spawn(move || answer(stream, &*handler, &kept));
            }
        });
        StandIn { base, received }
    }

    /// Every request so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Request> {
        self.received.lock().expect("requests").clone()
    }
}

fn answer(stream: TcpStream, handler: &dyn Fn(&Request) -> Reply, kept: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request = Request {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let reply = handler(&request);
    kept.lock().expect("requests").push(request);
    let mut stream = reader.into_inner();
    let mut head = format!(
        "HTTP/1.1 {} Stand-in\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(reply.body.as_bytes());
    let _ = stream.flush();
}

/// An address where nothing listens: a port taken and let go again.
pub fn nothing_listening() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    format!("http://{address}")
}

/// A start refused before anything was written: it failed, said `said`,
/// never showed `secret`, and left no run directory, no `ralph/*` branch
/// and a clean worktree.
pub fn assert_refused_before_writing(
    repo: &super::TestRepo,
    change: &str,
    output: &std::process::Output,
    said: &str,
    secret: &str,
) {
    assert_ne!(output.status.code(), Some(0), "{}", super::describe(output));
    let err = super::stderr(output);
    assert!(err.contains(said), "{err}");
    assert!(!err.contains(secret), "{err}");
    assert!(!repo.run_dir(change).exists());
    // Nor anything else of the run's: no lock, no record of another kind.
    let ralph_dir = repo.path(".git/ralph");
    let left: Vec<_> = std::fs::read_dir(&ralph_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name())
        .collect();
    assert!(left.is_empty(), "{} holds {left:?}", ralph_dir.display());
    assert_eq!(repo.git(&["branch", "--list", "ralph/*"]), "");
    assert_eq!(repo.status_porcelain(), "");
}

/// No byte under `.git/ralph/` (the run's state, events and logs) and
/// none of what the run printed holds `secret`.
pub fn assert_secret_nowhere(repo: &super::TestRepo, output: &std::process::Output, secret: &str) {
    let said = format!("{}{}", super::stdout(output), super::stderr(output));
    assert!(!said.contains(secret), "the output holds the secret");
    let mut pending = vec![repo.path(".git/ralph")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(secret),
                    "{} holds the secret",
                    path.display()
                );
            }
        }
    }
}
