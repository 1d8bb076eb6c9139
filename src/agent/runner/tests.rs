//! Unit tests of the parent module, kept in their own file so that the
//! module itself stays short enough to read.

use super::*;
use crate::agent::presets;
use crate::agent::promise::DEFAULT_TOKEN;
use std::time::Instant as StdInstant;

fn sh(script: &str, format: StreamFormat, stdin: StdinSource) -> Invocation {
    Invocation {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: Vec::new(),
        cwd: std::env::temp_dir(),
        stdin,
        format,
        promise_token: DEFAULT_TOKEN.into(),
        pid_file: None,
        idle: None,
    }
}

struct Outcome {
    run: AgentRun,
    events: Vec<AgentEvent>,
    log: String,
    dir: tempfile::TempDir,
}

async fn run_with(inv: Invocation, timeout: Duration, stop: watch::Receiver<bool>) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("attempts/1/agent.log");
    let mut events = Vec::new();
    let mut on_event = |event: AgentEvent| events.push(event);
    let run = run(&inv, &log_path, timeout, stop, &mut on_event)
        .await
        .expect("the agent runs");
    let log = String::from_utf8_lossy(&std::fs::read(&log_path).expect("log exists")).into_owned();
    Outcome {
        run,
        events,
        log,
        dir,
    }
}

/// `inv` given `timeout`, never asked to stop.
async fn run_unstopped(inv: Invocation, timeout: Duration) -> Outcome {
    let (_keep, stop) = watch::channel(false);
    run_with(inv, timeout, stop).await
}

/// `inv` given 30 seconds, never asked to stop.
async fn run_invocation(inv: Invocation) -> Outcome {
    run_unstopped(inv, Duration::from_secs(30)).await
}

/// A plain-text agent given `timeout`, never asked to stop.
async fn run_plain_for(script: &str, timeout: Duration) -> Outcome {
    run_unstopped(sh(script, StreamFormat::Plain, StdinSource::Null), timeout).await
}

async fn run_sh(script: &str, format: StreamFormat) -> Outcome {
    run_invocation(sh(script, format, StdinSource::Null)).await
}

/// A plain-text agent given 30 seconds, stopped when `stop` says so.
async fn run_plain_until(script: &str, stop: watch::Receiver<bool>) -> Outcome {
    run_with(
        sh(script, StreamFormat::Plain, StdinSource::Null),
        Duration::from_secs(30),
        stop,
    )
    .await
}

/// `inv` logging to `log_path`, given `timeout`, never asked to stop, its
/// events dropped.
async fn run_ignoring_events(
    inv: &Invocation,
    log_path: &Path,
    timeout: Duration,
) -> Result<AgentRun, RunnerError> {
    let (_keep, stop) = watch::channel(false);
    run(inv, log_path, timeout, stop, &mut |_: AgentEvent| {}).await
}

/// The agent exited 0 having promised completion.
fn assert_completed(outcome: &Outcome) {
    assert_eq!(outcome.run.exit, ExitStatusKind::Exited(0));
    assert_eq!(outcome.run.conclusion, Conclusion::Complete);
}

