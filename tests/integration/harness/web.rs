//! `git ralph serve` from the outside: the server run in the background
//! with the URL it prints, and a small HTTP/1.1 client on `std::net` that
//! sends exactly the bytes a test writes (well-formed or not) and reads
//! the answer, whole or as server-sent events.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use super::story_run::Background;
use super::{TestRepo, ralph, wait_until};

/// An answer: status, headers (names lower-cased) and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn parse(raw: &[u8]) -> Reply {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or((raw, &raw[raw.len()..]), |at| (&raw[..at], &raw[at + 4..]));
        let head = String::from_utf8_lossy(split.0);
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {head:?}"));
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect::<Vec<_>>();
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let body = if chunked {
            dechunk(split.1)
        } else {
            split.1.to_vec()
        };
        Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// A chunked body's content, as far as it came.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..eol])
            .ok()
            .and_then(|size| usize::from_str_radix(size.trim(), 16).ok());
        let Some(size) = size else {
            break;
        };
        let rest = &body[eol + 2..];
        if size == 0 || rest.len() < size {
            out.extend_from_slice(&rest[..rest.len().min(size)]);
            break;
        }
        out.extend_from_slice(&rest[..size]);
        body = rest[size..].strip_prefix(b"\r\n").unwrap_or(&rest[size..]);
    }
    out
}

/// Sends `request` as it is and reads the answer until the server closes
/// the connection (30 s at most).
pub fn send_raw(addr: SocketAddr, request: &[u8]) -> Option<Reply> {
    let mut stream = TcpStream::connect(addr).expect("the server accepts connections");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    // A server that answers before reading all of a huge request may close
    // on us mid-write; what it answered is still there to read.
    let _ = stream.write_all(request);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    (!raw.is_empty()).then(|| Reply::parse(&raw))
}

/// A running `git ralph serve`, and how to reach it.
pub struct Served {
    pub process: Background,
    pub client: Client,
}

impl std::ops::Deref for Served {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Served {
    /// `git ralph serve --bind 127.0.0.1:0` and `extra`, in `repo`.
    pub fn start(repo: &TestRepo, extra: &[&str]) -> Served {
        let mut cmd = ralph(repo);
        cmd.args(["serve", "--bind", "127.0.0.1:0"]).args(extra);
        Served::spawn(repo, cmd)
    }

    pub fn spawn(repo: &TestRepo, cmd: std::process::Command) -> Served {
        let process = Background::spawn(repo, cmd);
        let mut url = String::new();
        wait_until("the server prints its URL", Duration::from_secs(30), || {
            url = process
                .stdout_so_far()
                .lines()
                .next()
                .unwrap_or("")
                .to_owned();
            !url.is_empty()
        });
        Served {
            process,
            client: Client::of(&url),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

/// What a URL with a token gives a client of the server.
pub struct Client {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub addr: SocketAddr,
    pub token: String,
    /// The URL the server printed.
    pub url: String,
}

impl Client {
    /// The client of the server that printed `url`.
    pub fn of(url: &str) -> Client {
        let rest = url.strip_prefix("http://").expect("an http URL");
        let host = rest.split('/').next().expect("a host");
        let token = url.split("token=").nth(1).expect("a token").to_owned();
        Client {
            base: format!("http://{host}"),
            addr: host.parse().expect("an address and port"),
            token,
            url: url.to_owned(),
        }
    }

    /// `GET path` with `headers` (each `Name: value`), the host given.
    pub fn get_with(&self, path: &str, headers: &[&str]) -> Reply {
        let request = self.request("GET", path, headers, "");
        send_raw(self.addr, request.as_bytes()).expect("an answer")
    }

    /// `GET path` with the token as a bearer token.
    pub fn get(&self, path: &str) -> Reply {
        self.get_with(path, &[&self.bearer()])
    }

    pub fn bearer(&self) -> String {
        format!("Authorization: Bearer {}", self.token)
    }

    /// The cookie the browser keeps after the first visit.
    pub fn cookie(&self) -> String {
        format!("Cookie: ralph-token-{}={}", self.addr.port(), self.token)
    }

    /// `POST path` with a form body.
    pub fn post(&self, path: &str, headers: &[&str], form: &str) -> Reply {
        let request = self.request("POST", path, headers, form);
        send_raw(self.addr, request.as_bytes()).expect("an answer")
    }

    pub fn request(&self, method: &str, path: &str, headers: &[&str], body: &str) -> String {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        for header in headers {
            request.push_str(header);
            request.push_str("\r\n");
        }
        if !body.is_empty() {
            request.push_str(&format!(
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        request.push_str("\r\n");
        request.push_str(body);
        request
    }

    /// Follows the events of `path` until `done` holds for what came so
    /// far (60 s at most); returns all that came.
    pub fn events_until(&self, path: &str, mut done: impl FnMut(&str) -> bool) -> String {
        let mut stream = TcpStream::connect(self.addr).expect("the server accepts connections");
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("a read timeout");
        let request = self.request("GET", path, &[&self.bearer()], "");
        stream
            .write_all(request.as_bytes())
            .expect("the request is sent");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        let mut buf = [0u8; 64 << 10];
        loop {
            // The body as it came so far, its chunks put together.
            let text = if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                Reply::parse(&seen).body
            } else {
                String::new()
            };
            if done(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "the events of {path} never said what was waited for; they said:\n{text}"
            );
            match stream.read(&mut buf) {
                Ok(0) => panic!("the server closed the events of {path}:\n{text}"),
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
    }
}

/// The data of every `event: <name>` in a stream of events, in order.
pub fn event_data(stream: &str, name: &str) -> Vec<String> {
    stream
        .split("\n\n")
        .filter(|frame| frame.lines().any(|line| line == format!("event: {name}")))
        .map(|frame| {
            frame
                .lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// A free port on 127.0.0.1, for a program that must be told one.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// The process ids of `parent`'s children whose command line holds `word`.
pub fn children_with(parent: u32, word: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(word)
        })
        .collect()
}

/// Whether `pid` names a live process (zombies aside).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The file `name` in the test's directory, which an agent waits for.
pub fn go_file(repo: &TestRepo, name: &str) -> std::path::PathBuf {
    repo.dir.path().join(name)
}

/// Let an agent waiting for `path` go on.
pub fn release(path: &Path) {
    std::fs::write(path, "go")
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
}
