//! Issue 49: usage limits as the real agent CLIs say them. Each installed
//! CLI is run for real, offline, against the model stand-in answering its
//! first conversation requests with the provider's own 429 or quota error,
//! reset time included, until a reset a few seconds ahead. git-ralph must
//! recognise the CLI's own words for it, wait the reset out without
//! spending a retry (`--max-retries 0`), and finish the story on the next
//! attempt, with the wait in the record. A CLI that waits a short limit
//! out itself shows git-ralph nothing, so each limit here is as long as the
//! CLI needs to give up. The kill during a wait is told by the fake agent,
//! whose limit comes at once.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::harness::{TestRepo, describe};
use crate::real_cli_e2e::{installed, start, start_with};

const CHANGE: &str = "add-greeting";
const TASKS: &str = "openspec/changes/add-greeting/tasks.md";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Runs `name` through one story whose first attempt meets `limit` (a
/// stand-in `limit` turn without its reset), lifted `ahead` seconds from
/// now. Returns the run's output and the reset time.
fn meets_the_limit(name: &str, limit: Value, ahead: u64) -> (TestRepo, std::process::Output, u64) {
    let repo = TestRepo::with_change(CHANGE, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    let reset = now() + ahead;
    let mut limit = limit;
    limit["kind"] = json!("limit");
    limit["reset_unix"] = json!(reset);
    let turns = json!([
        limit,
        {"kind": "shell", "command": format!(
            "echo hello > hello.txt && sed -i 's/- \\[ \\] 1.1/- [x] 1.1/' {TASKS}")},
        {"kind": "text", "text": "Done.\n\n<promise>COMPLETE</promise>"}
    ]);
    let output = start(&repo, name, CHANGE, turns);
    (repo, output, reset)
}

/// The first attempt ends usage-limited with the CLI's own `words` as its
/// reason, the run pauses instead of spending the one retry it does not
/// have, and the second attempt, after the reset, completes the story.
/// The pause is in the run's events; where the CLI states the reset,
/// `reset` is it, and the pause lasts until just past it.
fn waits_it_out(
    name: &str,
    repo: &TestRepo,
    output: &std::process::Output,
    words: &str,
    reset: Option<u64>,
) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{name}:\n{}",
        describe(output)
    );
    let status = repo.status_json(CHANGE);
    let attempts = &status["stories"][0]["attempts"];
    assert_eq!(attempts[0]["outcome"], "rate_limited", "{status:#}");
    let reason = attempts[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("usage limit: "), "{status:#}");
    assert!(reason.contains(words), "{name}: {reason}");
    assert_eq!(attempts[1]["outcome"], "complete", "{status:#}");
    assert_eq!(status["reason"], "completed", "{status:#}");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains(words), "{name}:\n{shown}");
    assert_eq!(
        repo.git(&["show", &format!("ralph/{CHANGE}:hello.txt")]),
        "hello\n"
    );
    let events = std::fs::read_to_string(repo.path(".git/ralph").join(CHANGE).join("events.jsonl"))
        .expect("the run's events");
    let paused: Vec<Value> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "paused")
        .collect();
    assert_eq!(paused.len(), 1, "{name}: {events}");
    assert!(
        paused[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains(words)),
        "{paused:?}"
    );
    if let Some(reset) = reset {
        let until = paused[0]["until_unix"].as_u64().expect("a pause's end");
        assert!(
            (reset + 4..=reset + 6).contains(&until),
            "{name}: {until} for {reset}"
        );
    }
    repo.assert_fsck_clean();
}

/// Claude Code with an API key retries a 429 itself while the provider's
/// `retry-after` is short, and gives up at once when it is over about a
/// minute, printing `API Error: Request rejected (429) · <message>` and
/// `api_error_status: 429`, with no reset time. A spend limit 75 seconds
/// away is such a limit: git-ralph waits its first back-off of a minute,
/// and the second attempt's CLI waits out the last seconds itself.
#[test]
fn issue_49_claude_code_spend_limit_is_waited_out_without_a_retry() {
    if installed("claude").is_none() {
        return;
    }
    let message = "You have reached your spend limit. Raise it in the Console to continue.";
    let (repo, output, _) = meets_the_limit("claude", json!({"message": message}), 75);
    waits_it_out(
        "claude",
        &repo,
        &output,
        &format!("API Error: Request rejected (429) · {message}"),
        None,
    );
}

