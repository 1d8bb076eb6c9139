//! Issue 11, end to end through the real binary and the fake agent: task
//! files as people write them. A box git-ralph cannot read keeps the run
//! from being called done, `[stories] skip` in ralph.toml takes a section
//! out of the work, and the agent gets the story's whole section.

use std::process::Output;

use crate::harness::{
    TestRepo, fake_agent_path, ralph_with_fake, recorded_calls, recorded_prompt, script,
};

fn project_with(files: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::new();
    for (path, text) in files {
        repo.write(path, text);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add the plan"]);
    repo
}

fn start(repo: &TestRepo, agent_script: &str) -> Output {
    let script_path = script(repo, agent_script);
    ralph_with_fake(repo, &script_path)
        .args(["start", "plan", "--tasks", "PLAN.md"])
        .args([
            "--agent-command",
            fake_agent_path(),
            "--on-finish",
            "keep",
            "--max-retries",
            "0",
        ])
        .env("FAKE_AGENT_TASKS", "PLAN.md")
        .output()
        .expect("git-ralph runs")
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Subjects of the story checkpoints on `ralph/plan`, oldest first.
fn story_commits(repo: &TestRepo) -> Vec<String> {
    repo.git(&["log", "--reverse", "--format=%s", "main..ralph/plan"])
        .lines()
        .filter(|subject| subject.starts_with("ralph(plan): story "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn issue_11_an_unreadable_box_keeps_the_run_from_being_done() {
    // Every box git-ralph can read is ticked; one line it cannot read is not.
    let plan = "# Plan\n\n## 1. Work\n\n- [x] done already\n- [partial] half of it\n";
    let repo = project_with(&[("PLAN.md", plan)]);
    let output = start(&repo, "format codex\n[*]\npromise COMPLETE\n");
    assert_ne!(
        output.status.code(),
        Some(0),
        "the run must not end as done:\n{}",
        describe(&output)
    );
    assert!(story_commits(&repo).is_empty(), "{}", describe(&output));
    assert_eq!(
        recorded_calls(&repo).len(),
        1,
        "the agent was asked to finish it"
    );
    let prompt = recorded_prompt(&repo, "1", 1);
    assert!(
        prompt.contains("line 6: - [partial] half of it"),
        "{prompt}"
    );
    assert_eq!(repo.read("PLAN.md"), plan);
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn issue_11_rewriting_the_unreadable_box_lets_the_story_finish() {
    let plan = "## 1. Work\n- [x] done already\n- [partial] half of it\n";
    let repo = project_with(&[("PLAN.md", plan)]);
    let agent = "\
format codex
[story=1]
write PLAN.md ## 1. Work\\n- [x] done already\\n- [x] half of it\\n
promise COMPLETE
";
    let output = start(&repo, agent);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(story_commits(&repo), ["ralph(plan): story 1 Work"]);
    assert_eq!(
        repo.git(&["show", "ralph/plan:PLAN.md"]),
        "## 1. Work\n- [x] done already\n- [x] half of it\n"
    );
}

#[test]
fn issue_11_stories_skip_in_ralph_toml_takes_a_section_out_of_the_work() {
    let plan = "# Plan\n\n## 1. Build\n- [ ] compile\n\n## Rollout\n- [ ] ship to users\n";
    let repo = project_with(&[
        ("PLAN.md", plan),
        ("ralph.toml", "[stories]\nskip = [\"Rollout\"]\n"),
    ]);
    let agent = "\
format codex
[story=1]
write build.txt built\\n
tick compile
promise COMPLETE
";
    let output = start(&repo, agent);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(story_commits(&repo), ["ralph(plan): story 1 Build"]);
    let on_branch = repo.git(&["show", "ralph/plan:PLAN.md"]);
    assert!(on_branch.contains("- [x] compile"), "{on_branch}");
    assert!(on_branch.contains("- [ ] ship to users"), "{on_branch}");
    let calls = recorded_calls(&repo);
    assert_eq!(calls.len(), 1, "{calls:?}");
}

#[test]
fn issue_11_without_the_skip_the_section_is_work() {
    let plan = "# Plan\n\n## 1. Build\n- [ ] compile\n\n## Rollout\n- [ ] ship to users\n";
    let repo = project_with(&[("PLAN.md", plan)]);
    let agent = "\
format codex
[story=1]
tick compile
promise COMPLETE
";
    let output = start(&repo, agent);
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(story_commits(&repo), ["ralph(plan): story 1 Build"]);
}

#[test]
fn issue_11_the_agent_gets_the_whole_section() {
    let plan = "\
# Plan

## Tasks

### Phase 1: Parser

Why: everything else reads through it.

- [ ] Write the lexer
  - keep comments as tokens
  - report the line of each error

```rust
fn lex(text: &str) -> Vec<Token> { Vec::new() }
```

Acceptance: `lex(\"\")` is empty.

### Phase 2: Docs
- [ ] Describe the grammar
";
    let repo = project_with(&[("PLAN.md", plan)]);
    let output = start(&repo, "format codex\n[*]\nfinal nothing done\n");
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    let prompt = recorded_prompt(&repo, "phase-1", 1);
    for needle in [
        "Why: everything else reads through it.",
        "  - keep comments as tokens",
        "fn lex(text: &str) -> Vec<Token> { Vec::new() }",
        "Acceptance: `lex(\"\")` is empty.",
        "- [ ] Write the lexer (line 9)",
    ] {
        assert!(
            prompt.contains(needle),
            "{needle:?} missing from:\n{prompt}"
        );
    }
    let story_part = prompt.split("## How to work").next().expect("prompt");
    let story_part = story_part
        .split("## Story phase-1")
        .nth(1)
        .expect("story heading");
    assert!(
        !story_part.contains("Describe the grammar"),
        "the next story stays out of this one:\n{story_part}"
    );
}

/// `start --dry-run` shows what would be read and sent, and writes nothing:
/// no branch, no `.git/ralph`, not a byte of the repository changed.
#[test]
fn issue_11_dry_run_previews_the_stories_the_warnings_and_the_first_prompt() {
    let plan = "\u{feff}# Plan\r\n\r\n## Tasks\r\n\r\n### Phase 1: Parser\r\n\r\nRead the grammar first.\r\n\r\n- [x] 1.1 Tokens\r\n- [ ] 1.2 Expressions\r\n  - precedence climbing\r\n\r\n### Phase 2: Printer\r\n\r\n1. [ ] Pretty print\r\n- [?] Decide on colours\r\n\r\n## Success Criteria\r\n\r\n- [ ] Everything works\r\n";
    let repo = project_with(&[("PLAN.md", plan)]);
    let before = crate::harness::disk_snapshot(&repo.root);
    let run = |json: bool| {
        let mut cmd = crate::harness::ralph(&repo);
        cmd.args(["start", "plan", "--tasks", "PLAN.md", "--dry-run"]);
        cmd.args(["--agent-command", "my-agent --fast", "--check", "make test"]);
        cmd.args(["--max-retries", "2", "--max-runtime", "1h30m"]);
        if json {
            cmd.arg("--json");
        }
        cmd.output().expect("git-ralph runs")
    };
    let json = run(true);
    assert_eq!(json.status.code(), Some(0), "{}", describe(&json));
    let preview: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    let stories = preview["stories"].as_array().expect("stories");
    let ids: Vec<&str> = stories.iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, ["phase-1", "phase-2"], "{preview}");
    assert_eq!(stories[0]["tasks"], 2);
    assert_eq!(stories[0]["done"], 1);
    assert!(
        preview["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["line"] == 16)),
        "the unreadable box is named with its line: {preview}"
    );
    let tasks: Vec<(&str, bool)> = stories[0]["task_list"]
        .as_array()
        .expect("the tasks themselves")
        .iter()
        .map(|task| {
            (
                task["text"].as_str().unwrap(),
                task["done"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(tasks, [("1.1 Tokens", true), ("1.2 Expressions", false)]);
    // The agent, the contract and the guardrails, in one glance.
    assert_eq!(
        preview["agent"]["command"],
        "sh -c 'my-agent --fast' < <prompt>"
    );
    let contract = preview["contract"].to_string();
    assert!(
        contract.contains("promise: <promise>COMPLETE</promise>"),
        "{contract}"
    );
    assert!(contract.contains("check: make test"), "{contract}");
    let guardrails = preview["guardrails"].to_string();
    assert!(
        guardrails.contains("attempts per story: 3 (2 retries)"),
        "{guardrails}"
    );
    assert!(guardrails.contains("runtime: 1h30m"), "{guardrails}");
    assert_eq!(preview["resumes"], false);
    let prompt = preview["prompt"].as_str().expect("a first prompt");
    assert!(prompt.contains("Read the grammar first."), "{prompt}");
    assert!(prompt.contains("precedence climbing"), "{prompt}");

    let human = run(false);
    assert_eq!(human.status.code(), Some(0), "{}", describe(&human));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("first prompt:"), "{text}");
    assert!(text.contains("warning: line 16"), "{text}");
    assert!(
        text.contains("agent: sh -c 'my-agent --fast' < <prompt>"),
        "{text}"
    );
    assert!(text.contains("check: make test"), "{text}");

    let diff = crate::harness::snapshot_diff(&before, &crate::harness::disk_snapshot(&repo.root));
    assert!(diff.is_empty(), "a dry run changed {diff:?}");
    assert!(!repo.root.join(".git/ralph").exists());
    assert_eq!(recorded_calls(&repo).len(), 0);
}
