//! The one-job-per-story workflows of `examples/ci/` (issue 48): a plan job
//! reads which stories of a change can run at once from `git ralph start
//! <change> --dry-run --json`, a job per story runs it and pushes its
//! branch, and a merge job merges them and opens the pull request. Their
//! own steps run here as a runner runs them (see `ci_workflow`), against a
//! bare repository standing in for the forge, offline.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use yaml_rust2::Yaml;

use crate::ci_workflow::{
    Runner, load, load_text, run_step, step, steps, text, yamllint, yamllint_findings,
};
use crate::harness::story_run::{CHANGE, THREE_STORIES, project};
use crate::harness::*;

const WORKFLOW: &str = "examples/ci/github-actions-stories.yml";
const GITLAB: &str = "examples/ci/gitlab-ci-stories.yml";

/// The change's tasks with stories 1 and 2 independent and story 3 after
/// story 1, as a team would write them.
const ORDER: &str = "[stories]\nindependent = true\n\n[story.3]\nafter = [\"1\"]\n";

/// A project holding the change, pushed to a bare `origin.git` beside it.
fn pushed_project() -> (TestRepo, PathBuf) {
    let project = project(THREE_STORIES);
    project.write("openspec/changes/greet/ralph.toml", ORDER);
    project.commit_all("Stories 1 and 2 of greet are independent, story 3 comes after 1");
    let origin = project.dir.path().join("origin.git");
    let bare = origin.to_str().unwrap();
    project.git_at(
        project.dir.path(),
        &["init", "-q", "--bare", "-b", "main", bare],
    );
    project.git(&["push", "-q", bare, "main"]);
    (project, origin)
}

