//! A loop killed (kill -9) can leave any git lock file behind, not only
//! `.git/index.lock`: the index lock of the worktree a run made for
//! itself, `packed-refs.lock`, `HEAD.lock`, and a loose ref's lock under
//! the run's refs. The next `start` or `abort`, taking the run's lock over
//! from the dead loop, moves each one no process holds aside (never
//! deletes it) and says where it is kept; a lock a live process holds is
//! never touched, and then none is moved.

use std::fs;
use std::path::PathBuf;
use std::process::Stdio;

use crate::harness::story_run::*;
use crate::harness::*;

/// The lock files a dead loop of `greet` can leave in the main git dir.
const LEFT: [&str; 4] = [
    "packed-refs.lock",
    "HEAD.lock",
    "refs/heads/ralph/greet.lock",
    "refs/ralph/greet/strays/1.lock",
];

/// Two stories done at once; the loop killed right after story 1's
/// checkpoint commit, so that `.git/ralph/lock` names a dead pid.
fn killed(extra: &[&str]) -> (TestRepo, PathBuf) {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let mut args = vec!["--on-finish", "keep"];
    args.extend_from_slice(extra);
    let killed =
        run(start_command(&repo, &agent, &args).env("GIT_RALPH_KILL_AT", "checkpoint:committed"));
    assert_eq!(killed.status.code(), None, "{}", describe(&killed));
    kill_agents(&repo.record_dir());
    (repo, agent)
}

/// Lock files no process holds, as a kill -9 in the middle of their
/// writes leaves them.
fn leave(repo: &TestRepo, locks: &[&str]) {
    for lock in locks {
        let path = repo.path(format!(".git/{lock}"));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, "left by a killed writer\n").unwrap();
    }
}

/// The names of the locks kept aside in the run's directory.
fn kept_locks(repo: &TestRepo) -> Vec<String> {
    let mut kept: Vec<String> = fs::read_dir(run_dir(repo))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".lock-left-"))
        .collect();
    kept.sort();
    kept
}

/// `locks` are gone from where they were and kept aside, each said.
fn assert_kept_aside(repo: &TestRepo, locks: &[&str], said: &str) {
    let kept = kept_locks(repo);
    assert_eq!(kept.len(), locks.len(), "{kept:?}\n{said}");
    for lock in locks {
        assert!(
            !repo.path(format!(".git/{lock}")).exists(),
            "{lock}\n{said}"
        );
        let name = format!("{}-left-", lock.replace('/', "-"));
        let found = kept.iter().find(|kept| kept.starts_with(&name));
        let found = found.unwrap_or_else(|| panic!("{lock} is not kept: {kept:?}\n{said}"));
        assert!(
            said.contains(found.as_str()) && said.contains("moved aside"),
            "{said}"
        );
        let bytes = fs::read_to_string(run_dir(repo).join(found)).unwrap();
        assert_eq!(bytes, "left by a killed writer\n", "{lock}");
    }
}

fn done_stories(repo: &TestRepo) -> Vec<String> {
    status_json(repo)["stories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|story| story["done"] == true)
        .filter_map(|story| story["id"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_resume_after_a_kill_moves_the_left_ref_and_head_locks_aside_and_goes_on() {
    let (repo, agent) = killed(&[]);
    leave(&repo, &LEFT);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert_kept_aside(&repo, &LEFT, &said);
    assert_eq!(done_stories(&repo), ["1", "2"], "{said}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    repo.assert_fsck_clean();
}

#[test]
fn an_abort_after_a_kill_moves_the_left_ref_and_head_locks_aside() {
    let (repo, _) = killed(&[]);
    leave(&repo, &LEFT);
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert_kept_aside(&repo, &LEFT, &said);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    repo.assert_fsck_clean();
}

/// The administrative directory of the worktree the run made.
fn run_worktree_admin(repo: &TestRepo) -> String {
    let admins: Vec<String> = fs::read_dir(repo.path(".git/worktrees"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(admins.len(), 1, "{admins:?}");
    format!("worktrees/{}", admins[0])
}

#[test]
fn a_resume_after_a_killed_worktree_run_moves_its_worktrees_index_lock_aside() {
    let (repo, agent) = killed(&["--worktree"]);
    let index_lock = format!("{}/index.lock", run_worktree_admin(&repo));
    leave(&repo, &[index_lock.as_str()]);
    let output = start(&repo, &agent, &[]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert_kept_aside(&repo, &[index_lock.as_str()], &said);
    assert_eq!(done_stories(&repo), ["1", "2"], "{said}");
    repo.assert_fsck_clean();
}

#[test]
fn an_abort_after_a_killed_worktree_run_moves_its_worktrees_index_lock_aside() {
    let (repo, _) = killed(&["--worktree"]);
    let index_lock = format!("{}/index.lock", run_worktree_admin(&repo));
    leave(&repo, &[index_lock.as_str()]);
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert_kept_aside(&repo, &[index_lock.as_str()], &said);
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    repo.assert_fsck_clean();
}

#[test]
fn a_resume_never_touches_a_left_lock_while_a_live_process_holds_one() {
    let (repo, agent) = killed(&[]);
    leave(&repo, &LEFT);
    let held = repo.path(".git/packed-refs.lock");
    let ready = repo.dir.path().join("holding");
    let holder = crate::lost_index_lock::Holder(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "exec 3>>'{}'; touch '{}'; exec sleep 600",
                held.display(),
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
    let branch_before = repo.git(&["rev-parse", BRANCH]);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 1);
    assert!(said.contains(&format!("pid {}", holder.0.id())), "{said}");
    for lock in LEFT {
        assert!(repo.path(format!(".git/{lock}")).exists(), "{lock}\n{said}");
    }
    assert!(kept_locks(&repo).is_empty(), "{said}");
    assert_eq!(repo.git(&["rev-parse", BRANCH]), branch_before, "{said}");
    drop(holder);
}

#[test]
fn a_resume_after_a_killed_parallel_run_moves_its_story_worktrees_index_locks_aside() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let _reaper = Reaper(repo.record_dir());
    let args = ["--on-finish", "keep", "--parallel", "2"];
    let killed =
        run(start_command(&repo, &agent, &args).env("GIT_RALPH_KILL_AT", "merged:committed"));
    assert_eq!(killed.status.code(), None, "{}", describe(&killed));
    kill_agents(&repo.record_dir());
    // Each story worktree the run made, known by the run's mark in it.
    let index_locks: Vec<String> = fs::read_dir(repo.path(".git/worktrees"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().join("ralph-run").is_file())
        .map(|entry| {
            format!(
                "worktrees/{}/index.lock",
                entry.file_name().to_string_lossy()
            )
        })
        .collect();
    assert!(!index_locks.is_empty(), "the kill left no story worktree");
    let index_locks: Vec<&str> = index_locks.iter().map(String::as_str).collect();
    leave(&repo, &index_locks);
    let output = start(&repo, &agent, &[]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert_kept_aside(&repo, &index_locks, &said);
    assert_eq!(done_stories(&repo), ["1", "2"], "{said}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    repo.assert_fsck_clean();
}
