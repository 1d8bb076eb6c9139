//! The CI workflow of `examples/ci/` (issue 26): it is YAML with what a
//! change needs in CI (one job per change, a timeout, the agent's key as a
//! secret, the run's record as an artifact), and its own steps run here the
//! way a runner runs them: with bash, their `${{ … }}` expressions given
//! values, against a bare repository standing in for GitHub, a scripted
//! `gh` and a scripted agent on PATH, offline. A first job opens the pull
//! request; a second, going on from the pushed branch, updates it. Every
//! YAML file of `examples/ci/` is read as YAML, and passes `yamllint` with
//! CI's rules wherever yamllint is installed (CI installs the pinned
//! release and names it in `YAMLLINT`, so that there it is never skipped).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use yaml_rust2::{Yaml, YamlLoader};

use crate::harness::forge::FakeForge;
use crate::harness::story_run::{TWO_STORIES, finish_story, story_done};
use crate::harness::*;

const WORKFLOW: &str = "examples/ci/github-actions.yml";
const GITLAB: &str = "examples/ci/gitlab-ci.yml";

pub(crate) fn load(rel: &str) -> Yaml {
    let text = fs::read_to_string(source_path(rel)).unwrap();
    load_text(&text, rel)
}

/// `text`, read as the one YAML document of the file `name`.
pub(crate) fn load_text(text: &str, name: &str) -> Yaml {
    let mut docs =
        YamlLoader::load_from_str(text).unwrap_or_else(|err| panic!("{name} is not YAML: {err}"));
    assert_eq!(docs.len(), 1, "{name} holds one document");
    docs.remove(0)
}

/// The yamllint to judge the YAML with: `$YAMLLINT`, which CI sets to the
/// pinned release it installs (so there it cannot be missing), else
/// `yamllint` on PATH, else none.
pub(crate) fn yamllint() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("YAMLLINT") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "YAMLLINT names {path:?}, which is missing");
        return Some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("yamllint"))
        .find(|path| path.is_file())
}

/// `file` judged by `yamllint` with CI's rules (`.ci/yamllint.yml`): each
/// finding as `file:line:column: [level] message (rule)`; none when clean.
pub(crate) fn yamllint_findings(yamllint: &Path, file: &Path) -> Vec<String> {
    let output = run(std::process::Command::new(yamllint)
        .current_dir(source_path(""))
        .args(["--strict", "--format", "parsable", "--config-file"])
        .arg(source_path(".ci/yamllint.yml"))
        .arg(file));
    let findings: Vec<String> = stdout(&output).lines().map(str::to_owned).collect();
    assert!(
        output.status.success() || !findings.is_empty(),
        "yamllint failed on {}: {}",
        file.display(),
        describe(&output)
    );
    findings
}

pub(crate) fn text<'a>(yaml: &'a Yaml, what: &str) -> &'a str {
    yaml.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {yaml:?}"))
}

pub(crate) fn steps<'a>(workflow: &'a Yaml, job: &str) -> &'a [Yaml] {
    workflow["jobs"][job]["steps"]
        .as_vec()
        .unwrap_or_else(|| panic!("job {job} has no steps"))
}

pub(crate) fn step<'a>(workflow: &'a Yaml, job: &str, name: &str) -> &'a Yaml {
    steps(workflow, job)
        .iter()
        .find(|step| step["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("job {job} has no step '{name}'"))
}

/// `text` with every `${{ … }}` replaced from `values`; an expression the
/// test gives no value to fails it, so that a new one is noticed.
pub(crate) fn substitute(text: &str, values: &BTreeMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .unwrap_or_else(|| panic!("an unclosed expression in {text:?}"))
            + start;
        let expression = rest[start + 3..end].trim();
        let value = values
            .get(expression)
            .unwrap_or_else(|| panic!("the test gives no value to ${{{{ {expression} }}}}"));
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The environment of a step as the runner builds it: the workflow's, the
/// job's, then the step's own, expressions given values.
pub(crate) fn step_env(
    workflow: &Yaml,
    job: &str,
    step: &Yaml,
    values: &BTreeMap<&str, &str>,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for layer in [
        &workflow["env"],
        &workflow["jobs"][job]["env"],
        &step["env"],
    ] {
        if let Some(hash) = layer.as_hash() {
            for (key, value) in hash {
                let value = match value {
                    Yaml::String(text) => substitute(text, values),
                    Yaml::Integer(n) => n.to_string(),
                    other => panic!("an env value that is not a string: {other:?}"),
                };
                env.push((text(key, "an env key").to_owned(), value));
            }
        }
    }
    env
}

/// Runs a `run:` step the way GitHub's runner does on Linux.
pub(crate) fn run_step(
    env: &TestEnv,
    dir: &Path,
    workflow: &Yaml,
    job: &str,
    name: &str,
    values: &BTreeMap<&str, &str>,
    runner: &[(&str, String)],
) -> Output {
    run(&mut step_command(
        env, dir, workflow, job, name, values, runner,
    ))
}

/// The command [`run_step`] runs, for a test that watches it run.
pub(crate) fn step_command(
    env: &TestEnv,
    dir: &Path,
    workflow: &Yaml,
    job: &str,
    name: &str,
    values: &BTreeMap<&str, &str>,
    runner: &[(&str, String)],
) -> std::process::Command {
    let step = step(workflow, job, name);
    let script = substitute(text(&step["run"], "run"), values);
    let mut cmd = env.command("bash", dir);
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script]);
    for (key, value) in step_env(workflow, job, step, values) {
        cmd.env(key, value);
    }
    for (key, value) in runner {
        cmd.env(key, value);
    }
    cmd
}

