//! Issue 49: usage limits as the real agent CLIs say them. Each installed
//! CLI is run for real, offline, against the model stand-in answering its
//! first conversation requests with the provider's own 429 or quota error,
//! reset time included, until a reset a few seconds ahead. git-ralph must
//! recognise the CLI's own words for it, wait the reset out without
//! spending a retry (`--max-retries 0`), and finish the story on the next
//! attempt, with the wait in the record.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::harness::{TestRepo, describe};
use crate::real_cli_e2e::{installed, start};

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
fn waits_it_out(name: &str, repo: &TestRepo, output: &std::process::Output, words: &str) {
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
    );
}
