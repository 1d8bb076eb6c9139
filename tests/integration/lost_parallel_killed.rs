//! A `--parallel` run killed (kill -9) just as story 1's work was merged
//! onto `ralph/<change>`, while story 2, done in its own worktree, was
//! still in its loop (its `--push-each` push held by the remote's
//! `pre-receive` hook), then ended or resumed. The ending used to give
//! story 2 its worktree's record, complete at a checkpoint the run's
//! branch never received, and left story 1, whose work was on the branch,
//! not done. Now the record calls a story done exactly when its work is
//! on the tip the ending keeps, and every story's work is under a ref.

use std::path::PathBuf;

use serde_json::Value;

use crate::harness::story_run::*;
use crate::harness::*;

/// The marks beside the repository: the push of story 2 held, and the
/// file that lets it go on.
struct Held {
    pushing: PathBuf,
    push_on: PathBuf,
}

impl Drop for Held {
    /// The remote's hook waits no longer, whatever the test came to.
    fn drop(&mut self) {
        let _ = std::fs::write(&self.push_on, "");
    }
}

/// The run killed once story 1 is merged, story 2's loop held in its
/// push. Returns the repository, the agent and the held push.
fn killed_with_story_2_held() -> (TestRepo, PathBuf, Held, Reaper) {
    let repo = independent_project();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let held = Held {
        pushing: marks.join("pushing"),
        push_on: marks.join("push-on"),
    };
    let remote = repo.dir.path().join("remote.git");
    let remote_path = remote.to_str().unwrap();
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", "-b", "main", remote_path],
    );
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif grep -q 'story-2'; then touch {p}; \
             while [ ! -e {g} ]; do sleep 0.1; done; fi\nexit 0\n",
            p = shell_quote(&held.pushing.display().to_string()),
            g = shell_quote(&held.push_on.display().to_string()),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    repo.git(&["remote", "add", "origin", remote_path]);
    repo.git(&["push", "-q", "origin", "main"]);
    // Story 1 is done only once story 2's push is held.
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwait-for {}\n{}{}",
            held.pushing.display(),
            finish_story("1"),
            stories_done(&["1", "2", "3"]),
        ),
    );
    let reaper = Reaper(repo.record_dir());
    let killed = run(start_command(
        &repo,
        &agent,
        &["--parallel", "2", "--on-finish", "keep", "--push-each"],
    )
    .env("GIT_RALPH_KILL_AT", "merged:committed"));
    assert_eq!(killed.status.code(), None, "{}", describe(&killed));
    assert!(held.pushing.exists(), "story 2's push was not held");
    (repo, agent, held, reaper)
}

/// Every story the record (`status --json`, `log --json`, `log`) calls
/// done has its work on `tip`, at a checkpoint on `tip`; every story whose
/// work is on `tip` is called done. Returns the stories called done.
fn assert_record_on(repo: &TestRepo, tip: &str, moment: &str) -> Vec<String> {
    let on_tip = repo.git(&["rev-list", tip]);
    let work_on_tip = |id: &str| {
        repo.git_ok(&["cat-file", "-e", &format!("{tip}:story-{id}.txt")])
            && show(repo, tip, &format!("story-{id}.txt")) == format!("work of story {id}\n")
    };
    let log = ralph_cmd(repo, &["log", CHANGE, "--json"]);
    assert_exit(&log, 0);
    let log: Value = serde_json::from_slice(&log.stdout).expect("log --json is JSON");
    let mut done = Vec::new();
    for story in log["stories"].as_array().expect("stories") {
        let id = story["id"].as_str().unwrap_or_default().to_string();
        for attempt in story["attempts"].as_array().expect("attempts") {
            if attempt["outcome"] == "complete" {
                let checkpoint = attempt["checkpoint"].as_str().unwrap_or_default();
                assert!(
                    on_tip.lines().any(|line| line == checkpoint),
                    "{moment}: log calls story {id} complete at {checkpoint:?}, not on {tip}:\n{log:#}"
                );
            }
        }
        let called_done = story["done"] == true;
        assert_eq!(
            called_done,
            work_on_tip(&id),
            "{moment}: log calls story {id} done: {called_done}, its work on {tip}: {}:\n{log:#}",
            work_on_tip(&id)
        );
        if called_done {
            done.push(id);
        }
    }
    let status = status_json(repo);
    for story in status["stories"].as_array().expect("stories") {
        let id = story["id"].as_str().unwrap_or_default();
        assert_eq!(
            story["done"] == true,
            work_on_tip(id),
            "{moment}: status on story {id}:\n{status:#}"
        );
    }
    done
}

/// Whether some ref holds story `id`'s work.
fn kept_under_a_ref(repo: &TestRepo, id: &str) -> bool {
    repo.git(&["for-each-ref", "--format=%(refname)"])
        .lines()
        .any(|name| {
            repo.git_ok(&["cat-file", "-e", &format!("{name}:story-{id}.txt")])
                && show(repo, name, &format!("story-{id}.txt")) == format!("work of story {id}\n")
        })
}

fn assert_nothing_lost(repo: &TestRepo) {
    for id in ["1", "2"] {
        assert!(kept_under_a_ref(repo, id), "story {id}'s work is in no ref");
    }
    repo.assert_fsck_clean();
}

#[test]
fn a_parallel_run_killed_at_a_merge_and_aborted_calls_done_what_the_aborted_tip_holds() {
    let (repo, _agent, held, _reaper) = killed_with_story_2_held();
    let aborted = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&aborted, 0);
    drop(held);
    let done = assert_record_on(
        &repo,
        &format!("refs/ralph/{CHANGE}/aborted"),
        "after abort",
    );
    assert_eq!(done, ["1"], "{}", describe(&aborted));
    assert_nothing_lost(&repo);
}

#[test]
fn a_parallel_run_killed_at_a_merge_and_kept_calls_done_what_its_branch_holds() {
    let (repo, _agent, held, _reaper) = killed_with_story_2_held();
    let kept = ralph_cmd(&repo, &["finish", CHANGE, "--keep"]);
    assert_exit(&kept, 0);
    drop(held);
    let done = assert_record_on(&repo, BRANCH, "after finish --keep");
    assert_eq!(done, ["1"], "{}", describe(&kept));
    assert_nothing_lost(&repo);
}

#[test]
fn a_parallel_run_killed_at_a_merge_and_resumed_calls_done_what_its_branch_holds() {
    let (repo, agent, held, _reaper) = killed_with_story_2_held();
    drop(held);
    let resumed = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&resumed, 0);
    let done = assert_record_on(&repo, BRANCH, "after the resume");
    assert_eq!(done, ["1", "2", "3"], "{}", describe(&resumed));
    assert_nothing_lost(&repo);
}
