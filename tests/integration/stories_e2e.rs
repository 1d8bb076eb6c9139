//! Issue 11, end to end through the real binary and the fake agent: task
//! files as people write them. A box git-ralph cannot read keeps the run
//! from being called done, `[stories] skip` in ralph.toml takes a section
//! out of the work, and the agent gets the story's whole section.

use std::process::Output;

use crate::harness::story_commits_of;
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
    assert!(
        story_commits_of(&repo, "plan").is_empty(),
        "{}",
        describe(&output)
    );
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
    assert_eq!(
        story_commits_of(&repo, "plan"),
        ["ralph(plan): story 1 Work"]
    );
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
    assert_eq!(
        story_commits_of(&repo, "plan"),
        ["ralph(plan): story 1 Build"]
    );
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
    assert_eq!(
        story_commits_of(&repo, "plan"),
        ["ralph(plan): story 1 Build"]
    );
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

/// `git ralph start ARGS --dry-run --json` in `repo`: its exit code, the
/// preview (when it printed one) and stderr.
fn dry_run_json(repo: &TestRepo, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let output = crate::harness::ralph(repo)
        .arg("start")
        .args(args)
        .args(["--dry-run", "--json"])
        .output()
        .expect("git-ralph runs");
    let preview = serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), preview, stderr)
}

/// (id, title, done, tasks) of each story of a preview.
fn story_rows(preview: &serde_json::Value) -> Vec<(String, String, u64, u64)> {
    preview["stories"]
        .as_array()
        .map(|stories| {
            stories
                .iter()
                .map(|s| {
                    (
                        s["id"].as_str().unwrap_or_default().to_owned(),
                        s["title"].as_str().unwrap_or_default().to_owned(),
                        s["done"].as_u64().unwrap_or_default(),
                        s["tasks"].as_u64().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn row(id: &str, title: &str, done: u64, tasks: u64) -> (String, String, u64, u64) {
    (id.to_owned(), title.to_owned(), done, tasks)
}

/// Issue 21, pattern 1: the group on the first line of an OpenSpec
/// `tasks.md` is the first story, however that line is written.
#[test]
fn issue_21_the_group_on_the_first_line_is_the_first_story() {
    for first_line in ["# 1. Schema", "\u{200b}## 1. Schema"] {
        let repo = TestRepo::new();
        repo.openspec_change(
            "add-shop",
            &format!(
                "{first_line}\n- [x] 1.1 Tables\n- [ ] 1.2 Indexes\n\n## 2. API\n- [ ] 2.1 Routes\n"
            ),
        );
        let (code, preview, stderr) = dry_run_json(&repo, &["add-shop"]);
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(
            story_rows(&preview),
            [row("1", "Schema", 1, 2), row("2", "API", 0, 1)],
            "{first_line:?}: {preview}"
        );
        assert_eq!(preview["stories"][0]["status"], "next");
    }
}

/// Issue 21, pattern 2: a rollback plan is not work.
#[test]
fn issue_21_a_rollback_plan_is_not_a_story() {
    let plan = "# Release 2.0\n\n## 1. Migrate\n- [ ] run the migration\n\n## 2. Deploy\n- [ ] deploy the API\n\n## Rollback Plan\n- [ ] restore the database snapshot\n- [ ] redeploy 1.9\n\n## Risk Mitigation\n- [ ] keep the feature flag off\n";
    let repo = project_with(&[("PLAN.md", plan)]);
    let (code, preview, stderr) = dry_run_json(&repo, &["release", "--tasks", "PLAN.md"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        story_rows(&preview),
        [row("1", "Migrate", 0, 1), row("2", "Deploy", 0, 1)],
        "{preview}"
    );
    let warnings = preview["warnings"].to_string();
    assert!(warnings.contains("Rollback Plan"), "{warnings}");
    assert!(warnings.contains("Risk Mitigation"), "{warnings}");
}

/// Issue 21, pattern 3: stories under "tasks", with status words, word
/// priorities and ids such as "001".
#[test]
fn issue_21_a_prd_with_tasks_and_status_words_is_read() {
    let prd = r#"{
  "project": "Bookings",
  "tasks": [
    {"id": "001", "title": "Calendar model", "status": "completed", "priority": "high"},
    {"id": "002", "title": "Booking form", "status": "pending", "priority": "medium"},
    {"id": "003", "title": "Reminders", "status": "todo", "priority": "low"},
    {"id": "004", "title": "Invoices", "status": "in_progress", "priority": "high"}
  ]
}
"#;
    let repo = project_with(&[("prd.json", prd)]);
    let (code, preview, stderr) = dry_run_json(&repo, &["bookings"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(preview["source"], "prd");
    let statuses: Vec<(&str, &str)> = preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    // The open story with the best priority comes first, and the list is
    // in the order the run takes the stories.
    assert_eq!(
        statuses,
        [
            ("001", "done"),
            ("004", "next"),
            ("002", "open"),
            ("003", "open")
        ],
        "{preview}"
    );
    let prompt = preview["prompt"].as_str().expect("a first prompt");
    assert!(prompt.contains("Invoices"), "{prompt}");
}

/// Issue 21, pattern 4: a checklist whose boxes are all ticked under
/// `## Completed` is refused with what was found, in one sentence.
#[test]
fn issue_21_a_finished_checklist_says_every_task_is_done() {
    let done: String = (1..=40).map(|n| format!("- [x] Task {n}\n")).collect();
    let plan =
        format!("# Fix Plan\n\n## High Priority\n\n## Medium Priority\n\n## Completed\n{done}");
    let repo = project_with(&[("fix_plan.md", &plan)]);
    let (code, _, stderr) = dry_run_json(&repo, &["fixes", "--tasks", "fix_plan.md"]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(
        stderr
            .contains("every one of the 40 tasks is already done, all of them under ## Completed"),
        "{stderr}"
    );
    assert!(!stderr.contains("no checkbox"), "{stderr}");
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("error:")).count(),
        1
    );
    assert_eq!(recorded_calls(&repo).len(), 0);
}
