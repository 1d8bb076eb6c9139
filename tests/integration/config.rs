//! git-ralph's settings through git config, seen from outside: the real
//! binary, a scripted agent, and what the run did. A flag beats the
//! repository's config, which beats the global config, which beats the system
//! config, which beats the default; a malformed value stops `start` with an
//! error naming the key before anything is touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::story_run::TWO_STORIES;
use crate::harness::*;

const CHANGE: &str = "add-greeting";

/// A repository with a two-story OpenSpec change, committed.
fn repo_with_change() -> TestRepo {
    TestRepo::with_change(CHANGE, TWO_STORIES)
}

/// An agent that finishes every story at its first attempt.
const SUCCEEDS: &str = "[*]\ntick-story\npromise COMPLETE\n";
/// An agent that never says it is done.
const NEVER_DONE: &str = "[*]\nsay I could not do it\n";

/// A system config file, used instead of the machine's.
fn system_config(repo: &TestRepo) -> PathBuf {
    repo.dir.path().join("system-gitconfig")
}

fn set_config(file: &Path, key: &str, value: &str) {
    let dir = file.parent().expect("a config file in a directory");
    git_in(
        dir,
        &["config", "--file", &file.to_string_lossy(), key, value],
    );
}

/// `git ralph start CHANGE` with the scripted agent and the system config
/// file in play; `args` come after the change.
fn start(repo: &TestRepo, agent_script: &str, args: &[&str]) -> Output {
    let script_path = script(repo, agent_script);
    let mut cmd = ralph_with_fake(repo, &script_path);
    with_system_config(repo, &mut cmd);
    cmd.args(["start", CHANGE]).args(args);
    run(&mut cmd)
}

/// [`start`] with the fake agent and `--on-finish keep`, then `args`.
fn start_keep(repo: &TestRepo, agent_script: &str, args: &[&str]) -> Output {
    let mut all = vec!["--agent-command", fake_agent_path(), "--on-finish", "keep"];
    all.extend_from_slice(args);
    start(repo, agent_script, &all)
}

fn with_system_config(repo: &TestRepo, cmd: &mut Command) {
    let system = system_config(repo);
    if system.exists() {
        cmd.env_remove("GIT_CONFIG_NOSYSTEM")
            .env("GIT_CONFIG_SYSTEM", system);
    }
}

fn status_json(repo: &TestRepo) -> serde_json::Value {
    repo.status_json(CHANGE)
}

/// The settings the run recorded in `.git/ralph/<change>/state.json`.
fn recorded_settings(repo: &TestRepo) -> serde_json::Value {
    repo.run_state(CHANGE)["settings"].clone()
}

/// How many attempts a never-finishing agent gets before the run gives up:
/// `maxRetries + 1`. (Its attempts change nothing, so the no-progress stop is
/// turned off to let the retries run out.)
fn attempts_until_max_retries(repo: &TestRepo, args: &[&str]) -> u64 {
    let mut all = vec!["--no-progress-limit", "0"];
    all.extend_from_slice(args);
    let output = start_keep(repo, NEVER_DONE, &all);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let status = status_json(repo);
    assert_eq!(status["reason"], "max_retries", "{status}");
    status["totals"]["attempts"]
        .as_u64()
        .unwrap_or_else(|| panic!("no totals.attempts in {status}"))
}

#[test]
fn max_retries_comes_from_the_flag_then_local_global_system_config_then_the_default() {
    // Default: three retries.
    let repo = repo_with_change();
    assert_eq!(attempts_until_max_retries(&repo, &[]), 4);

    // System config.
    let repo = repo_with_change();
    set_config(&system_config(&repo), "ralph.maxRetries", "2");
    assert_eq!(attempts_until_max_retries(&repo, &[]), 3);

    // Global beats system.
    let repo = repo_with_change();
    set_config(&system_config(&repo), "ralph.maxRetries", "2");
    set_config(&repo.global_config(), "ralph.maxRetries", "1");
    assert_eq!(attempts_until_max_retries(&repo, &[]), 2);

    // Local beats global and system.
    let repo = repo_with_change();
    set_config(&system_config(&repo), "ralph.maxRetries", "2");
    set_config(&repo.global_config(), "ralph.maxRetries", "1");
    repo.git(&["config", "ralph.maxRetries", "0"]);
    assert_eq!(attempts_until_max_retries(&repo, &[]), 1);

    // The flag beats them all.
    let repo = repo_with_change();
    set_config(&system_config(&repo), "ralph.maxRetries", "2");
    set_config(&repo.global_config(), "ralph.maxRetries", "1");
    repo.git(&["config", "ralph.maxRetries", "0"]);
    assert_eq!(
        attempts_until_max_retries(&repo, &["--max-retries", "2"]),
        3
    );
}

