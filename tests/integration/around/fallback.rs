//! Issue 27: fallback agents. When the agent hits a usage limit that
//! resets later than `--max-rate-limit-wait` allows, the same story goes to
//! the next `--fallback-agent` with the same prompt, and the primary agent
//! is tried again at the next story. Every attempt records which agent ran
//! it; status, log and the checkpoint's trailers show it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::harness::story_run::*;
use crate::harness::*;

/// A usage-limit reset three hours from now: past a one-hour wait.
fn reset_in_three_hours() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3 * 3600
}

/// Puts a stand-in for the `program` preset first on PATH: the fake agent,
/// following `script_text` (its own script and call counter). Returns the
/// PATH to run with and the script.
fn stand_in(repo: &TestRepo, program: &str, script_text: &str) -> (String, PathBuf) {
    let bin = repo.dir.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let script_path = script(repo, script_text);
    let wrapper = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{program} 9.9.9 (stand-in)'; exit 0; fi\n\
         FAKE_AGENT_SCRIPT={} exec {}\n",
        shell_quote(&script_path.to_string_lossy()),
        shell_quote(fake_agent_path())
    );
    let path = bin.join(program);
    fs::write(&path, wrapper).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    let outer = std::env::var("PATH").unwrap_or_default();
    (format!("{}:{outer}", bin.display()), script_path)
}

fn start_with(repo: &TestRepo, primary: &Path, path: &str, extra: &[&str]) -> std::process::Output {
    let mut cmd: Command = start_command(repo, primary, &["--on-finish", "keep"]);
    cmd.env("PATH", path).args(extra);
    run(&mut cmd)
}

/// A coder-and-reviewer run with `primary` as the run's agent, the
/// reviewer's own agent `reviewer`, and codex to fall back to.
fn coder_and_reviewer(
    repo: &TestRepo,
    primary: &Path,
    path: &str,
    reviewer: &str,
) -> std::process::Output {
    start_with(
        repo,
        primary,
        path,
        &[
            "--roles",
            "coder,reviewer",
            "--role-agent-command",
            &format!("reviewer={reviewer}"),
            "--fallback-agent",
            "codex",
            "--max-rate-limit-wait",
            "1h",
        ],
    )
}

fn agents_of(status: &Value, story: usize) -> Vec<String> {
    status["stories"][story]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap_or("<none>").to_owned())
        .collect()
}

fn trailer(repo: &TestRepo, rev: &str, key: &str) -> String {
    repo.git(&[
        "log",
        "-1",
        &format!("--format=%(trailers:key={key},valueonly)"),
        rev,
    ])
    .trim()
    .to_owned()
}

