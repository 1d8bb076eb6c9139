//! The one-job-per-story workflows of `examples/ci/` (issue 48): a plan job
//! reads which stories of a change can run at once from `git ralph start
//! <change> --dry-run --json`, a job per story runs it and pushes its
//! branch, and a merge job merges them and opens the pull request. Their
//! own steps run here as a runner runs them (see `ci_workflow`), against a
//! bare repository standing in for the forge, offline; so do the GitLab
//! jobs' scripts, the story and merge jobs read from the child pipeline the
//! plan job writes.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use yaml_rust2::Yaml;

use crate::ci_workflow::{
    Runner, load, load_text, run_step, step, step_command, steps, text, yamllint, yamllint_findings,
};
use crate::harness::forge::FakeForge;
use crate::harness::story_run::{CHANGE, THREE_STORIES, project, story_done};
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
    let (output, written) = gitlab_plan_job(&project, &origin, "gitlab-plan");
    assert_success(&output);

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

/// A job's script lines (`key` of `job`) as GitLab's runner has them, with
/// git-ralph's checkout where `runner` has it; the lines that install
/// git-ralph, jq or the agent CLI are left out (the runner has them).
fn gitlab_script(job: &Yaml, key: &str, runner: &Runner) -> Vec<String> {
    let installs = [
        "apt-get ",
        "npm install ",
        "git clone --quiet --depth 1 --branch \"$GIT_RALPH_REF\"",
        "/tmp/git-ralph/install.sh",
    ];
    let checkout = format!("{}/", runner.temp.join("git-ralph").display());
    job[key]
        .as_vec()
        .unwrap_or_else(|| panic!("no {key} in {job:?}"))
        .iter()
        .map(|line| text(line, "a script line"))
        .filter(|line| !installs.iter().any(|install| line.starts_with(install)))
        .map(|line| line.replace("/tmp/git-ralph/", &checkout))
        .collect()
}

/// `lines` run in `dir` as GitLab's runner runs a job's script: one bash,
/// stopping at the first line that fails.
fn gitlab_shell(project: &TestRepo, dir: &Path, lines: &[String]) -> std::process::Command {
    let mut cmd = project.command("bash", dir);
    cmd.args([
        "--noprofile",
        "--norc",
        "-eo",
        "pipefail",
        "-c",
        &lines.join("\n"),
    ]);
    cmd
}

/// The GitLab plan job's script in a fresh clone named `name`: its exit,
/// and the child pipeline it wrote.
fn gitlab_plan_job(
    project: &TestRepo,
    origin: &Path,
    name: &str,
) -> (std::process::Output, PathBuf) {
    let parent = load(GITLAB);
    let dir = checkout(project, origin, name);
    let runner = Runner::new_named(project, name);
    let script = gitlab_script(&parent["git-ralph-plan"], "script", &runner);
    let path = std::env::var("PATH").unwrap_or_default();
    let output = run(gitlab_shell(project, &dir, &script)
        .env("PATH", format!("{}:{path}", runner.bin.display()))
        .env("CHANGE", CHANGE)
        .env("GIT_RALPH_REF", "main"));
    (output, dir.join("stories-pipeline.yml"))
}

