//! The two story sources besides OpenSpec, end to end through the real
//! binary and the fake agent: `--prd prd.json`, where a story is done when
//! the agent sets its `passes` to true, and `--tasks TODO.md`, any markdown
//! checklist, where it is done when its boxes are ticked.

use std::process::Output;

use crate::harness::*;
use serde_json::Value;

const PRD: &str = r#"{
  "project": "greeter",
  "branchName": "ralph/greeter",
  "userStories": [
    {
      "id": "US-002",
      "title": "Say goodbye",
      "description": "Write bye.txt.",
      "acceptanceCriteria": ["bye.txt says bye"],
      "priority": 2,
      "passes": false
    },
    {
      "id": "US-001",
      "title": "Say hello",
      "description": "Write hello.txt.",
      "acceptanceCriteria": ["hello.txt says hello"],
      "priority": 1,
      "passes": false
    }
  ]
}
"#;

const TODO: &str = "\
# TODO

Small chores for the greeter.

## Greeting

- [ ] Create hello.txt
- [ ] Say hello in it

## Farewell

- [ ] Create bye.txt
";

/// The fake agent's first moves on the PRD's first story: hello.txt.
const PRD_HELLO_WRITTEN: &str = "\
format claude
[story=US-001]
write hello.txt hello\\n
";

/// The fake agent's first moves on the checklist's first section:
/// hello.txt, and the box that asks for it.
const CHECKLIST_HELLO_CREATED: &str = "\
format codex
[story=1]
write hello.txt hello\\n
tick Create hello.txt
";

fn project_with(file: &str, text: &str) -> TestRepo {
    TestRepo::with_files(&[(file, text)])
}

/// `git ralph start <change> <args>` with the fake agent, no retries, and
/// `TODO.md` as the fake agent's task file.
fn start(repo: &TestRepo, agent_script: &str, args: &[&str]) -> Output {
    let (change, rest) = args.split_first().expect("a change");
    let mut cmd = fake_start(repo, change, &script(repo, agent_script));
    cmd.args(rest)
        .args(["--max-retries", "0"])
        .env("FAKE_AGENT_TASKS", "TODO.md");
    run(&mut cmd)
}

/// `start greeter --prd prd.json` in a project holding [`PRD`].
fn start_prd(agent_script: &str) -> (TestRepo, Output) {
    let repo = project_with("prd.json", PRD);
    let output = start(&repo, agent_script, &["greeter", "--prd", "prd.json"]);
    (repo, output)
}

/// `start chores --tasks TODO.md` in a project holding [`TODO`].
fn start_checklist(agent_script: &str) -> (TestRepo, Output) {
    let repo = project_with("TODO.md", TODO);
    let output = start(&repo, agent_script, &["chores", "--tasks", "TODO.md"]);
    (repo, output)
}

/// The run exited with `code`, leaving on `ralph/<change>` a checkpoint
/// for each of `stories` ("<id> <title>"), in order, and no other.
fn assert_ended_with(repo: &TestRepo, output: &Output, code: i32, change: &str, stories: &[&str]) {
    assert_exit(output, code);
    let subjects: Vec<String> = stories
        .iter()
        .map(|story| format!("ralph({change}): story {story}"))
        .collect();
    assert_eq!(story_commits_of(repo, change), subjects);
}

#[test]
fn a_prd_run_checkpoints_each_story_once_the_agent_sets_passes() {
    let agent = format!(
        "{PRD_HELLO_WRITTEN}\
set-passes US-001 true
promise COMPLETE
[story=US-002]
write bye.txt bye\\n
set-passes US-002 true
promise COMPLETE
"
    );
    let (repo, output) = start_prd(&agent);
    // Priority decides the order, not the file.
    assert_ended_with(
        &repo,
        &output,
        0,
        "greeter",
        &["US-001 Say hello", "US-002 Say goodbye"],
    );
    let prd: Value = serde_json::from_str(&repo.git(&["show", "ralph/greeter:prd.json"]))
        .expect("prd.json stays JSON");
    for story in prd["userStories"].as_array().expect("stories") {
        assert_eq!(story["passes"], true, "{story}");
    }
    assert_eq!(repo.git(&["show", "ralph/greeter:hello.txt"]), "hello\n");
    assert_eq!(repo.git(&["show", "ralph/greeter:bye.txt"]), "bye\n");

    let prompt = recorded_prompt(&repo, "US-001", 1);
    assert!(prompt.contains("Say hello"), "{prompt}");
    assert!(prompt.contains("hello.txt says hello"), "{prompt}");
    assert!(
        prompt.contains("passes"),
        "the prompt says how to mark it done:\n{prompt}"
    );
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn a_prd_story_promised_but_not_marked_passing_is_not_done() {
    let agent = format!("{PRD_HELLO_WRITTEN}promise COMPLETE\n");
    let (repo, output) = start_prd(&agent);
    assert_ended_with(&repo, &output, 3, "greeter", &[]);
    assert!(repo.git_ok(&[
        "rev-parse",
        "--verify",
        "refs/ralph/greeter/attempts/US-001/1"
    ]));
    assert!(!repo.path("hello.txt").exists(), "the attempt was reverted");
    let prd: Value = serde_json::from_str(&repo.read("prd.json")).expect("prd.json");
    assert_eq!(prd["userStories"][1]["passes"], false);
}

#[test]
fn a_markdown_checklist_run_checkpoints_each_section_once_its_boxes_are_ticked() {
    let agent = format!(
        "{CHECKLIST_HELLO_CREATED}\
tick Say hello
promise COMPLETE
[story=2]
write bye.txt bye\\n
tick Create bye.txt
promise COMPLETE
"
    );
    let (repo, output) = start_checklist(&agent);
    assert_ended_with(&repo, &output, 0, "chores", &["1 Greeting", "2 Farewell"]);
    let todo = repo.git(&["show", "ralph/chores:TODO.md"]);
    assert_eq!(todo, TODO.replace("- [ ]", "- [x]"));
    assert_eq!(repo.git(&["show", "ralph/chores:bye.txt"]), "bye\n");

    let prompt = recorded_prompt(&repo, "1", 1);
    assert!(prompt.contains("Greeting"), "{prompt}");
    assert!(prompt.contains("Create hello.txt"), "{prompt}");
    assert!(prompt.contains("TODO.md"), "{prompt}");
}

#[test]
fn a_markdown_section_left_half_ticked_is_not_done() {
    let agent = format!("{CHECKLIST_HELLO_CREATED}promise COMPLETE\n");
    let (repo, output) = start_checklist(&agent);
    assert_ended_with(&repo, &output, 3, "chores", &[]);
    assert_eq!(repo.read("TODO.md"), TODO, "the ticked box was reverted");
}
