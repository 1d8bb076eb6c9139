//! Issue 28, end to end through the real binary: no input crashes
//! git-ralph. A task file with table rows of any shape is read, not a
//! panic; a file that is not text is an error that names it; and a panic
//! that still happens inside a run is reported as a bug, with the run left
//! as after a clean stop, resumable.

use crate::harness::{
    TestRepo, assert_exit, assert_success, describe, dry_run, fake_agent_path, ralph, ralph_cmd,
    ralph_with_fake, run, script, start_with_fake, stderr, stdout,
};

/// `start <change> --dry-run --json` on an OpenSpec change holding `tasks`.
fn dry_run_openspec(tasks: &str) -> (TestRepo, std::process::Output) {
    let repo = TestRepo::with_change("tables", tasks);
    let output = dry_run(&repo, &["tables", "--json"]);
    (repo, output)
}

/// Story ids and their task counts from a `--dry-run --json` preview.
fn stories_of(output: &std::process::Output) -> Vec<(String, u64)> {
    let preview: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("one JSON object ({err}): {}", describe(output)));
    preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|story| {
            (
                story["id"].as_str().expect("id").to_owned(),
                story["tasks"].as_u64().expect("tasks"),
            )
        })
        .collect()
}

#[test]
fn issue_28_a_table_row_with_an_empty_last_cell_is_read_not_a_crash() {
    let tasks = "## 1. One\n\n- [ ] task\n\n| a | b | |\n";
    let (_repo, output) = dry_run_openspec(tasks);
    assert_success(&output);
    assert!(
        !stderr(&output).contains("panicked"),
        "{}",
        describe(&output)
    );
    assert_eq!(stories_of(&output), [("1".to_owned(), 1)]);
}

#[test]
fn issue_28_table_rows_of_every_shape_are_read_in_openspec_and_checklists() {
    // Empty cells first, last, in the middle, alone, several in a row;
    // whitespace of other kinds; multi-byte text beside them; boxes in
    // cells; CRLF line ends and a byte-order mark.
    let rows = [
        "| a | b | |",
        "| | | |",
        "|  |",
        "| |",
        "||",
        "|",
        "| \u{a0} |",
        "|\t|\t|",
        "| é | |",
        "| 日本 | \u{3000} |",
        "| [ ] | |",
        "| | [x] |",
        "| [ ] |",
        "| [é] | |",
        "| \\| | |",
        "|\\|",
        "| a | b |  \u{2003}|",
        "| **Total** | | |",
    ];
    let body: String = rows.iter().map(|row| format!("{row}\n")).collect();
    for (name, text) in [
        ("plain", format!("## 1. One\n\n- [ ] task\n\n{body}")),
        (
            "crlf and bom",
            format!(
                "\u{feff}## 1. One\r\n\r\n- [ ] task\r\n\r\n{}",
                body.replace('\n', "\r\n")
            ),
        ),
    ] {
        let (repo, output) = dry_run_openspec(&text);
        assert_success(&output);
        assert!(
            stories_of(&output).iter().any(|(id, _)| id == "1"),
            "{name}: {}",
            describe(&output)
        );
        // The same file as a checklist given with --tasks.
        repo.write("PLAN.md", &text);
        let output = dry_run(&repo, &["plan", "--tasks", "PLAN.md", "--json"]);
        assert_success(&output);
        assert!(
            !stderr(&output).contains("panicked"),
            "{name}: {}",
            describe(&output)
        );
    }
}

#[test]
fn issue_28_a_task_file_that_is_not_text_is_an_error_that_names_it() {
    let repo = TestRepo::with_change("binary", "## 1. One\n\n- [ ] task\n");
    repo.write(
        "openspec/changes/binary/tasks.md",
        b"## 1. One\n\n- [ ] caf\xe9 \xff\xfe\n".as_slice(),
    );
    repo.commit_all("A tasks file in Latin-1");
    let output =
        run(ralph(&repo).args(["start", "binary", "--dry-run", "--agent-command", "true"]));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{}", describe(&output));
    assert!(
        err.contains("openspec/changes/binary/tasks.md:3:10:"),
        "the file, the line and the column are named: {err}"
    );
    assert!(err.contains("UTF-8"), "what is wrong is said: {err}");
}