#[tokio::test]
async fn an_echoed_promise_completes_and_lands_in_the_log() {
    let outcome = run_sh(
        "echo working; echo '<promise>COMPLETE</promise>'",
        StreamFormat::Plain,
    )
    .await;
    assert_completed(&outcome);
    assert_eq!(outcome.log, "working\n<promise>COMPLETE</promise>\n");
    assert_eq!(outcome.run.log_bytes, outcome.log.len() as u64);
    assert!(matches!(outcome.events.last(), Some(AgentEvent::Done(_))));
    // Plain lines are reported per read: one message or two, depending
    // on how the output arrived, but always all of it, in order.
    let said: Vec<&str> = outcome
        .events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Message { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said.join("\n"), "working\n<promise>COMPLETE</promise>");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_agent_error() {
    let outcome = run_sh("echo partial; exit 3", StreamFormat::Plain).await;
    assert_eq!(outcome.run.exit, ExitStatusKind::Exited(3));
    assert_eq!(
        outcome.run.conclusion,
        Conclusion::AgentError {
            message: "the agent exited with code 3".into()
        }
    );
}

#[tokio::test]
async fn stderr_goes_to_its_own_file_and_explains_errors() {
    let outcome = run_sh(
        "echo out; echo 'fatal: no credentials' >&2; exit 1",
        StreamFormat::Auto,
    )
    .await;
    assert_eq!(outcome.log, "out\n");
    assert_eq!(outcome.run.stderr_tail, "fatal: no credentials\n");
    assert_eq!(
        outcome.run.conclusion,
        Conclusion::AgentError {
            message: "the agent exited with code 1: fatal: no credentials".into()
        }
    );
    let stderr_file = outcome.dir.path().join("attempts/1/agent.log.stderr");
    let stderr = std::fs::read_to_string(stderr_file).expect("stderr file");
    assert_eq!(stderr, "fatal: no credentials\n");
}

#[tokio::test]
async fn no_stderr_file_without_stderr_output() {
    let outcome = run_sh("echo quiet", StreamFormat::Plain).await;
    assert!(
        !outcome
            .dir
            .path()
            .join("attempts/1/agent.log.stderr")
            .exists()
    );
}

#[tokio::test]
async fn a_killing_signal_is_reported() {
    let outcome = run_sh("kill -KILL $$", StreamFormat::Plain).await;
    assert_eq!(outcome.run.exit, ExitStatusKind::Signaled(9));
    assert!(matches!(
        outcome.run.conclusion,
        Conclusion::AgentError { .. }
    ));
}

#[tokio::test]
async fn the_prompt_reaches_stdin() {
    let prompt = "Do the story.\n<promise>COMPLETE</promise>\n".to_owned();
    let outcome = run_invocation(sh(
        "cat",
        StreamFormat::Plain,
        StdinSource::Prompt(prompt.clone()),
    ))
    .await;
    assert_eq!(outcome.log, prompt);
    assert_eq!(outcome.run.conclusion, Conclusion::Complete);
}

#[tokio::test]
async fn an_agent_ignoring_a_large_prompt_does_not_block() {
    let prompt = "x".repeat(4 * 1024 * 1024);
    let outcome = run_invocation(sh(
        "echo '<promise>COMPLETE</promise>'",
        StreamFormat::Plain,
        StdinSource::Prompt(prompt),
    ))
    .await;
    assert_completed(&outcome);
}

#[tokio::test]
async fn null_stdin_reads_as_empty() {
    let outcome = run_sh("cat; echo after", StreamFormat::Plain).await;
    assert_eq!(outcome.log, "after\n");
}

#[tokio::test]
async fn env_and_cwd_are_applied() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut inv = sh(
        "echo \"$RALPH_TEST_VALUE\"; pwd",
        StreamFormat::Plain,
        StdinSource::Null,
    );
    inv.env = vec![("RALPH_TEST_VALUE".into(), "from-env".into())];
    inv.cwd = dir.path().to_owned();
    let outcome = run_invocation(inv).await;
    let canonical = dir.path().canonicalize().expect("canonical");
    assert_eq!(outcome.log, format!("from-env\n{}\n", canonical.display()));
}

#[tokio::test]
async fn the_log_is_appended_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("agent.log");
    for word in ["one", "two"] {
        let inv = sh(
            &format!("echo {word}"),
            StreamFormat::Plain,
            StdinSource::Null,
        );
        run_ignoring_events(&inv, &log_path, Duration::from_secs(30))
            .await
            .expect("runs");
    }
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert_eq!(log, "one\ntwo\n");
}

