//! How git-ralph talks, seen from outside: colour only on a terminal and
//! never with NO_COLOR, `--json` that parses, errors as `error:` then `hint:`
//! on stderr, exit status 2 for a bad command line, and a closed pipe that is
//! not an error.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::story_run::TWO_STORIES;
use crate::harness::*;

const CHANGE: &str = "add-greeting";
const SUCCEEDS: &str = "[*]\nsay working on it\ntick-story\npromise COMPLETE\n";
const ESC: &str = "\x1b[";

fn repo_with_change() -> TestRepo {
    TestRepo::with_change(CHANGE, TWO_STORIES)
}

fn start_args() -> Vec<&'static str> {
    vec![
        "start",
        CHANGE,
        "--agent-command",
        fake_agent_path(),
        "--on-finish",
        "keep",
    ]
}

/// A repository with one run that completed.
fn repo_with_run() -> TestRepo {
    let repo = repo_with_change();
    assert_success(&start_with_fake(&repo, CHANGE, SUCCEEDS, &[]));
    repo
}

#[test]
fn errors_print_error_then_hint_on_stderr() {
    let repo = TestRepo::new();
    let output = run(ralph(&repo).args(["status"]));
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(output.stdout.is_empty(), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.first().is_some_and(|l| l.starts_with("error: ")),
        "{stderr}"
    );
    assert!(
        lines.iter().skip(1).any(|l| l.starts_with("hint: ")),
        "{stderr}"
    );
    assert!(!stderr.contains(ESC), "colour on a pipe: {stderr:?}");

    // Outside any repository.
    let outside = tempfile::tempdir().unwrap_or_else(|err| panic!("tempdir: {err}"));
    let output = run(ralph(&repo).current_dir(outside.path()).args(["status"]));
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
}

#[test]
fn a_bad_command_line_is_a_usage_error_with_status_2() {
    let repo = TestRepo::new();
    for args in [
        vec!["start"],
        vec!["no-such-command"],
        vec!["start", CHANGE, "--max-retries", "many"],
        vec!["finish", CHANGE],
        vec!["status", "--no-such-flag"],
    ] {
        let output = run(ralph(&repo).args(&args));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            describe(&output)
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}: {}", describe(&output));
    }
    // Help and version are not errors.
    for args in [vec!["--help"], vec!["--version"], vec!["start", "--help"]] {
        let output = run(ralph(&repo).args(&args));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            describe(&output)
        );
        assert!(!output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn start_json_prints_one_json_object_per_line() {
    let repo = repo_with_change();
    let output = start_with_fake(&repo, CHANGE, SUCCEEDS, &["--json"]);
    assert_success(&output);
    let stdout = stdout(&output);
    let events = parse_json_lines(&stdout, "start --json");
    assert!(events.len() >= 4, "too few events:\n{stdout}");
    for event in &events {
        assert!(event.is_object(), "{event}");
        assert_eq!(event["change"], CHANGE, "{event}");
    }
    assert!(!stdout.contains(ESC), "colour in JSON output");
}

#[test]
fn status_json_is_one_object_describing_the_run() {
    let repo = repo_with_run();
    let output = run(ralph(&repo).args(["status", "--json"]));
    assert_success(&output);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("status --json: {err}\n{}", describe(&output)));
    assert_eq!(report["change"], CHANGE);
    assert_eq!(report["branch"], format!("ralph/{CHANGE}"));
    assert_eq!(report["stories_total"], 2);
    assert_eq!(report["stories_done"], 2);
    assert_eq!(report["totals"]["attempts"], 2);
    assert_eq!(report["stories"].as_array().map(Vec::len), Some(2));
}

/// A pipe whose reading end is already closed.
fn closed_pipe() -> OwnedFd {
    let (reader, writer) = std::io::pipe().unwrap_or_else(|err| panic!("pipe: {err}"));
    drop(reader);
    writer.into()
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let repo = repo_with_run();
    for args in [
        vec!["status"],
        vec!["status", "--json"],
        vec!["--help"],
        vec!["start", "--help"],
    ] {
        let output = run(ralph(&repo).args(&args).stdout(Stdio::from(closed_pipe())));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            describe(&output)
        );
        assert!(
            output.stderr.is_empty(),
            "{args:?} complained: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // A loop whose reader went away still does its work.
    let repo = repo_with_change();
    let script_path = script(&repo, SUCCEEDS);
    let mut args = start_args();
    args.push("--json");
    let output = run(ralph_with_fake(&repo, &script_path)
        .args(&args)
        .stdout(Stdio::from(closed_pipe())));
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let status = run(ralph(&repo).args(["status", "--json"]));
    let report: serde_json::Value = serde_json::from_slice(&status.stdout)
        .unwrap_or_else(|err| panic!("status --json: {err}\n{}", describe(&status)));
    assert_eq!(report["stories_done"], 2, "{report}");
}

#[test]
fn no_colour_on_a_pipe() {
    let repo = repo_with_run();
    let output = run(ralph(&repo).args(["status"]));
    assert_success(&output);
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains(ESC),
        "{}",
        describe(&output)
    );
}

/// Runs `cmd` with stdout and stderr on a new pseudo-terminal; returns its
/// exit code and everything it wrote there.
fn on_terminal(cmd: &mut Command) -> (Option<i32>, String) {
    let pty = nix::pty::openpty(None, None).unwrap_or_else(|err| panic!("openpty: {err}"));
    let slave = |pty: &nix::pty::OpenptyResult| {
        pty.slave
            .try_clone()
            .unwrap_or_else(|err| panic!("dup: {err}"))
    };
    cmd.stdout(Stdio::from(slave(&pty)))
        .stderr(Stdio::from(slave(&pty)));
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {cmd:?}: {err}"));
    drop(pty.slave);
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let mut buf = [0u8; 4096];
        // Reading the master fails with EIO once every writer has gone.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.extend_from_slice(&buf[..n]);
        }
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                panic!("{cmd:?} did not end within a minute");
            }
            Err(err) => panic!("wait: {err}"),
        }
    };
    // The command still holds its copies of the terminal; let them go so the
    // reader sees the end.
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let text = reader
        .join()
        .unwrap_or_else(|_| panic!("the reader thread panicked"));
    (status.code(), String::from_utf8_lossy(&text).into_owned())
}

#[test]
fn colour_on_a_terminal_unless_no_color_is_set() {
    let repo = repo_with_run();

    let (code, screen) = on_terminal(ralph(&repo).args(["status"]));
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains(ESC), "no colour on a terminal:\n{screen}");

    let (code, screen) = on_terminal(ralph(&repo).args(["status"]).env("NO_COLOR", "1"));
    assert_eq!(code, Some(0), "{screen}");
    assert!(
        !screen.contains(ESC),
        "colour despite NO_COLOR:\n{screen:?}"
    );
    assert!(screen.contains(CHANGE), "{screen}");

    // Errors too.
    let (code, screen) = on_terminal(ralph(&repo).args(["status", "no-such-run"]));
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains(ESC), "no colour on a terminal:\n{screen}");
    let (code, screen) = on_terminal(
        ralph(&repo)
            .args(["status", "no-such-run"])
            .env("NO_COLOR", "1"),
    );
    assert_eq!(code, Some(1), "{screen}");
    assert!(
        !screen.contains(ESC),
        "colour despite NO_COLOR:\n{screen:?}"
    );
    assert!(screen.contains("error: "), "{screen}");
}