/// A fresh clone of `origin` named `name`, as a job's checkout.
fn checkout(project: &TestRepo, origin: &Path, name: &str) -> PathBuf {
    let dir = project.dir.path().join(name);
    project.git_at(
        project.dir.path(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
    );
    dir
}

/// The values the workflow's expressions take in a run for the change.
fn values(change: &str) -> BTreeMap<&str, &str> {
    BTreeMap::from([
        ("inputs.change", change),
        ("vars.GIT_RALPH_REPOSITORY", ""),
        ("vars.GIT_RALPH_REF || 'main'", "main"),
    ])
}

/// The plan job's "Plan the stories" step in a fresh checkout: its exit,
/// and what it wrote to `$GITHUB_OUTPUT`, by name.
fn plan_job(
    project: &TestRepo,
    origin: &Path,
    name: &str,
    change: &str,
) -> (std::process::Output, BTreeMap<String, String>) {
    let workflow = load(WORKFLOW);
    let dir = checkout(project, origin, name);
    let runner = Runner::new_named(project, name);
    let output_file = project.dir.path().join(format!("{name}-output"));
    let path = std::env::var("PATH").unwrap_or_default();
    let output = run_step(
        project,
        &dir,
        &workflow,
        "plan",
        "Plan the stories",
        &values(change),
        &[
            ("PATH", format!("{}:{path}", runner.bin.display())),
            ("RUNNER_TEMP", runner.temp.display().to_string()),
            ("GITHUB_OUTPUT", output_file.display().to_string()),
        ],
    );
    let written = fs::read_to_string(&output_file).unwrap_or_default();
    let outputs = written
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
    (output, outputs)
}

fn names(steps: &[Yaml]) -> Vec<String> {
    steps
        .iter()
        .map(|step| {
            step["name"]
                .as_str()
                .or(step["uses"].as_str().and_then(|u| u.split('@').next()))
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn issue_48_the_stories_workflow_plans_then_runs_a_job_per_story_then_merges() {
    let workflow = load(WORKFLOW);
    assert!(!workflow["on"]["workflow_dispatch"]["inputs"]["change"].is_badvalue());
    assert_eq!(
        workflow["concurrency"]["group"].as_str(),
        Some("git-ralph-${{ inputs.change }}"),
        "one run of the workflow per change at a time"
    );
    assert_eq!(
        workflow["concurrency"]["cancel-in-progress"].as_bool(),
        Some(false)
    );
    assert_eq!(
        workflow["jobs"]["plan"]["outputs"]["stories"].as_str(),
        Some("${{ steps.plan.outputs.stories }}")
    );

    let story = &workflow["jobs"]["story"];
    assert_eq!(story["needs"].as_str(), Some("plan"));
    assert_eq!(
        story["strategy"]["matrix"]["story"].as_str(),
        Some("${{ fromJSON(needs.plan.outputs.stories) }}"),
        "one job per story the plan read"
    );
    assert_eq!(story["strategy"]["fail-fast"].as_bool(), Some(false));
    let limit = story["timeout-minutes"].as_i64().expect("a time limit");
    let run = step(&workflow, "story", "Run the story");
    let runtime = text(&run["env"]["MAX_RUNTIME"], "MAX_RUNTIME");
    let minutes: i64 = runtime.trim_end_matches('m').parse().unwrap();
    assert!(
        minutes < limit,
        "git-ralph's own limit ({runtime}) ends the run before the job's ({limit}m), so that it pushes"
    );
    assert_eq!(
        run["env"]["ANTHROPIC_API_KEY"].as_str(),
        Some("${{ secrets.ANTHROPIC_API_KEY }}")
    );
    assert_eq!(
        names(steps(&workflow, "story")),
        [
            "actions/checkout",
            "actions/cache",
            "Install git-ralph",
            "Install the agent CLI",
            "Run the story",
            "Keep the story's record"
        ]
    );

    let merge = &workflow["jobs"]["merge"];
    let needs: Vec<&str> = merge["needs"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(needs, ["plan", "story"]);
    assert!(
        text(&merge["if"], "the merge's if").starts_with("always()"),
        "the stories that finished are merged also when another failed"
    );
    assert_eq!(
        names(steps(&workflow, "merge")),
        [
            "actions/checkout",
            "actions/cache",
            "Install git-ralph",
            "Merge the stories",
            "Start the next wave",
            "Keep the merge's record"
        ]
    );
    let script = fs::read_to_string(source_path("examples/ci/merge-stories.sh")).unwrap();
    assert!(script.contains("git ralph merge \"$CHANGE\" --from \"$remote\" --push"));
    assert!(script.contains("git ralph finish \"$CHANGE\" --pr"));
    let script = fs::read_to_string(source_path("examples/ci/run-story.sh")).unwrap();
    assert!(script.contains("--from \"$remote\" --story \"$STORY\" --push"));
}

#[test]
fn issue_48_the_plan_job_reads_the_stories_that_can_run_at_once_from_the_dry_run() {
    let (project, origin) = pushed_project();

    // The first wave: stories 1 and 2 at once, story 3 waits for story 1.
    let (output, outputs) = plan_job(&project, &origin, "plan-1", CHANGE);
    assert_success(&output);
    assert_eq!(outputs["stories"], r#"["1","2"]"#, "{}", describe(&output));
    assert_eq!(outputs["waiting"], r#"["3"]"#);
    assert_eq!(outputs["done"], "0");
    assert!(
        stdout(&output).contains("0 of 3 stories done; this wave: 1, 2; waiting: 3"),
        "{}",
        describe(&output)
    );

    // Once a wave merged stories 1 and 2 onto ralph/greet, the next plan
    // reads the stories from there: story 3 alone.
    let machine = checkout(&project, &origin, "merged");
    let tasks = machine.join("openspec/changes/greet/tasks.md");
    let ticked = fs::read_to_string(&tasks)
        .unwrap()
        .replace("- [ ] 1.", "- [x] 1.")
        .replace("- [ ] 2.", "- [x] 2.");
    fs::write(&tasks, ticked).unwrap();
    project.git_at(&machine, &["switch", "-q", "-c", "ralph/greet"]);
    project.git_at(&machine, &["commit", "-q", "-am", "Stories 1 and 2"]);
    project.git_at(&machine, &["push", "-q", "origin", "ralph/greet"]);
    let (output, outputs) = plan_job(&project, &origin, "plan-2", CHANGE);
    assert_success(&output);
    assert_eq!(outputs["stories"], r#"["3"]"#, "{}", describe(&output));
    assert_eq!(outputs["waiting"], "[]");
    assert_eq!(outputs["done"], "2");
    assert!(
        stderr(&output).contains("planning from ralph/greet as origin has it"),
        "{}",
        describe(&output)
    );

    // A name that is no change's is refused before anything is planned.
    for bad in ["-x", "a b", ".hidden", "a/../b"] {
        let (output, outputs) =
            plan_job(&project, &origin, &format!("plan-bad-{}", bad.len()), bad);
        assert_exit(&output, 1);
        assert!(outputs.is_empty(), "{bad:?}: {outputs:?}");
        assert!(
            stderr(&output).contains("is not the name of a change"),
            "{}",
            describe(&output)
        );
    }
}

#[test]
fn issue_48_the_gitlab_plan_job_writes_a_child_pipeline_with_a_job_per_story() {
    let parent = load(GITLAB);
    let plan = &parent["git-ralph-plan"];
    let trigger = &parent["git-ralph-stories"];
    assert_eq!(
        trigger["trigger"]["include"][0]["artifact"].as_str(),
        Some("stories-pipeline.yml")
    );
    assert_eq!(
        trigger["trigger"]["include"][0]["job"].as_str(),
        Some("git-ralph-plan")
    );
    assert_eq!(trigger["trigger"]["strategy"].as_str(), Some("depend"));
    assert_eq!(
        trigger["resource_group"].as_str(),
        Some("git-ralph-$CHANGE"),
        "one pipeline of stories per change at a time"
    );
    let artifacts: Vec<&str> = plan["artifacts"]["paths"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert!(artifacts.contains(&"stories-pipeline.yml"), "{artifacts:?}");

    // The plan job's script, with git-ralph's checkout where the test has
    // it, in a fresh clone.
    let (project, origin) = pushed_project();
    let dir = checkout(&project, &origin, "gitlab-plan");
    let runner = Runner::new_named(&project, "gitlab-plan");
    let script = plan["script"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|line| {
            text(line, "a script line").replace(
                "/tmp/git-ralph/",
                &format!("{}/", runner.temp.join("git-ralph").display()),
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = std::env::var("PATH").unwrap_or_default();
    let output = run(project
        .command("bash", &dir)
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .env("PATH", format!("{}:{path}", runner.bin.display()))
        .env("CHANGE", CHANGE)
        .env("GIT_RALPH_REF", "main"));
    assert_success(&output);

    let written = dir.join("stories-pipeline.yml");
    let child = load_text(
        &fs::read_to_string(&written).unwrap(),
        "stories-pipeline.yml",
    );
    assert_eq!(child["variables"]["CHANGE"].as_str(), Some(CHANGE));
    let jobs: Vec<&str> = child
        .as_hash()
        .unwrap()
        .keys()
        .filter_map(Yaml::as_str)
        .filter(|name| !name.starts_with('.') && *name != "variables")
        .collect();
    assert_eq!(jobs, ["story 1", "story 2", "merge"]);
    for id in ["1", "2"] {
        let job = &child[format!("story {id}").as_str()];
        assert_eq!(job["variables"]["STORY"].as_str(), Some(id));
        assert!(job["timeout"].as_str().is_some(), "a time limit");
        let last = job["script"].as_vec().unwrap().last().unwrap();
        assert_eq!(
            last.as_str(),
            Some("/tmp/git-ralph/examples/ci/run-story.sh")
        );
    }
    let merge = &child["merge"];
    assert_eq!(merge["when"].as_str(), Some("always"));
    let needs: Vec<&str> = merge["needs"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(needs, ["story 1", "story 2"]);
    assert_eq!(
        merge["script"][0].as_str(),
        Some("/tmp/git-ralph/examples/ci/merge-stories.sh")
    );
    match yamllint() {
        Some(yamllint) => {
            let findings = yamllint_findings(&yamllint, &written);
            assert!(
                findings.is_empty(),
                "yamllint finds the child pipeline unclean:\n{}",
                findings.join("\n")
            );
        }
        None => eprintln!(
            "yamllint was skipped: it is not on PATH; the child pipeline was read as YAML"
        ),
    }
}