#[test]
fn issue_27_a_usage_limited_agent_hands_the_story_to_the_fallback_and_the_next_story_goes_back() {
    let repo = project(TWO_STORIES);
    let primary = script(
        &repo,
        &format!(
            "format claude\n[story=1]\nrate-limit {}\n{}",
            reset_in_three_hours(),
            story_done("2")
        ),
    );
    let (path, fallback) = stand_in(
        &repo,
        "codex",
        &format!("format codex\n{}", story_done("1")),
    );
    let output = start_with(
        &repo,
        &primary,
        &path,
        &["--fallback-agent", "codex", "--max-rate-limit-wait", "1h"],
    );
    assert_exit(&output, 0);
    assert_eq!(script_calls(&primary), 2, "story 1 once, story 2 once");
    assert_eq!(script_calls(&fallback), 1, "story 1 once");
    assert_eq!(
        agent_runs(&repo),
        [
            ("1".into(), "1".into()),
            ("1".into(), "2".into()),
            ("2".into(), "1".into())
        ]
    );

    let status = status_json(&repo);
    let primary_name = status["agent"].as_str().unwrap().to_owned();
    assert_eq!(
        agents_of(&status, 0),
        [primary_name.clone(), "codex".into()]
    );
    assert_eq!(agents_of(&status, 1), std::slice::from_ref(&primary_name));
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts[0].0, "rate_limited");
    assert_eq!(attempts[1].0, "complete");
    assert!(state(&repo)["paused_until"].is_null(), "nobody waited");

    let events = events(&repo);
    let handed = of_type(&events, "agent_fallback");
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!(handed[0]["story_id"], "1");
    assert_eq!(handed[0]["to"], "codex");
    assert!(stdout(&output).contains("codex"), "{}", describe(&output));
    assert!(of_type(&events, "paused").is_empty(), "nobody waited");

    let first = recorded_prompt(&repo, "1", 1).replace("attempt 1", "attempt N");
    let second = recorded_prompt(&repo, "1", 2).replace("attempt 2", "attempt N");
    assert_eq!(first, second, "the fallback gets the same prompt");

    let story_1 = repo.rev_parse("ralph/greet~1");
    assert!(trailer(&repo, &story_1, "Ralph-Agent").starts_with("codex"));
    assert!(
        trailer(&repo, &story_1, "Ralph-Fallback")
            == format!("codex, for {primary_name} (usage limit)"),
        "{}",
        repo.git(&["log", "-1", &story_1])
    );
    assert!(!trailer(&repo, "ralph/greet", "Ralph-Agent").starts_with("codex"));
    assert_eq!(trailer(&repo, "ralph/greet", "Ralph-Fallback"), "");

    let log = run(ralph(&repo).args(["log", CHANGE]));
    assert_exit(&log, 0);
    assert!(stdout(&log).contains("codex"), "{}", describe(&log));
    let human = run(ralph(&repo).args(["status", CHANGE]));
    assert!(stdout(&human).contains("codex"), "{}", describe(&human));
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

#[test]
fn issue_27_when_every_fallback_is_limited_too_the_run_stops_for_the_limit() {
    let repo = project(TWO_STORIES);
    let reset = reset_in_three_hours();
    let primary = script(&repo, &format!("format claude\n[*]\nrate-limit {reset}\n"));
    // Codex names no reset: waiting even its first backoff is too long.
    let (path, fallback) = stand_in(&repo, "codex", "format codex\n[*]\nrate-limit\n");
    let output = start_with(
        &repo,
        &primary,
        &path,
        &["--fallback-agent", "codex", "--max-rate-limit-wait", "0"],
    );
    assert_exit(&output, 1);
    assert_eq!((script_calls(&primary), script_calls(&fallback)), (1, 1));
    assert!(
        stdout(&output).contains("--max-rate-limit-wait"),
        "{}",
        describe(&output)
    );
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(
        attempts
            .iter()
            .all(|(outcome, _)| outcome == "rate_limited")
    );
}

#[test]
fn issue_27_fallback_agents_come_from_git_config_and_must_be_presets() {
    let repo = project(TWO_STORIES);
    let primary = script(&repo, &stories_done(&["1", "2"]));
    let (path, _) = stand_in(&repo, "codex", "format codex\n");
    repo.git(&["config", "ralph.fallbackAgents", "codex"]);
    let output = start_with(&repo, &primary, &path, &[]);
    assert_exit(&output, 0);
    assert_eq!(
        state(&repo)["settings"]["fallback_agents"],
        serde_json::json!(["codex"])
    );

    let other = project(TWO_STORIES);
    let primary = script(&other, &stories_done(&["1", "2"]));
    let (path, _) = stand_in(&other, "codex", "format codex\n");
    let output = start_with(
        &other,
        &primary,
        &path,
        &["--fallback-agent", "amp-not-here"],
    );
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("amp-not-here"),
        "{}",
        describe(&output)
    );
    assert!(
        !other.run_dir(CHANGE).exists(),
        "a refused start leaves no trace"
    );
    other.git(&["config", "ralph.fallbackAgents", "codex,nonesuch"]);
    let output = start_with(&other, &primary, &path, &[]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("ralph.fallbackAgents"),
        "{}",
        describe(&output)
    );
}

