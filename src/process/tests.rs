use super::*;

async fn sh(script: &str, timeout: Duration) -> (ExitStatusKind, String, String) {
    let dir = std::env::temp_dir();
    let (exit, out, err) = run_split(
        &Spec::shell(script, &dir),
        Limits::timeout(timeout),
        1 << 20,
    )
    .await
    .expect("runs");
    (exit, out.text(), err.text())
}

#[tokio::test]
async fn output_streams_are_kept_apart_and_the_code_reported() {
    let (exit, out, err) = sh("echo out; echo err >&2; exit 3", Duration::from_secs(5)).await;
    assert_eq!(exit, ExitStatusKind::Exited(3));
    assert_eq!(out, "out\n");
    assert_eq!(err, "err\n");
}

#[tokio::test]
async fn stdin_is_written_then_closed() {
    let spec = Spec {
        stdin: Some("hello\n".into()),
        ..Spec::shell("cat", &std::env::temp_dir())
    };
    let (exit, out) = run_collecting(&spec, Limits::timeout(Duration::from_secs(5)), 1024)
        .await
        .unwrap();
    assert!(exit.is_success());
    assert_eq!(out.text(), "hello\n");
}

#[tokio::test]
async fn a_timeout_ends_a_child_that_ignores_sigterm() {
    let started = std::time::Instant::now();
    let (exit, _, _) = sh("trap '' TERM; sleep 30", Duration::from_millis(300)).await;
    assert_eq!(exit, ExitStatusKind::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A stop asked `delay` from now; the task hands its sender back, so the
/// stop is not taken back by the sender going away.
fn stop_after(
    delay: Duration,
) -> (
    watch::Receiver<bool>,
    tokio::task::JoinHandle<watch::Sender<bool>>,
) {
    let (tx, rx) = watch::channel(false);
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let _ = tx.send(true);
        tx
    });
    (rx, stopper)
}

#[tokio::test]
async fn a_stop_request_ends_the_child() {
    let spec = Spec::shell("sleep 30", &std::env::temp_dir());
    let (rx, stopper) = stop_after(Duration::from_millis(200));
    let limits = Limits {
        timeout: Duration::from_secs(60),
        idle: None,
        stop: Some(rx),
        stop_keeps_exit: false,
    };
    let (exit, _) = run_collecting(&spec, limits, 16).await.unwrap();
    assert_eq!(exit, ExitStatusKind::Stopped);
    drop(stopper.await);
}

#[tokio::test]
async fn a_missing_program_or_directory_is_a_setup_error() {
    let missing = Spec {
        program: "git-ralph-no-such-program".into(),
        cwd: std::env::temp_dir(),
        ..Spec::default()
    };
    let err = run_collecting(&missing, Limits::timeout(Duration::from_secs(5)), 16)
        .await
        .unwrap_err();
    assert!(err.is_setup(), "{err}");
    assert!(err.hint().is_some_and(|h| h.contains("install")));
    let nowhere = Spec::shell("true", Path::new("/no/such/dir"));
    let err = run_collecting(&nowhere, Limits::timeout(Duration::from_secs(5)), 16)
        .await
        .unwrap_err();
    assert!(matches!(err, ProcessError::Workdir { .. }));
}

#[tokio::test]
async fn a_failing_output_handler_ends_the_child() {
    let spec = Spec::shell("yes", &std::env::temp_dir());
    let err = run(
        &spec,
        Limits::timeout(Duration::from_secs(30)),
        &mut |_, _| Err(io::Error::other("disk full")),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ProcessError::Output(_)), "{err}");
}

#[test]
fn signal_group_refuses_special_groups() {
    for pid in [0, 1, u32::MAX] {
        assert!(matches!(
            signal_group(pid, Signal::SIGTERM),
            Err(ProcessError::NotAChildGroup(_))
        ));
    }
    let own = u32::try_from(getpgrp().as_raw()).expect("positive pgid");
    assert!(matches!(
        signal_group(own, Signal::SIGTERM),
        Err(ProcessError::NotAChildGroup(_))
    ));
}

#[tokio::test]
async fn a_shell_marking_its_start_leaves_the_mark_and_runs_the_script() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let started = dir.path().join("it's started");
    let spec = Spec::shell_marking_start("echo $0; exit 4", dir.path(), &started);
    let (exit, out) = run_collecting(&spec, Limits::timeout(Duration::from_secs(5)), 64)
        .await
        .unwrap();
    assert_eq!(exit, ExitStatusKind::Exited(4));
    assert_eq!(out.text(), "sh\n");
    assert!(started.exists(), "the mark is left for the caller");
    // A mark that cannot be written says nothing and stops nothing.
    let nowhere = dir.path().join("missing/started");
    let spec = Spec::shell_marking_start("echo ran", dir.path(), &nowhere);
    let (exit, out) = run_collecting(&spec, Limits::timeout(Duration::from_secs(5)), 64)
        .await
        .unwrap();
    assert!(exit.is_success());
    assert_eq!(out.text(), "ran\n");
}

#[tokio::test]
async fn a_child_that_exits_by_itself_after_a_stop_is_stopped_unless_its_exit_counts() {
    for keeps in [false, true] {
        // It finishes its work as the stop comes, and exits 0 on it.
        let spec = Spec::shell("trap 'exit 0' TERM; sleep 30 & wait", &std::env::temp_dir());
        let (rx, stopper) = stop_after(Duration::from_millis(200));
        let limits = Limits {
            timeout: Duration::from_secs(60),
            idle: None,
            stop: Some(rx),
            stop_keeps_exit: keeps,
        };
        let (exit, _) = run_collecting(&spec, limits, 16).await.unwrap();
        let expected = if keeps {
            ExitStatusKind::Exited(0)
        } else {
            ExitStatusKind::Stopped
        };
        assert_eq!(exit, expected, "keeps: {keeps}");
        drop(stopper.await);
    }
}