#[test]
fn issue_48_the_gitlab_pipelines_run_each_story_in_its_own_clone_then_merge_them_in_another() {
    let (project, origin) = pushed_project();
    let forge = FakeForge::new(&project);
    let runner = Runner::new(&project);
    // What the project's CI variables and GitLab's own give every job.
    let predefined = [
        ("CI_DEFAULT_BRANCH", "main"),
        ("CI_SERVER_HOST", "gitlab.example.com"),
        ("CI_PROJECT_PATH", "group/greet"),
        ("GITLAB_TOKEN", "a-token"),
        ("GITLAB_CI", "true"),
        ("GIT_RALPH_REPOSITORY", ""),
        ("ANTHROPIC_API_KEY", "a-key"),
    ];
    // The push URL the jobs set is GitLab's; here it leads to the bare
    // remote, as the runner's git would reach the forge.
    project.git(&[
        "config",
        "--global",
        &format!("url.{}.insteadOf", origin.display()),
        "https://oauth2:a-token@gitlab.example.com/group/greet.git",
    ]);
    // A job of the child pipeline in a fresh clone named `name`: the
    // template's before_script and the job's script in one shell, then its
    // after_script in another, with the pipeline's variables, then the
    // job's, `$NAME` of GitLab's own expanded.
    let job = |child: &Yaml, name: &str, job: &str, agent: &str| {
        let dir = checkout(&project, &origin, name);
        let job = &child[job];
        let template = &child[text(&job["extends"], "extends")];
        let mut lines = gitlab_script(template, "before_script", &runner);
        lines.extend(gitlab_script(job, "script", &runner));
        let agent_script = script(&project, &format!("format claude\n{agent}"));
        let records = project.dir.path().join(format!("{name}-records"));
        let mut env: Vec<(String, String)> = predefined
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        for layer in [&child["variables"], &job["variables"]] {
            for (key, value) in layer.as_hash().into_iter().flatten() {
                let mut value = text(value, "a variable").to_owned();
                for (name, given) in predefined {
                    value = value.replace(&format!("${name}"), given);
                }
                env.push((text(key, "a variable name").to_owned(), value));
            }
        }
        for (key, value) in runner.env(&forge, &agent_script, &records) {
            env.push((key.to_owned(), value));
        }
        let output = run(gitlab_shell(&project, &dir, &lines).envs(env.clone()));
        let after = gitlab_script(template, "after_script", &runner);
        assert_success(&run(gitlab_shell(&project, &dir, &after).envs(env)));
        (dir, output)
    };

    let mut waves = Vec::new();
    for wave in 1..=2 {
        let (output, written) = gitlab_plan_job(&project, &origin, &format!("wave-{wave}-plan"));
        assert_success(&output);
        let child = load_text(
            &fs::read_to_string(&written).unwrap(),
            "stories-pipeline.yml",
        );
        let jobs: Vec<String> = child
            .as_hash()
            .unwrap()
            .keys()
            .filter_map(Yaml::as_str)
            .filter(|name| name.starts_with("story "))
            .map(str::to_owned)
            .collect();
        for name in &jobs {
            let id = name.trim_start_matches("story ");
            let (dir, output) = job(
                &child,
                &format!("wave-{wave}-story-{id}"),
                name,
                &story_done(id),
            );
            assert_success(&output);
            let record = dir.join(format!("ralph-record/{CHANGE}.story-{id}/state.json"));
            assert!(
                record.is_file(),
                "the job's artifact holds the story's record"
            );
        }
        let (_, output) = job(&child, &format!("wave-{wave}-merge"), "merge", "");
        assert_success(&output);
        waves.push(jobs);
    }
    assert_eq!(waves, [vec!["story 1", "story 2"], vec!["story 3"]]);
    assert_eq!(
        forge.verbs(),
        [
            "glab mr list",
            "glab mr create",
            "glab mr list",
            "glab mr update"
        ]
    );
    // The first merge opened the merge request into the default branch
    // with what the first wave did; the second updated it.
    let calls = forge.calls();
    let has = |n: usize, arg: &str| calls[n].args.iter().any(|given| given.contains(arg));
    assert!(has(1, "--target-branch=main"), "{:?}", calls[1]);
    assert!(has(1, "**2 of 3 stories done**"), "{:?}", calls[1]);
    assert!(has(3, "**3 of 3 stories done**"), "{:?}", calls[3]);

    // The branch holds each story's work once, every box ticked, and the
    // record agrees: each story done, in one attempt.
    let branch = format!("refs/heads/ralph/{CHANGE}");
    for id in ["1", "2", "3"] {
        let touched = project.git_at(
            &origin,
            &[
                "log",
                "--format=%H",
                &branch,
                "--",
                &format!("story-{id}.txt"),
            ],
        );
        assert_eq!(
            touched.lines().count(),
            1,
            "story {id} done once: {touched}"
        );
    }
    let tasks = project.git_at(
        &origin,
        &["show", &format!("{branch}:openspec/changes/greet/tasks.md")],
    );
    assert!(!tasks.contains("- [ ]"), "{tasks}");
    let state: serde_json::Value = serde_json::from_str(&project.git_at(
        &origin,
        &["show", &format!("refs/ralph/{CHANGE}/record:state.json")],
    ))
    .unwrap();
    let tip = project.git_at(&origin, &["rev-parse", &branch]);
    assert_eq!(state["checkpoint"].as_str(), Some(tip.trim()), "{state}");
    let stories = state["stories"].as_array().unwrap();
    assert_eq!(stories.len(), 3, "{state}");
    for story in stories {
        assert_eq!(story["done"].as_bool(), Some(true), "{story}");
        assert_eq!(
            story["attempts"].as_array().map(Vec::len),
            Some(1),
            "{story}"
        );
    }
}