#[tokio::test]
async fn a_silent_agent_goes_idle_and_a_talking_one_does_not() {
    let (_keep, stop) = watch::channel(false);
    let silent = Invocation {
        idle: Some(Duration::from_millis(500)),
        ..sh(
            "echo begun; sleep 30",
            StreamFormat::Plain,
            StdinSource::Null,
        )
    };
    let started = StdInstant::now();
    let outcome = run_with(silent, Duration::from_secs(60), stop.clone()).await;
    assert_eq!(outcome.run.exit, ExitStatusKind::Idle);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        outcome.run.conclusion,
        Conclusion::AgentError {
            message: "the agent went idle".into()
        }
    );
    let talking = Invocation {
        idle: Some(Duration::from_millis(800)),
        ..sh(
            "for n in 1 2 3 4 5; do echo $n; sleep 0.3; done",
            StreamFormat::Plain,
            StdinSource::Null,
        )
    };
    let outcome = run_with(talking, Duration::from_secs(60), stop).await;
    assert_eq!(outcome.run.exit, ExitStatusKind::Exited(0));
}

#[tokio::test]
async fn a_slow_agent_times_out() {
    let started = StdInstant::now();
    let outcome = run_plain_for("echo begun; sleep 30", Duration::from_secs(1)).await;
    let elapsed = started.elapsed();
    assert_eq!(outcome.run.exit, ExitStatusKind::TimedOut);
    assert_eq!(
        outcome.run.conclusion,
        Conclusion::AgentError {
            message: "the agent timed out".into()
        }
    );
    assert_eq!(outcome.log, "begun\n");
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn an_agent_ignoring_sigterm_is_killed() {
    let started = StdInstant::now();
    let outcome = run_plain_for(
        "trap '' TERM; while :; do sleep 0.1; done",
        Duration::from_millis(300),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(outcome.run.exit, ExitStatusKind::TimedOut);
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(8), "{elapsed:?}");
}

#[tokio::test]
async fn a_stop_request_ends_the_agent() {
    let (stop_tx, stop) = watch::channel(false);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = stop_tx.send(true);
        // Keep the sender alive until the run has seen the request.
        tokio::time::sleep(Duration::from_secs(10)).await;
    });
    let started = StdInstant::now();
    let outcome = run_plain_until("sleep 30", stop).await;
    assert_eq!(outcome.run.exit, ExitStatusKind::Stopped);
    assert_eq!(
        outcome.run.conclusion,
        Conclusion::AgentError {
            message: "the agent was stopped".into()
        }
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn an_early_stop_request_is_honoured() {
    let (_keep, stop) = watch::channel(true);
    let started = StdInstant::now();
    let outcome = run_plain_until("sleep 30", stop).await;
    assert_eq!(outcome.run.exit, ExitStatusKind::Stopped);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_dropped_stop_sender_does_not_stop_the_agent() {
    let (stop_tx, stop) = watch::channel(false);
    drop(stop_tx);
    let outcome = run_plain_until("sleep 0.2; echo '<promise>COMPLETE</promise>'", stop).await;
    assert_completed(&outcome);
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("late");
    // The background job keeps stdout open and would write after the run.
    let script = format!(
        "(sleep 4; touch '{}') & echo '<promise>COMPLETE</promise>'",
        marker.display()
    );
    let started = StdInstant::now();
    let outcome = run_sh(&script, StreamFormat::Plain).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_completed(&outcome);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!marker.exists(), "the background job was killed");
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error_with_a_hint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let inv = Invocation {
        program: "/nonexistent/agent-cli".into(),
        ..sh("", StreamFormat::Plain, StdinSource::Null)
    };
    let error = run_ignoring_events(&inv, &dir.path().join("log"), Duration::from_secs(5))
        .await
        .expect_err("cannot spawn");
    assert!(
        matches!(error, RunnerError::Process(ProcessError::Spawn { .. })),
        "{error:?}"
    );
    assert!(error.is_setup());
    let hint = error.hint().expect("a hint");
    assert!(hint.contains("/nonexistent/agent-cli"), "{hint}");
}

#[test]
fn a_run_can_be_spawned_onto_another_task() {
    fn assert_send<T: Send>(_: &T) {}
    let inv = sh("true", StreamFormat::Plain, StdinSource::Null);
    let (_keep, stop) = watch::channel(false);
    let mut on_event = |_: AgentEvent| {};
    let pending = run(
        &inv,
        Path::new("unused.log"),
        Duration::ZERO,
        stop,
        &mut on_event,
    );
    assert_send(&pending);
}

#[tokio::test]
async fn a_missing_working_directory_is_reported_as_such() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut inv = sh("echo hi", StreamFormat::Plain, StdinSource::Null);
    inv.cwd = dir.path().join("gone");
    let log_path = dir.path().join("log");
    let error = run_ignoring_events(&inv, &log_path, Duration::from_secs(5))
        .await
        .expect_err("no such directory");
    assert!(
        matches!(error, RunnerError::Process(ProcessError::Workdir { .. })),
        "{error:?}"
    );
    assert!(!log_path.exists(), "nothing was started, nothing logged");
}

