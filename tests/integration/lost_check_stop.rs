//! A stop honoured while a check runs (issue 44, item 5), through the real
//! binary: a check is a child like an agent, so SIGTERM to the loop (what
//! `q` and the web view's Stop amount to) and `git ralph abort` end it at
//! once, in place, in a worktree of its own and in a parallel run, where
//! the check on the merged tree counts too. The story whose check was
//! stopped is not checkpointed and not called done anywhere; its attempt
//! is recorded as interrupted, a resume completes it, and abort gives back
//! the state before the start.
//!
//! The check records its PID (which leads its process group) and blocks
//! until the test releases it, so the test stops the loop while it runs.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;
use nix::sys::signal::Signal;

/// Generous: the loop must stop promptly, but a loaded machine is slow.
const PATIENCE: Duration = Duration::from_secs(60);

/// A check that, where `only` says (a shell condition, `true` for
/// everywhere), records its PID in the records directory and waits until
/// `release` exists there, at most 60 s.
fn blocking_check(repo: &TestRepo, only: &str) -> String {
    let rec = repo.record_dir();
    fs::create_dir_all(&rec).expect("the records directory");
    let rec = shell_quote(&rec.to_string_lossy());
    format!(
        "if {only}; then echo $$ >> {rec}/check-pids; \
         i=0; while [ ! -f {rec}/release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; fi"
    )
}

