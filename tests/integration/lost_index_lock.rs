//! A loop killed (kill -9) while its checkpoint held `.git/index.lock`:
//! the lock stays behind. The next `start`, `finish` or `abort`, finding
//! the run's own lock left by a dead loop, moves the index lock aside
//! (never deletes it) when no process holds it, says so, and puts the
//! branch back to what the record holds; a lock a live process holds is
//! never touched, and the command is refused naming that process.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Stdio};

use crate::harness::story_run::*;
use crate::harness::*;

/// Two stories done at once; the loop killed in story 1's checkpoint,
/// its commit made, `index.lock` held.
fn killed_holding_the_index_lock() -> (TestRepo, PathBuf) {
    let (repo, agent) = killed_at("checkpoint:index-locked");
    assert!(
        repo.path(".git/index.lock").exists(),
        "the kill left no lock"
    );
    (repo, agent)
}

/// Two stories done at once; the loop killed at `point` of story 1's
/// checkpoint.
fn killed_at(point: &str) -> (TestRepo, PathBuf) {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let killed =
        run(start_command(&repo, &agent, &["--on-finish", "keep"]).env("GIT_RALPH_KILL_AT", point));
    assert_eq!(killed.status.code(), None, "{}", describe(&killed));
    kill_agents(&repo.record_dir());
    (repo, agent)
}

/// The stories whose work `rev` holds.
fn work_on(repo: &TestRepo, rev: &str) -> Vec<String> {
    ["1", "2"]
        .into_iter()
        .filter(|id| repo.git_ok(&["cat-file", "-e", &format!("{rev}:story-{id}.txt")]))
        .map(str::to_owned)
        .collect()
}

/// The lock the loop left, moved into the run's directory.
fn kept_locks(repo: &TestRepo) -> Vec<String> {
    fs::read_dir(run_dir(repo))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("index.lock-left-"))
        .collect()
}

#[test]
fn a_resume_after_a_kill_that_left_the_index_lock_moves_it_aside_and_goes_on() {
    let (repo, agent) = killed_holding_the_index_lock();
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert!(!repo.path(".git/index.lock").exists(), "{said}");
    let kept = kept_locks(&repo);
    assert_eq!(kept.len(), 1, "{said}");
    assert!(
        said.contains(&kept[0]) && said.contains("moved aside"),
        "{said}"
    );
    assert_eq!(work_on(&repo, BRANCH), ["1", "2"], "{said}");
    let status = status_json(&repo);
    let done: Vec<&str> = status["stories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|story| story["done"] == true)
        .filter_map(|story| story["id"].as_str())
        .collect();
    assert_eq!(done, ["1", "2"], "{said}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    repo.assert_fsck_clean();
}

#[test]
fn an_abort_after_a_kill_that_left_the_index_lock_gives_back_the_state_before_the_start() {
    let (repo, _) = killed_holding_the_index_lock();
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert!(!repo.path(".git/index.lock").exists(), "{said}");
    assert_eq!(kept_locks(&repo).len(), 1, "{said}");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    repo.assert_fsck_clean();
}

/// A process of the user's that holds `.git/index.lock` open until killed.
pub(crate) struct Holder(pub(crate) Child);

impl Holder {
    /// A process that opens the repository's `.git/index.lock` and keeps
    /// it open, once it has it open.
    pub(crate) fn of(repo: &TestRepo) -> Holder {
        let lock = repo.path(".git/index.lock");
        let ready = repo.dir.path().join("holding");
        let holder = Holder(
            std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "exec 3>>'{}'; touch '{}'; exec sleep 600",
                    lock.display(),
                    ready.display()
                ))
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_until(
            "the holder has the lock open",
            std::time::Duration::from_secs(30),
            || ready.exists(),
        );
        holder
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_resume_never_touches_an_index_lock_a_live_process_holds() {
    let (repo, agent) = killed_holding_the_index_lock();
    let lock = repo.path(".git/index.lock");
    let holder = Holder::of(&repo);
    let branch_before = repo.git(&["rev-parse", BRANCH]);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 1);
    assert!(
        said.contains(&format!("pid {}", holder.0.id())) && said.contains("never removed"),
        "{said}"
    );
    assert!(lock.exists(), "{said}");
    assert!(kept_locks(&repo).is_empty(), "{said}");
    assert_eq!(repo.git(&["rev-parse", BRANCH]), branch_before, "{said}");
    drop(holder);
}

#[test]
fn a_refused_abort_after_a_kill_says_it_took_over_the_dead_loops_lock() {
    let (repo, _) = killed_at("checkpoint:committed");
    let dead = fs::read_to_string(repo.path(".git/ralph/lock")).unwrap();
    let pid = dead.lines().next().unwrap().to_owned();
    repo.git(&["switch", "-q", "main"]);
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 1);
    assert!(said.contains("HEAD is on branch 'main'"), "{said}");
    // The one change a refusal makes is the dead loop's lock, and it says so.
    assert!(
        said.contains(&format!(
            "took over the lock of a loop that is no longer running (pid {pid}"
        )),
        "{said}"
    );
}