/// Every `.yml` file of `examples/ci/`, by its path in the project.
fn ci_examples() -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(source_path("examples/ci"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yml") || name.ends_with(".yaml"))
        .map(|name| format!("examples/ci/{name}"))
        .collect();
    files.sort();
    files
}

#[test]
fn issue_48_every_ci_example_is_yaml_and_passes_yamllint() {
    let files = ci_examples();
    assert!(
        files.contains(&WORKFLOW.to_owned()) && files.contains(&GITLAB.to_owned()),
        "{files:?}"
    );
    for file in &files {
        load(file);
    }
    let Some(yamllint) = yamllint() else {
        eprintln!(
            "yamllint was skipped: it is not on PATH (pip install yamllint==1.37.1); {} were read as YAML",
            files.join(", ")
        );
        return;
    };
    for file in &files {
        let findings = yamllint_findings(&yamllint, Path::new(file));
        assert!(
            findings.is_empty(),
            "yamllint finds {file} unclean:\n{}",
            findings.join("\n")
        );
    }
}

#[test]
fn issue_26_the_workflow_runs_one_job_per_change_and_keeps_its_record() {
    let workflow = load(WORKFLOW);
    let on = &workflow["on"];
    assert!(!on["workflow_dispatch"]["inputs"]["changes"].is_badvalue());
    assert_eq!(on["issues"]["types"][0].as_str(), Some("labeled"));
    assert_eq!(workflow["permissions"]["contents"].as_str(), Some("write"));
    assert_eq!(
        workflow["permissions"]["pull-requests"].as_str(),
        Some("write")
    );

    let job = &workflow["jobs"]["run"];
    assert!(
        job["timeout-minutes"].as_i64().is_some_and(|m| m > 0),
        "a timeout"
    );
    assert_eq!(
        job["strategy"]["matrix"]["change"].as_str(),
        Some("${{ fromJSON(needs.plan.outputs.changes) }}"),
        "one job per change"
    );
    assert_eq!(job["strategy"]["fail-fast"].as_bool(), Some(false));
    let run = step(&workflow, "run", "Run the change");
    assert_eq!(
        run["env"]["ANTHROPIC_API_KEY"].as_str(),
        Some("${{ secrets.ANTHROPIC_API_KEY }}"),
        "the agent's key is a secret"
    );
    let artifact = steps(&workflow, "run")
        .iter()
        .find(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with("actions/upload-artifact@"))
        })
        .expect("the run's record is uploaded");
    assert_eq!(artifact["if"].as_str(), Some("always()"));
    assert_eq!(
        artifact["with"]["path"].as_str(),
        Some(".git/ralph/${{ matrix.change }}/")
    );
    assert_eq!(
        artifact["with"]["include-hidden-files"].as_bool(),
        Some(true)
    );
    let script = fs::read_to_string(source_path("examples/ci/run-change.sh")).unwrap();
    assert!(script.contains("--on-finish pr"), "{script}");

    // Every step is either run by the test below, or stood in for by it.
    let names: Vec<String> = steps(&workflow, "run")
        .iter()
        .map(|step| {
            step["name"]
                .as_str()
                .or(step["uses"].as_str().and_then(|u| u.split('@').next()))
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "actions/checkout",
            "actions/cache",
            "Install git-ralph",
            "Install the agent CLI",
            "Run the change",
            "Keep the run's record"
        ]
    );

    let gitlab = load(GITLAB);
    let job = &gitlab["git-ralph"];
    assert!(job["timeout"].as_str().is_some(), "a timeout");
    assert_eq!(job["artifacts"]["when"].as_str(), Some("always"));
    let script: Vec<&str> = job["script"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(script, ["/tmp/git-ralph/examples/ci/run-change.sh"]);
}

