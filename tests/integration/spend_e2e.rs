//! Issue 49, end to end through the real binary and the fake agent: the
//! run's spend holds. `--max-cost` and `--max-tokens` count every attempt
//! of the run, across a stop and a resume, and a run resumed past its
//! budget starts no agent and says what was spent.

use std::process::Output;

use serde_json::Value;

use crate::harness::*;

const CHANGE: &str = "c";
const TWO_STORIES: &str = "## 1. First\n\n- [ ] 1.1 Do the first thing\n\n## 2. Second\n\n- [ ] 2.1 Do the second thing\n";

/// An agent that spends $0.40 and 150 tokens an attempt and never finishes.
const COSTLY: &str =
    "format claude\n[*]\nwrite w.txt x\nusage 100 50 0.40\npromise FAILED: not yet\n";

fn status(repo: &TestRepo) -> Value {
    repo.status_json(CHANGE)
}

fn said(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

fn agent_calls(repo: &TestRepo) -> usize {
    repo.run_events(CHANGE)
        .iter()
        .filter(|event| event["type"] == "story_progress")
        .count()
}

#[test]
fn issue_49_max_cost_counts_every_attempt_across_a_stop_and_a_resume() {
    let repo = TestRepo::with_change(CHANGE, TWO_STORIES);
    // Two attempts, $0.80, then the iterations limit stops the run.
    let first = start_with_fake(
        &repo,
        CHANGE,
        COSTLY,
        &[
            "--max-cost",
            "1.0",
            "--max-iterations",
            "2",
            "--max-retries",
            "9",
        ],
    );
    assert_exit(&first, 4);
    assert_eq!(status(&repo)["totals"]["attempts"], 2);
    // Resumed with room for more attempts: the third takes the run's spend
    // to $1.20, past the $1.00 it was started with.
    let resumed = start_with_fake(&repo, CHANGE, COSTLY, &["--max-iterations", "20"]);
    assert_exit(&resumed, 7);
    let totals = &status(&repo)["totals"];
    assert_eq!(totals["attempts"], 3, "{}", describe(&resumed));
    assert!((totals["cost_usd"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    assert!(said(&resumed).contains("$1.20 spent"), "{}", said(&resumed));
    // Resumed past its budget: no agent starts, and the run says why.
    let attempts_before = agent_calls(&repo);
    let again = start_with_fake(&repo, CHANGE, COSTLY, &[]);
    assert_exit(&again, 7);
    assert_eq!(agent_calls(&repo), attempts_before, "{}", describe(&again));
    assert_eq!(status(&repo)["totals"]["attempts"], 3);
    assert!(said(&again).contains("$1.20 spent"), "{}", said(&again));
    assert!(said(&again).contains("--max-cost"), "{}", said(&again));
    repo.assert_fsck_clean();
}

#[test]
fn issue_49_max_tokens_counts_every_attempt_across_a_stop_and_a_resume() {
    let repo = TestRepo::with_change(CHANGE, TWO_STORIES);
    let first = start_with_fake(
        &repo,
        CHANGE,
        COSTLY,
        &[
            "--max-tokens",
            "400",
            "--max-iterations",
            "1",
            "--max-retries",
            "9",
        ],
    );
    assert_exit(&first, 4);
    // 150 tokens an attempt reach 400 after three, one of them before the
    // stop.
    let resumed = start_with_fake(&repo, CHANGE, COSTLY, &["--max-iterations", "20"]);
    assert_exit(&resumed, 7);
    assert_eq!(
        status(&repo)["totals"]["attempts"],
        3,
        "{}",
        describe(&resumed)
    );
    let again = start_with_fake(&repo, CHANGE, COSTLY, &["--max-iterations", "30"]);
    assert_exit(&again, 7);
    assert_eq!(status(&repo)["totals"]["attempts"], 3);
    assert!(said(&again).contains("450 tokens used"), "{}", said(&again));
}

#[test]
fn issue_49_a_cost_the_agent_does_not_report_is_estimated_from_the_price_table_and_marked() {
    let repo = TestRepo::with_change(CHANGE, TWO_STORIES);
    repo.write(
        "ralph.toml",
        "[prices.default]\ninput = 2.0\noutput = 8.0\n",
    );
    repo.commit_all("Price the tokens");
    // Codex reports tokens and no cost: a million in and half a million
    // out are $6.00 by the table.
    let codex =
        "format codex\n[*]\nwrite w.txt x\nusage 1000000 500000 0\npromise FAILED: not yet\n";
    let out = start_with_fake(
        &repo,
        CHANGE,
        codex,
        &["--max-cost", "10", "--max-retries", "9"],
    );
    assert_exit(&out, 7);
    let status = status(&repo);
    let totals = &status["totals"];
    assert_eq!(totals["attempts"], 2, "{}", describe(&out));
    assert!(
        (totals["cost_usd"].as_f64().unwrap() - 12.0).abs() < 1e-9,
        "{totals}"
    );
    assert_eq!(totals["cost_estimated"], true);
    assert_eq!(status["stories"][0]["attempts"][0]["cost_estimated"], true);
    assert!(
        said(&out).contains("$12.00 spent (estimated"),
        "{}",
        said(&out)
    );
    let shown = ralph_cmd(&repo, &["status", CHANGE]);
    assert!(
        stdout(&shown).contains("$12.00 (estimated)"),
        "{}",
        stdout(&shown)
    );
}

#[test]
fn issue_49_a_cost_the_agent_reports_is_not_marked_as_an_estimate() {
    let repo = TestRepo::with_change(CHANGE, TWO_STORIES);
    repo.write(
        "ralph.toml",
        "[prices.default]\ninput = 2.0\noutput = 8.0\n",
    );
    repo.commit_all("Price the tokens");
    let out = start_with_fake(
        &repo,
        CHANGE,
        COSTLY,
        &["--max-cost", "0.5", "--max-retries", "9"],
    );
    assert_exit(&out, 7);
    let totals = &status(&repo)["totals"];
    assert!(
        (totals["cost_usd"].as_f64().unwrap() - 0.8).abs() < 1e-9,
        "{totals}"
    );
    assert!(totals.get("cost_estimated").is_none(), "{totals}");
    assert!(!said(&out).contains("estimated"), "{}", said(&out));
}

#[test]
fn issue_49_pace_starts_no_attempt_that_would_pass_the_window_and_says_when_it_goes_on() {
    let repo = TestRepo::with_change(CHANGE, TWO_STORIES);
    // $0.60 an attempt against $1.00 in 3 seconds: the second attempt
    // waits until the first one's spend has left the window.
    let script = "format claude\n[*]\nwrite w.txt x\nusage 100 50 0.60\npromise FAILED: not yet\n";
    let out = start_with_fake(
        &repo,
        CHANGE,
        script,
        &[
            "--pace",
            "$1/3s",
            "--max-iterations",
            "2",
            "--max-retries",
            "9",
        ],
    );
    assert_exit(&out, 4);
    let status = status(&repo);
    let attempts = status["stories"][0]["attempts"]
        .as_array()
        .expect("attempts");
    assert_eq!(attempts.len(), 2, "{}", describe(&out));
    let seconds = |attempt: &Value, key: &str| attempt[key].as_u64().unwrap();
    let first_ended =
        seconds(&attempts[0], "started_at") + seconds(&attempts[0], "duration_ms") / 1000;
    assert!(
        seconds(&attempts[1], "started_at") >= first_ended + 3,
        "the second attempt began inside the window: {attempts:?}"
    );
    let paused: Vec<Value> = repo
        .run_events(CHANGE)
        .into_iter()
        .filter(|event| event["type"] == "paused")
        .collect();
    assert_eq!(paused.len(), 1, "{paused:?}");
    let message = paused[0]["message"].as_str().unwrap();
    assert!(
        message.contains("pace: $0.60 of $1.00 spent in the last 3s"),
        "{message}"
    );
    assert!(paused[0]["until_unix"].as_u64().unwrap() > first_ended + 3);
    assert!(said(&out).contains("going on in"), "{}", said(&out));
}

#[test]
fn issue_49_a_pace_that_cannot_be_read_is_refused_before_anything_is_written() {
    let repo = TestRepo::with_change(CHANGE, TWO_STORIES);
    let out = start_with_fake(&repo, CHANGE, COSTLY, &["--pace", "20/5h"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("'20/5h' is not a pace"),
        "{}",
        stderr(&out)
    );
    assert!(!repo.run_dir(CHANGE).exists());
}

/// A run killed with SIGKILL while its pace holds it resumes into the same
/// wait: the pause ends when the killed run said it would, not a window
/// after the resume, and the next attempt starts only then.
#[test]
fn issue_49_a_kill_during_a_pace_wait_resumes_into_the_same_wait() {
    use crate::harness::story_run::{Background, CHANGE as GREET};
    use nix::sys::signal::Signal;
    use std::time::Duration;
    let repo = TestRepo::with_change(GREET, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    // $0.60 an attempt against $1.00 in 20 seconds: the second attempt
    // waits for the first one's spend to leave the window.
    let script_path = script(
        &repo,
        "format claude\n[story=1 attempt=1]\nusage 100 50 0.60\npromise FAILED: not yet\n[*]\nwrite hello.txt hello\ntick-story\nusage 100 50 0.60\npromise COMPLETE\n",
    );
    let args = ["--pace", "$1/20s", "--max-retries", "3"];
    let mut first = Background::start(&repo, &script_path, &args);
    let status = || {
        let output = ralph_cmd(&repo, &["status", GREET, "--json"]);
        serde_json::from_slice::<Value>(&output.stdout).unwrap_or(Value::Null)
    };
    let paused = || status()["paused_until"].as_u64();
    wait_until("the pace holds the run", Duration::from_secs(60), || {
        paused().is_some()
    });
    let until = paused().expect("paused");
    first.signal(Signal::SIGKILL);
    wait_until("the killed run is gone", Duration::from_secs(30), || {
        !first.still_running()
    });
    let resumed = Background::start(&repo, &script_path, &args);
    wait_until("the resumed run waits", Duration::from_secs(60), || {
        status()["alive"] == true
    });
    assert_eq!(paused(), Some(until), "the same wait");
    let finished = resumed.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    let state = repo.status_json(GREET);
    assert_eq!(state["reason"], "completed", "{state:#}");
    let attempts = state["stories"][0]["attempts"]
        .as_array()
        .expect("attempts");
    assert_eq!(attempts.len(), 2, "{state:#}");
    assert!(
        attempts[1]["started_at"].as_u64().unwrap() >= until,
        "the second attempt began before the wait's end: {attempts:?}"
    );
    // Every pause the runs told of ends at the same second.
    let ends: Vec<u64> = repo
        .run_events(GREET)
        .iter()
        .filter(|event| event["type"] == "paused")
        .filter_map(|event| event["until_unix"].as_u64())
        .collect();
    assert!(
        !ends.is_empty() && ends.iter().all(|end| *end == until),
        "{ends:?}"
    );
    repo.assert_fsck_clean();
}
