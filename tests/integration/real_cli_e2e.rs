//! The real-CLI tier: every agent CLI found on PATH (installed from its
//! registry at its preset's verified release by `.ci/install-agent-clis`)
//! is run for real, offline, against git-ralph's scripted model stand-in:
//! once through `git ralph agents --verify NAME`, once through a whole
//! `git ralph start` of the three-story demo change, which must end
//! complete, and once through a run whose agent reports FAILED, whose
//! reason must be shown. A CLI that is not installed is skipped, and the
//! test says so. These are the tests that catch a new CLI release whose
//! output git-ralph no longer understands.
//!
//! Each test writes its CLI's row (agent, pinned release, installed
//! version, verdict) under `target/tmp/real-cli-verdicts/`; `.ci/run`
//! prints them as a table.
//!
//! Claude Code refuses its unattended mode as root unless `IS_SANDBOX=1`;
//! CI runs as root in a throwaway container, so the tests set it there.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::harness::{TestRepo, describe, ralph, source_path};
use git_ralph::agent::presets::{self, Preset};
use git_ralph::verification::{FAILED_REASON, pointing};
use serde_json::{Value, json};

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_git-ralph")
}

fn preset(name: &str) -> &'static Preset {
    presets::lookup(name).expect("a preset")
}

/// The CLI's program, or `None` (with the reason printed and its row
/// written) to skip.
pub(crate) fn installed(name: &str) -> Option<&'static str> {
    let program = preset(name).program;
    if std::env::var_os("GIT_RALPH_SKIP_REAL_CLIS").is_some() {
        println!("skipping {name}: GIT_RALPH_SKIP_REAL_CLIS is set");
        write_row(name, None, "skipped (GIT_RALPH_SKIP_REAL_CLIS)");
        return None;
    }
    if !git_ralph::process::is_runnable(program) {
        println!("skipping {name}: {program} is not on PATH (.ci/install-agent-clis installs it)");
        write_row(name, None, "not installed");
        return None;
    }
    Some(program)
}

/// Where each CLI's row of the table goes.
fn table_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-cli-verdicts")
}

