//! Issue 27: an agent that prints nothing for `--idle-timeout` is stopped
//! like a timeout, and its attempt fails with the reason "idle for …";
//! one that keeps talking is left alone.

use std::time::{Duration, Instant};

use crate::harness::story_run::*;
use crate::harness::*;

#[test]
fn issue_27_a_silent_agent_is_stopped_at_the_idle_timeout() {
    let repo = project(TWO_STORIES);
    let agent = second_try(&repo, "say thinking\nwrite partial.txt started\nsleep 30\n");
    let started = Instant::now();
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--idle-timeout", "2s"],
    );
    let elapsed = started.elapsed();
    assert_exit(&output, 0);
    assert!(
        elapsed < Duration::from_secs(20),
        "the silent agent was not cut short ({elapsed:?})"
    );
    assert!(
        !group_alive(agent_pid(&repo, "1", 1)),
        "the idle agent's process group is gone"
    );
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts[0].0, "timed_out", "{attempts:?}");
    assert!(
        attempts[0].1.starts_with("idle for 2s"),
        "the reason says it went idle: {attempts:?}"
    );
    assert_eq!(attempts[1].0, "complete", "{attempts:?}");
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/1/1"), "partial.txt"),
        "started",
        "the idle attempt's work is preserved"
    );
    let retry = recorded_prompt(&repo, "1", 2);
    assert!(
        retry.contains("timed out"),
        "the retry is told the attempt was stopped:\n{retry}"
    );
}

#[test]
fn issue_27_an_agent_that_keeps_talking_is_not_idle() {
    let repo = project(TWO_STORIES);
    let talk: String = (0..6)
        .map(|n| format!("say step {n}\nsleep 0.5\n"))
        .collect();
    let agent = script(
        &repo,
        &format!("[story=1]\n{talk}{}{}", finish_story("1"), story_done("2")),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--idle-timeout", "2s"],
    );
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(
        attempts.len(),
        1,
        "three seconds of talk, never two of silence: {attempts:?}"
    );
    assert_eq!(attempts[0].0, "complete");
}

#[test]
fn issue_27_the_idle_timeout_comes_from_git_config_and_is_stored() {
    let repo = project(TWO_STORIES);
    repo.git(&["config", "ralph.idleTimeout", "20m"]);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(state(&repo)["settings"]["idle_timeout_secs"], 1200);

    let fresh = project(TWO_STORIES);
    let agent = script(&fresh, &format!("{}{}", story_done("1"), story_done("2")));
    assert_exit(&start(&fresh, &agent, &["--on-finish", "keep"]), 0);
    assert_eq!(
        state(&fresh)["settings"]["idle_timeout_secs"],
        900,
        "fifteen minutes by default"
    );
}
