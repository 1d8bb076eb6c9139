//! A loop killed (kill -9) at any moment of a story's checkpoint, then
//! resumed or finished: the record (state, events, the `on_story_done`
//! hook) agrees with the branch. The checkpoint commit and the record that
//! calls the story done are written apart; whichever came last, the next
//! command makes them one again.

use std::fs;
use std::path::PathBuf;

use crate::harness::story_run::*;
use crate::harness::*;

/// Two stories, each done at once, whose `on_story_done` hook writes the
/// story into `told.log` beside the repository.
fn told_project() -> (TestRepo, PathBuf, PathBuf) {
    let repo = project(TWO_STORIES);
    let told = repo.root.parent().expect("a parent").join("told.log");
    repo.write(
        "openspec/changes/greet/ralph.toml",
        format!(
            "[hooks]\non_story_done = \"echo $RALPH_STORY >> {}\"\n",
            told.display()
        ),
    );
    repo.commit_all("Tell of each story done");
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    (repo, agent, told)
}

/// The run killed at `point` of story 1's checkpoint.
fn killed_at(point: &str) -> (TestRepo, PathBuf, PathBuf) {
    let (repo, agent, told) = told_project();
    let killed = run(start_command(&repo, &agent, &["--on-finish", "keep"])
        .env("GIT_RALPH_KILL_AT", point));
    assert_eq!(killed.status.code(), None, "{point}: {}", describe(&killed));
    kill_agents(&repo.record_dir());
    (repo, agent, told)
}

/// How many times events.jsonl calls `story` complete.
fn told_complete(repo: &TestRepo, story: &str) -> usize {
    events(repo)
        .iter()
        .filter(|e| {
            e["type"] == "attempt_finished" && e["story_id"] == story && e["outcome"] == "complete"
        })
        .count()
}

#[test]
fn a_story_recorded_done_and_killed_before_it_was_told_is_told_once_on_resume() {
    let (repo, agent, told) = killed_at("checkpoint:recorded");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(subjects(&repo, "main..ralph/greet").len(), 3, "{}", describe(&output));
    for story in ["1", "2"] {
        assert_eq!(told_complete(&repo, story), 1, "story {story}: its event");
    }
    let mut hooked: Vec<String> = fs::read_to_string(&told)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    hooked.sort();
    assert_eq!(hooked, ["1", "2"], "on_story_done, once a story");
}