/// One row: agent, the release its preset pins, the installed version and
/// the verdict, tab-separated.
fn write_row(name: &str, version: Option<&str>, verdict: &str) {
    let dir = table_dir();
    std::fs::create_dir_all(&dir).expect("the table directory");
    let pinned = preset(name).verified.unwrap_or("-");
    let row = format!("{name}\t{pinned}\t{}\t{verdict}\n", version.unwrap_or("-"));
    std::fs::write(dir.join(format!("{name}.tsv")), row).expect("a row");
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// `git ralph agents --verify NAME --json` must find the CLI verified.
fn verifies(name: &str) {
    let repo = TestRepo::new();
    let mut cmd = ralph(&repo);
    cmd.env("XDG_CACHE_HOME", repo.home().join(".cache"))
        .args(["agents", "--verify", name, "--json"]);
    if as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    let output = cmd.output().expect("git-ralph runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reports: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|err| panic!("{name}: not JSON ({err}):\n{stdout}\n{stderr}"));
    let report = &reports[0];
    let version = report["version"].as_str();
    let verdict = report["verdict"].as_str().unwrap_or("?");
    write_row(name, version, verdict);
    println!("{name} {}: {verdict}", version.unwrap_or("?"));
    assert_eq!(report["name"], name);
    assert_eq!(verdict, "verified", "{name}:\n{stdout}\n{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(report["scenarios"].as_array().map(Vec::len), Some(4));
    // The verdict is cached for this version, and `agents` shows it.
    let cache = std::fs::read_to_string(repo.home().join(".cache/git-ralph/verified.json"))
        .expect("the verdict is cached");
    assert!(cache.contains("\"verified\""), "{cache}");
    let listed = ralph(&repo)
        .env("XDG_CACHE_HOME", repo.home().join(".cache"))
        .args(["agents", "--json"])
        .output()
        .expect("git-ralph runs");
    let rows: Value = serde_json::from_slice(&listed.stdout).expect("JSON rows");
    let row = rows
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == name))
        .expect("the preset is listed");
    assert_eq!(row["version"], report["version"]);
    assert_eq!(row["verified"], "verified");
    assert_eq!(row["verified_release"], json!(preset(name).verified));
}

/// The stand-in as its own process, serving `script`; killed on drop.
struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, script: &Value) -> Served {
    let file = dir.join("script.json");
    std::fs::write(&file, script.to_string()).expect("script written");
    let mut child = Command::new(binary())
        .args(["__standin", "--script"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the stand-in starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("the stand-in prints its URL");
    let base = line.trim().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    Served { child, base }
}

/// `git ralph start CHANGE --agent NAME` with the CLI pointed at a
/// stand-in serving `turns`, no retries.
pub(crate) fn start(repo: &TestRepo, name: &str, change: &str, turns: Value) -> Output {
    start_with(repo, name, change, turns, &[])
}

/// [`start`] with `extra` arguments after the others.
pub(crate) fn start_with(
    repo: &TestRepo,
    name: &str,
    change: &str,
    turns: Value,
    extra: &[&str],
) -> Output {
    let tools = pointing::offers_tools(name);
    let served = serve(repo.dir.path(), &json!({"turns": turns, "tools": tools}));
    let cli_home = repo.dir.path().join("cli-home");
    let mut env = pointing::home_env(&cli_home).expect("a CLI home");
    env.extend(
        pointing::point(name, &served.base, &cli_home)
            .expect("config written")
            .expect("the CLI can be pointed at the stand-in"),
    );
    let mut cmd = ralph(repo);
    cmd.envs(env)
        // git-ralph's own git stays on the locked test configuration.
        .env("GIT_CONFIG_GLOBAL", repo.global_config())
        .args([
            "start",
            change,
            "--agent",
            name,
            "--on-finish",
            "keep",
            "--max-retries",
            "0",
        ])
        .args(extra);
    if as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    cmd.output().expect("git-ralph runs")
}

const DEMO: &str = git_ralph::demo::CHANGE;

/// A shell command that does whichever story of the demo is first open:
/// ticks every box of the first section that has an open one and writes
/// `story-N.txt` for it. No `$(…)`, which some CLIs refuse to run.
fn next_story_command() -> String {
    let tasks = format!("openspec/changes/{DEMO}/tasks.md");
    format!(
        "awk '/^## /{{if(f)d=1; h=$2}} !d && /- \\[ \\]/{{f=1; sub(/- \\[ \\]/, \"- [x]\"); s=h}} \
         {{print}} END{{print \"done\" > (\"story-\" s \"txt\")}}' {tasks} > {tasks}.new \
         && mv {tasks}.new {tasks}"
    )
}

/// The three-story demo change, done for real by the CLI through the
/// stand-in, one story per agent process: every story is checkpointed on
/// ralph/hello-demo and the run ends complete. Aider offers the model no
/// tools, and its edit blocks cannot be the same for three stories, so it
/// does a one-story change instead.
fn runs_the_demo(name: &str) {
    if !pointing::offers_tools(name) {
        return runs_one_story_in_edit_blocks(name);
    }
    let repo = TestRepo::new();
    git_ralph::demo::write_project(&repo.root).expect("the demo project");
    repo.commit_all("The demo change");
    let turns = json!([
        {"kind": "shell", "command": next_story_command()},
        {"kind": "text", "text": "The story is done.\n\n<promise>COMPLETE</promise>"}
    ]);
    let output = start(&repo, name, DEMO, turns);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{name}:\n{}",
        describe(&output)
    );
    let branch = format!("ralph/{DEMO}");
    let subjects = repo.git(&["log", "--format=%s", &format!("main..{branch}")]);
    let stories: Vec<&str> = subjects
        .lines()
        .filter(|subject| subject.starts_with(&format!("ralph({DEMO}): story ")))
        .collect();
    assert_eq!(stories.len(), 3, "{name}: {subjects}");
    for story in ["1", "2", "3"] {
        assert_eq!(
            repo.git(&["show", &format!("{branch}:story-{story}.txt")]),
            "done\n",
            "{name}: story {story}"
        );
    }
    let tasks = repo.git(&[
        "show",
        &format!("{branch}:openspec/changes/{DEMO}/tasks.md"),
    ]);
    assert!(!tasks.contains("- [ ]"), "{name}: {tasks}");
    let status = repo.status_json(DEMO);
    assert_eq!(status["reason"], "completed", "{status:#}");
    assert_eq!(status["stories_done"], 3, "{status:#}");
    repo.assert_fsck_clean();
}

/// Aider's one story: hello.txt and the ticked box, told in edit blocks.
fn runs_one_story_in_edit_blocks(name: &str) {
    let change = "add-greeting";
    let tasks = format!("openspec/changes/{change}/tasks.md");
    let repo = TestRepo::with_change(change, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    let turns = json!([{"kind": "text", "text": format!(
        "hello.txt\n```\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n```\n\n\
         {tasks}\n```\n<<<<<<< SEARCH\n- [ ] 1.1 Create hello.txt\n=======\n\
         - [x] 1.1 Create hello.txt\n>>>>>>> REPLACE\n```\n\n<promise>COMPLETE</promise>")}]);
    let output = start(&repo, name, change, turns);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{name}:\n{}",
        describe(&output)
    );
    let branch = format!("ralph/{change}");
    let subject = repo.git(&["log", "-1", "--format=%s", &branch]);
    assert!(
        subject.starts_with(&format!("ralph({change}): story 1")),
        "{subject}"
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:hello.txt")]),
        "hello\n"
    );
    assert!(
        repo.git(&["show", &format!("{branch}:{tasks}")])
            .contains("- [x] 1.1")
    );
    repo.assert_fsck_clean();
}

/// A story whose agent reports FAILED: with no retries the run stops
/// (exit 3), the attempt is kept, and the reason is shown, on the run's
/// output and by `status`.
fn shows_why_it_failed(name: &str) {
    let change = "add-greeting";
    let repo = TestRepo::with_change(change, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    let last = json!({"kind": "text", "text": format!(
        "I cannot finish this story.\n\n<promise>FAILED: {FAILED_REASON}</promise>")});
    let turns = if pointing::offers_tools(name) {
        json!([{"kind": "shell", "command": "ls"}, last])
    } else {
        json!([last])
    };
    let output = start(&repo, name, change, turns);
    assert_eq!(
        output.status.code(),
        Some(3),
        "{name}:\n{}",
        describe(&output)
    );
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(shown.contains(FAILED_REASON), "{name}:\n{shown}");
    let status = repo.status_json(change);
    let attempt = &status["stories"][0]["attempts"][0];
    assert_eq!(attempt["outcome"], "failed", "{status:#}");
    assert!(
        attempt["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains(FAILED_REASON)),
        "{status:#}"
    );
    assert!(repo.git_ok(&[
        "rev-parse",
        "--verify",
        "-q",
        &format!("refs/ralph/{change}/attempts/1/1")
    ]));
    repo.assert_fsck_clean();
}

/// Each pin in `.ci/install-agent-clis` is its preset's verified release,
/// and every preset that can be verified is pinned there.
#[test]
fn the_installed_releases_are_the_verified_ones() {
    let script =
        std::fs::read_to_string(source_path(".ci/install-agent-clis")).expect("the install script");
    let (_, pins) = script.split_once("PINS='").expect("a PINS list");
    let (pins, _) = pins.split_once('\'').expect("the end of PINS");
    let mut pinned = Vec::new();
    for line in pins.lines().filter(|line| !line.trim().is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [name, registry, package] = words[..] else {
            panic!("a pin is 'preset registry package': {line}");
        };
        let release = match registry {
            "npm" => package.rsplit_once('@').map(|(_, release)| release),
            "pip" => package.split_once("==").map(|(_, release)| release),
            other => panic!("unknown registry {other}"),
        };
        assert_eq!(release, preset(name).verified, "{line}");
        pinned.push(name);
    }
    let verifiable: Vec<&str> = presets::TABLE
        .iter()
        .filter(|preset| preset.verified.is_some())
        .map(|preset| preset.name)
        .collect();
    pinned.sort_unstable();
    let mut expected = verifiable.clone();
    expected.sort_unstable();
    assert_eq!(pinned, expected);
}

macro_rules! real_cli {
    ($name:ident, $preset:literal) => {
        #[test]
        fn $name() {
            if installed($preset).is_none() {
                return;
            }
            verifies($preset);
            runs_the_demo($preset);
            shows_why_it_failed($preset);
        }
    };
}

real_cli!(claude_is_verified_and_runs_the_demo, "claude");
real_cli!(codex_is_verified_and_runs_the_demo, "codex");
real_cli!(gemini_is_verified_and_runs_the_demo, "gemini");
real_cli!(opencode_is_verified_and_runs_the_demo, "opencode");
real_cli!(copilot_is_verified_and_runs_the_demo, "copilot");
real_cli!(aider_is_verified_and_runs_a_story, "aider");
real_cli!(qwen_is_verified_and_runs_the_demo, "qwen");
real_cli!(pi_is_verified_and_runs_the_demo, "pi");
real_cli!(kilo_is_verified_and_runs_the_demo, "kilo");
real_cli!(droid_is_verified_and_runs_the_demo, "droid");

/// Issue 22: two real CLIs in two roles of one story, each through the
/// stand-in of its own API. Claude Code, the coder, writes a greeting and
/// ticks the box; Codex, the reviewer, passes it by its promise, but the
/// reviewer's verification wants the world greeted, so the story goes back
/// to the coder with that finding, and the coder's second pass greets the
/// world. The stand-in keeps no state between conversations, so the
/// coder's one scripted command decides by what the worktree holds.
#[test]
fn claude_codes_and_codex_reviews_a_story() {
    const CHANGE: &str = "add-greeting";
    const TASKS: &str = "openspec/changes/add-greeting/tasks.md";
    if installed("claude").is_none() || installed("codex").is_none() {
        return;
    }
    let repo = TestRepo::new();
    repo.openspec_change(CHANGE, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    repo.write(
        "ralph.toml",
        "[roles.reviewer.verification]\nmethod = \"external\"\ncommand = \"grep -q world hello.txt\"\n",
    );
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add the change"]);
    let coder = serve(
        repo.dir.path(),
        &json!({"turns": [
            {"kind": "shell", "command": format!(
                "if [ -f hello.txt ]; then echo 'hello, world' > hello.txt; else echo hello > hello.txt; fi \
                 && sed -i 's/- \\[ \\] 1.1/- [x] 1.1/' {TASKS}")},
            {"kind": "text", "text": "Done.\n\n<promise>IMPLEMENTATION_COMPLETE</promise>"}
        ], "tools": true}),
    );
    let reviewer_dir = repo.dir.path().join("reviewer");
    std::fs::create_dir_all(&reviewer_dir).expect("a directory");
    let reviewer = serve(
        &reviewer_dir,
        &json!({"turns": [
            {"kind": "text", "text": "Looks right to me.\n\n<promise>REVIEW_PASSED</promise>"}
        ], "tools": false}),
    );
    let cli_home = repo.dir.path().join("cli-home");
    let mut env = pointing::home_env(&cli_home).expect("a CLI home");
    for (preset, base) in [("claude", &coder.base), ("codex", &reviewer.base)] {
        env.extend(
            pointing::point(preset, base, &cli_home)
                .expect("config written")
                .expect("the CLI can be pointed at the stand-in"),
        );
    }
    let mut cmd = ralph(&repo);
    cmd.envs(env)
        .env("GIT_CONFIG_GLOBAL", repo.global_config())
        .args(["start", CHANGE, "--agent", "claude", "--on-finish", "keep"])
        .args([
            "--roles",
            "coder,reviewer",
            "--role-agent",
            "reviewer=codex",
        ])
        .arg("--json");
    if as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    let output = cmd.output().expect("git-ralph runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let branch = format!("ralph/{CHANGE}");
    assert_eq!(
        repo.git(&["show", &format!("{branch}:hello.txt")]),
        "hello, world\n"
    );
    let prompt = std::fs::read_to_string(
        repo.path(".git/ralph")
            .join(CHANGE)
            .join("attempts/1-3.prompt.md"),
    )
    .expect("the coder's second prompt");
    assert!(prompt.contains("Findings from the reviewer"), "{prompt}");
    assert!(prompt.contains("grep -q world hello.txt"), "{prompt}");
    let trailers = repo.git(&["log", "-1", "--format=%(trailers)", &branch]);
    assert!(
        trailers.contains("Ralph-Role: coder, 2 iterations"),
        "{trailers}"
    );
    assert!(
        trailers.contains("Ralph-Role: reviewer, 2 iterations (codex)"),
        "{trailers}"
    );
    repo.assert_fsck_clean();
}

/// Issue 37: `git ralph plan` with a real CLI, Claude Code, writing the
/// files with its own shell tool against the stand-in. Its first try
/// writes a story that says nowhere how to verify it and also touches the
/// README: the README is reverted and reported, and the story goes back
/// with the reader's words; the second try (the stand-in keeps no state,
/// so the scripted command decides by what the worktree holds) is
/// accepted, shown as the dry run shows it, and passes `openspec validate
/// --strict` when the OpenSpec CLI is installed.
#[test]
fn claude_writes_a_plan_that_git_ralph_holds_to_the_reader() {
    const CHANGE: &str = "add-greeting";
    if installed("claude").is_none() {
        return;
    }
    let repo = TestRepo::new();
    let folder = format!("openspec/changes/{CHANGE}");
    let command = format!(
        "d={folder}; mkdir -p $d/specs/greeting; \
         printf '## Why\\nVisitors are not greeted, and they leave without a word.\\n\\n## What Changes\\n- A greeting in hello.txt.\\n' > $d/proposal.md; \
         printf '## ADDED Requirements\\n\\n### Requirement: Greeting\\nThe project SHALL greet its visitors in hello.txt.\\n\\n#### Scenario: Greeted\\n- **WHEN** hello.txt is read\\n- **THEN** it holds a greeting\\n' > $d/specs/greeting/spec.md; \
         if [ -f $d/tasks.md ]; then printf '## 1. Greeting\\n\\n- [ ] 1.1 Create hello.txt\\n- [ ] 1.2 Verify: test -s hello.txt\\n' > $d/tasks.md; \
         else printf '## 1. Greeting\\n\\n- [ ] 1.1 Create hello.txt\\n' > $d/tasks.md; echo scribbled >> README.md; fi"
    );
    let served = serve(
        repo.dir.path(),
        &json!({"turns": [
            {"kind": "shell", "command": command},
            {"kind": "text", "text": "The plan is written."}
        ], "tools": true}),
    );
    let cli_home = repo.dir.path().join("cli-home");
    let mut env = pointing::home_env(&cli_home).expect("a CLI home");
    env.extend(
        pointing::point("claude", &served.base, &cli_home)
            .expect("config written")
            .expect("the CLI can be pointed at the stand-in"),
    );
    let openspec = crate::plan_e2e::openspec_cli();
    let mut cmd = ralph(&repo);
    cmd.envs(env)
        .env("GIT_CONFIG_GLOBAL", repo.global_config())
        .args(["plan", CHANGE, "Greet the visitors", "--agent", "claude"]);
    if let Some(openspec) = &openspec {
        cmd.env("PATH", crate::plan_e2e::path_with(openspec));
    }
    if as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    let output = cmd.output().expect("git-ralph runs");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains(&format!(
            "the agent changed README.md outside {folder}/; reverted"
        )),
        "{out}"
    );
    assert!(
        out.contains("story 1 (\"Greeting\") does not say how to verify it"),
        "{out}"
    );
    assert!(
        out.contains("try 2 accepted: 1 story, 2 tasks open"),
        "{out}"
    );
    assert!(
        out.contains(&format!("stories from: {folder}/tasks.md (openspec)")),
        "{out}"
    );
    assert!(
        out.trim_end()
            .ends_with(&format!("run it: git ralph start {CHANGE} --agent claude")),
        "{out}"
    );
    assert_eq!(repo.read("README.md"), "# Test project\n");
    assert_eq!(
        repo.status_porcelain(),
        format!(
            "?? {folder}/proposal.md\n?? {folder}/specs/greeting/spec.md\n?? {folder}/tasks.md\n"
        )
    );
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path(format!(".git/ralph/plans/{CHANGE}/1/plan.json")))
            .expect("the plan's record"),
    )
    .expect("JSON");
    assert_eq!(plan["status"], "accepted");
    assert_eq!(plan["totals"]["attempts"], 2);
    if let Some(openspec) = &openspec {
        let validated = Command::new(openspec)
            .args(["validate", CHANGE, "--strict", "--no-interactive"])
            .env("OPENSPEC_TELEMETRY", "0")
            .env("PATH", crate::plan_e2e::path_with(openspec))
            .current_dir(&repo.root)
            .output()
            .expect("openspec runs");
        assert!(validated.status.success(), "{}", describe(&validated));
    }
    repo.assert_fsck_clean();
}
