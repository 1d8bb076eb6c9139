//! Issue 27: lifecycle hooks. Each event of `[hooks]` in ralph.toml (or
//! `ralph.hook.<event>` in git config) runs its shell commands in order,
//! the event as JSON on stdin and `RALPH_*` in the environment; a failing
//! hook is reported and the run goes on, unless it says
//! `on_error = "stop"`: then the run stops cleanly, resumable. Hooks are
//! the user's: they are fixed when the run starts, like the rest of the
//! contract.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::harness::story_run::*;
use crate::harness::*;

/// A hook command that appends one line per call to `log`:
/// `hook|change|story|attempt|outcome|<the JSON line it was given>`.
fn recorder(log: &Path) -> String {
    let log = shell_quote(&log.to_string_lossy());
    format!(
        "printf '%s|%s|%s|%s|%s|' \"$RALPH_HOOK\" \"$RALPH_CHANGE\" \"$RALPH_STORY\" \"$RALPH_ATTEMPT\" \"$RALPH_OUTCOME\" >> {log}; cat >> {log}"
    )
}

/// A TOML string holding `text`.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `ralph.toml` committed beside the change.
fn commit_contract(repo: &TestRepo, contract: &str) {
    repo.write("ralph.toml", contract);
    repo.commit_all("Add the contract");
}

/// Where a test's hooks write: beside the worktree, not in it.
fn outside(repo: &TestRepo, name: &str) -> std::path::PathBuf {
    repo.dir.path().join(name)
}

/// The recorded calls: the fields before the JSON, and the JSON.
fn calls(log: &Path) -> Vec<(String, Value)> {
    let text = fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let mut fields = line.splitn(6, '|');
            let head: Vec<&str> = fields.by_ref().take(5).collect();
            let json = fields.next().unwrap_or_default();
            let value = serde_json::from_str(json)
                .unwrap_or_else(|err| panic!("a hook got no JSON ({err}): {line}"));
            (head.join("|"), value)
        })
        .collect()
}

