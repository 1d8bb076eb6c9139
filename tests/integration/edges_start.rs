//! The edges a start meets before its loop, end to end through the binary:
//! a task file git does not see (ignored, or reached through a symlink out
//! of the repository), two starts at the same moment, a run directory that
//! cannot be written or a write that fails once the branch has moved, a
//! change named like one of git-ralph's own files, and `timeout = 0` in
//! `ralph.toml`. Every refusal is judged with git: nothing changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::story_run::{CHANGE, TWO_STORIES, project};
use crate::harness::*;

/// The exit status of a failure of git-ralph or of the machine.
const INTERNAL: i32 = 70;

const TODO: &str = "\
# Chores

## 1. Greeting

- [ ] 1.1 Create hello.txt

## 2. Farewell

- [ ] 2.1 Create bye.txt
";

/// The changes started at once in each round, each over its own task file.
const AT_ONCE: [&str; 3] = ["a", "b", "c"];

/// A `start` of `change` over `<change>.md` in the background, whose
/// agent waits for `release` before it does its story. The process waits
/// at a barrier first (it says it is `ready-<change>`, then spins until
/// `go` exists), so that the starts of a round reach their lock together.
fn spawn_start(repo: &TestRepo, change: &str, barrier: &Path, release: &Path) -> Child {
    let agent = format!(
        "[*]\nwait-for {}\nwrite {change}.txt done\\n\ntick-story\npromise COMPLETE\n",
        release.display()
    );
    let tasks = format!("{change}.md");
    let mut start = fake_start(repo, change, &script(repo, &agent));
    start
        .args(["--tasks", &tasks, "--max-retries", "0"])
        .env("FAKE_AGENT_TASKS", &tasks);
    let ready = shell_quote(&barrier.join(format!("ready-{change}")).to_string_lossy());
    let go = shell_quote(&barrier.join("go").to_string_lossy());
    let mut wrapper = Command::new("sh");
    wrapper
        .arg("-c")
        .arg(format!(
            "touch {ready}; while [ ! -e {go} ]; do :; done; exec \"$@\""
        ))
        .arg("barrier");
    let mut cmd = repo.wrap(wrapper, &start);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().expect("start git-ralph")
}

/// Whether a run of `change` has recorded itself.
fn recorded(repo: &TestRepo, change: &str) -> bool {
    repo.path(format!(".git/ralph/{change}/state.json"))
        .exists()
}

/// One round: the starts of [`AT_ONCE`] released at the same moment in one
/// worktree. Exactly one runs; each other one is refused and changes
/// nothing of its own.
fn starts_at_once(round: usize) {
    let files: Vec<(String, &str)> = AT_ONCE
        .iter()
        .map(|change| (format!("{change}.md"), TODO))
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    let repo = TestRepo::with_files(&files);
    let barrier = repo.dir.path().join("barrier");
    fs::create_dir_all(&barrier).expect("barrier");
    let release = repo.dir.path().join("release");
    let mut children: Vec<(&str, Option<Child>)> = AT_ONCE
        .iter()
        .map(|change| {
            (
                *change,
                Some(spawn_start(&repo, change, &barrier, &release)),
            )
        })
        .collect();
    wait_until(
        "every start is at the barrier",
        Duration::from_secs(60),
        || {
            AT_ONCE
                .iter()
                .all(|change| barrier.join(format!("ready-{change}")).exists())
        },
    );
    fs::write(barrier.join("go"), "").expect("go");
    let mut refused = Vec::new();
    wait_until(
        "all starts but one are refused",
        Duration::from_secs(180),
        || {
            for (change, child) in &mut children {
                let ended = child
                    .as_mut()
                    .is_some_and(|c| c.try_wait().expect("wait").is_some());
                if ended {
                    refused.push((*change, child.take().expect("a child")));
                }
            }
            refused.len() == AT_ONCE.len() - 1
                || AT_ONCE.iter().filter(|c| recorded(&repo, c)).count() > 1
        },
    );
    let running: Vec<&str> = AT_ONCE
        .iter()
        .copied()
        .filter(|c| recorded(&repo, c))
        .collect();
    if running.len() > 1 {
        fs::write(&release, "").expect("release");
        for (_, child) in &mut children {
            if let Some(child) = child.as_mut() {
                let _ = child.wait();
            }
        }
        panic!("round {round}: {running:?} run at once");
    }
    let (winner, winning) = children
        .iter_mut()
        .find_map(|(change, child)| child.take().map(|child| (*change, child)))
        .expect("one start still runs");
    for (loser, child) in refused {
        let output = child.wait_with_output().expect("a refused start");
        assert_exit(&output, 1);
        let err = stderr(&output);
        assert!(
            err.contains(&format!(
                "a git-ralph loop for '{winner}' is already running"
            )) || err.contains("another git-ralph loop is starting"),
            "round {round}: {err}"
        );
        assert_refused_left_nothing(&repo, loser, round);
    }
    fs::write(&release, "").expect("release the agent");
    let won = winning.wait_with_output().expect("the running start");
    assert_exit(&won, 0);
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/ralph/{winner}"),
        "round {round}"
    );
    let subjects = repo.git(&["log", "--format=%s", &format!("main..ralph/{winner}")]);
    assert_eq!(
        subjects.lines().filter(|s| s.contains(": story ")).count(),
        2,
        "round {round}: {subjects}"
    );
    assert_eq!(repo.status_porcelain(), "", "round {round}");
    for loser in AT_ONCE.iter().filter(|c| **c != winner) {
        let reflog = repo.git(&["reflog", "--format=%gs", "HEAD"]);
        assert!(
            !reflog.contains(&format!("ralph/{loser}")),
            "round {round}: HEAD never went to a refused run's branch: {reflog}"
        );
    }
}

/// No branch, ref or directory of the refused run `loser`.
fn assert_refused_left_nothing(repo: &TestRepo, loser: &str, round: usize) {
    let branches = repo.git(&["branch", "--format=%(refname)"]);
    assert!(
        !branches.contains(&format!("ralph/{loser}")),
        "round {round}: {branches}"
    );
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/ralph/"]);
    assert!(
        !refs.contains(&format!("refs/ralph/{loser}/")),
        "round {round}: {refs}"
    );
    assert!(
        !repo.path(format!(".git/ralph/{loser}")).exists(),
        "round {round}"
    );
}

#[test]
fn of_starts_launched_at_once_exactly_one_runs() {
    for round in 1..=30 {
        starts_at_once(round);
    }
}

