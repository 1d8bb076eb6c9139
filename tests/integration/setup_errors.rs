//! Issue 20, end to end: an agent that cannot work at all (it refuses to
//! run as root, has no API key, is not logged in, is given an option it
//! does not know) is a set-up error, not a failed attempt. The run stops
//! after it, spends no retry, says what to do in the agent's own words,
//! and resumes once the cause is fixed. An agent that worked and then
//! failed is still an ordinary failed attempt. And `agents --verify` says
//! no when it means no.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::harness::story_run::*;
use crate::harness::*;

/// The exit status of a set-up error.
const SETUP: i32 = 8;

const ROOT_REFUSAL: &str =
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons";

/// A first agent run that ends as `first`, then agents that do their
/// story (`[call=1]` is less specific than a story section, so the rest
/// is the catch-all).
fn first_then_fine(first: &str) -> String {
    format!(
        "[call=1]\n{first}\n[*]\nappend work.txt one more story done\\n\ntick-story\npromise COMPLETE\n"
    )
}

fn assert_stopped_without_spending(repo: &TestRepo, output: &std::process::Output) {
    assert_exit(output, SETUP);
    assert_eq!(
        agent_runs(repo).len(),
        1,
        "one agent ran: {}",
        describe(output)
    );
    let state = state(repo);
    assert_eq!(state["status"], "stopped", "{state}");
    assert_eq!(state["reason"], "setup", "{state}");
    assert!(
        attempts_of(&state, "1").is_empty(),
        "no attempt counted: {state}"
    );
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_20_a_root_refusal_stops_at_once_and_resume_works_once_fixed() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &first_then_fine(&format!("format plain\nerror {ROOT_REFUSAL}")),
    );
    // With no retry to spare: a set-up error must not spend one.
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_stopped_without_spending(&repo, &output);
    let err = stderr(&output);
    assert!(err.contains(ROOT_REFUSAL), "the agent's own words: {err}");
    assert!(err.contains("IS_SANDBOX=1"), "what to do: {err}");
    assert!(err.contains("normal user"), "what to do: {err}");
    assert!(err.contains("git ralph start greet"), "how to go on: {err}");

    // Fixed (the next call works): resume completes both stories.
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 0);
    assert_eq!(attempts_of(&state(&repo), "1").len(), 1);
    repo.assert_fsck_clean();
}

#[test]
fn a_set_up_error_is_recorded_with_what_to_do_in_the_commands_words() {
    // The words that name commands are the command layer's; the run's
    // own record of its end (its events, its last failure) tells them
    // just as the terminal does.
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &first_then_fine(&format!("format plain\nerror {ROOT_REFUSAL}")),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_stopped_without_spending(&repo, &output);
    let what_to_do = "'git ralph start greet' resumes the run, 'git ralph abort greet' restores the pre-start state";
    assert!(
        stderr(&output).contains(what_to_do),
        "{}",
        describe(&output)
    );
    let events = events(&repo);
    let ended = of_type(&events, "error");
    let [ended] = ended.as_slice() else {
        panic!("one end in an error: {events:?}");
    };
    let message = ended["message"].as_str().unwrap_or_default();
    assert!(message.contains(ROOT_REFUSAL), "{message}");
    assert!(message.contains(what_to_do), "{message}");
}

#[test]
fn issue_20_after_a_set_up_error_abort_restores_exactly() {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "my own uncommitted notes\n");
    let before_head = repo.rev_parse("HEAD");
    let before_status = repo.status_porcelain();
    let agent = script(
        &repo,
        &first_then_fine(&format!("format plain\nerror {ROOT_REFUSAL}")),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, SETUP);
    assert_success(&ralph_cmd(&repo, &["abort", CHANGE]));
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), before_head);
    assert_eq!(repo.status_porcelain(), before_status);
    assert_eq!(repo.read("notes.txt"), "my own uncommitted notes\n");
}

#[test]
fn issue_20_a_missing_api_key_is_a_set_up_error() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &first_then_fine("format claude\nerror Invalid API key · Please run /login"),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_stopped_without_spending(&repo, &output);
    assert!(
        stderr(&output).contains("Invalid API key"),
        "{}",
        describe(&output)
    );
}

#[test]
fn issue_20_an_unknown_option_is_a_set_up_error() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &first_then_fine("format plain\nerror error: unknown option '--yolo'\nexit 2"),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_stopped_without_spending(&repo, &output);
    assert!(
        stderr(&output).contains("unknown option '--yolo'"),
        "{}",
        describe(&output)
    );
}

#[test]
fn issue_20_an_error_before_any_model_turn_is_a_set_up_error() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &first_then_fine("format plain\nerror could not open the session store"),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_stopped_without_spending(&repo, &output);
    assert!(
        stderr(&output).contains("could not open the session store"),
        "{}",
        describe(&output)
    );
}

#[test]
fn issue_20_an_agent_that_worked_and_then_failed_is_an_ordinary_failed_attempt() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &first_then_fine(
            "format claude\nsay Let me look at the code.\ntool ls\nwrite half.txt half\nerror Overloaded",
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_ne!(attempts[0].0, "complete");
    assert_eq!(attempts[1].0, "complete");
    assert!(has_ref(&repo, &format!("{NS}/attempts/1/1")));
}

/// A directory holding an executable `name` that prints `text` whatever it
/// is asked, to put first on PATH.
fn impostor(repo: &TestRepo, name: &str, text: &str) -> std::path::PathBuf {
    let bin = repo.dir.path().join("impostors");
    fs::create_dir_all(&bin).expect("a bin directory");
    let path = bin.join(name);
    fs::write(&path, format!("#!/bin/sh\necho '{text}'\n")).expect("the impostor");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("executable");
    bin
}

fn path_with(bin: &std::path::Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn issue_20_agents_verify_exits_non_zero_for_a_cli_it_does_not_understand() {
    let repo = TestRepo::new();
    let bin = impostor(&repo, "claude", "this is not what claude prints");
    let output = run(ralph(&repo)
        .env("PATH", path_with(&bin))
        .env("XDG_CACHE_HOME", repo.home().join(".cache"))
        .args(["agents", "--verify", "claude"]));
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(stdout(&output).contains("claude"), "{}", describe(&output));
}

#[test]
fn issue_20_agents_verify_exits_non_zero_for_a_cli_asked_for_but_not_installed() {
    let repo = TestRepo::new();
    let output = run(ralph(&repo)
        .env("PATH", "/usr/bin:/bin")
        .env("XDG_CACHE_HOME", repo.home().join(".cache"))
        .args(["agents", "--verify", "amp"]));
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
}

/// The real Claude Code, run as root without `IS_SANDBOX`, refuses within
/// a second: a set-up error, with no retry spent.
#[test]
fn issue_20_the_real_claude_refusing_root_is_a_set_up_error() {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let installed = git_ralph::process::is_runnable("claude");
    if !root || !installed || std::env::var_os("GIT_RALPH_SKIP_REAL_CLIS").is_some() {
        println!("skipping: needs the real claude, run as root");
        return;
    }
    let repo = project(TWO_STORIES);
    let output = run(ralph(&repo)
        .env_remove("IS_SANDBOX")
        .args(["start", CHANGE, "--agent", "claude", "--on-finish", "keep"])
        .args(["--max-retries", "0", "--plain"]));
    assert_exit(&output, SETUP);
    let err = stderr(&output);
    assert!(err.contains("root"), "{err}");
    assert!(err.contains("IS_SANDBOX=1"), "{err}");
    assert!(attempts_of(&state(&repo), "1").is_empty());
}
