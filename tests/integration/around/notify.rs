//! Issue 27: notifications. When a run ends, done or stopped for a person
//! (a set-up error, a usage limit, a story out of retries), `--notify`
//! (`ralph.notify`) shows a desktop notification where the platform has
//! one and rings the bell on the loop screen, and `[notify] webhook` in
//! ralph.toml receives a JSON POST (Slack-compatible when asked). The
//! webhook never holds the run up, and a failure to deliver is reported
//! once.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::story_run::*;
use crate::harness::*;

/// One request the listener received.
#[derive(Debug)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "the webhook got no JSON ({err}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Reads one HTTP/1.1 request from `stream`.
fn read_request(stream: &mut TcpStream) -> Received {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (key, value) = line.split_once(':').unwrap();
        headers.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
        .map(|(_, value)| value.parse().unwrap())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    Received {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body,
    }
}

/// A local webhook answering `status`; what it receives comes out of the
/// receiver.
fn listener(status: &'static str) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/hooks/ralph?team=core",
        listener.local_addr().unwrap()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let received = read_request(&mut stream);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            );
            if tx.send(received).is_err() {
                return;
            }
        }
    });
    (url, rx)
}

/// A webhook that takes the connection and never answers.
fn silent_listener() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    url
}

fn with_webhook(repo: &TestRepo, table: &str) {
    repo.write("ralph.toml", format!("[notify]\n{table}"));
    repo.commit_all("Add the contract");
}

fn warnings(repo: &TestRepo) -> Vec<String> {
    of_type(&events(repo), "warning")
        .iter()
        .map(|event| event["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A directory of stand-in programs, first on PATH.
fn stand_ins(repo: &TestRepo, programs: &[(&str, &str)]) -> String {
    let bin = repo.dir.path().join("stand-ins");
    fs::create_dir_all(&bin).unwrap();
    for (name, body) in programs {
        let path = bin.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!("{}:{}", bin.display(), path_without("notify-send"))
}

/// PATH without any directory that holds `program`.
fn path_without(program: &str) -> String {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|dir| !Path::new(dir).join(program).exists())
        .collect::<Vec<_>>()
        .join(":")
}

fn start_in_path(
    repo: &TestRepo,
    agent: &Path,
    path: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut cmd = start_command(repo, agent, &["--on-finish", "keep", "--plain"]);
    cmd.env("PATH", path).args(extra);
    run(&mut cmd)
}

fn recorded(file: &PathBuf) -> Vec<String> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn issue_27_the_webhook_receives_the_end_of_the_run_as_json() {
    let repo = project(TWO_STORIES);
    let (url, received) = listener("200 OK");
    with_webhook(&repo, &format!("webhook = \"{url}\"\n"));
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    let request = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the webhook was called");
    assert_eq!(request.request_line, "POST /hooks/ralph?team=core HTTP/1.1");
    assert!(
        request
            .header("content-type")
            .is_some_and(|value| value.starts_with("application/json")),
        "{request:?}"
    );
    assert!(request.header("host").is_some(), "{request:?}");
    let json = request.json();
    assert_eq!(json["event"], "run_ended");
    assert_eq!(json["change"], "greet");
    assert_eq!(json["reason"], "completed");
    assert_eq!(json["needs_you"], false);
    assert_eq!(json["branch"], "ralph/greet");
    assert_eq!(json["stories_total"], 2);
    assert!(
        json["title"].as_str().unwrap_or_default().contains("greet"),
        "{json}"
    );
    assert!(json["text"].is_string(), "{json}");
    assert!(
        received.recv_timeout(Duration::from_millis(300)).is_err(),
        "one POST per run end"
    );
    assert_eq!(warnings(&repo), Vec::<String>::new());
}

#[test]
fn issue_27_a_slack_payload_says_a_story_ran_out_of_retries() {
    let repo = project(TWO_STORIES);
    let (url, received) = listener("200 OK");
    with_webhook(
        &repo,
        &format!("webhook = \"{url}\"\npayload = \"slack\"\n"),
    );
    let agent = script(&repo, "[*]\npromise FAILED: the greeting will not come\n");
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 3);

    let request = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the webhook was called");
    let json = request.json();
    let text = json["text"].as_str().unwrap_or_default();
    for words in ["greet", "max_retries", "needs you"] {
        assert!(text.contains(words), "{words:?} in {json}");
    }
    assert_eq!(
        json.as_object().unwrap().len(),
        1,
        "Slack's payload is its text alone: {json}"
    );
}

#[test]
fn issue_27_an_unreachable_webhook_does_not_hold_the_run_and_is_reported_once() {
    // Nothing listens: refused at once.
    let repo = project(TWO_STORIES);
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    with_webhook(&repo, &format!("webhook = \"{url}\"\n"));
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    // Shown by its origin alone: a webhook's path often holds a secret.
    let origin = url.trim_end_matches("/hook");
    let said = warnings(&repo);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains(origin), "{said:?}");
    assert!(!said[0].contains(&url), "{said:?}");
    assert!(
        stderr(&output).contains(origin) || stdout(&output).contains(origin),
        "the failure is shown: {}",
        describe(&output)
    );
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);

    // Something takes the connection and never answers.
    let repo = project(TWO_STORIES);
    let url = silent_listener();
    with_webhook(&repo, &format!("webhook = \"{url}\"\n"));
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let started = Instant::now();
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    let elapsed = started.elapsed();
    assert_exit(&output, 0);
    assert!(
        elapsed < Duration::from_secs(12),
        "a silent webhook held the run ({elapsed:?})"
    );
    let said = warnings(&repo);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(url.trim_end_matches("/hook")) && said[0].contains("no answer"),
        "{said:?}"
    );
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