/// The fake agent's script: story 1's work, its box ticked, the promise.
const WORK_AND_PROMISE: &str =
    "format claude\n[*]\nwrite work.txt half done\ntick-story\npromise COMPLETE\n";

#[test]
fn issue_28_a_panic_inside_a_run_is_a_bug_report_and_the_run_resumes_as_after_a_stop() {
    let repo = TestRepo::with_change(
        "boom",
        "## 1. One\n\n- [ ] first\n\n## 2. Two\n\n- [ ] second\n",
    );
    repo.write("mine.txt", "uncommitted work of the user\n");
    let agent = script(&repo, WORK_AND_PROMISE);
    let output = run(ralph_with_fake(&repo, &agent)
        .args(["start", "boom", "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--plain"])
        .env("GIT_RALPH_PANIC_AT", "judge")
        .env_remove("RUST_BACKTRACE"));
    assert_exit(&output, 70);
    let err = stderr(&output);
    assert!(err.contains("a bug in git-ralph"), "{}", describe(&output));
    assert!(err.contains("src/run/"), "the location is named: {err}");
    assert!(err.contains("report"), "how to report it: {err}");
    assert!(err.contains("git ralph start boom"), "how to go on: {err}");
    assert_eq!(
        err.matches("panicked").count(),
        0,
        "no raw panic message: {err}"
    );

    // As after a clean stop: on the branch, the worktree at the last
    // checkpoint, the attempt's work kept under its ref, the state stopped.
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/boom")
    );
    assert_eq!(repo.status_porcelain(), "", "the worktree is reverted");
    let kept = repo.git(&["show", "refs/ralph/boom/attempts/1/1:work.txt"]);
    assert_eq!(kept, "half done");
    let state = repo.run_state("boom");
    assert_eq!(state["status"], "stopped", "{state}");
    assert_eq!(
        state["stories"][0]["attempts"][0]["outcome"], "interrupted",
        "{state}"
    );
    repo.assert_fsck_clean();

    // Resumed without the fault, it completes; the user's work is there.
    let output = run(ralph_with_fake(&repo, &agent)
        .args(["start", "boom", "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--plain"]));
    assert_success(&output);
    let resumed = repo
        .run_events("boom")
        .iter()
        .any(|event| event["type"] == "run_started" && event["resumed"] == true);
    assert!(resumed, "the second start resumed the run");
    assert_eq!(
        repo.git(&["show", "ralph/boom:mine.txt"]),
        "uncommitted work of the user\n"
    );
    let subjects = repo.subjects("main..ralph/boom");
    assert!(
        subjects
            .iter()
            .any(|s| s.starts_with("ralph(boom): story 1")),
        "{subjects:?}"
    );
    assert!(
        subjects
            .iter()
            .any(|s| s.starts_with("ralph(boom): story 2")),
        "{subjects:?}"
    );
    repo.assert_fsck_clean();
}

#[test]
fn issue_28_a_panic_outside_a_run_is_a_bug_report_not_a_crash() {
    let repo = TestRepo::with_change("boom", "## 1. One\n\n- [ ] first\n");
    let output = run(ralph(&repo)
        .args(["status"])
        .env("GIT_RALPH_PANIC_AT", "command")
        .env_remove("RUST_BACKTRACE"));
    assert_exit(&output, 70);
    let err = stderr(&output);
    assert!(err.contains("a bug in git-ralph"), "{}", describe(&output));
    assert!(!err.contains("panicked at"), "{err}");
}

/// An agent, run through `--agent-command` and recognised by its first
/// line, that ticks every box of the change and prints `lines`.
fn agent_printing(repo: &TestRepo, change: &str, lines: &[String]) -> String {
    let mut body = format!("sed -i 's/- \\[ \\]/- [x]/' openspec/changes/{change}/tasks.md\n");
    for line in lines {
        body.push_str(&format!("printf '%s\\n' '{line}'\n"));
    }
    let path = repo.dir.path().join(format!("{change}-agent.sh"));
    std::fs::write(&path, body).expect("agent script");
    format!("sh {}", path.display())
}