#[test]
fn issue_26_the_plan_step_lists_the_changes_of_the_input_or_the_label() {
    let workflow = load(WORKFLOW);
    let env = TestEnv::new();
    let plan = |changes: &str, label: &str| {
        let output_file = env.dir.path().join("github-output");
        let _ = fs::remove_file(&output_file);
        let values = BTreeMap::from([
            ("inputs.changes", changes),
            ("github.event.label.name", label),
            ("vars.GIT_RALPH_REPOSITORY", ""),
            ("vars.GIT_RALPH_REF || 'main'", "main"),
        ]);
        let output = run_step(
            &env,
            env.dir.path(),
            &workflow,
            "plan",
            "List the changes",
            &values,
            &[("GITHUB_OUTPUT", output_file.display().to_string())],
        );
        (output, fs::read_to_string(&output_file).unwrap_or_default())
    };
    let (output, written) = plan("greet  add-dark_mode.2", "");
    assert_success(&output);
    assert_eq!(written, "changes=[\"greet\",\"add-dark_mode.2\"]\n");
    let (output, written) = plan("", "ralph:greet");
    assert_success(&output);
    assert_eq!(written, "changes=[\"greet\"]\n");
    for bad in ["", "a\"b", "-x", ".hidden", "*"] {
        let (output, written) = plan(bad, "");
        assert_exit(&output, 1);
        assert_eq!(written, "", "{bad:?}");
    }
}

/// A runner's machine: `git ralph` and a `claude` that is the fake agent
/// on PATH, after the scripted `gh`, and git-ralph's checkout in
/// RUNNER_TEMP, as the install steps leave them.
pub(crate) struct Runner {
    pub(crate) temp: PathBuf,
    pub(crate) bin: PathBuf,
}

impl Runner {
    pub(crate) fn new(env: &TestEnv) -> Runner {
        Runner::new_named(env, "runner")
    }

    /// A runner of its own beside others: `<name>-temp`, `<name>-bin`.
    pub(crate) fn new_named(env: &TestEnv, name: &str) -> Runner {
        let temp = env.dir.path().join(format!("{name}-temp"));
        let bin = env.dir.path().join(format!("{name}-bin"));
        fs::create_dir_all(&temp).unwrap();
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(source_path(""), temp.join("git-ralph")).unwrap();
        std::os::unix::fs::symlink(ralph_path(), bin.join("git-ralph")).unwrap();
        let claude = bin.join("claude");
        fs::write(
            &claude,
            format!("#!/bin/sh\nexec '{}' \"$@\"\n", fake_agent_path()),
        )
        .unwrap();
        fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
        Runner { temp, bin }
    }

    /// What the runner adds to a step's environment.
    pub(crate) fn env(
        &self,
        forge: &FakeForge,
        agent_script: &Path,
        records: &Path,
    ) -> Vec<(&'static str, String)> {
        let path = std::env::var("PATH").unwrap_or_default();
        vec![
            (
                "PATH",
                format!("{}:{}:{path}", forge.bin.display(), self.bin.display()),
            ),
            ("RUNNER_TEMP", self.temp.display().to_string()),
            ("CI", "true".into()),
            ("FAKE_FORGE_DIR", forge.records.display().to_string()),
            ("FAKE_AGENT_SCRIPT", agent_script.display().to_string()),
            ("FAKE_AGENT_RECORD_DIR", records.display().to_string()),
        ]
    }
}

