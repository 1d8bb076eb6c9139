//! A loop killed (kill -9) while its checkpoint held `.git/index.lock`,
//! then `git ralph plan`: the plan takes the repository's lock over from
//! the dead loop as `start` does, so it moves the left index lock aside
//! (never deletes it) with the same words, and its agent's edit of a file
//! of the user's is put back byte for byte. An index lock a live process
//! holds refuses the plan before its agent runs, changing nothing.

use std::fs;
use std::path::{Path, PathBuf};

use crate::harness::story_run::*;
use crate::harness::*;
use crate::lost_index_lock::Holder;

/// The user's notes, as committed before the run.
const NOTES: &str = "notes, line 1\r\nline 2\n";
/// The user's notes as edited, uncommitted, after the loop died.
const EDITED: &str = "notes, line 1\r\nline 2\nline 3, the user's own\n";
const TODO: &str = "# Tidy\\n\\n## 1. Tidy\\n\\n- [ ] 1.1 Tidy up\\n- [ ] 1.2 Verify: true\\n";

/// A project with a tracked notes.txt, whose loop was killed in story 1's
/// checkpoint holding `index.lock`; the user then edits notes.txt.
fn killed_holding_the_index_lock() -> TestRepo {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", NOTES);
    repo.commit_all("Add the notes");
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let killed = run(start_command(&repo, &agent, &["--on-finish", "keep"])
        .env("GIT_RALPH_KILL_AT", "checkpoint:index-locked"));
    assert_eq!(killed.status.code(), None, "{}", describe(&killed));
    kill_agents(&repo.record_dir());
    assert!(
        repo.path(".git/index.lock").exists(),
        "the kill left no lock"
    );
    repo.write("notes.txt", EDITED);
    repo
}

/// A planning agent that writes the plan, rewrites the user's notes.txt
/// and leaves a mark that it ran.
fn planning_agent(repo: &TestRepo) -> (PathBuf, PathBuf) {
    let records = repo.record_dir();
    fs::create_dir_all(&records).unwrap();
    let ran = records.join("planner-ran");
    let agent = script(
        repo,
        &format!(
            "[*]\nwrite {} yes\nwrite TODO.md {TODO}\nwrite notes.txt the planner's text\n",
            ran.display()
        ),
    );
    (agent, ran)
}

/// `git ralph plan tidy "Tidy up" --tasks TODO.md` with `agent`.
fn plan(repo: &TestRepo, agent: &Path) -> std::process::Output {
    run(ralph_with_fake(repo, agent)
        .args(["plan", "tidy", "Tidy up", "--tasks", "TODO.md"])
        .args(["--agent-command", fake_agent_path()]))
}

/// The locks moved aside into the dead loop's run directory.
fn kept_locks(repo: &TestRepo) -> Vec<String> {
    fs::read_dir(run_dir(repo))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("index.lock-left-"))
        .collect()
}

#[test]
fn a_plan_after_a_kill_that_left_the_index_lock_moves_it_aside_and_keeps_the_users_file() {
    let repo = killed_holding_the_index_lock();
    let (agent, ran) = planning_agent(&repo);
    let output = plan(&repo, &agent);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(ran.exists(), "the planning agent ran:\n{said}");
    assert_eq!(
        fs::read(repo.path("notes.txt")).unwrap(),
        EDITED.as_bytes(),
        "{said}"
    );
    assert_exit(&output, 0);
    assert!(!repo.path(".git/index.lock").exists(), "{said}");
    let kept = kept_locks(&repo);
    assert_eq!(kept.len(), 1, "{said}");
    assert!(
        said.contains("took over the lock of a loop that is no longer running")
            && said.contains(&kept[0])
            && said.contains("moved aside"),
        "{said}"
    );
    assert!(
        said.contains("git ralph start tidy --tasks TODO.md"),
        "{said}"
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_plan_after_a_kill_never_touches_an_index_lock_a_live_process_holds() {
    let repo = killed_holding_the_index_lock();
    let holder = Holder::of(&repo);
    let status_before = repo.git(&["status", "--porcelain"]);
    let (agent, ran) = planning_agent(&repo);
    let output = plan(&repo, &agent);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 1);
    assert!(!ran.exists(), "the planning agent never ran:\n{said}");
    assert!(
        said.contains(&format!("pid {}", holder.0.id())) && said.contains("never removed"),
        "{said}"
    );
    assert!(repo.path(".git/index.lock").exists(), "{said}");
    assert!(kept_locks(&repo).is_empty(), "{said}");
    assert_eq!(fs::read(repo.path("notes.txt")).unwrap(), EDITED.as_bytes());
    assert!(!repo.path("TODO.md").exists(), "{said}");
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        status_before,
        "{said}"
    );
    drop(holder);
}

#[test]
fn a_plan_refuses_before_its_agent_runs_while_a_git_process_holds_the_index_lock() {
    let repo = TestRepo::with_files(&[("notes.txt", NOTES)]);
    repo.write("notes.txt", EDITED);
    let holder = Holder::of(&repo);
    let (agent, ran) = planning_agent(&repo);
    let output = plan(&repo, &agent);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 1);
    assert!(!ran.exists(), "the planning agent never ran:\n{said}");
    assert!(
        said.contains(&format!("pid {}", holder.0.id())) && said.contains("never removed"),
        "{said}"
    );
    assert!(repo.path(".git/index.lock").exists(), "{said}");
    assert_eq!(fs::read(repo.path("notes.txt")).unwrap(), EDITED.as_bytes());
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        " M notes.txt\n",
        "{said}"
    );
    assert!(!repo.path(".git/ralph").exists(), "{said}");
    drop(holder);
}
