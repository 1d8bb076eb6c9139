//! An optional second opinion from the `openspec` CLI on a change's progress.
//!
//! The task list is parsed natively so runs do not depend on Node or on the
//! CLI being installed. When the CLI is there, comparing its counts with ours
//! catches a format drift early — before an agent is told a story is done
//! that OpenSpec thinks is not. The outcome is information for the user,
//! never an error: a missing, slow or broken CLI must not stop a run.
//!
//! The native parser skips boxes inside code fences and the CLI does not
//! (see [`checklist`](super::checklist)), so the two agree when the CLI's
//! total equals the native tasks plus the fenced boxes, and the CLI's done
//! count lies between the native done count and that plus the fenced boxes
//! (a fenced example may well be ticked).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::process::{self, ExitStatusKind, Limits, Spec};

use super::Story;

/// The name of the CLI looked up on the search path.
pub const PROGRAM: &str = "openspec";

/// The most of the CLI's output that is read; its JSON is a few KiB.
const OUTPUT_LIMIT: usize = 4 * 1024 * 1024;

/// What the CLI thinks of the native reading of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "detail")]
pub enum CrossCheck {
    /// No `openspec` on the search path.
    NotInstalled,
    Agrees,
    /// `native_total` includes the boxes skipped in code fences, so it is
    /// directly comparable with `cli_total`.
    Disagrees {
        cli_total: usize,
        cli_done: usize,
        native_total: usize,
        native_done: usize,
    },
    /// The CLI ran but could not be understood, or exited with an error.
    Failed(String),
    TimedOut,
}

/// Where to look for the CLI. Tests point this at a directory holding a
/// stand-in, without touching the process environment.
#[derive(Debug, Clone, Default)]
pub struct OpenSpecCommand {
    search_path: Option<OsString>,
}

/// The CLI could not be run at all.
#[derive(Debug, thiserror::Error)]
#[error("cannot run {}: {source}", program.display())]
struct CannotRun {
    program: PathBuf,
    source: process::ProcessError,
}