#[test]
fn issue_27_a_bad_webhook_address_refuses_the_start() {
    let repo = project(TWO_STORIES);
    with_webhook(&repo, "webhook = \"ftp://example.com/x\"\n");
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        stderr(&output).contains("ftp://example.com/x"),
        "{}",
        describe(&output)
    );
    assert_eq!(script_calls(&agent), 0);
}

/// The address goes to curl in a config on its standard input, never on
/// its command line, where any user of the machine could read the secret
/// it holds in the process list.
#[test]
fn issue_27_an_https_webhook_goes_through_curl() {
    let repo = project(TWO_STORIES);
    let args = repo.dir.path().join("curl.args");
    let config = repo.dir.path().join("curl.config");
    let path = stand_ins(
        &repo,
        &[(
            "curl",
            &format!(
                "printf '%s\\n' \"$@\" > {}; cat > {}; printf 200",
                shell_quote(&args.to_string_lossy()),
                shell_quote(&config.to_string_lossy())
            ),
        )],
    );
    with_webhook(&repo, "webhook = \"https://hooks.example.com/T0/B0\"\n");
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start_in_path(&repo, &agent, &path, &[]);
    assert_exit(&output, 0);
    let args = recorded(&args);
    assert!(
        args.iter().all(|arg| !arg.contains("hooks.example.com")),
        "the address is on curl's command line: {args:?}"
    );
    let config = recorded(&config);
    assert!(
        config
            .iter()
            .any(|line| line == "url = \"https://hooks.example.com/T0/B0\""),
        "{config:?}"
    );
    let data = config
        .iter()
        .find_map(|line| line.strip_prefix("data-binary = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("the body in the config");
    // curl's config quoting: a backslash escapes the character after it.
    let mut unquoted = String::new();
    let mut chars = data.chars();
    while let Some(c) = chars.next() {
        unquoted.push(if c == '\\' { chars.next().unwrap() } else { c });
    }
    let body: Value = serde_json::from_str(&unquoted).expect("the body is the JSON");
    assert_eq!(body["reason"], "completed");
    assert_eq!(warnings(&repo), Vec::<String>::new());
}

#[test]
fn issue_27_notify_shows_a_desktop_notification_and_rings_the_bell() {
    let repo = project(TWO_STORIES);
    let seen = repo.dir.path().join("notify-send.log");
    let path = stand_ins(
        &repo,
        &[(
            "notify-send",
            &format!(
                "printf '%s\\n' \"$@\" >> {}",
                shell_quote(&seen.to_string_lossy())
            ),
        )],
    );
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start_in_path(&repo, &agent, &path, &["--notify"]);
    assert_exit(&output, 0);
    let lines = recorded(&seen);
    assert!(
        lines.iter().any(|line| line.contains("greet")),
        "notify-send was called once, about the run: {lines:?}"
    );
    assert!(
        stdout(&output).contains('\u{7}'),
        "the bell rang: {}",
        describe(&output)
    );
    assert_eq!(state(&repo)["settings"]["notify"], true);

    // Without --notify: no notification, no bell.
    let quiet = project(TWO_STORIES);
    let seen = quiet.dir.path().join("notify-send.log");
    let path = stand_ins(
        &quiet,
        &[(
            "notify-send",
            &format!("echo called >> {}", shell_quote(&seen.to_string_lossy())),
        )],
    );
    let agent = script(&quiet, &stories_done(&["1", "2"]));
    let output = start_in_path(&quiet, &agent, &path, &[]);
    assert_exit(&output, 0);
    assert!(!seen.exists(), "notify-send ran without --notify");
    assert!(!stdout(&output).contains('\u{7}'), "{}", describe(&output));
}

#[test]
fn issue_27_notify_comes_from_git_config_and_is_quiet_without_a_desktop() {
    let repo = project(TWO_STORIES);
    repo.git(&["config", "ralph.notify", "true"]);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start_in_path(&repo, &agent, &path_without("notify-send"), &[]);
    assert_exit(&output, 0);
    assert_eq!(state(&repo)["settings"]["notify"], true);
    assert!(stdout(&output).contains('\u{7}'), "{}", describe(&output));
    assert_eq!(
        warnings(&repo),
        Vec::<String>::new(),
        "no desktop, no complaint"
    );
    assert!(
        !stderr(&output).contains("notify-send"),
        "{}",
        describe(&output)
    );
}

#[test]
fn issue_27_the_users_own_webhook_comes_from_git_config() {
    let repo = project(TWO_STORIES);
    let (url, received) = listener("204 No Content");
    with_webhook(&repo, "webhook = \"http://127.0.0.1:1/the-repositorys\"\n");
    repo.git(&["config", "ralph.notifyWebhook", &url]);
    repo.git(&["config", "ralph.notifyPayload", "slack"]);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let json = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the webhook of git config was called")
        .json();
    assert!(
        json["text"].as_str().unwrap_or_default().contains("greet"),
        "{json}"
    );
    assert_eq!(warnings(&repo), Vec::<String>::new(), "a 204 is delivered");

    let fresh = project(TWO_STORIES);
    fresh.git(&["config", "ralph.notifyPayload", "xml"]);
    let agent = script(&fresh, &stories_done(&["1", "2"]));
    let output = start(&fresh, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("ralph.notifyPayload"),
        "{}",
        describe(&output)
    );
}

/// A script whose first attempt hits a usage limit that resets in a few
/// seconds (a reset already past would mean a minute's backoff): the run
/// pauses, then finishes both stories.
fn limited_once(repo: &TestRepo) -> PathBuf {
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3;
    script(
        repo,
        &format!(
            "format claude\n[story=1 attempt=1]\nrate-limit {reset}\n[story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    )
}

#[test]
fn issue_27_a_usage_limit_pause_is_told_too() {
    let repo = project(TWO_STORIES);
    let (url, received) = listener("200 OK");
    with_webhook(&repo, &format!("webhook = \"{url}\"\n"));
    let agent = limited_once(&repo);
    let output = start_in_path(&repo, &agent, &path_without("notify-send"), &["--notify"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output).matches('\u{7}').count(),
        2,
        "the bell rang at the pause and at the end: {}",
        describe(&output)
    );
    let paused = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the pause was told")
        .json();
    assert_eq!(paused["event"], "paused", "{paused}");
    assert!(paused["until_unix"].is_u64(), "{paused}");
    assert_eq!(paused["needs_you"], true);
    assert!(
        paused["title"]
            .as_str()
            .unwrap_or_default()
            .contains("usage limit"),
        "{paused}"
    );
    let ended = received
        .recv_timeout(Duration::from_secs(5))
        .expect("the end was told")
        .json();
    assert_eq!(ended["event"], "run_ended");
    assert_eq!(ended["reason"], "completed");
}

#[test]
fn issue_27_a_webhook_that_fails_twice_is_reported_once() {
    let repo = project(TWO_STORIES);
    let (url, received) = listener("500 Internal Server Error");
    with_webhook(&repo, &format!("webhook = \"{url}\"\n"));
    let agent = limited_once(&repo);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let told: Vec<String> = received
        .try_iter()
        .map(|request| {
            request.json()["event"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(told, ["paused", "run_ended"]);
    let said = warnings(&repo);
    assert_eq!(said.len(), 1, "two failures, told once: {said:?}");
    assert!(said[0].contains("500"), "{said:?}");
    assert!(said[0].contains("not reported"), "{said:?}");
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

/// Story 1 is done; story 2's agent ends with a question.
fn asking_agent(repo: &TestRepo) -> PathBuf {
    script(
        repo,
        &format!(
            "format claude\n{}[story=2]\nfinal Which farewell do you want?\n",
            story_done("1")
        ),
    )
}

#[test]
fn issue_38_the_webhook_and_the_desktop_hear_of_each_question() {
    let repo = project(TWO_STORIES);
    let (url, received) = listener("200 OK");
    with_webhook(&repo, &format!("webhook = \"{url}\"\n"));
    let seen = repo.dir.path().join("notify-send.log");
    let path = stand_ins(
        &repo,
        &[(
            "notify-send",
            &format!(
                "printf '%s\\n' \"$@\" >> {}",
                shell_quote(&seen.to_string_lossy())
            ),
        )],
    );
    let agent = asking_agent(&repo);
    let output = start_in_path(&repo, &agent, &path, &["--notify"]);
    assert_exit(&output, 9);
    let requests: Vec<Value> = (0..2)
        .map(|_| {
            received
                .recv_timeout(Duration::from_secs(5))
                .expect("the webhook was called")
                .json()
        })
        .collect();
    let asked = requests
        .iter()
        .find(|json| json["event"] == "question")
        .unwrap_or_else(|| panic!("no question was posted: {requests:?}"));
    assert_eq!(asked["needs_you"], true);
    let text = asked["text"].as_str().unwrap_or_default();
    assert!(text.contains("Which farewell do you want?"), "{asked}");
    assert!(text.contains("git ralph answer greet 2"), "{asked}");
    let ended = requests
        .iter()
        .find(|json| json["event"] == "run_ended")
        .expect("the end was posted");
    assert_eq!(ended["reason"], "questions");
    let lines = recorded(&seen);
    assert!(
        lines
            .iter()
            .any(|line| line.contains("has a question for you")),
        "{lines:?}"
    );
    assert!(stdout(&output).contains('\u{7}'), "{}", describe(&output));
}