#[test]
fn issue_27_hooks_receive_the_events_in_order_and_a_failing_hook_is_reported() {
    let repo = project(TWO_STORIES);
    let log = outside(&repo, "hooks.log");
    let record = toml_string(&recorder(&log));
    commit_contract(
        &repo,
        &format!(
            "[hooks]\n\
         on_run_start = {record}\n\
         on_story_start = {record}\n\
         on_story_done = {record}\n\
         on_attempt_failed = [{record}, \"echo the pager is down >&2; exit 3\"]\n\
         on_run_end = {record}\n"
        ),
    );
    let agent = second_try(&repo, "promise FAILED: not yet\n");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    let calls = calls(&log);
    let heads: Vec<&str> = calls.iter().map(|(head, _)| head.as_str()).collect();
    assert_eq!(
        heads,
        [
            "on_run_start|greet|||started",
            "on_story_start|greet|1|1|running",
            "on_attempt_failed|greet|1|1|failed",
            "on_story_start|greet|1|2|running",
            "on_story_done|greet|1|2|complete",
            "on_story_start|greet|2|1|running",
            "on_story_done|greet|2|1|complete",
            "on_run_end|greet|||completed",
        ]
    );
    let kinds: Vec<&str> = calls
        .iter()
        .map(|(_, json)| json["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "story_progress",
            "attempt_finished",
            "story_progress",
            "attempt_finished",
            "story_progress",
            "attempt_finished",
            "complete",
        ],
        "each hook gets its event as events.jsonl has it"
    );
    assert_eq!(calls[2].1["hook"], "on_attempt_failed");
    assert_eq!(calls[2].1["reason"], "not yet");
    assert_eq!(calls[2].1["change"], "greet");

    let warnings: Vec<String> = of_type(&events(&repo), "warning")
        .iter()
        .map(|event| event["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    for words in [
        "on_attempt_failed",
        "exited with code 3",
        "the pager is down",
        "goes on",
    ] {
        assert!(warnings[0].contains(words), "{words:?} in {warnings:?}");
    }
    assert!(
        stdout(&output).contains("the pager is down"),
        "the failure is shown: {}",
        describe(&output)
    );
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

#[test]
fn issue_27_a_hook_with_on_error_stop_stops_the_run_cleanly_and_it_resumes() {
    let repo = project(TWO_STORIES);
    let once = outside(&repo, "failed-once");
    commit_contract(
        &repo,
        &format!(
            "[hooks.on_story_done]\ncommand = {}\non_error = \"stop\"\n",
            toml_string(&format!(
                "test -e {0} || {{ touch {0}; echo not deployed >&2; exit 1; }}",
                shell_quote(&once.to_string_lossy())
            ))
        ),
    );
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 130);
    assert_eq!(
        agent_runs(&repo),
        [("1".into(), "1".into())],
        "story 2 waits"
    );
    let state = state(&repo);
    assert_eq!(state["status"], "stopped");
    assert_eq!(state["reason"], "stopped");
    let last = events(&repo).last().cloned().unwrap();
    assert_eq!(last["type"], "error");
    let message = last["message"].as_str().unwrap_or_default();
    assert!(message.contains("on_story_done"), "{message}");
    assert!(message.contains("not deployed"), "{message}");
    assert!(
        stderr(&output).contains("git ralph start greet"),
        "{}",
        describe(&output)
    );
    assert_eq!(repo.status_porcelain(), "", "the worktree is clean");
    assert_eq!(
        subjects(&repo, "main..ralph/greet")[0],
        "ralph(greet): story 1 Greeting",
        "story 1 is kept"
    );

    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    repo.assert_fsck_clean();
}

#[test]
fn issue_27_a_stopping_hook_at_story_start_keeps_the_agent_from_starting() {
    let repo = project(TWO_STORIES);
    commit_contract(
        &repo,
        "[hooks]\non_story_start = { command = \"echo no budget today >&2; exit 2\", on_error = \"stop\" }\n",
    );
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 130);
    assert_eq!(script_calls(&agent), 0, "no agent ran");
    let state = state(&repo);
    assert_eq!(state["status"], "stopped");
    assert_eq!(attempts_of(&state, "1"), [], "no attempt is counted");
    assert_eq!(state["totals"]["attempts"], 0);
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_27_hooks_come_from_git_config_too_and_an_agent_cannot_add_one() {
    let repo = project(TWO_STORIES);
    let log = outside(&repo, "hooks.log");
    let pwned = outside(&repo, "pwned");
    commit_contract(&repo, "promise = \"COMPLETE\"\n\n[hooks]\n");
    repo.git(&["config", "ralph.hook.onRunEnd", &recorder(&log)]);
    // The first attempt gives itself a hook; the attempt is refused for
    // editing the contract, and its hook never runs.
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nappend ralph.toml on_attempt_failed = \"touch {}\"\\n\n{}\
             [story=1 attempt=2]\n{}{}",
            pwned.display(),
            finish_story("1"),
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert!(attempts[0].1.contains("contract file"), "{attempts:?}");
    assert!(!pwned.exists(), "a hook the agent wrote ran");
    let heads: Vec<String> = calls(&log).into_iter().map(|(head, _)| head).collect();
    assert_eq!(heads, ["on_run_end|greet|||completed"]);
}

#[test]
fn issue_27_a_hook_runs_under_the_command_timeout_or_its_own() {
    let repo = project(TWO_STORIES);
    let log = outside(&repo, "hooks.log");
    commit_contract(
        &repo,
        &format!(
            "[hooks]\n\
             on_run_start = \"sleep 30\"\n\
             on_run_end = [{{ command = \"sleep 30\", timeout = 1 }}, {}]\n",
            toml_string(&recorder(&log))
        ),
    );
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let started = std::time::Instant::now();
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--command-timeout", "1"],
    );
    let elapsed = started.elapsed();
    assert_exit(&output, 0);
    assert!(
        elapsed < std::time::Duration::from_secs(20),
        "a hung hook held the run ({elapsed:?})"
    );
    let warnings: Vec<String> = of_type(&events(&repo), "warning")
        .iter()
        .map(|event| event["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("on_run_start"), "{warnings:?}");
    assert!(warnings[1].contains("on_run_end"), "{warnings:?}");
    assert!(
        warnings.iter().all(|w| w.contains("timed out")),
        "{warnings:?}"
    );
    let heads: Vec<String> = calls(&log).into_iter().map(|(head, _)| head).collect();
    assert_eq!(
        heads,
        ["on_run_end|greet|||completed"],
        "the next hook runs after one that timed out"
    );
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

#[test]
fn issue_38_on_question_gets_the_question_in_its_json() {
    let repo = project(TWO_STORIES);
    let log = outside(&repo, "hooks.log");
    let record = toml_string(&recorder(&log));
    commit_contract(&repo, &format!("[hooks]\non_question = {record}\n"));
    let agent = script(
        &repo,
        &format!(
            "format claude\n{}[story=2]\nfinal Which farewell do you want?\n",
            story_done("1")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 9);
    let calls = calls(&log);
    let heads: Vec<&str> = calls.iter().map(|(head, _)| head.as_str()).collect();
    assert_eq!(heads, ["on_question|greet|2|1|question"]);
    let json = &calls[0].1;
    assert_eq!(json["hook"], "on_question");
    assert_eq!(json["type"], "question");
    assert_eq!(json["question"], "Which farewell do you want?");
    assert_eq!(json["preserved"], format!("{NS}/attempts/2/1"));
}
