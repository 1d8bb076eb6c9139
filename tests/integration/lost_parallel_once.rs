//! A `--parallel` run resumed with `--once`: a single pass is one story
//! after another, which a new run with both options is refused for. The
//! resume used to take it, and each story's loop, told to make a single
//! pass over a file whose other stories stay open in its worktree, ended
//! "not done" after finishing its story: the story's checkpoint was named
//! in `log` as complete while the run's branch never received it. The
//! resume is refused now, before anything is written, and a resume
//! without `--once` merges every story, each checkpoint `log` names on
//! the branch.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(90);

/// Everything a refused command must leave as it was.
fn picture(repo: &TestRepo) -> (String, String, String) {
    (
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read_to_string(run_dir(repo).join("state.json")).unwrap(),
    )
}

#[test]
fn a_parallel_run_resumed_with_once_is_refused_and_its_record_agrees_with_the_branch() {
    let repo = independent_project();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let at_work = marks.join("at-work");
    let gate = marks.join("gate");
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite {} x\nwait-for {}\n{}[story=2 attempt=1]\nwait-for {}\n{}{}",
            at_work.display(),
            gate.display(),
            finish_story("1"),
            gate.display(),
            finish_story("2"),
            stories_done(&["1", "2", "3"]),
        ),
    );
    // Story 2's first attempt also waits, so that the stop finds no story
    // finished in its worktree and not yet merged.
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    wait_until("story 1's agent is at work", PATIENCE, || at_work.exists());
    run.signal(Signal::SIGTERM);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stdout);
    std::fs::write(&gate, "").unwrap();

    let before = picture(&repo);
    let once = start(&repo, &agent, &["--once", "--on-finish", "keep"]);
    let said = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&once.stdout),
        String::from_utf8_lossy(&once.stderr)
    );
    assert_eq!(once.status.code(), Some(1), "{said}");
    assert!(
        said.contains("works on its stories in parallel; --once makes a single pass")
            && said.contains("resume it without --once: 'git ralph start greet'"),
        "{said}"
    );
    assert_eq!(
        picture(&repo),
        before,
        "the refused resume changed something"
    );

    let resumed = start(&repo, &agent, &["--on-finish", "keep"]);
    let said = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&resumed.stdout),
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(resumed.status.code(), Some(0), "{said}");
    // Every checkpoint the log names is on the run's branch.
    let on_branch = repo.git(&["rev-list", BRANCH]);
    let log = ralph_cmd(&repo, &["log", CHANGE, "--json"]);
    assert_exit(&log, 0);
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).expect("log --json is JSON");
    let mut named = 0;
    for story in log["stories"].as_array().expect("stories") {
        for attempt in story["attempts"].as_array().expect("attempts") {
            if let Some(checkpoint) = attempt["checkpoint"].as_str() {
                named += 1;
                assert!(
                    on_branch.lines().any(|line| line == checkpoint),
                    "log names the checkpoint {checkpoint} of story {}, not on {BRANCH}:\n{said}",
                    story["id"]
                );
            }
        }
        assert_eq!(story["done"], true, "{said}");
    }
    assert_eq!(named, 3, "{log:#}");
    for id in ["1", "2", "3"] {
        assert_eq!(
            show(&repo, BRANCH, &format!("story-{id}.txt")),
            format!("work of story {id}\n")
        );
    }
    repo.assert_fsck_clean();
}