/// Codex meets OpenAI's `insufficient_quota` 429 and prints its own words
/// for it, `Quota exceeded. Check your plan and billing details.`, with no
/// reset time: git-ralph waits its first back-off, after which the quota
/// (lifted 20 seconds in) lets the story finish.
#[test]
fn issue_49_codex_quota_error_is_waited_out_without_a_retry() {
    if installed("codex").is_none() {
        return;
    }
    let limit = json!({
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "code": "insufficient_quota",
    });
    let (repo, output, _) = meets_the_limit("codex", limit, 20);
    waits_it_out(
        "codex",
        &repo,
        &output,
        "Quota exceeded. Check your plan and billing details.",
        None,
    );
}

/// Gemini CLI retries a 429 itself while Gemini's `RetryInfo` delay is
/// short (it waited out 75 seconds here), and gives up on a long one,
/// printing the delay as `Suggested retry after Ns.`. git-ralph reads that
/// as the reset: a quota 15 minutes away outlasts `--max-rate-limit-wait
/// 10m`, so the run ends saying so (an unread reset would have been a
/// one-minute back-off, and a pause), with the attempt usage-limited.
#[test]
fn issue_49_gemini_quota_reset_is_read_from_its_suggested_retry() {
    if installed("gemini").is_none() {
        return;
    }
    let repo = TestRepo::with_change(CHANGE, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    let limit = json!({"kind": "limit", "reset_unix": now() + 900,
        "message": "Resource has been exhausted (e.g. check quota)."});
    let output = start_with(
        &repo,
        "gemini",
        CHANGE,
        json!([limit, {"kind": "text", "text": "<promise>COMPLETE</promise>"}]),
        &["--max-rate-limit-wait", "10m"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains("Suggested retry after 8"), "{shown}");
    assert!(
        shown.contains("waiting until it resets would exceed --max-rate-limit-wait (600s)"),
        "{shown}"
    );
    let status = repo.status_json(CHANGE);
    assert_eq!(
        status["stories"][0]["attempts"][0]["outcome"], "rate_limited",
        "{status:#}"
    );
    repo.assert_fsck_clean();
}

/// A run killed with SIGKILL while it waits out a usage limit resumes into
/// the same wait, to the same second, and then finishes the story.
#[test]
fn issue_49_a_kill_during_a_usage_limit_wait_resumes_into_the_same_wait() {
    use crate::harness::story_run::{Background, CHANGE as GREET};
    use crate::harness::{script, wait_until};
    use nix::sys::signal::Signal;
    use std::time::Duration;
    let repo = TestRepo::with_change(GREET, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    let reset = now() + 20;
    let script_path = script(
        &repo,
        &format!(
            "format claude\n[story=1 attempt=1]\nrate-limit {reset}\n[*]\nwrite hello.txt hello\ntick-story\npromise COMPLETE\n"
        ),
    );
    let mut first = Background::start(&repo, &script_path, &["--max-retries", "0"]);
    let status = || {
        let output = crate::harness::ralph_cmd(&repo, &["status", GREET, "--json"]);
        serde_json::from_slice::<Value>(&output.stdout).unwrap_or(Value::Null)
    };
    let paused = || status()["paused_until"].as_u64();
    wait_until("the run pauses", Duration::from_secs(60), || {
        paused().is_some()
    });
    let until = paused().expect("paused");
    first.signal(Signal::SIGKILL);
    wait_until("the killed run is gone", Duration::from_secs(30), || {
        !first.still_running()
    });
    let resumed = Background::start(&repo, &script_path, &["--max-retries", "0"]);
    wait_until("the resumed run waits", Duration::from_secs(60), || {
        status()["alive"] == true
    });
    assert_eq!(paused(), Some(until), "the same wait");
    let finished = resumed.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    let status = repo.status_json(GREET);
    assert_eq!(status["reason"], "completed", "{status:#}");
    let attempts = &status["stories"][0]["attempts"];
    assert_eq!(attempts[0]["outcome"], "rate_limited", "{status:#}");
    assert!(now() >= until, "the wait was kept");
    repo.assert_fsck_clean();
}