#[test]
fn timeouts_come_from_config_unless_a_flag_is_given() {
    let repo = repo_with_change();
    set_config(&system_config(&repo), "ralph.commandTimeout", "11");
    set_config(&repo.global_config(), "ralph.commandTimeout", "12");
    set_config(&repo.global_config(), "ralph.agentTimeout", "600");
    repo.git(&["config", "ralph.agentTimeout", "700"]);
    let output = start_keep(&repo, SUCCEEDS, &[]);
    assert!(output.status.success(), "{}", describe(&output));
    let settings = recorded_settings(&repo);
    assert_eq!(settings["command_timeout_secs"], 12, "{settings}");
    assert_eq!(settings["agent_timeout_secs"], 700, "{settings}");

    let repo = repo_with_change();
    repo.git(&["config", "ralph.commandTimeout", "12"]);
    repo.git(&["config", "ralph.agentTimeout", "700"]);
    let output = start_keep(
        &repo,
        SUCCEEDS,
        &["--command-timeout", "13", "--agent-timeout", "800"],
    );
    assert!(output.status.success(), "{}", describe(&output));
    let settings = recorded_settings(&repo);
    assert_eq!(settings["command_timeout_secs"], 13, "{settings}");
    assert_eq!(settings["agent_timeout_secs"], 800, "{settings}");

    let repo = repo_with_change();
    let output = start_keep(&repo, SUCCEEDS, &[]);
    assert!(output.status.success(), "{}", describe(&output));
    let settings = recorded_settings(&repo);
    assert_eq!(
        settings["command_timeout_secs"],
        git_ralph::settings::DEFAULT_COMMAND_TIMEOUT,
        "{settings}"
    );
    assert_eq!(
        settings["agent_timeout_secs"],
        git_ralph::settings::DEFAULT_AGENT_TIMEOUT,
        "{settings}"
    );
}

#[test]
fn an_agent_timeout_from_config_stops_a_slow_agent() {
    let repo = repo_with_change();
    repo.git(&["config", "ralph.agentTimeout", "1"]);
    repo.git(&["config", "ralph.maxRetries", "0"]);
    let output = start_keep(&repo, "[*]\nsleep 20\ntick-story\npromise COMPLETE\n", &[]);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let status = status_json(&repo);
    assert_eq!(
        status["stories"][0]["attempts"][0]["outcome"], "timed_out",
        "{status}"
    );
}

#[test]
fn on_finish_comes_from_config_unless_a_flag_is_given() {
    let agent = ["--agent-command", fake_agent_path()];
    let on_branch = Some(format!("refs/heads/ralph/{CHANGE}"));
    let on_main = Some("refs/heads/main".to_owned());

    // Local cleanup beats global keep: back on main, work uncommitted.
    let repo = repo_with_change();
    set_config(&repo.global_config(), "ralph.onFinish", "keep");
    repo.git(&["config", "ralph.onFinish", "cleanup"]);
    let output = start(&repo, SUCCEEDS, &agent);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(repo.head_symbolic(), on_main);
    assert!(!repo.git_ok(&[
        "rev-parse",
        "--verify",
        "-q",
        &format!("refs/heads/ralph/{CHANGE}")
    ]));
    assert!(
        repo.status_porcelain().contains("tasks.md"),
        "cleanup left no uncommitted work:\n{}",
        repo.status_porcelain()
    );

    // Global keep, nothing local: stays on the branch.
    let repo = repo_with_change();
    set_config(&repo.global_config(), "ralph.onFinish", "keep");
    let output = start(&repo, SUCCEEDS, &agent);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(repo.head_symbolic(), on_branch);

    // The flag beats the config.
    let repo = repo_with_change();
    repo.git(&["config", "ralph.onFinish", "cleanup"]);
    let mut args = agent.to_vec();
    args.extend(["--on-finish", "keep"]);
    let output = start(&repo, SUCCEEDS, &args);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(repo.head_symbolic(), on_branch);

    // Default: ask, and without a terminal keep and say how to finish.
    let repo = repo_with_change();
    let output = start(&repo, SUCCEEDS, &agent);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(repo.head_symbolic(), on_branch);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("git ralph finish {CHANGE} --cleanup")),
        "{stderr}"
    );
}