/// The stories workflow's jobs, each in a clone of its own, against the
/// bare `origin` with the scripted `gh` and agent: what a runner gives
/// each of them.
struct Workflow<'a> {
    project: &'a TestRepo,
    origin: &'a Path,
    forge: FakeForge,
    runner: Runner,
    workflow: Yaml,
}

impl Workflow<'_> {
    /// The command of `step` of `job` in the checkout `dir`, the matrix
    /// giving `story`, with the agent doing `agent` (script lines).
    fn step(
        &self,
        dir: &Path,
        job: &str,
        step: &str,
        story: &str,
        done_before: &str,
        agent: &str,
    ) -> std::process::Command {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let agent_script = script(self.project, &format!("format claude\n{agent}"));
        let records = self.project.dir.path().join(format!("{name}-records"));
        let output_file = self.project.dir.path().join(format!("{name}-output"));
        let mut env = self.runner.env(&self.forge, &agent_script, &records);
        env.push(("GITHUB_OUTPUT", output_file.display().to_string()));
        let mut values = values(CHANGE);
        values.extend([
            ("matrix.story", story),
            ("inputs.agent || 'claude'", "claude"),
            ("inputs.base || github.ref_name", "main"),
            ("github.token", "a-token"),
            ("github.workflow", "git-ralph stories"),
            ("github.ref_name", "main"),
            ("needs.plan.outputs.done", done_before),
            ("secrets.ANTHROPIC_API_KEY", "a-key"),
            ("secrets.OPENAI_API_KEY", ""),
            ("secrets.GEMINI_API_KEY", ""),
        ]);
        step_command(self.project, dir, &self.workflow, job, step, &values, &env)
    }

    /// Runs `steps` of `job` in order in a fresh clone named `name`; the
    /// first step that fails ends the job, as on a runner.
    fn job(
        &self,
        name: &str,
        job: &str,
        steps: &[&str],
        story: &str,
        done_before: &str,
        agent: &str,
    ) -> Vec<std::process::Output> {
        let dir = checkout(self.project, self.origin, name);
        let mut outputs = Vec::new();
        for step in steps {
            let output = run(&mut self.step(&dir, job, step, story, done_before, agent));
            let failed = !output.status.success();
            outputs.push(output);
            if failed {
                break;
            }
        }
        outputs
    }

    /// The plan job: the stories of this wave, and the stories done.
    fn plan(&self, name: &str) -> (Vec<String>, String) {
        let (output, outputs) = plan_job(self.project, self.origin, name, CHANGE);
        assert_success(&output);
        let stories: Vec<String> = serde_json::from_str(&outputs["stories"]).unwrap();
        (stories, outputs["done"].clone())
    }

    fn remote(&self, args: &[&str]) -> String {
        self.project.git_at(self.origin, args)
    }
}

/// The pid of the process named `name` among `pid` and its descendants.
fn descendant_named(pid: u32, name: &str) -> Option<u32> {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() == name {
        return Some(pid);
    }
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|child| child.parse().ok())
        .find_map(|child| descendant_named(child, name))
}

