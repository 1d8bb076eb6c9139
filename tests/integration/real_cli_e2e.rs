//! The real-CLI tier: every agent CLI found on PATH (installed from its
//! registry by `.ci/install-agent-clis`) is run for real, offline, against
//! git-ralph's scripted model stand-in: once through `git ralph agents
//! --verify NAME`, and once through a whole `git ralph start` of a
//! one-story change. A CLI that is not installed is skipped, and the test
//! says so. These are the tests that catch a new CLI release whose output
//! git-ralph no longer understands.
//!
//! Claude Code refuses its unattended mode as root unless `IS_SANDBOX=1`;
//! CI runs as root in a throwaway container, so the tests set it there.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::harness::{TestRepo, ralph};
use git_ralph::verification::pointing;
use serde_json::{Value, json};

const CHANGE: &str = "add-greeting";
const TASKS: &str = "openspec/changes/add-greeting/tasks.md";

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_git-ralph")
}

/// The CLI's program, or `None` (with the reason printed) to skip.
fn installed(preset: &str) -> Option<&'static str> {
    let program = git_ralph::agent::presets::lookup(preset)
        .expect("a preset")
        .program;
    if std::env::var_os("GIT_RALPH_SKIP_REAL_CLIS").is_some() {
        println!("skipping {preset}: GIT_RALPH_SKIP_REAL_CLIS is set");
        return None;
    }
    if !git_ralph::process::is_runnable(program) {
        println!(
            "skipping {preset}: {program} is not on PATH (.ci/install-agent-clis installs it)"
        );
        return None;
    }
    Some(program)
}

fn as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// `git ralph agents --verify NAME --json` must find the CLI verified.
fn verifies(preset: &str) {
    let repo = TestRepo::new();
    let mut cmd = ralph(&repo);
    cmd.env("XDG_CACHE_HOME", repo.home().join(".cache"))
        .args(["agents", "--verify", preset, "--json"]);
    if as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    let output = cmd.output().expect("git-ralph runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reports: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|err| panic!("{preset}: not JSON ({err}):\n{stdout}\n{stderr}"));
    let report = &reports[0];
    println!("{preset} {}: {}", report["version"], report["verdict"]);
    assert_eq!(report["name"], preset);
    assert_eq!(
        report["verdict"], "verified",
        "{preset}:\n{stdout}\n{stderr}"
    );
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
        .and_then(|rows| rows.iter().find(|row| row["name"] == preset))
        .expect("the preset is listed");
    assert_eq!(row["version"], report["version"]);
    assert_eq!(row["verified"], "verified");
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

/// One story, done for real by the CLI through the stand-in: it writes
/// hello.txt, ticks the box and promises completion; git-ralph must
/// checkpoint it on ralph/add-greeting.
fn starts(preset: &str) {
    let repo = TestRepo::new();
    repo.openspec_change(CHANGE, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add the change"]);
    let tools = pointing::offers_tools(preset);
    let turns = if tools {
        json!([
            {"kind": "shell", "command": format!(
                "echo hello > hello.txt && sed -i 's/- \\[ \\] 1.1/- [x] 1.1/' {TASKS}")},
            {"kind": "text", "text": "Created hello.txt.\n\n<promise>COMPLETE</promise>"}
        ])
    } else {
        json!([{"kind": "text", "text": format!(
            "hello.txt\n```\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n```\n\n\
             {TASKS}\n```\n<<<<<<< SEARCH\n- [ ] 1.1 Create hello.txt\n=======\n\
             - [x] 1.1 Create hello.txt\n>>>>>>> REPLACE\n```\n\n<promise>COMPLETE</promise>")}])
    };
    let served = serve(repo.dir.path(), &json!({"turns": turns, "tools": tools}));
    let cli_home = repo.dir.path().join("cli-home");
    let mut env = pointing::home_env(&cli_home).expect("a CLI home");
    env.extend(
        pointing::point(preset, &served.base, &cli_home)
            .expect("config written")
            .expect("the CLI can be pointed at the stand-in"),
    );
    let mut cmd = ralph(&repo);
    cmd.envs(env)
        // git-ralph's own git stays on the locked test configuration.
        .env("GIT_CONFIG_GLOBAL", repo.global_config())
        .args([
            "start",
            CHANGE,
            "--agent",
            preset,
            "--on-finish",
            "keep",
            "--max-retries",
            "0",
            "--json",
        ]);
    if as_root() {
        cmd.env("IS_SANDBOX", "1");
    }
    let output = cmd.output().expect("git-ralph runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{preset}:\n{stdout}\n{stderr}"
    );
    let branch = format!("ralph/{CHANGE}");
    let subject = repo.git(&["log", "-1", "--format=%s", &branch]);
    assert!(
        subject.starts_with(&format!("ralph({CHANGE}): story 1")),
        "{subject}"
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:hello.txt")]),
        "hello\n"
    );
    assert!(
        repo.git(&["show", &format!("{branch}:{TASKS}")])
            .contains("- [x] 1.1")
    );
    repo.assert_fsck_clean();
}

macro_rules! real_cli {
    ($name:ident, $preset:literal) => {
        #[test]
        fn $name() {
            if installed($preset).is_none() {
                return;
            }
            verifies($preset);
            starts($preset);
        }
    };
}

real_cli!(claude_is_verified_and_runs_a_story, "claude");
real_cli!(codex_is_verified_and_runs_a_story, "codex");
real_cli!(gemini_is_verified_and_runs_a_story, "gemini");
real_cli!(opencode_is_verified_and_runs_a_story, "opencode");
real_cli!(copilot_is_verified_and_runs_a_story, "copilot");
real_cli!(aider_is_verified_and_runs_a_story, "aider");

/// Issue 22: two real CLIs in two roles of one story, each through the
/// stand-in of its own API. Claude Code, the coder, writes a greeting and
/// ticks the box; Codex, the reviewer, passes it by its promise, but the
/// reviewer's verification wants the world greeted, so the story goes back
/// to the coder with that finding, and the coder's second pass greets the
/// world. The stand-in keeps no state between conversations, so the
/// coder's one scripted command decides by what the worktree holds.
#[test]
fn claude_codes_and_codex_reviews_a_story() {
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