impl OpenSpecCommand {
    /// `program` (this command, resolved) run with `args` in `workdir`,
    /// without colors and with `env`, on this command's search path.
    async fn run(
        &self,
        program: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        workdir: &Path,
        timeout: Duration,
    ) -> Result<(ExitStatusKind, process::Tail, process::Tail), CannotRun> {
        let mut vars = vec![("NO_COLOR".to_owned(), "1".to_owned())];
        vars.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        if let Some(search_path) = &self.search_path {
            vars.push((
                "PATH".to_owned(),
                search_path.to_string_lossy().into_owned(),
            ));
        }
        let spec = Spec {
            program: program.to_string_lossy().into_owned(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: vars,
            cwd: workdir.to_owned(),
            ..Spec::default()
        };
        process::run_split(&spec, Limits::timeout(timeout), OUTPUT_LIMIT)
            .await
            .map_err(|source| CannotRun {
                program: program.to_owned(),
                source,
            })
    }

    /// Looks the CLI up on this process's `PATH`.
    pub fn from_env() -> Self {
        OpenSpecCommand::default()
    }

    /// Looks the CLI up on `search_path` instead, and gives the child that
    /// value as its `PATH`.
    #[cfg(test)]
    pub fn with_search_path(search_path: impl Into<OsString>) -> Self {
        OpenSpecCommand {
            search_path: Some(search_path.into()),
        }
    }

    fn resolve(&self) -> Option<PathBuf> {
        let search_path = match &self.search_path {
            Some(path) => path.clone(),
            None => std::env::var_os("PATH")?,
        };
        std::env::split_paths(&search_path)
            .map(|dir| dir.join(PROGRAM))
            .find(|candidate| is_executable(candidate))
    }
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[derive(Deserialize)]
struct ApplyInstructions {
    progress: Progress,
}

#[derive(Deserialize)]
struct Progress {
    total: usize,
    complete: usize,
}

/// Runs `command` (`openspec instructions apply --change <change> --json`)
/// in `workdir` and compares its progress with `native` plus `fenced`
/// skipped boxes.
pub async fn cross_check(
    command: &OpenSpecCommand,
    workdir: &Path,
    change: &str,
    native: &[Story],
    fenced: usize,
    timeout: Duration,
) -> CrossCheck {
    let Some(program) = command.resolve() else {
        return CrossCheck::NotInstalled;
    };
    let args = ["instructions", "apply", "--change", change, "--json"];
    let ran = command.run(&program, &args, &[], workdir, timeout).await;
    let (exit, stdout, stderr) = match ran {
        Ok(done) => done,
        Err(why) => return CrossCheck::Failed(why.to_string()),
    };
    match exit {
        ExitStatusKind::TimedOut => return CrossCheck::TimedOut,
        exit if !exit.is_success() => {
            return CrossCheck::Failed(format!(
                "openspec {exit}: {}",
                process::tail_str(stderr.text().trim(), 400)
            ));
        }
        _ => {}
    }
    let stdout = stdout.text();
    let progress = match read_progress(&stdout) {
        Ok(progress) => progress,
        Err(error) => return CrossCheck::Failed(format!("cannot read openspec's JSON: {error}")),
    };
    compare(&progress, native, fenced)
}

/// What `openspec validate <change> --strict` says of a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validation {
    /// No `openspec` on the search path: nothing was checked.
    NotInstalled,
    Valid,
    /// The CLI found fault, in its own words.
    Invalid(String),
    /// The CLI could not be run, or did not answer in time.
    Failed(String),
}

/// Runs `openspec validate <change> --strict --no-interactive` in
/// `workdir`, its telemetry off.
pub async fn validate(
    command: &OpenSpecCommand,
    workdir: &Path,
    change: &str,
    timeout: Duration,
) -> Validation {
    let Some(program) = command.resolve() else {
        return Validation::NotInstalled;
    };
    let args = ["validate", change, "--strict", "--no-interactive"];
    let telemetry_off = [("OPENSPEC_TELEMETRY", "0")];
    let ran = command
        .run(&program, &args, &telemetry_off, workdir, timeout)
        .await;
    let (exit, stdout, stderr) = match ran {
        Ok(done) => done,
        Err(why) => return Validation::Failed(why.to_string()),
    };
    let said = format!("{}\n{}", stdout.text().trim(), stderr.text().trim());
    let said = process::tail_str(said.trim(), 4000).to_owned();
    match exit {
        ExitStatusKind::TimedOut => Validation::Failed(format!(
            "openspec validate did not answer within {}s",
            timeout.as_secs()
        )),
        exit if exit.is_success() => Validation::Valid,
        ExitStatusKind::Exited(_) => Validation::Invalid(said),
        exit => Validation::Failed(format!("openspec validate {exit}: {said}")),
    }
}

/// Parses the CLI's JSON, tolerating notices printed before it.
fn read_progress(stdout: &str) -> Result<Progress, serde_json::Error> {
    match serde_json::from_str::<ApplyInstructions>(stdout) {
        Ok(parsed) => Ok(parsed.progress),
        Err(error) => match stdout.find("\n{") {
            Some(start) => serde_json::from_str::<ApplyInstructions>(&stdout[start..])
                .map(|parsed| parsed.progress),
            None => Err(error),
        },
    }
}

fn compare(cli: &Progress, native: &[Story], fenced: usize) -> CrossCheck {
    let tasks = native.iter().flat_map(|story| &story.tasks);
    let native_tasks = tasks.clone().count();
    let native_done = tasks.filter(|task| task.done).count();
    let native_total = native_tasks + fenced;
    let done_agrees = (native_done..=native_done + fenced).contains(&cli.complete);
    if cli.total == native_total && done_agrees {
        CrossCheck::Agrees
    } else {
        CrossCheck::Disagrees {
            cli_total: cli.total,
            cli_done: cli.complete,
            native_total,
            native_done,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::stories::openspec::OpenSpecSource;
    use crate::stories::tests::{openspec_fixture_repo, write};
    use std::os::unix::fs::PermissionsExt;

    const APPLY_JSON: &str =
        include_str!("../../tests/fixtures/openspec/instructions-apply-add-greeting.json");

    /// A directory holding an `openspec` script with `body`, and the search
    /// path that finds it ahead of everything else.
    fn fake_cli(body: &str) -> (tempfile::TempDir, OpenSpecCommand) {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = dir.path().join(PROGRAM);
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut paths = vec![dir.path().to_path_buf()];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let search_path = std::env::join_paths(paths).expect("join PATH");
        (dir, OpenSpecCommand::with_search_path(search_path))
    }

    /// A stand-in that prints `json` only when called the way the real CLI
    /// is, from the repository root.
    fn printing(dir_json: &Path) -> String {
        format!(
            r#"[ "$*" = "instructions apply --change add-greeting --json" ] || {{ echo "bad args: $*" >&2; exit 2; }}
[ -f openspec/config.yaml ] || {{ echo "not in the repo" >&2; exit 3; }}
echo "A newer version is available"
cat '{}'"#,
            dir_json.display()
        )
    }

    /// An `openspec` that prints `json` the way [`printing`] says; the
    /// directories live as long as the first value.
    fn cli_printing(json: &str) -> ([tempfile::TempDir; 2], OpenSpecCommand) {
        let json_dir = tempfile::tempdir().expect("temp dir");
        write(json_dir.path(), "apply.json", json);
        let (bin, command) = fake_cli(&printing(&json_dir.path().join("apply.json")));
        ([json_dir, bin], command)
    }

    async fn check(command: &OpenSpecCommand, timeout: Duration) -> CrossCheck {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let parsed = source.parse().expect("parse");
        cross_check(
            command,
            repo.path(),
            "add-greeting",
            &parsed.stories,
            parsed.fenced_checkboxes,
            timeout,
        )
        .await
    }

    #[tokio::test]
    async fn agrees_with_the_recorded_cli_output() {
        let (_dirs, command) = cli_printing(APPLY_JSON);
        assert_eq!(
            check(&command, Duration::from_secs(20)).await,
            CrossCheck::Agrees
        );
    }

    #[tokio::test]
    async fn reports_a_disagreement_with_both_counts() {
        let changed = APPLY_JSON.replace("\"total\": 8", "\"total\": 9");
        assert_ne!(changed, APPLY_JSON);
        let (_dirs, command) = cli_printing(&changed);
        assert_eq!(
            check(&command, Duration::from_secs(20)).await,
            CrossCheck::Disagrees {
                cli_total: 9,
                cli_done: 2,
                native_total: 8,
                native_done: 2
            }
        );
    }

    /// The cross-check, given five seconds, with `dir` alone as the search
    /// path.
    async fn check_searching_only(dir: &Path) -> CrossCheck {
        let command = OpenSpecCommand::with_search_path(dir.as_os_str());
        check(&command, Duration::from_secs(5)).await
    }

    #[tokio::test]
    async fn not_installed_when_absent_from_the_search_path() {
        let empty = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            check_searching_only(empty.path()).await,
            CrossCheck::NotInstalled
        );
    }

    #[tokio::test]
    async fn non_executable_file_is_not_the_cli() {
        let dir = tempfile::tempdir().expect("temp dir");
        write(dir.path(), PROGRAM, "#!/bin/sh\n");
        assert_eq!(
            check_searching_only(dir.path()).await,
            CrossCheck::NotInstalled
        );
    }

    #[tokio::test]
    async fn times_out_and_kills_a_hanging_cli() {
        let (_bin, command) = fake_cli("exec sleep 30");
        let started = std::time::Instant::now();
        assert_eq!(
            check(&command, Duration::from_millis(300)).await,
            CrossCheck::TimedOut
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn failing_cli_is_reported_with_its_stderr() {
        let (_bin, command) = fake_cli("echo 'Change not found' >&2; exit 1");
        match check(&command, Duration::from_secs(20)).await {
            CrossCheck::Failed(message) => {
                assert!(message.contains("Change not found"), "{message}")
            }
            other => panic!("unexpected outcome: {other:?}"),
        }
    }

    #[tokio::test]
    async fn unreadable_output_is_a_failure() {
        let (_bin, command) = fake_cli("echo '{\"progress\": {}}'");
        assert!(matches!(
            check(&command, Duration::from_secs(20)).await,
            CrossCheck::Failed(_)
        ));
    }

    #[test]
    fn a_ticked_fenced_box_still_agrees() {
        let repo = openspec_fixture_repo();
        let source = OpenSpecSource::new(repo.path(), "add-greeting").expect("source");
        let parsed = source.parse().expect("parse");
        let cli = |total, complete| Progress { total, complete };
        assert_eq!(compare(&cli(8, 2), &parsed.stories, 1), CrossCheck::Agrees);
        assert_eq!(compare(&cli(8, 3), &parsed.stories, 1), CrossCheck::Agrees);
        assert!(matches!(
            compare(&cli(8, 4), &parsed.stories, 1),
            CrossCheck::Disagrees { .. }
        ));
        assert!(matches!(
            compare(&cli(8, 1), &parsed.stories, 1),
            CrossCheck::Disagrees { .. }
        ));
        assert!(matches!(
            compare(&cli(8, 2), &parsed.stories, 0),
            CrossCheck::Disagrees {
                native_total: 7,
                ..
            }
        ));
    }

    #[test]
    fn outcome_serializes_with_a_tag() {
        for outcome in [
            CrossCheck::NotInstalled,
            CrossCheck::Agrees,
            CrossCheck::TimedOut,
            CrossCheck::Failed("boom".into()),
            CrossCheck::Disagrees {
                cli_total: 3,
                cli_done: 1,
                native_total: 2,
                native_done: 1,
            },
        ] {
            let json = serde_json::to_string(&outcome).expect("serialize");
            assert!(json.contains("\"outcome\""), "{json}");
            let back: CrossCheck = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back, outcome);
        }
    }
}