#[tokio::test]
async fn every_fixture_concludes_the_same_through_a_real_process() {
    macro_rules! case {
        ($dir:literal, $name:literal, $format:expr) => {
            (
                $format,
                concat!($dir, "/", $name),
                include_str!(concat!(
                    "../../../tests/fixtures/",
                    $dir,
                    "/",
                    $name,
                    ".jsonl"
                )),
                include_str!(concat!(
                    "../../../tests/fixtures/",
                    $dir,
                    "/",
                    $name,
                    ".exit"
                )),
            )
        };
    }
    let claude = presets::claude::PRESET.format();
    let codex = presets::codex::PRESET.format();
    let gemini = presets::gemini::PRESET.format();
    let cases = [
        (case!("claude-code", "complete", claude), "complete"),
        (case!("claude-code", "failed", claude), "failed"),
        (case!("claude-code", "no-promise", claude), "none"),
        (case!("claude-code", "echoed-promise", claude), "none"),
        (case!("claude-code", "intermediate-promise", claude), "none"),
        (case!("claude-code", "multi-message", claude), "complete"),
        (case!("claude-code", "api-error", claude), "error"),
        (case!("claude-code", "max-turns", claude), "error"),
        (case!("codex", "complete", codex), "complete"),
        (case!("codex", "failed", codex), "failed"),
        (case!("codex", "no-promise", codex), "none"),
        (case!("codex", "echoed-promise", codex), "none"),
        (case!("codex", "intermediate-promise", codex), "none"),
        (case!("codex", "multi-message", codex), "complete"),
        (case!("codex", "api-error", codex), "error"),
        (case!("gemini", "complete", gemini), "complete"),
        (case!("gemini", "failed", gemini), "failed"),
        (case!("gemini", "no-promise", gemini), "none"),
        (case!("gemini", "echoed-promise", gemini), "none"),
        (case!("gemini", "intermediate-promise", gemini), "none"),
        (case!("gemini", "multi-message", gemini), "complete"),
        (case!("gemini", "api-error", gemini), "error"),
    ];
    for ((explicit, name, transcript, exit), expected) in cases {
        let code: i32 = exit.trim().parse().expect("exit code");
        for format in [explicit, StreamFormat::Auto] {
            let outcome = run_invocation(sh(
                &format!("cat; exit {code}"),
                format,
                StdinSource::Prompt(transcript.to_owned()),
            ))
            .await;
            assert_eq!(outcome.run.exit, ExitStatusKind::Exited(code), "{name}");
            assert_eq!(outcome.log, transcript, "{name}");
            let got = match &outcome.run.conclusion {
                Conclusion::Complete => "complete",
                Conclusion::Failed { reason } => {
                    assert_eq!(reason, "tests need a running database", "{name}");
                    "failed"
                }
                Conclusion::NoSignal => "none",
                Conclusion::AgentError { .. } => "error",
            };
            assert_eq!(got, expected, "{name} as {format:?}");
        }
    }
}