/// The story's run as its record on the remote has it: each story's
/// attempts.
fn story_attempts(flow: &Workflow, id: &str) -> Vec<serde_json::Value> {
    let record = format!("refs/ralph/{CHANGE}.story-{id}/record");
    let state: serde_json::Value =
        serde_json::from_str(&flow.remote(&["show", &format!("{record}:state.json")])).unwrap();
    state["stories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|story| story["id"] == id)
        .and_then(|story| story["attempts"].as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn issue_48_a_story_job_at_its_time_limit_pushes_what_it_has_and_the_next_run_goes_on() {
    let (project, origin) = pushed_project();
    let flow = Workflow {
        project: &project,
        origin: &origin,
        forge: FakeForge::new(&project),
        runner: Runner::new(&project),
        workflow: load(WORKFLOW),
    };
    // The first job's agent is at work on story 1, and would be for long,
    // when the job's last-resort limit comes: `timeout`'s own alarm.
    let dir = checkout(&project, &origin, "job-1");
    let never = project.dir.path().join("never");
    let agent = format!(
        "[story=1]\nwrite at-work.txt at work\\n\nwait-for {}\n",
        never.display()
    );
    let child = flow
        .step(&dir, "story", "Run the story", "1", "0", &agent)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(
        "the agent of story 1 is at work",
        std::time::Duration::from_secs(60),
        || fs::metadata(dir.join("at-work.txt")).is_ok_and(|meta| meta.len() > 0),
    );
    let timeout = descendant_named(child.id(), "timeout").expect("the story runs under timeout");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(timeout as i32),
        nix::sys::signal::Signal::SIGALRM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 124);

    // What it had is on the remote: the story's branch and its record,
    // with the attempt it was stopped in.
    let branch = format!("refs/heads/ralph/{CHANGE}.story-1");
    assert!(
        !flow.remote(&["rev-parse", "--verify", &branch]).is_empty(),
        "{}",
        describe(&output)
    );
    assert_eq!(story_attempts(&flow, "1").len(), 1, "{}", describe(&output));

    // The next run of the workflow plans story 1 again, and its job takes
    // the story up from that record: the attempt spent counts.
    let (stories, _) = flow.plan("plan-2");
    assert_eq!(stories, ["1", "2"]);
    let outputs = flow.job(
        "job-2",
        "story",
        &["Run the story"],
        "1",
        "0",
        &story_done("1"),
    );
    assert_success(outputs.last().unwrap());
    let attempts = story_attempts(&flow, "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    let files = flow.remote(&["ls-tree", "-r", "--name-only", &branch]);
    assert!(files.contains("story-1.txt"), "{files}");
}

#[test]
fn issue_48_the_plan_job_then_a_job_per_story_each_in_its_own_clone_push_each_story_once() {
    let (project, origin) = pushed_project();
    let flow = Workflow {
        project: &project,
        origin: &origin,
        forge: FakeForge::new(&project),
        runner: Runner::new(&project),
        workflow: load(WORKFLOW),
    };
    let (stories, done) = flow.plan("plan");
    assert_eq!(stories, ["1", "2"]);
    assert_eq!(done, "0");
    for id in &stories {
        let outputs = flow.job(
            &format!("story-{id}"),
            "story",
            &["Run the story"],
            id,
            &done,
            &story_done(id),
        );
        assert_success(outputs.last().unwrap());
    }
    // Each story's branch holds its own work alone, its box ticked, and its
    // record agrees: the story done in one attempt.
    for id in ["1", "2"] {
        let branch = format!("refs/heads/ralph/{CHANGE}.story-{id}");
        let files = flow.remote(&["ls-tree", "-r", "--name-only", &branch]);
        let others: Vec<String> = ["1", "2", "3"]
            .iter()
            .filter(|other| **other != id)
            .map(|other| format!("story-{other}.txt"))
            .collect();
        assert!(files.contains(&format!("story-{id}.txt")), "{files}");
        assert!(others.iter().all(|other| !files.contains(other)), "{files}");
        let tasks = flow.remote(&["show", &format!("{branch}:openspec/changes/greet/tasks.md")]);
        assert!(tasks.contains(&format!("- [x] {id}.")), "{tasks}");
        let attempts = story_attempts(&flow, id);
        assert_eq!(attempts.len(), 1, "{attempts:?}");
        // No lease is left behind.
        assert_eq!(
            flow.remote(&[
                "for-each-ref",
                &format!("refs/ralph/{CHANGE}.story-{id}/lease")
            ]),
            ""
        );
    }
    // Story 3 waited: no job ran it, and nothing of it was pushed.
    assert_eq!(
        flow.remote(&[
            "for-each-ref",
            "--format=%(refname)",
            &format!("refs/heads/ralph/{CHANGE}.story-3")
        ]),
        ""
    );
}

#[test]
fn issue_48_the_stories_workflow_runs_each_story_in_its_own_clone_then_merges_them_in_another() {
    let (project, origin) = pushed_project();
    let flow = Workflow {
        project: &project,
        origin: &origin,
        forge: FakeForge::new(&project),
        runner: Runner::new(&project),
        workflow: load(WORKFLOW),
    };
    let story_steps = ["Run the story"];
    let merge_steps = ["Merge the stories", "Start the next wave"];

    // The first wave: stories 1 and 2, each in a job of its own, pushing
    // its own branch; then the merge job in a fourth clone.
    let (stories, done) = flow.plan("wave-1-plan");
    assert_eq!(
        (stories.as_slice(), done.as_str()),
        (["1".to_owned(), "2".to_owned()].as_slice(), "0")
    );
    for id in &stories {
        let outputs = flow.job(
            &format!("wave-1-story-{id}"),
            "story",
            &story_steps,
            id,
            &done,
            &story_done(id),
        );
        assert_success(outputs.last().unwrap());
        let branch = format!("refs/heads/ralph/{CHANGE}.story-{id}");
        assert!(
            !flow.remote(&["rev-parse", "--verify", &branch]).is_empty(),
            "{branch} is pushed"
        );
    }
    let outputs = flow.job("wave-1-merge", "merge", &merge_steps, "", &done, "");
    assert_eq!(outputs.len(), 2, "{}", describe(&outputs[0]));
    for output in &outputs {
        assert_success(output);
    }
    assert!(
        stdout(&outputs[1]).contains("the next wave is started: 3"),
        "{}",
        describe(&outputs[1])
    );
    assert_eq!(
        flow.forge.verbs(),
        ["gh pr list", "gh pr create", "gh workflow run"]
    );
    let dispatch = &flow.forge.calls()[2].args;
    assert!(
        dispatch.contains(&"change=greet".to_owned()),
        "{dispatch:?}"
    );

    // The second wave, as the dispatched run: story 3 alone, on top of
    // what the first merged; its merge updates the pull request and starts
    // no third wave.
    let (stories, done) = flow.plan("wave-2-plan");
    assert_eq!(
        (stories.as_slice(), done.as_str()),
        (["3".to_owned()].as_slice(), "2")
    );
    let outputs = flow.job(
        "wave-2-story-3",
        "story",
        &story_steps,
        "3",
        &done,
        &story_done("3"),
    );
    assert_success(outputs.last().unwrap());
    let outputs = flow.job("wave-2-merge", "merge", &merge_steps, "", &done, "");
    for output in &outputs {
        assert_success(output);
    }
    assert!(
        stdout(&outputs[1]).contains("no story left that can start"),
        "{}",
        describe(&outputs[1])
    );
    assert_eq!(
        flow.forge.verbs(),
        [
            "gh pr list",
            "gh pr create",
            "gh workflow run",
            "gh pr list",
            "gh pr edit"
        ]
    );
    assert!(
        flow.forge.calls()[4]
            .stdin
            .contains("**3 of 3 stories done**")
    );

    // The branch holds each story's work once, every box ticked, and the
    // record agrees: each story done, in one attempt.
    let branch = format!("refs/heads/ralph/{CHANGE}");
    let files = flow.remote(&["ls-tree", "-r", "--name-only", &branch]);
    for id in ["1", "2", "3"] {
        assert!(files.contains(&format!("story-{id}.txt")), "{files}");
        let touched = flow.remote(&[
            "log",
            "--format=%H",
            &branch,
            "--",
            &format!("story-{id}.txt"),
        ]);
        assert_eq!(
            touched.lines().count(),
            1,
            "story {id} done once: {touched}"
        );
    }
    let tasks = flow.remote(&["show", &format!("{branch}:openspec/changes/greet/tasks.md")]);
    assert!(!tasks.contains("- [ ]"), "{tasks}");
    let state: serde_json::Value = serde_json::from_str(
        &flow.remote(&["show", &format!("refs/ralph/{CHANGE}/record:state.json")]),
    )
    .unwrap();
    for story in state["stories"].as_array().unwrap() {
        assert_eq!(
            story["attempts"].as_array().map(Vec::len),
            Some(1),
            "{story}"
        );
    }
    assert_eq!(state["stories"].as_array().unwrap().len(), 3);
}
