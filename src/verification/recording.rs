//! Keeping what a CLI printed in each scenario as a fixture: the
//! transcript, its exit code and the conclusion git-ralph must reach, in
//! the layout of `tests/fixtures/<name>/` (`NAME.jsonl` or `NAME.txt`,
//! `NAME.exit`, `NAME.expect`). The throwaway paths and the stand-in's
//! port are replaced by fixed ones, so that two recordings of one release
//! differ only where the CLI's output does.

use std::io;
use std::path::{Path, PathBuf};

use super::scenarios::{Expected, FAILED_REASON};
use crate::process::ExitStatusKind;

/// Where one verification run writes its fixtures.
#[derive(Debug, Clone)]
pub struct Recording {
    pub dir: PathBuf,
}

/// The places a scenario ran in, to be replaced in its transcript.
pub(super) struct Places<'a> {
    pub sandbox: &'a Path,
    pub project: &'a Path,
    pub home: &'a Path,
    pub base: &'a str,
}

impl Recording {
    /// Writes `log` (what the CLI printed), its exit and the expected
    /// conclusion as the fixture `scenario`; a stream of JSON objects
    /// becomes `.jsonl`, anything else `.txt`.
    pub(super) fn write(
        &self,
        scenario: &str,
        log: &str,
        exit: ExitStatusKind,
        expected: Expected,
        places: &Places,
    ) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let extension = if is_json_lines(log) { "jsonl" } else { "txt" };
        let file = |extension: &str| self.dir.join(format!("{scenario}.{extension}"));
        std::fs::write(file(extension), anonymised(log, places))?;
        let code = match exit {
            ExitStatusKind::Exited(code) => code.to_string(),
            // A CLI that did not exit on its own leaves no code to test.
            other => format!("# {other}"),
        };
        std::fs::write(file("exit"), format!("{code}\n"))?;
        std::fs::write(file("expect"), format!("{}\n", expect_line(expected)))
    }
}

/// What a `.expect` file says for `expected`.
fn expect_line(expected: Expected) -> String {
    match expected {
        Expected::Complete => "complete".into(),
        Expected::Failed => format!("failed: {FAILED_REASON}"),
        Expected::NoSignal => "no_signal".into(),
        Expected::RateLimited => "rate_limited".into(),
    }
}

/// Whether the first non-empty line of `log` is a JSON object.
fn is_json_lines(log: &str) -> bool {
    log.lines()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| {
            serde_json::from_str::<serde_json::Value>(line).is_ok_and(|value| value.is_object())
        })
}

/// `log` with the project at `/home/user/project`, the home at
/// `/home/user`, the rest of the sandbox at `/home/user/sandbox` and the
/// stand-in at `http://127.0.0.1:PORT`, the longest path first.
fn anonymised(log: &str, places: &Places) -> String {
    let mut text = log.replace(places.base, "http://127.0.0.1:PORT");
    for (path, fixed) in [
        (places.project, "/home/user/project"),
        (places.home, "/home/user"),
        (places.sandbox, "/home/user/sandbox"),
    ] {
        let path = path.to_string_lossy();
        text = text.replace(path.as_ref(), fixed);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_names_no_throwaway_path_and_no_port() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let sandbox = dir.path().join("git-ralph-verify-x");
        let places = Places {
            sandbox: &sandbox,
            project: &sandbox.join("project"),
            home: &sandbox.join("home"),
            base: "http://127.0.0.1:40123",
        };
        let log = format!(
            "{{\"type\":\"init\",\"cwd\":\"{}\",\"home\":\"{}\",\"prompt\":\"{}\",\"url\":\"http://127.0.0.1:40123/v1\"}}\n",
            places.project.display(),
            places.home.display(),
            sandbox.join("prompt.md").display(),
        );
        let recording = Recording {
            dir: dir.path().join("out"),
        };
        recording
            .write(
                "failed",
                &log,
                ExitStatusKind::Exited(1),
                Expected::Failed,
                &places,
            )
            .expect("written");
        let read = |name: &str| std::fs::read_to_string(dir.path().join("out").join(name));
        assert_eq!(
            read("failed.jsonl").expect("the transcript"),
            "{\"type\":\"init\",\"cwd\":\"/home/user/project\",\"home\":\"/home/user\",\"prompt\":\"/home/user/sandbox/prompt.md\",\"url\":\"http://127.0.0.1:PORT/v1\"}\n"
        );
        assert_eq!(read("failed.exit").expect("the exit"), "1\n");
        assert_eq!(
            read("failed.expect").expect("the conclusion"),
            format!("failed: {FAILED_REASON}\n")
        );
        recording
            .write(
                "rate-limit",
                "Aider v0.86.2\nlitellm.RateLimitError\n",
                ExitStatusKind::Exited(0),
                Expected::RateLimited,
                &places,
            )
            .expect("written");
        assert!(read("rate-limit.txt").is_ok());
        assert_eq!(read("rate-limit.expect").expect("read"), "rate_limited\n");
    }
}
