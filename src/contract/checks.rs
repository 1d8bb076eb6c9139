//! Objective checks: commands run through `sh -c` in the worktree, each in
//! its own process group and under its own timeout. Exit status and output
//! decide; the agent's word does not.

use std::path::{Component, Path};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::process::{self, ExitStatusKind, Limits, Spec};

use super::CheckSpec;

/// How much output is kept for matching and for the next prompt.
const OUTPUT_LIMIT: usize = 4 * 1024 * 1024;
/// How much of the output's end goes into reports and prompts.
const TAIL: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    pub name: String,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Why it failed, in a few words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The end of its output (stdout and stderr interleaved).
    pub output_tail: String,
    /// It was ended because the user asked the run to stop: it neither
    /// passed nor failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// Run every check in order; all of them run, so a report names every
/// failure at once.
pub async fn run_checks(
    specs: &[CheckSpec],
    workdir: &Path,
    default_timeout: Duration,
) -> Vec<CheckOutcome> {
    run_checks_until_stopped(specs, workdir, default_timeout, None).await
}

/// [`run_checks`], a stop request ending the check under way (as the
/// supervisor ends an agent) and leaving the rest unrun: the last outcome
/// is then [`CheckOutcome::stopped`].
pub async fn run_checks_until_stopped(
    specs: &[CheckSpec],
    workdir: &Path,
    default_timeout: Duration,
    stop: Option<watch::Receiver<bool>>,
) -> Vec<CheckOutcome> {
    let mut outcomes = Vec::with_capacity(specs.len());
    for spec in specs {
        let outcome = run_check_until_stopped(spec, workdir, default_timeout, stop.clone()).await;
        let stopped = outcome.stopped;
        outcomes.push(outcome);
        if stopped {
            break;
        }
    }
    outcomes
}

/// Whether a check of `outcomes` was stopped by a stop request.
pub fn any_stopped(outcomes: &[CheckOutcome]) -> bool {
    outcomes.iter().any(|outcome| outcome.stopped)
}

pub async fn run_check(
    spec: &CheckSpec,
    workdir: &Path,
    default_timeout: Duration,
) -> CheckOutcome {
    run_check_until_stopped(spec, workdir, default_timeout, None).await
}

async fn run_check_until_stopped(
    spec: &CheckSpec,
    workdir: &Path,
    default_timeout: Duration,
    stop: Option<watch::Receiver<bool>>,
) -> CheckOutcome {
    let name = spec.label();
    let fail = |why: String| CheckOutcome {
        name: name.clone(),
        passed: false,
        exit_code: None,
        timed_out: false,
        why: Some(why),
        output_tail: String::new(),
        stopped: false,
    };
    let dir = match &spec.working_dir {
        None => workdir.to_owned(),
        Some(rel) => {
            let rel = Path::new(rel);
            if rel.is_absolute() || rel.components().any(|c| c == Component::ParentDir) {
                return fail(format!(
                    "working_dir '{}' must stay inside the worktree",
                    rel.display()
                ));
            }
            workdir.join(rel)
        }
    };
    let timeout = spec
        .timeout
        .map(Duration::from_secs)
        .unwrap_or(default_timeout);
    let command = Spec::shell(&spec.command, &dir);
    let limits = Limits {
        stop,
        ..Limits::timeout(timeout)
    };
    let (exit, output) = match process::run_collecting(&command, limits, OUTPUT_LIMIT).await {
        Ok(done) => done,
        Err(err) => return fail(format!("could not start: {err}")),
    };
    if exit == ExitStatusKind::Stopped {
        return CheckOutcome {
            stopped: true,
            why: Some("stopped: the run was asked to stop".to_owned()),
            output_tail: process::report_tail(&output.text(), TAIL),
            ..fail(String::new())
        };
    }
    if exit == ExitStatusKind::TimedOut {
        return CheckOutcome {
            timed_out: true,
            why: Some(format!("timed out after {}s", timeout.as_secs())),
            ..fail(String::new())
        };
    }
    let output = output.text();
    let exit_code = exit.code();
    let why = failure(spec, exit_code, &output);
    CheckOutcome {
        name,
        passed: why.is_none(),
        exit_code,
        timed_out: false,
        why,
        output_tail: process::report_tail(&output, TAIL),
        stopped: false,
    }
}

/// Why a check that ended with `exit_code` and printed `output` failed,
/// in a few words; `None` when it passed.
fn failure(spec: &CheckSpec, exit_code: Option<i32>, output: &str) -> Option<String> {
    let expected = spec.success_exit_code.unwrap_or(0);
    if exit_code != Some(expected) {
        Some(match exit_code {
            Some(code) => format!("exited with {code}, expected {expected}"),
            None => "was killed by a signal".to_owned(),
        })
    } else if let Some(needle) = spec
        .output_contains
        .as_deref()
        .filter(|n| !output.contains(*n))
    {
        Some(format!("its output does not contain '{needle}'"))
    } else {
        spec.output_not_contains
            .as_deref()
            .filter(|n| output.contains(*n))
            .map(|needle| format!("its output contains '{needle}'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str) -> CheckSpec {
        CheckSpec::from_command(command)
    }

    #[tokio::test]
    async fn exit_code_and_output_decide() {
        let dir = tempfile::tempdir().unwrap();
        let ok = run_check(&spec("echo all good"), dir.path(), Duration::from_secs(5)).await;
        assert!(ok.passed, "{ok:?}");
        let bad = run_check(
            &spec("echo broken >&2; exit 3"),
            dir.path(),
            Duration::from_secs(5),
        )
        .await;
        assert!(!bad.passed);
        assert_eq!(bad.exit_code, Some(3));
        assert_eq!(bad.output_tail, "broken");
        let contains = CheckSpec {
            output_contains: Some("ok".into()),
            output_not_contains: Some("FAILED".into()),
            ..spec("echo 'test result: ok'; echo '1 FAILED'")
        };
        let outcome = run_check(&contains, dir.path(), Duration::from_secs(5)).await;
        assert_eq!(outcome.why.as_deref(), Some("its output contains 'FAILED'"));
        let custom = CheckSpec {
            success_exit_code: Some(2),
            ..spec("exit 2")
        };
        assert!(
            run_check(&custom, dir.path(), Duration::from_secs(5))
                .await
                .passed
        );
    }

    #[tokio::test]
    async fn a_hanging_check_times_out_and_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let outcome = run_check(&spec("sleep 30"), dir.path(), Duration::from_secs(1)).await;
        assert!(outcome.timed_out && !outcome.passed);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn working_dir_is_relative_and_confined() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let inside = CheckSpec {
            working_dir: Some("sub".into()),
            ..spec("test \"$(basename \"$PWD\")\" = sub")
        };
        assert!(
            run_check(&inside, dir.path(), Duration::from_secs(5))
                .await
                .passed
        );
        let outside = CheckSpec {
            working_dir: Some("../".into()),
            ..spec("true")
        };
        assert!(
            !run_check(&outside, dir.path(), Duration::from_secs(5))
                .await
                .passed
        );
    }
}