#[test]
fn lines_split_across_chunks_are_joined() {
    let mut splitter = LineSplitter::new(100);
    let mut lines = Vec::new();
    let mut emit = |line: &[u8]| lines.push(String::from_utf8_lossy(line).into_owned());
    splitter.push(b"ab", &mut emit);
    splitter.push(b"c\nde", &mut emit);
    splitter.push(b"f\n\ng", &mut emit);
    splitter.finish(&mut emit);
    assert_eq!(lines, ["abc", "def", "", "g"]);
}

#[test]
fn overlong_lines_are_truncated_not_held() {
    let mut splitter = LineSplitter::new(4);
    let mut lines = Vec::new();
    let mut emit = |line: &[u8]| lines.push(String::from_utf8_lossy(line).into_owned());
    splitter.push(b"abcdefgh", &mut emit);
    assert!(splitter.pending.len() <= 4);
    splitter.push(b"ijk\n123456789\nok\n", &mut emit);
    splitter.finish(&mut emit);
    assert_eq!(lines, ["abcd", "1234", "ok"]);
}

#[tokio::test]
async fn carriage_returns_do_not_hide_a_promise() {
    let outcome = run_sh(
        "printf 'done\\r\\n<promise>COMPLETE</promise>\\r\\n'",
        StreamFormat::Plain,
    )
    .await;
    assert_eq!(outcome.run.conclusion, Conclusion::Complete);
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_output_does_not_accumulate_in_memory() {
    const LINES_BYTES: u64 = 150 * 1024 * 1024;
    const LONG_LINE_BYTES: u64 = 50 * 1024 * 1024;
    let script = format!(
        "yes 'a line of agent output that goes on for a while, over and over' | head -c {LINES_BYTES}; \
         head -c {LONG_LINE_BYTES} /dev/zero | tr '\\0' x; echo; \
         echo '<promise>COMPLETE</promise>'"
    );
    let before = peak_rss_kib();
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("flood.log");
    let inv = sh(&script, StreamFormat::Auto, StdinSource::Null);
    let (_keep, stop) = watch::channel(false);
    let mut messages = 0u64;
    let mut longest = 0usize;
    let mut on_event = |event: AgentEvent| {
        if let AgentEvent::Message { text, .. } = event {
            messages += 1;
            longest = longest.max(text.len());
        }
    };
    let run = run(
        &inv,
        &log_path,
        Duration::from_secs(300),
        stop,
        &mut on_event,
    )
    .await
    .expect("runs");
    let after = peak_rss_kib();

    let expected_bytes =
        LINES_BYTES + LONG_LINE_BYTES + 1 + "<promise>COMPLETE</promise>\n".len() as u64;
    assert_eq!(run.log_bytes, expected_bytes);
    let on_disk = std::fs::metadata(&log_path).expect("log").len();
    assert_eq!(on_disk, expected_bytes);
    assert_eq!(run.exit, ExitStatusKind::Exited(0));
    assert_eq!(run.conclusion, Conclusion::Complete);
    assert!(
        (MAX_LINE_BYTES..MAX_LINE_BYTES + 128 * 1024).contains(&longest),
        "the long line reached the parser truncated: {longest} bytes"
    );
    // Lines are reported per read, not one event each.
    let lines = LINES_BYTES / 66;
    assert!(
        messages > 100 && messages < lines / 10,
        "{messages} messages for {lines} lines"
    );
    if let (Some(before), Some(after)) = (before, after) {
        let growth_mib = after.saturating_sub(before) / 1024;
        assert!(growth_mib < 64, "peak RSS grew by {growth_mib} MiB");
    }
}
