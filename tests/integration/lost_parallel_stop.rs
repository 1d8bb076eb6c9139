//! A `--parallel` run stopped (SIGTERM, as `abort`, `q` and the web
//! view's Stop send it) while a story is done in its own worktree but not
//! yet merged onto `ralph/<change>`: story 2 finished while story 1, before
//! it in the file, was still at work, so story 2 waited for its merge. The
//! record used to name story 2's checkpoint in its worktree as the
//! attempt's, complete, while the run's branch never received it. Now the
//! record calls a story done exactly when its work is on the branch: the
//! stop leaves story 2 not done, its work kept where the record says, and
//! the resume merges it without running it again.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(90);

/// Whether the run's record says story `story`'s loop has ended and the
/// story waits to be merged.
fn waits_for_its_merge(repo: &TestRepo, story: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(run_dir(repo).join("state.json")) else {
        return false;
    };
    let Ok(state) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    state["parallel"]["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|worker| worker["story"] == story && worker["ended"] == true)
}

/// Every checkpoint `log --json` gives a complete attempt, every complete
/// `attempt_finished` event's checkpoint, and every story `status --json`
/// calls done: each on the run's branch. Returns the stories `log` calls
/// done.
fn assert_record_on_branch(repo: &TestRepo, moment: &str) -> Vec<String> {
    let on_branch = repo.git(&["rev-list", BRANCH]);
    let on_branch = |commit: &str| on_branch.lines().any(|line| line == commit);
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
                    on_branch(checkpoint),
                    "{moment}: log calls story {id} attempt {} complete at {checkpoint:?}, \
                     which is not on {BRANCH}:\n{log:#}",
                    attempt["attempt"]
                );
            }
        }
        if story["done"] == true {
            done.push(id);
        }
    }
    for event in events(repo) {
        if event["type"] == "attempt_finished" && event["outcome"] == "complete" {
            let checkpoint = event["checkpoint"].as_str().unwrap_or_default();
            assert!(
                on_branch(checkpoint),
                "{moment}: events.jsonl calls story {} complete at {checkpoint:?}, \
                 which is not on {BRANCH}",
                event["story_id"]
            );
        }
    }
    let status = status_json(repo);
    for story in status["stories"].as_array().expect("stories") {
        if story["done"] == true {
            let id = story["id"].as_str().unwrap_or_default();
            assert!(
                repo.git_ok(&["cat-file", "-e", &format!("{BRANCH}:story-{id}.txt")]),
                "{moment}: status calls story {id} done, but {BRANCH} lacks its work"
            );
        }
    }
    done
}

#[test]
fn a_story_done_in_its_worktree_and_stopped_before_its_merge_is_not_called_done_and_is_merged_on_resume()
 {
    let repo = independent_project();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let (at_work, gate) = (marks.join("at-work"), marks.join("gate"));
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite {} x\nwait-for {}\n{}{}",
            at_work.display(),
            gate.display(),
            finish_story("1"),
            stories_done(&["1", "2", "3"]),
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    wait_until("story 1's agent is at work", PATIENCE, || at_work.exists());
    wait_until("story 2 is done and waits for its merge", PATIENCE, || {
        waits_for_its_merge(&repo, "2")
    });
    run.signal(Signal::SIGTERM);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    std::fs::write(&gate, "").unwrap();

    let done = assert_record_on_branch(&repo, "after the stop");
    assert!(done.is_empty(), "{done:?}");
    assert!(
        !repo.git_ok(&["cat-file", "-e", &format!("{BRANCH}:story-2.txt")]),
        "story 2 reached the branch before the stop"
    );
    // Story 2's work is kept under a ref all the same.
    let holding: Vec<String> = repo
        .git(&["for-each-ref", "--format=%(refname)"])
        .lines()
        .filter(|name| {
            repo.git_ok(&["cat-file", "-e", &format!("{name}:story-2.txt")])
                && show(&repo, name, "story-2.txt") == "work of story 2\n"
        })
        .map(str::to_string)
        .collect();
    assert!(!holding.is_empty(), "story 2's work is in no ref");

    let resumed = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&resumed, 0);
    let done = assert_record_on_branch(&repo, "after the resume");
    assert_eq!(done, ["1", "2", "3"], "{}", describe(&resumed));
    for id in ["1", "2", "3"] {
        assert_eq!(
            show(&repo, BRANCH, &format!("story-{id}.txt")),
            format!("work of story {id}\n")
        );
    }
    let story_2_runs = agent_runs(&repo)
        .into_iter()
        .filter(|(story, _)| story == "2")
        .count();
    assert_eq!(story_2_runs, 1, "story 2 was done again on resume");
    repo.assert_fsck_clean();
}

/// The stop seen by story 2's own loop just after its checkpoint, before
/// its loop ended: its push (`--push-each`) is held by the remote's
/// `pre-receive` hook while the run is stopped. Its loop then ended
/// "stopped" with its attempt complete; the run took the story for not
/// done, ran it again on resume, and `log` named the first attempt's
/// checkpoint, which the branch never received.
#[test]
fn a_story_whose_loop_sees_the_stop_after_its_checkpoint_is_merged_on_resume_not_done_again() {
    let repo = independent_project();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let (at_work, gate) = (marks.join("at-work"), marks.join("gate"));
    let (pushing, pushed) = (marks.join("pushing"), marks.join("push-on"));
    let remote = repo.dir.path().join("remote.git");
    repo.git_at(
        repo.dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif grep -q 'story-2'; then touch {p}; \
             while [ ! -e {g} ]; do sleep 0.1; done; fi\nexit 0\n",
            p = shell_quote(&pushing.display().to_string()),
            g = shell_quote(&pushed.display().to_string()),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite {} x\nwait-for {}\n{}{}",
            at_work.display(),
            gate.display(),
            finish_story("1"),
            stories_done(&["1", "2", "3"]),
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(
        &repo,
        &agent,
        &["--parallel", "2", "--on-finish", "keep", "--push-each"],
    );
    wait_until("story 1's agent is at work", PATIENCE, || at_work.exists());
    wait_until("story 2's checkpoint is being pushed", PATIENCE, || {
        pushing.exists()
    });
    run.signal(Signal::SIGTERM);
    // The stop reached the stories' loops: story 1's agent is stopped.
    let story_1 = agent_pid(&repo, "1", 1);
    wait_until("story 1's agent is stopped", PATIENCE, || {
        !group_alive(story_1)
    });
    std::fs::write(&pushed, "").unwrap();
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    std::fs::write(&gate, "").unwrap();

    let done = assert_record_on_branch(&repo, "after the stop");
    assert!(done.is_empty(), "{done:?}");

    let resumed = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&resumed, 0);
    let done = assert_record_on_branch(&repo, "after the resume");
    assert_eq!(done, ["1", "2", "3"], "{}", describe(&resumed));
    let story_2_runs = agent_runs(&repo)
        .into_iter()
        .filter(|(story, _)| story == "2")
        .count();
    assert_eq!(
        story_2_runs,
        1,
        "story 2 was done again on resume:\n{}",
        describe(&resumed)
    );
    assert_eq!(show(&repo, BRANCH, "story-2.txt"), "work of story 2\n");
    repo.assert_fsck_clean();
}
