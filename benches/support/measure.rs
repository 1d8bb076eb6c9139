//! What every benchmark needs to run git and report times: git run quietly
//! with its failure a panic, the median of samples, milliseconds as
//! printed, and the small change of independent stories the run-level
//! benchmarks start from. Each benchmark uses a part of it.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir).args(args).stdin(Stdio::null());
    command
}

/// Run git, discarding its output; panic if it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let status = git_command(dir, args)
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|err| panic!("could not run git {args:?}: {err}"));
    assert!(status.success(), "git {args:?} failed: {status}");
}

/// Run git and return its trimmed standard output; panic if it fails.
pub fn git_output(dir: &Path, args: &[&str]) -> String {
    let output = git_command(dir, args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|err| panic!("could not run git {args:?}: {err}"));
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        output.status
    );
    String::from_utf8(output.stdout)
        .expect("git printed something that is not UTF-8")
        .trim()
        .to_owned()
}

pub fn median(samples: &mut [Duration]) -> Duration {
    assert!(!samples.is_empty(), "no samples to take a median of");
    samples.sort();
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2
    }
}

pub fn ms(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1000.0)
}

/// A repository on `main` whose change `bench` holds `stories` stories,
/// each writing `story-<n>.txt`; `ralph_toml`, when given, is the change's
/// own settings.
pub fn story_project(dir: &Path, stories: usize, ralph_toml: Option<&str>) {
    let change = dir.join("openspec/changes/bench");
    std::fs::create_dir_all(&change).expect("a directory");
    let mut tasks = String::from("# Tasks\n");
    for n in 1..=stories {
        tasks.push_str(&format!(
            "\n## {n}. Story {n}\n\n- [ ] {n}.1 Write story-{n}.txt\n"
        ));
    }
    std::fs::write(change.join("tasks.md"), tasks).expect("tasks");
    if let Some(toml) = ralph_toml {
        std::fs::write(change.join("ralph.toml"), toml).expect("ralph.toml");
    }
    std::fs::write(dir.join("README.md"), "# bench\n").expect("README");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Bench"]);
    git(dir, &["config", "user.email", "bench@example.com"]);
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "commit",
            "-q",
            "-m",
            &format!("A change of {stories} stories"),
        ],
    );
}