/// (role, outcome, agent) of every attempt of story 1.
fn pipeline(repo: &TestRepo) -> Vec<(String, String, String)> {
    status_json(repo)["stories"][0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["role"].as_str().unwrap_or("none").to_owned(),
                a["outcome"].as_str().unwrap_or_default().to_owned(),
                a["agent"].as_str().unwrap_or("<none>").to_owned(),
            )
        })
        .collect()
}

#[test]
fn issue_27_in_a_role_pipeline_the_fallback_stands_in_for_the_runs_agent_only() {
    const ONE_STORY: &str = "# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create story-1.txt\n";
    let coder_work = "write story-1.txt hello\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n";
    let reviewer_says = |text: &str, repo: &TestRepo| {
        let path = script(repo, text);
        format!(
            "FAKE_AGENT_SCRIPT={} {}",
            shell_quote(&path.to_string_lossy()),
            shell_quote(fake_agent_path())
        )
    };
    let reset = reset_in_three_hours();

    // The coder runs the run's agent: limited, it falls back to codex.
    let repo = project(ONE_STORY);
    let primary = script(&repo, &format!("format claude\n[*]\nrate-limit {reset}\n"));
    let (path, fallback) = stand_in(&repo, "codex", &format!("format codex\n[*]\n{coder_work}"));
    let reviewer = reviewer_says("[*]\npromise REVIEW_PASSED\n", &repo);
    let output = coder_and_reviewer(&repo, &primary, &path, &reviewer);
    assert_exit(&output, 0);
    let steps = pipeline(&repo);
    let shape: Vec<(&str, &str)> = steps
        .iter()
        .map(|(r, o, _)| (r.as_str(), o.as_str()))
        .collect();
    assert_eq!(
        shape,
        [
            ("coder", "rate_limited"),
            ("coder", "passed"),
            ("reviewer", "complete")
        ]
    );
    assert_eq!(steps[1].2, "codex");
    assert_eq!(steps[2].2, reviewer, "the reviewer keeps its own agent");
    assert_eq!(script_calls(&fallback), 1);
    let trailers = repo.git(&["log", "-1", "--format=%(trailers)", BRANCH]);
    assert!(
        trailers.contains("Ralph-Fallback: codex, for "),
        "{trailers}"
    );

    // A role with an agent of its own does not fall back: its limit ends
    // the run as without fallbacks.
    let repo = project(ONE_STORY);
    let primary = script(&repo, &format!("[*]\n{coder_work}"));
    let (path, fallback) = stand_in(&repo, "codex", "format codex\n[*]\npromise REVIEW_PASSED\n");
    let reviewer = reviewer_says(&format!("format claude\n[*]\nrate-limit {reset}\n"), &repo);
    let output = coder_and_reviewer(&repo, &primary, &path, &reviewer);
    assert_exit(&output, 1);
    assert_eq!(
        script_calls(&fallback),
        0,
        "codex never stood in for the reviewer"
    );
    assert!(
        stdout(&output).contains("--max-rate-limit-wait"),
        "{}",
        describe(&output)
    );
}

#[test]
fn issue_27_dry_run_names_the_fallbacks_the_idle_limit_the_hooks_and_who_is_told() {
    let repo = project(TWO_STORIES);
    repo.write(
        "ralph.toml",
        "[hooks.on_story_done]\ncommand = \"./deploy.sh\"\non_error = \"stop\"\n\n\
         [notify]\nwebhook = \"http://127.0.0.1:9/secret/path\"\n",
    );
    repo.commit_all("Add the contract");
    let primary = script(&repo, "");
    let (path, _) = stand_in(&repo, "codex", "");
    let output = start_with(
        &repo,
        &primary,
        &path,
        &[
            "--dry-run",
            "--fallback-agent",
            "codex",
            "--idle-timeout",
            "20m",
            "--notify",
        ],
    );
    assert_exit(&output, 0);
    let shown = stdout(&output);
    for words in [
        "the story goes to codex",
        "prints nothing for 20m",
        "hook on_story_done: ./deploy.sh (a failure stops the run)",
        "when the run ends: a desktop notification and the bell, the webhook http://127.0.0.1:9/…",
    ] {
        assert!(shown.contains(words), "{words:?} in:\n{shown}");
    }
}