/// The PIDs of the checks started so far.
fn check_pids(repo: &TestRepo) -> Vec<i32> {
    fs::read_to_string(repo.record_dir().join("check-pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Waits until a check has started.
fn wait_for_check(repo: &TestRepo) {
    wait_until("a check runs", PATIENCE, || !check_pids(repo).is_empty());
}

/// Lets every check from now on pass at once.
fn release_checks(repo: &TestRepo) {
    fs::write(repo.record_dir().join("release"), "").expect("release the checks");
}

fn assert_checks_gone(repo: &TestRepo) {
    for pid in check_pids(repo) {
        assert!(!group_alive(pid), "the check {pid} still runs");
    }
}

/// Nothing of the run says story `id` is done: no checkpoint on the run's
/// branch, no completed attempt in the state, the events or `log`, and
/// its last attempt is recorded as interrupted.
fn assert_not_done(repo: &TestRepo, id: &str) {
    let subjects = subjects(repo, &format!("main..{BRANCH}"));
    assert!(
        !subjects.iter().any(|s| s.contains(&format!("story {id} "))),
        "story {id} was checkpointed: {subjects:?}"
    );
    let status = status_json(repo);
    let story = status["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|story| story["id"] == id)
        .unwrap_or_else(|| panic!("story {id} in {status}"))
        .clone();
    assert_ne!(story["done"], true, "status calls story {id} done");
    let attempts = story["attempts"].as_array().expect("attempts");
    assert!(
        attempts.iter().all(|a| a["outcome"] != "complete"),
        "{attempts:?}"
    );
    assert_eq!(
        attempts.last().map(|a| a["outcome"].clone()),
        Some("interrupted".into()),
        "{attempts:?}"
    );
    let finished = events(repo);
    for event in of_type(&finished, "attempt_finished") {
        if event["story_id"] == id {
            assert_ne!(event["outcome"], "complete", "{event}");
            assert!(event["checkpoint"].is_null(), "{event}");
        }
    }
    assert!(
        !of_type(&finished, "story_completed")
            .iter()
            .any(|event| event["story_id"] == id),
        "an event calls story {id} completed"
    );
    let log = stdout(&ralph_cmd(repo, &["log", CHANGE]));
    assert!(
        log.contains("was interrupted") || log.contains("interrupted"),
        "log tells of the stop:\n{log}"
    );
}

fn start_with_check(repo: &TestRepo, agent: &Path, check: &str, extra: &[&str]) -> Background {
    let mut args = vec!["--on-finish", "keep", "--check", check];
    args.extend_from_slice(extra);
    Background::start(repo, agent, &args)
}

/// SIGTERM to a loop whose check runs: the loop ends promptly, the check
/// with it, the story is not done, and a resume completes every story.
fn sigterm_during_check(extra: &[&str]) -> TestRepo {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let check = blocking_check(&repo, "true");
    let _reaper = Reaper(repo.record_dir());
    let run = start_with_check(&repo, &agent, &check, extra);
    wait_for_check(&repo);
    run.signal(Signal::SIGTERM);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    wait_until("the check is gone", PATIENCE, || {
        check_pids(&repo).iter().all(|pid| !group_alive(*pid))
    });
    assert_checks_gone(&repo);
    assert_not_done(&repo, "1");
    assert_eq!(status_json(&repo)["stories_done"], 0);
    // The attempt's work is kept as a stopped agent's is.
    let kept = format!("{NS}/attempts/1/1");
    assert_eq!(
        attempt_records(&state(&repo), "1")[0]["preserved"],
        kept.as_str()
    );
    assert_eq!(show(&repo, &kept, "story-1.txt"), "work of story 1\n");

    release_checks(&repo);
    let resumed = start(&repo, &agent, &["--on-finish", "keep", "--check", &check]);
    assert_exit(&resumed, 0);
    assert_eq!(status_json(&repo)["stories_done"], 2);
    let subjects = subjects(&repo, &format!("main..{BRANCH}"));
    assert!(
        subjects.iter().any(|s| s.contains("story 1 ")),
        "{subjects:?}"
    );
    repo.assert_fsck_clean();
    repo
}

#[test]
fn sigterm_ends_a_running_check_in_place_and_the_story_is_not_checkpointed() {
    sigterm_during_check(&[]);
}

#[test]
fn sigterm_ends_a_running_check_in_a_worktree_and_the_story_is_not_checkpointed() {
    sigterm_during_check(&["--worktree"]);
}

/// `git ralph abort` while a check runs stops the loop (no "did not
/// stop"), the check with it, and gives back the state before the start.
fn abort_during_check(extra: &[&str]) {
    let repo = project(TWO_STORIES);
    repo.write("README.md", "# staged\n");
    repo.git(&["add", "README.md"]);
    repo.write("README.md", "# staged, then edited\n");
    repo.write("scratch.txt", "untracked\n");
    let before = work_state(&repo);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let check = blocking_check(&repo, "true");
    let _reaper = Reaper(repo.record_dir());
    let run = start_with_check(&repo, &agent, &check, extra);
    wait_for_check(&repo);
    let abort = ralph(&repo)
        .args(["abort", CHANGE])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("abort starts");
    let stopped = run.wait(PATIENCE);
    let abort = abort.wait_with_output().expect("abort finishes");
    assert_exit(&abort, 0);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    assert_checks_gone(&repo);
    assert_eq!(work_state(&repo), before, "the pre-start state is back");
    assert!(!has_ref(&repo, &format!("refs/heads/{BRANCH}")));
    assert_eq!(status_json(&repo)["state"], "aborted");
    repo.assert_fsck_clean();
}

#[test]
fn abort_ends_a_running_check_in_place_and_restores_the_pre_start_state() {
    abort_during_check(&[]);
}

#[test]
fn abort_ends_a_running_check_in_a_worktree_and_restores_the_pre_start_state() {
    abort_during_check(&["--worktree"]);
}

/// The run's own worktree of a parallel run: where the merged tree's
/// checks run, on `ralph/greet` itself.
const ON_THE_RUN_BRANCH: &str = "[ \"$(git rev-parse --abbrev-ref HEAD)\" = ralph/greet ]";

/// A parallel run stopped while a check runs, `where` saying which
/// checks block (the stories' own, or the merged tree's); then resumed.
fn parallel_stop(only: &str) {
    let repo = independent_project();
    let agent = script(
        &repo,
        &format!("{}{}{}", story_done("1"), story_done("2"), story_done("3")),
    );
    let check = blocking_check(&repo, only);
    let _reaper = Reaper(repo.record_dir());
    let run = start_with_check(&repo, &agent, &check, &["--parallel", "2"]);
    wait_for_check(&repo);
    run.signal(Signal::SIGTERM);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    wait_until("every check is gone", PATIENCE, || {
        check_pids(&repo).iter().all(|pid| !group_alive(*pid))
    });
    let subjects = subjects(&repo, &format!("main..{BRANCH}"));
    assert!(
        !subjects.iter().any(|s| s.contains("story")),
        "nothing is merged: {subjects:?}"
    );
    let status = status_json(&repo);
    assert_eq!(status["stories_done"], 0, "{status}");
    let finished = events(&repo);
    assert!(
        of_type(&finished, "merged")
            .iter()
            .all(|event| event["merged"] != true),
        "no story is merged while stopping"
    );
    assert!(
        of_type(&finished, "attempt_finished")
            .iter()
            .all(|event| event["outcome"] != "complete" && event["outcome"] != "rejected"),
        "no story is done or rejected while stopping: {:?}",
        of_type(&finished, "attempt_finished")
    );

    release_checks(&repo);
    let resumed = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--check", &check, "--parallel", "2"],
    );
    assert_exit(&resumed, 0);
    assert_eq!(status_json(&repo)["stories_done"], 3);
    repo.assert_fsck_clean();
}

#[test]
fn sigterm_ends_the_stories_checks_of_a_parallel_run() {
    parallel_stop("true");
}

#[test]
fn sigterm_ends_the_check_on_the_merged_tree_of_a_parallel_run() {
    parallel_stop(ON_THE_RUN_BRANCH);
}
