//! A real browser for the pages of `git ralph serve`: headless Chromium
//! from the distribution's packages, driven through chromedriver over
//! WebDriver (JSON over HTTP, spoken here with `std::net`). Nothing is
//! downloaded at test time. Where Chromium is not installed the tests that
//! need it are skipped with a note; CI installs it (`.ci/run`). What a
//! page shows is judged by the text of its DOM, never by pixels; the
//! screenshots are kept under `target/tmp/serve-shots/` for people.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::web::{Reply, free_port};
use super::{required, wait_until};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A phone's viewport, and a desk's.
pub const PHONE: (u32, u32) = (390, 844);
pub const DESKTOP: (u32, u32) = (1280, 900);

pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Chromium with a new, empty profile, at `size`; `None` (with a note)
    /// when it is not installed on this machine.
    pub fn start(size: (u32, u32)) -> Option<Browser> {
        let chromium = required("chromium", &[PathBuf::from(CHROMIUM)])?;
        let chromedriver = required("chromedriver", &[PathBuf::from(CHROMEDRIVER)])?;
        let profile = tempfile::tempdir().expect("a profile directory");
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .env("HOME", profile.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        wait_until("chromedriver is ready", Duration::from_secs(30), || {
            browser
                .try_call("GET", "/status", None)
                .is_some_and(|status| status["value"]["ready"].as_bool() == Some(true))
        });
        let data_dir = browser._profile.path().join("data");
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            format!("--user-data-dir={}", data_dir.display()),
            format!("--window-size={},{}", size.0, size.1),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let created = browser.call("POST", "/session", Some(capabilities));
        browser.session = created["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        Some(browser)
    }

    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .ok()?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        );
        stream.write_all(request.as_bytes()).ok()?;
        let reply = Reply::parse(&read_answer(&mut stream)?);
        serde_json::from_str(&reply.body).ok()
    }

    /// A WebDriver command; a refusal fails the test with its message.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let value = self
            .try_call(method, path, body)
            .unwrap_or_else(|| panic!("chromedriver did not answer {method} {path}"));
        if let Some(error) = value["value"]["error"].as_str() {
            panic!(
                "WebDriver {method} {path}: {error}: {}",
                value["value"]["message"]
            );
        }
        value
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.call(
            "POST",
            &self.session_path("/url"),
            Some(json!({"url": url})),
        );
    }

    pub fn resize(&self, (width, height): (u32, u32)) {
        self.call(
            "POST",
            &self.session_path("/window/rect"),
            Some(json!({"width": width, "height": height})),
        );
    }

    /// Runs `script` (a function body: `return …`) in the page.
    pub fn run(&self, script: &str) -> Value {
        self.call(
            "POST",
            &self.session_path("/execute/sync"),
            Some(json!({"script": script, "args": []})),
        )["value"]
            .clone()
    }

    /// The first element `css` selects, waited for (60 s at most), as
    /// WebDriver names it.
    fn element(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let found = self.try_call(
                "POST",
                &self.session_path("/element"),
                Some(json!({"using": "css selector", "value": css})),
            );
            let id = found.as_ref().and_then(|found| {
                found["value"]
                    .as_object()?
                    .iter()
                    .find(|(key, _)| key.starts_with("element-"))
                    .and_then(|(_, id)| id.as_str())
                    .map(str::to_owned)
            });
            if let Some(id) = id {
                return id;
            }
            assert!(
                Instant::now() < deadline,
                "the page never showed {css:?}; it shows:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Clicks the element `css` selects, as a person does: scrolled into
    /// view, the pointer on it (a link followed, a form's button pressed).
    pub fn click(&self, css: &str) {
        self.on_element(css, "click", json!({}));
    }

    /// Types `text` into the field `css` selects, as a person does.
    pub fn fill(&self, css: &str, text: &str) {
        self.on_element(css, "value", json!({"text": text}));
    }

    /// `command` on the element `css` selects; found again when a live
    /// page replaced it between finding and acting.
    fn on_element(&self, css: &str, command: &str, body: Value) {
        for _ in 0..50 {
            let id = self.element(css);
            let path = self.session_path(&format!("/element/{id}/{command}"));
            let done = self
                .try_call("POST", &path, Some(body.clone()))
                .unwrap_or_else(|| panic!("chromedriver did not answer {command} on {css:?}"));
            match done["value"]["error"].as_str() {
                None => return,
                Some("stale element reference") => continue,
                Some(error) => panic!(
                    "WebDriver {command} on {css:?}: {error}: {}",
                    done["value"]["message"]
                ),
            }
        }
        panic!("{css:?} was replaced 50 times over before it could be used");
    }

    /// The address of the page shown.
    pub fn location(&self) -> String {
        self.call("GET", &self.session_path("/url"), None)["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The text the page shows.
    pub fn text(&self) -> String {
        self.run("return document.body ? document.body.innerText : ''")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits (60 s at most) until the page's text satisfies `done`.
    pub fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = self.text();
            if done(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "the page never showed {what}; it shows:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A screenshot of the viewport, kept for people; returns its path.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let shot = self.call("GET", &self.session_path("/screenshot"), None);
        let png = decode_base64(shot["value"].as_str().expect("a screenshot"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-shots");
        std::fs::create_dir_all(&dir).expect("the screenshot directory");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot is written");
        path
    }

    /// Forget every cookie, as a browser that never had the token.
    pub fn delete_cookies(&self) {
        self.call("DELETE", &self.session_path("/cookie"), None);
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.try_call("DELETE", &self.session_path(""), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One answer, read as far as its Content-Length says: chromedriver keeps
/// the connection open whatever the request asked.
fn read_answer(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse::<usize>().ok())?;
            if raw.len() >= at + 4 + length {
                return Some(raw);
            }
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return Some(raw);
        }
        raw.extend_from_slice(&buf[..n]);
    }
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for sextet in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(sextet);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