#[test]
fn agent_command_comes_from_config_unless_a_flag_is_given() {
    // From config alone.
    let repo = repo_with_change();
    repo.git(&["config", "ralph.agentCommand", fake_agent_path()]);
    let script_path = script(&repo, SUCCEEDS);
    let output =
        run(ralph_with_fake(&repo, &script_path).args(["start", CHANGE, "--on-finish", "keep"]));
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(script_calls(&script_path), 2, "one attempt per story");
    assert_eq!(status_json(&repo)["agent"], fake_agent_path());

    // --agent-command beats a global ralph.agentCommand that would fail.
    let repo = repo_with_change();
    set_config(
        &repo.global_config(),
        "ralph.agentCommand",
        "/nonexistent/agent",
    );
    let output = start_keep(&repo, SUCCEEDS, &[]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(status_json(&repo)["agent"], fake_agent_path());

    // --agent beats ralph.agentCommand: the preset is used (and is unknown).
    let repo = repo_with_change();
    repo.git(&["config", "ralph.agentCommand", fake_agent_path()]);
    let output = start(&repo, SUCCEEDS, &["--agent", "no-such-preset"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("no-such-preset"),
        "{}",
        describe(&output)
    );
}

#[test]
fn ralph_agent_from_config_picks_the_preset() {
    let repo = repo_with_change();
    repo.git(&["config", "ralph.agent", "no-such-preset"]);
    let before = repo.git(&["for-each-ref"]);
    let output = start(&repo, SUCCEEDS, &["--on-finish", "keep"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("no-such-preset"), "{stderr}");
    assert_eq!(repo.git(&["for-each-ref"]), before, "refs changed");
}

#[test]
fn a_malformed_value_is_an_error_naming_the_key_and_touches_nothing() {
    for (key, value) in [
        ("ralph.maxRetries", "abc"),
        ("ralph.maxRetries", "-1"),
        ("ralph.commandTimeout", "soon"),
        ("ralph.agentTimeout", "1h"),
        ("ralph.onFinish", "sometimes"),
    ] {
        for layer in ["local", "global", "system"] {
            let repo = repo_with_change();
            repo.write("notes.txt", "uncommitted work\n");
            match layer {
                "local" => {
                    repo.git(&["config", key, value]);
                }
                "global" => set_config(&repo.global_config(), key, value),
                _ => set_config(&system_config(&repo), key, value),
            }
            let before = Untouched::take(&repo);
            let script_path = script(&repo, SUCCEEDS);
            let mut cmd = ralph_with_fake(&repo, &script_path);
            with_system_config(&repo, &mut cmd);
            let output = run(cmd.args(["start", CHANGE, "--agent-command", fake_agent_path()]));
            let what = format!("{key}={value} in {layer} config");
            assert_eq!(
                output.status.code(),
                Some(1),
                "{what}: {}",
                describe(&output)
            );
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first = stderr.lines().next().unwrap_or_default();
            assert!(
                first.starts_with("error: ") && first.contains(key) && first.contains(value),
                "{what}: the error does not name the key and value: {stderr}"
            );
            assert!(
                stderr.lines().any(|line| line.starts_with("hint: ")),
                "{what}: no hint: {stderr}"
            );
            assert!(output.stdout.is_empty(), "{what}: printed on stdout");
            assert_eq!(script_calls(&script_path), 0, "{what}: the agent ran");
            before.assert_still(&repo, &what);
        }
    }
}

#[test]
fn a_flag_overrides_a_malformed_config_value() {
    let repo = repo_with_change();
    repo.git(&["config", "ralph.maxRetries", "abc"]);
    let output = start_keep(&repo, SUCCEEDS, &["--max-retries", "1"]);
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(recorded_settings(&repo)["max_retries"], 1);
}