#[test]
fn issue_28_token_counts_at_their_limit_are_not_a_crash() {
    const MAX: u64 = u64::MAX;
    let promise = "Done.\\n\\n<promise>COMPLETE</promise>";
    let streams = [
        (
            "codex",
            vec![
                r#"{"type":"thread.started","thread_id":"t"}"#.to_owned(),
                format!(
                    r#"{{"type":"turn.completed","usage":{{"input_tokens":{MAX},"output_tokens":{MAX}}}}}"#
                ),
                format!(
                    r#"{{"type":"item.completed","item":{{"id":"i","type":"agent_message","text":"{promise}"}}}}"#
                ),
                format!(
                    r#"{{"type":"turn.completed","usage":{{"input_tokens":{MAX},"output_tokens":{MAX}}}}}"#
                ),
            ],
        ),
        (
            "opencode",
            vec![
                r#"{"type":"step_start","part":{"type":"step-start"}}"#.to_owned(),
                format!(
                    r#"{{"type":"step_finish","part":{{"tokens":{{"input":{MAX},"output":{MAX},"reasoning":{MAX}}}}}}}"#
                ),
                format!(r#"{{"type":"text","part":{{"type":"text","text":"{promise}"}}}}"#),
                format!(
                    r#"{{"type":"step_finish","part":{{"tokens":{{"input":{MAX},"output":{MAX},"cache":{{"read":{MAX}}}}}}}}}"#
                ),
            ],
        ),
        (
            "copilot",
            vec![
                format!(
                    r#"{{"type":"assistant.message","data":{{"content":"working","outputTokens":{MAX}}}}}"#
                ),
                format!(
                    r#"{{"type":"assistant.usage","data":{{"inputTokens":{MAX},"outputTokens":{MAX}}}}}"#
                ),
                format!(
                    r#"{{"type":"assistant.message","data":{{"content":"{promise}","outputTokens":{MAX}}}}}"#
                ),
                format!(
                    r#"{{"type":"assistant.usage","data":{{"inputTokens":{MAX},"outputTokens":{MAX}}}}}"#
                ),
                r#"{"type":"result","exitCode":0}"#.to_owned(),
            ],
        ),
    ];
    for (agent, lines) in streams {
        let repo = TestRepo::with_change("limits", "## 1. One\n\n- [ ] first\n");
        let command = agent_printing(&repo, "limits", &lines);
        let output = run(ralph(&repo)
            .args(["start", "limits", "--agent-command", &command])
            .args(["--on-finish", "keep", "--plain"]));
        assert_success(&output);
        assert!(
            !stderr(&output).contains("bug in git-ralph"),
            "{agent}: {}",
            describe(&output)
        );
        let status = repo.status_json("limits");
        assert_eq!(status["totals"]["output_tokens"], MAX, "{agent}: {status}");
        for args in [
            &["status", "limits"][..],
            &["log", "limits"],
            &["show", "1", "limits"],
        ] {
            let output = ralph_cmd(&repo, args);
            assert_success(&output);
            assert!(
                stdout(&output).contains(&MAX.to_string()),
                "{agent}, {args:?}: {}",
                describe(&output)
            );
        }
        let receipt = repo.git(&["log", "-1", "--format=%B", "ralph/limits"]);
        assert!(
            receipt.contains(&format!("Ralph-Tokens: {MAX}")),
            "{agent}: {receipt}"
        );
        repo.assert_fsck_clean();
    }
}

/// The peak resident memory of a running process, in KiB, from Linux's
/// `/proc` (`None` elsewhere, or once it has ended).
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn issue_28_a_100_mb_line_without_a_newline_is_neither_held_nor_a_hang() {
    const LINE_BYTES: u64 = 100_000_000;
    let huge = format!("head -c {LINE_BYTES} /dev/zero | tr '\\0' x");
    let agents = [
        ("plain text", huge.clone()),
        (
            "an event of Claude Code's stream that never ends",
            format!(
                "printf '%s\\n' '{{\"type\":\"system\",\"subtype\":\"init\"}}'; \
                 printf '%s' '{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"'; {huge}"
            ),
        ),
    ];
    for (what, command) in agents {
        let repo = TestRepo::with_change("huge", "## 1. One\n\n- [ ] first\n");
        let mut child = ralph(&repo)
            .args(["start", "huge", "--agent-command", &command])
            .args(["--on-finish", "keep", "--plain", "--max-iterations", "1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("git-ralph starts");
        let started = std::time::Instant::now();
        let mut peak = 0;
        let status = loop {
            if let Some(status) = child.try_wait().expect("waitable") {
                break status;
            }
            peak = peak.max(peak_rss_kib(child.id()).unwrap_or(0));
            if started.elapsed() > std::time::Duration::from_secs(120) {
                let _ = child.kill();
                panic!("{what}: git-ralph hangs on a 100 MB line");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
            .expect("stderr read");
        // One attempt that gave no promise: the run stops at the limit.
        assert_eq!(status.code(), Some(4), "{what}: {err}");
        assert!(!err.contains("bug in git-ralph"), "{what}: {err}");
        let log = repo.run_dir("huge").join("attempts/1-1.jsonl");
        let logged = std::fs::metadata(&log).expect("the attempt's log").len();
        assert!(
            logged >= LINE_BYTES,
            "{what}: the whole line is on disk ({logged})"
        );
        if peak_rss_kib(std::process::id()).is_some() {
            assert!(
                peak > 0 && peak < 96 * 1024,
                "{what}: git-ralph's peak memory was {peak} KiB for a 100 MB line"
            );
        }
    }
}

/// A run of `change` that stopped after one attempt without a promise.
fn stopped_run(change: &str) -> TestRepo {
    let repo = TestRepo::with_change(change, "## 1. One\n\n- [ ] first\n");
    let output = start_with_fake(
        &repo,
        change,
        "format claude\n[*]\nsay not yet\n",
        &["--plain", "--max-iterations", "1"],
    );
    assert_exit(&output, 4);
    repo
}

#[test]
fn issue_28_a_lock_or_pid_file_naming_pid_0_signals_nobody() {
    let repo = stopped_run("zero");
    // What `kill` and `killpg` read as "my own process group".
    repo.write(".git/ralph/lock", "0\nzero\n");
    repo.write(".git/ralph/zero/agent.pid", "0\n");
    let status = repo.status_json("zero");
    assert_eq!(status["alive"], false, "pid 0 holds no lock: {status}");
    // In a process group of its own, so that a signal to "its own group"
    // would reach git-ralph alone.
    let started = std::time::Instant::now();
    let output = run(
        std::os::unix::process::CommandExt::process_group(&mut ralph(&repo), 0)
            .args(["abort", "zero"]),
    );
    assert_success(&output);
    let err = stderr(&output);
    assert!(!err.contains("stopping the running loop"), "{err}");
    assert!(!err.contains("killed loop had left running"), "{err}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "abort waited on a group that is no agent's"
    );
    assert_eq!(repo.run_state("zero")["status"], "aborted");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    repo.assert_fsck_clean();
}

#[test]
fn issue_28_a_contract_that_is_not_text_is_an_error_that_names_it() {
    let repo = TestRepo::with_change("latin", "## 1. One\n\n- [ ] first\n");
    repo.write(
        "ralph.toml",
        b"[[check]]\nname = \"caf\xe9\"\ncommand = \"true\"\n".as_slice(),
    );
    repo.commit_all("A contract in Latin-1");
    let output = run(ralph(&repo).args(["start", "latin", "--dry-run", "--agent-command", "true"]));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(!err.contains("bug in git-ralph"), "{}", describe(&output));
    assert!(
        err.contains("ralph.toml:2:12:"),
        "the file, the line and the column are named: {err}"
    );
    assert!(err.contains("UTF-8"), "what is wrong is said: {err}");
    assert!(err.contains("hint:"), "what to do is said: {err}");
}

#[test]
fn issue_28_a_damaged_state_file_is_an_error_that_names_it_and_says_what_to_do() {
    let repo = stopped_run("torn");
    let path = repo.run_dir("torn").join("state.json");
    let whole = std::fs::read(&path).expect("state.json");
    let damaged: [(&str, Vec<u8>); 4] = [
        ("empty", Vec::new()),
        ("cut in half", whole[..whole.len() / 2].to_vec()),
        ("cut inside a character", b"{\"change\": \"caf\xc3".to_vec()),
        (
            "a field of the wrong type",
            String::from_utf8_lossy(&whole)
                .replacen("\"status\": \"finished\"", "\"status\": 7", 1)
                .into_bytes(),
        ),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&path, &bytes).expect("damaged");
        for args in [
            &["status", "torn"][..],
            &["status"],
            &["log", "torn"],
            &["show", "1", "torn"],
            &["abort", "torn"],
            &["finish", "torn", "--keep"],
            &["start", "torn", "--agent-command", "true"],
        ] {
            let output = ralph_cmd(&repo, args);
            let err = stderr(&output);
            assert_exit(&output, 70);
            assert!(!err.contains("bug in git-ralph"), "{what}, {args:?}: {err}");
            assert!(
                err.contains(".git/ralph/torn/state.json"),
                "{what}, {args:?}: the file is named: {err}"
            );
            assert!(
                err.contains("line"),
                "{what}, {args:?}: the line is named: {err}"
            );
            assert!(
                err.contains("hint:") && err.contains("ralph/torn"),
                "{what}, {args:?}: what to do is said: {err}"
            );
        }
    }
    // Nothing was touched: the run's branch and refs are as they were.
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/torn")
    );
    repo.assert_fsck_clean();
}

#[test]
fn issue_28_a_damaged_events_log_is_read_as_far_as_it_goes() {
    let repo = stopped_run("cut");
    let path = repo.run_dir("cut").join("events.jsonl");
    let whole = std::fs::read(&path).expect("events.jsonl");
    let mut damaged = whole[..whole.len() - 7].to_vec();
    damaged.extend_from_slice(b"\n{\"ts_ms\": \"soon\", \"type\": 7}\n\xff\xfe garbage\n{\"ts_ms\":1,\"change\":\"cut\",\"type\":\"story_event\",\"story_id\":\"1\",\"attempt\":1,\"event\":{\"type\":\"message\",\"text\":\"caf\xc3");
    std::fs::write(&path, &damaged).expect("damaged");
    for args in [
        &["log", "cut"][..],
        &["log", "cut", "--json"],
        &["show", "1", "cut"],
        &["show", "1/1", "cut", "--transcript", "--json"],
        &["status", "cut"],
    ] {
        let output = ralph_cmd(&repo, args);
        assert_success(&output);
        assert!(
            !stderr(&output).contains("bug in git-ralph"),
            "{args:?}: {}",
            describe(&output)
        );
    }
    // The transcript holds what the damage left readable.
    let output = ralph_cmd(&repo, &["show", "1/1", "cut", "--transcript"]);
    assert!(stdout(&output).contains("not yet"), "{}", describe(&output));
}

#[test]
fn issue_28_a_prd_field_of_the_wrong_type_names_the_file_and_the_line() {
    // A field the run needs, of the wrong type in the only story: nothing
    // can run, and the refusal names the file, the line and the field.
    let prd = "{\n  \"userStories\": [\n    {\n      \"id\": \"US-1\",\n      \"title\": \"One\",\n      \"passes\": \"perhaps\"\n    }\n  ]\n}\n";
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let output = dry_run(&repo, &["prd", "--prd", "prd.json"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(!err.contains("bug in git-ralph"), "{}", describe(&output));
    assert!(
        err.contains("prd.json:6:"),
        "the file and the line of the field are named: {err}"
    );
    assert!(err.contains("\"passes\""), "the field is named: {err}");
    assert!(err.contains("hint:"), "what to do is said: {err}");
}

/// An advisory field of the wrong type refuses nothing (issue 46): the
/// story runs, and a warning names the file, the story and the value.
#[test]
fn issue_46_an_advisory_field_of_the_wrong_type_is_named_in_a_warning() {
    let prd = "{\n  \"userStories\": [\n    {\"id\": \"US-1\", \"title\": \"One\"},\n    {\n      \"id\": \"US-2\",\n      \"priority\": [1, 2]\n    }\n  ]\n}\n";
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let output = dry_run(&repo, &["prd", "--prd", "prd.json"]);
    assert_exit(&output, 0);
    let all = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        all.contains("prd.json: story \"US-2\": priority [1,2]"),
        "the file, the story and the value are named: {}",
        describe(&output)
    );
}

/// Each event the log holds against the state: an attempt it says ended
/// ended so in the state, a story it says done is done there.
fn assert_log_within_state(repo: &TestRepo, change: &str) {
    let state = repo.run_state(change);
    for event in repo.run_events(change) {
        if event["type"] != "attempt_finished" {
            continue;
        }
        let story = state["stories"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|story| story["id"] == event["story_id"])
            .unwrap_or_else(|| panic!("the state has no story for {event}\n{state}"));
        let attempt = story["attempts"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|attempt| attempt["attempt"] == event["attempt"])
            .unwrap_or_else(|| panic!("the state has no attempt for {event}\n{state}"));
        assert_eq!(attempt["outcome"], event["outcome"], "{event}\n{state}");
        if event["outcome"] == "complete" {
            assert_eq!(story["done"], true, "{event}\n{state}");
        }
    }
}

#[test]
fn issue_34_a_crash_between_saving_and_telling_leaves_no_event_the_state_does_not_hold() {
    for point in ["attempt_finished", "story_progress", "run_started"] {
        let repo = TestRepo::with_change(
            "told",
            "## 1. One\n\n- [ ] first\n\n## 2. Two\n\n- [ ] second\n",
        );
        let agent = script(&repo, WORK_AND_PROMISE);
        let output = run(ralph_with_fake(&repo, &agent)
            .args(["start", "told", "--agent-command", fake_agent_path()])
            .args(["--on-finish", "keep", "--plain"])
            .env("GIT_RALPH_PANIC_AT", format!("published:{point}"))
            .env_remove("RUST_BACKTRACE"));
        assert_exit(&output, 70);
        assert_log_within_state(&repo, "told");
        if point == "attempt_finished" {
            // The crash came after the state held story 1 done and before
            // the log said so.
            let state = repo.run_state("told");
            let said = repo
                .run_events("told")
                .iter()
                .filter(|event| event["type"] == point)
                .count();
            assert_eq!(said, 0, "{state}");
            assert_eq!(state["stories"][0]["done"], true, "{state}");
            assert_eq!(
                state["stories"][0]["attempts"][0]["outcome"], "complete",
                "{state}"
            );
        }
        // Taken up again, the run ends with the record and the branch in
        // agreement: story 1 once, story 2 done.
        let output = run(ralph_with_fake(&repo, &agent)
            .args(["start", "told", "--agent-command", fake_agent_path()])
            .args(["--on-finish", "keep", "--plain"]));
        assert_success(&output);
        assert_log_within_state(&repo, "told");
        let subjects = repo.subjects("main..ralph/told");
        let story_1 = subjects
            .iter()
            .filter(|s| s.starts_with("ralph(told): story 1"))
            .count();
        assert_eq!(story_1, 1, "{point}: {subjects:?}");
        assert!(
            subjects
                .iter()
                .any(|s| s.starts_with("ralph(told): story 2")),
            "{point}: {subjects:?}"
        );
        repo.assert_fsck_clean();
    }
}

#[test]
fn issue_34_a_loop_killed_before_a_story_s_hooks_ran_runs_them_when_resumed() {
    let repo = TestRepo::with_change(
        "hooked",
        "## 1. One\n\n- [ ] first\n\n## 2. Two\n\n- [ ] second\n",
    );
    let marker = repo.dir.path().join("killed-once");
    let log = repo.dir.path().join("done.log");
    // The first hook of story 1's end kills the loop, once, before the
    // second has run.
    let kill = format!(
        "[ -e '{}' ] || {{ touch '{}'; kill -9 $PPID; sleep 5; }}",
        marker.display(),
        marker.display()
    );
    let record = format!("echo $RALPH_STORY >> '{}'", log.display());
    repo.write(
        "ralph.toml",
        format!(
            "[hooks]\non_story_done = [{}, {}]\n",
            toml_string(&kill),
            toml_string(&record)
        ),
    );
    repo.commit_all("Hooks");
    let agent = script(&repo, WORK_AND_PROMISE);
    let output = run(ralph_with_fake(&repo, &agent)
        .args(["start", "hooked", "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--plain"]));
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(marker.exists(), "{}", describe(&output));
    let subjects = repo.subjects("main..ralph/hooked");
    assert!(
        subjects
            .iter()
            .any(|s| s.starts_with("ralph(hooked): story 1")),
        "story 1 was checkpointed before the kill: {subjects:?}"
    );

    let output = run(ralph_with_fake(&repo, &agent)
        .args(["start", "hooked", "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--plain"]));
    assert_success(&output);
    let done = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        done.lines().collect::<Vec<_>>(),
        ["1", "2"],
        "each story's on_story_done ran once: {}",
        describe(&output)
    );
    repo.assert_fsck_clean();
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}