#[test]
fn issue_26_the_workflows_run_step_opens_then_updates_a_pull_request() {
    let workflow = load(WORKFLOW);
    // The project as GitHub holds it.
    let project = crate::harness::story_run::project(TWO_STORIES);
    let origin = project.dir.path().join("origin.git");
    project.git_at(
        project.dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            origin.to_str().unwrap(),
        ],
    );
    project.git(&["push", "-q", origin.to_str().unwrap(), "main"]);
    // Every story gets one attempt, so that the first job stops early.
    fs::write(project.global_config(), "[ralph]\n\tmaxRetries = 0\n").unwrap();
    let forge = FakeForge::new(&project);
    let runner = Runner::new(&project);
    let values = BTreeMap::from([
        ("matrix.change", "greet"),
        ("inputs.agent || 'claude'", "claude"),
        ("inputs.base || github.ref_name", "main"),
        ("github.token", "a-token"),
        ("secrets.ANTHROPIC_API_KEY", "a-key"),
        ("secrets.OPENAI_API_KEY", ""),
        ("secrets.GEMINI_API_KEY", ""),
        ("vars.GIT_RALPH_REPOSITORY", ""),
        ("vars.GIT_RALPH_REF || 'main'", "main"),
    ]);
    // One job: a fresh checkout, the step, and what it left.
    let job = |name: &str, agent: &str, start_args: &str| {
        let checkout = project.dir.path().join(name);
        project.git_at(
            project.dir.path(),
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                checkout.to_str().unwrap(),
            ],
        );
        let agent_script = script(&project, &format!("format claude\n{agent}"));
        let records = project.dir.path().join(format!("{name}-records"));
        let mut env = runner.env(&forge, &agent_script, &records);
        env.push(("RALPH_START_ARGS", start_args.to_owned()));
        let output = run_step(
            &project,
            &checkout,
            &workflow,
            "run",
            "Run the change",
            &values,
            &env,
        );
        (checkout, output)
    };
    let remote_tip = || {
        project
            .git_at(&origin, &["rev-parse", "refs/heads/ralph/greet"])
            .trim()
            .to_string()
    };

    // The first job does story 1 and stops at story 2: a pull request with
    // what was done.
    let (first, output) = job(
        "job-1",
        &format!(
            "[story=1]\n{}[story=2]\npromise FAILED: not today\n",
            finish_story("1")
        ),
        "",
    );
    assert_exit(&output, 3);
    let first_tip = project
        .git_at(&first, &["rev-parse", "ralph/greet"])
        .trim()
        .to_string();
    assert_eq!(remote_tip(), first_tip);
    assert_eq!(
        forge.verbs(),
        ["gh pr list", "gh pr create"],
        "{}",
        describe(&output)
    );
    let create = &forge.calls()[1];
    assert!(
        create.args.contains(&"--base=main".to_owned()),
        "{:?}",
        create.args
    );
    assert!(
        create.args.contains(&"--title=Greet".to_owned()),
        "{:?}",
        create.args
    );
    assert!(
        create.stdin.contains("**1 of 2 stories done**"),
        "{}",
        create.stdin
    );
    // The artifact's path, as the workflow names it, holds the run.
    let artifact = step(&workflow, "run", "Keep the run's record");
    let path = substitute(text(&artifact["with"]["path"], "path"), &values);
    assert!(first.join(&path).join("state.json").is_file(), "{path}");

    // A second job takes the run up from its pushed record, with one more
    // retry for the story that used its own, and updates the pull request.
    let (second, output) = job("job-2", &story_done("2"), "--max-retries 1");
    assert_exit(&output, 0);
    assert!(
        stdout(&output)
            .contains("going on from ralph/greet as origin has it, with the run's record"),
        "{}",
        describe(&output)
    );
    let state: serde_json::Value =
        serde_json::from_slice(&fs::read(second.join(".git/ralph/greet/state.json")).unwrap())
            .unwrap();
    let attempts = |id: &str| {
        state["stories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["attempts"].as_array().unwrap().len())
    };
    // The first job's attempts count: story 1 was not done again, and the
    // second job's attempt at story 2 is its second.
    assert_eq!((attempts("1"), attempts("2")), (Some(1), Some(2)));
    let tip = project
        .git_at(&second, &["rev-parse", "ralph/greet"])
        .trim()
        .to_string();
    assert_eq!(remote_tip(), tip);
    assert!(
        project
            .git_at(&second, &["merge-base", "--is-ancestor", &first_tip, &tip])
            .is_empty(),
        "a fast-forward"
    );
    assert_eq!(
        forge.verbs(),
        ["gh pr list", "gh pr create", "gh pr list", "gh pr edit"]
    );
    assert!(forge.calls()[3].stdin.contains("**2 of 2 stories done**"));
    let done = project.git_at(&origin, &["ls-tree", "-r", "--name-only", "ralph/greet"]);
    assert!(
        done.contains("story-1.txt") && done.contains("story-2.txt"),
        "{done}"
    );
}
