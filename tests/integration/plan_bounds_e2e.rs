//! Issue 37, the bounds a plan is held to and the agent it is made with,
//! end to end through the binary: the size bound of a story is
//! `ralph.planMaxTasks` or `--max-tasks`; a plan whose every task is done
//! already goes back; a prd.json story without acceptance criteria goes
//! back, and `--refine` of a prd.json keeps every passing story; a preset
//! agent plans with its `--model`, and the planning prompt names the
//! repository's own OpenSpec specs for the deltas.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::harness::*;
use crate::plan_e2e::{
    CHANGE, FOLDER, TASKS, plan, plan_with, plan_with_tasks, project, record,
    sent_back_then_accepted,
};

/// Script lines of a plan whose one story has four tasks, the last a check.
fn four_task_plan() -> String {
    plan_with_tasks(
        "## 1. Greeting\\n\\n- [ ] 1.1 Create hello.txt\\n- [ ] 1.2 Say hello in it\\n- [ ] 1.3 Mention it in the README\\n- [ ] 1.4 Verify: test -s hello.txt\\n",
    )
}

#[test]
fn the_size_bound_is_configured_and_the_flag_overrides_it() {
    let repo = project();
    repo.git(&["config", "ralph.planMaxTasks", "3"]);
    let script_text = format!("[*]\n{}", four_task_plan());
    let (output, script_path) = plan(&repo, &script_text, &["--max-retries", "1"]);
    assert_exit(&output, 3);
    assert_eq!(script_calls(&script_path), 2);
    let out = stdout(&output);
    assert!(
        out.contains("story 1 (\"Greeting\") has 4 tasks, more than one agent attempt should take on (at most 3)"),
        "{out}"
    );
    assert!(
        recorded_prompt(&repo, "none", 1).contains("at most 3 tasks"),
        "the prompt names the bound"
    );

    // The same plan under --max-tasks 4, refined: accepted on the first try.
    let script_path = script(&repo, &script_text);
    let output = plan_with(
        &repo,
        &script_path,
        &[CHANGE, "--refine", "--max-tasks", "4"],
    );
    assert_exit(&output, 0);
    assert_eq!(script_calls(&script_path), 1);
    assert!(
        stdout(&output).contains("try 1 accepted: 1 story, 4 tasks open"),
        "{}",
        describe(&output)
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_plan_whose_every_task_is_done_already_is_sent_back() {
    sent_back_then_accepted(
        &plan_with_tasks(
            "## 1. Greeting\\n\\n- [x] 1.1 Create hello.txt\\n- [x] 1.2 Verify: test -s hello.txt\\n",
        ),
        &format!(
            "every story of {TASKS} is done already: a plan needs open tasks for the run to work on"
        ),
    );
}

/// A prd.json of two stories, as one escaped line for a script: the first
/// passing or not, the second with `criteria` (JSON) as its acceptance
/// criteria.
fn prd(first_passes: bool, criteria: &str) -> String {
    format!(
        r#"{{\n  "project": "greet",\n  "userStories": [\n    {{"id": "US-001", "title": "Greeting", "description": "As a visitor I am greeted.", "acceptanceCriteria": ["Verify: test -s hello.txt"], "priority": 1, "passes": {first_passes}}},\n    {{"id": "US-002", "title": "Farewell", "description": "As a visitor I am seen off.", "acceptanceCriteria": {criteria}, "priority": 2, "passes": false, "dependsOn": ["US-001"]}}\n  ]\n}}\n"#
    )
}

#[test]
fn a_prd_story_without_criteria_goes_back_and_refine_keeps_every_passing_story() {
    let repo = project();
    let file = "plans/prd.json";
    repo.write(file, prd(true, "[]").replace("\\n", "\n"));
    repo.commit_all("The prd");
    let script_path = script(
        &repo,
        &format!(
            "[call=1]\nwrite {file} {}\n[call=2]\nwrite {file} {}\n",
            prd(false, "[]"),
            prd(
                true,
                r#"["bye.txt says goodbye", "Verify: test -s bye.txt"]"#
            )
        ),
    );
    let output = plan_with(&repo, &script_path, &[CHANGE, "--prd", file, "--refine"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains("story US-001 (\"Greeting\") was done before and is not now"),
        "{out}"
    );
    assert!(
        out.contains(
            "story US-002 (\"Farewell\") does not say how to verify it: give it acceptance criteria"
        ),
        "{out}"
    );
    assert!(
        out.contains("try 2 accepted: 2 stories, 1 story open"),
        "{out}"
    );
    let prd_now: serde_json::Value = serde_json::from_str(&repo.read(file)).expect("JSON");
    assert_eq!(prd_now["userStories"][0]["passes"], true);
    assert_eq!(repo.status_porcelain(), format!(" M {file}\n"));
    assert_eq!(record(&repo, 1)["status"], "accepted");
    repo.assert_fsck_clean();
}

#[test]
fn a_preset_plans_with_its_model_and_hears_of_the_repositorys_specs() {
    let repo = project();
    repo.write(
        "openspec/specs/welcome/spec.md",
        "## Purpose\nVisitors are welcomed.\n\n## Requirements\n\n### Requirement: Welcome\nThe project SHALL welcome its visitors.\n\n#### Scenario: Welcomed\n- **WHEN** a visitor comes\n- **THEN** they are welcomed\n",
    );
    repo.commit_all("The specs");
    let bin = bin_dir(&repo);
    fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::os::unix::fs::symlink(fake_agent_path(), &claude).unwrap();
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
    let script_path = script(
        &repo,
        &format!("format claude\n[*]\n{}", crate::plan_e2e::good_plan()),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let output = run(ralph_with_fake(&repo, &script_path)
        .args(["plan", CHANGE, "Greet the visitors"])
        .args(["--agent", "claude", "--model", "test-model"])
        .env("PATH", path));
    assert_exit(&output, 0);
    let calls = recorded_calls(&repo);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(calls[0].contains("--model test-model"), "{calls:?}");
    let out = stdout(&output);
    assert!(
        out.trim_end().ends_with(&format!(
            "run it: git ralph start {CHANGE} --agent claude --model test-model"
        )),
        "{out}"
    );
    let prompt = recorded_prompt(&repo, "none", 1);
    assert!(
        prompt.contains("The repository's specs are in `openspec/specs/` (`welcome`)"),
        "{prompt}"
    );
    assert!(repo.path(format!("{FOLDER}/tasks.md")).is_file());
}
