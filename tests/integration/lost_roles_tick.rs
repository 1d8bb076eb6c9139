//! A story done and ticked by hand while a role pipeline is stopped at
//! it: the resume commits the user's work, judges the story by its
//! checks like any story the user marked done, and the pipeline does not
//! take it up again. The record agrees with the branch: `status`, `log`,
//! the events and the end of the run call the story done, as its work is
//! on `ralph/<change>`.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(90);

fn coder_does(id: &str) -> String {
    format!(
        "[story={id}]\nwrite story-{id}.txt work of story {id}\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n"
    )
}

fn said(output: &std::process::Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn a_story_ticked_by_hand_in_a_stopped_role_pipeline_is_done_on_resume_and_said_done() {
    let repo = project(TWO_STORIES);
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let at_work = marks.join("at-work");
    let coder = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite {} x\nwait-for {}\n{}{}",
            at_work.display(),
            marks.join("never").display(),
            coder_does("1"),
            coder_does("2"),
        ),
    );
    let reviewer = format!(
        "FAKE_AGENT_SCRIPT={} {}",
        shell_quote(&script(&repo, "[*]\npromise REVIEW_PASSED\n").to_string_lossy()),
        shell_quote(fake_agent_path())
    );
    let args = [
        "--on-finish",
        "keep",
        "--roles",
        "coder,reviewer",
        "--role-agent-command",
        &format!("reviewer={reviewer}"),
    ];
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &coder, &args);
    wait_until("the coder of story 1 is at work", PATIENCE, || {
        at_work.exists()
    });
    run.signal(Signal::SIGTERM);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stdout);

    // The user does story 1 by hand, and ticks it.
    repo.write("story-1.txt", "work of story 1, done by the user\n");
    let tasks = repo.path("openspec/changes/greet/tasks.md");
    let text = std::fs::read_to_string(&tasks).unwrap();
    std::fs::write(&tasks, text.replace("- [ ] 1.", "- [x] 1.")).unwrap();

    let resumed = start(&repo, &coder, &["--on-finish", "keep"]);
    let told = said(&resumed);
    assert_exit(&resumed, 0);
    assert_eq!(
        show(&repo, BRANCH, "story-1.txt"),
        "work of story 1, done by the user\n",
        "{told}"
    );
    assert_eq!(
        show(&repo, BRANCH, "story-2.txt"),
        "work of story 2\n",
        "{told}"
    );

    let status = status_json(&repo);
    let done: Vec<&str> = status["stories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|story| story["done"] == true)
        .filter_map(|story| story["id"].as_str())
        .collect();
    assert_eq!(done, ["1", "2"], "{told}\n{status:#}");
    // What the webhook is told at the end counts the same records.
    assert_eq!(status["stories_done"], 2, "{status:#}");
    // The coder was not sent back to story 1.
    let coder_calls: Vec<String> = std::fs::read_dir(repo.record_dir())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("pid-1-"))
        .collect();
    assert_eq!(coder_calls, ["pid-1-1"], "{told}");
    // Every checkpoint the log names is on the branch.
    let on_branch = repo.git(&["rev-list", BRANCH]);
    let log = ralph_cmd(&repo, &["log", CHANGE, "--json"]);
    assert_exit(&log, 0);
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).unwrap();
    for story in log["stories"].as_array().unwrap() {
        assert_eq!(story["done"], true, "{log:#}");
        for attempt in story["attempts"].as_array().unwrap() {
            if let Some(checkpoint) = attempt["checkpoint"].as_str() {
                assert!(on_branch.lines().any(|line| line == checkpoint), "{log:#}");
            }
        }
    }
    repo.assert_fsck_clean();
}
