//! The agent's output, through the real binary: it is streamed byte for
//! byte to `<git-dir>/ralph/<change>/attempts/<story>-<n>.jsonl` while the
//! agent runs (stderr beside it), and an agent that floods its output costs
//! disk, not git-ralph's memory.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::harness::story_run::*;
use crate::harness::*;

#[test]
fn plain_output_is_logged_byte_for_byte_and_stderr_beside_it() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nsay first line\nerror the model is overloaded\n\
             [story=1 attempt=2]\nsay first line\ntool ran the tests: 3 passed\nsay second line\n\
             write story-1.txt done\ntick-story\nfinal All done.\npromise COMPLETE\n{}",
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    let attempts = run_dir(&repo).join("attempts");
    assert_eq!(
        fs::read_to_string(attempts.join("1-2.jsonl")).expect("the log of story 1 attempt 2"),
        "first line\nran the tests: 3 passed\nsecond line\nAll done.\n<promise>COMPLETE</promise>\n"
    );
    assert_eq!(
        fs::read_to_string(attempts.join("1-1.jsonl")).expect("the log of story 1 attempt 1"),
        "first line\n"
    );
    let stderr_log = fs::read_to_string(attempts.join("1-1.jsonl.stderr"))
        .expect("the agent's stderr is kept beside its log");
    assert!(
        stderr_log.contains("the model is overloaded"),
        "{stderr_log}"
    );
    assert!(
        !attempts.join("1-2.jsonl.stderr").exists(),
        "no stderr, no file"
    );
    let state = state(&repo);
    let logs: Vec<&str> = state["stories"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["log"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(logs, ["attempts/1-1.jsonl", "attempts/1-2.jsonl"]);
}

#[test]
fn claude_stream_json_is_logged_as_valid_json_lines() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "format claude\n[story=1]\nsay Working on it.\ntool wrote hello.txt\nusage 10 5 0.01\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let log_path = run_dir(&repo).join("attempts/1-1.jsonl");
    let log = fs::read_to_string(&log_path).expect("the log");
    let events = json_lines(&log_path);
    assert_eq!(
        events.first().map(|e| e["type"].clone()),
        Some("system".into())
    );
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some("result".into())
    );
    assert!(log.contains("Working on it."), "{log}");
    assert!(log.contains("wrote hello.txt"), "{log}");
}

#[test]
fn output_reaches_the_log_while_the_agent_is_still_running() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nsay early line\nsleep 3\nsay late line\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let log = run_dir(&repo).join("attempts/1-1.jsonl");
    let started = Instant::now();
    wait_until(
        "the first line reaches the log",
        Duration::from_secs(10),
        || fs::read_to_string(&log).is_ok_and(|text| text.contains("early line")),
    );
    let pgid = agent_pid(&repo, "1", 1);
    assert!(
        group_alive(pgid),
        "the line was logged only after the agent ended ({:?})",
        started.elapsed()
    );
    assert!(
        !fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("late line")
    );
    let finished = run.wait(Duration::from_secs(30));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(
        fs::read_to_string(&log)
            .expect("the log")
            .contains("late line")
    );
}

/// Runs `cmd` and returns its output with its peak resident set in KiB,
/// from GNU time when installed, else by watching `/proc/<pid>/status`.
fn with_peak_rss(repo: &TestRepo, cmd: &Command) -> (Output, u64) {
    let gnu_time = Path::new("/usr/bin/time");
    let wrapper = if gnu_time.exists() {
        let mut wrapper = Command::new(gnu_time);
        wrapper
            .arg("-v")
            .arg("-o")
            .arg(repo.dir.path().join("time.txt"));
        wrapper
    } else {
        // `env` runs the command as it is.
        Command::new("env")
    };
    let mut wrapped = repo.wrap(wrapper, cmd);
    if gnu_time.exists() {
        let output = run(&mut wrapped);
        let report = fs::read_to_string(repo.dir.path().join("time.txt")).expect("time's report");
        let peak = report
            .lines()
            .find_map(|line| {
                line.trim()
                    .strip_prefix("Maximum resident set size (kbytes): ")
            })
            .and_then(|kib| kib.trim().parse().ok())
            .unwrap_or_else(|| panic!("no peak RSS in:\n{report}"));
        return (output, peak);
    }
    let out_path = repo.dir.path().join("rss.out");
    let err_path = repo.dir.path().join("rss.err");
    wrapped
        .stdout(fs::File::create(&out_path).expect("stdout file"))
        .stderr(fs::File::create(&err_path).expect("stderr file"));
    let mut child = wrapped.spawn().expect("git-ralph starts");
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Ok(text) = fs::read_to_string(&status_path)
            && let Some(kib) = text
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = Output {
        status,
        stdout: fs::read(&out_path).unwrap_or_default(),
        stderr: fs::read(&err_path).unwrap_or_default(),
    };
    (output, peak)
}

/// Peak RSS of a whole one-story run whose agent prints `bytes` of junk.
fn run_with_flood(bytes: u64) -> (TestRepo, u64) {
    let repo = project("## 1. Flood\n\n- [ ] 1.1 Survive the flood\n");
    let agent = script(
        &repo,
        &format!("[story=1]\nflood {bytes}\ntick-story\npromise COMPLETE\n"),
    );
    let cmd = start_command(&repo, &agent, &["--on-finish", "keep"]);
    let (output, peak) = with_peak_rss(&repo, &cmd);
    assert_exit(&output, 0);
    let log = run_dir(&repo).join("attempts/1-1.jsonl");
    let logged = fs::metadata(&log).expect("the attempt log").len();
    assert_eq!(
        logged,
        bytes + "<promise>COMPLETE</promise>\n".len() as u64,
        "every byte of output is in the log"
    );
    (repo, peak)
}

#[test]
fn a_flooding_agent_costs_disk_not_memory() {
    const FLOOD: u64 = 50 * 1000 * 1000;
    const ALLOWED_GROWTH_KIB: u64 = 32 * 1024;
    let (_quiet, baseline) = run_with_flood(1000);
    let (repo, flooded) = run_with_flood(FLOOD);
    assert_eq!(
        subjects(&repo, "main..ralph/greet").len(),
        2,
        "the flooded story was still checkpointed"
    );
    assert!(
        flooded < baseline + ALLOWED_GROWTH_KIB,
        "{FLOOD} bytes of agent output raised git-ralph's peak RSS from {baseline} KiB to {flooded} KiB"
    );
}
