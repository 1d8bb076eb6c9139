//! Every `--agent` preset, end to end through the real binary: a stand-in
//! CLI with the preset's program name is put first on PATH. It records the
//! arguments, environment and stdin it was given, does an agent's work
//! (writes a file, ticks the story's box, and leaves the files the real CLI
//! keeps for itself), replays a transcript of that CLI and exits with the
//! transcript's exit code. So argument building, prompt passing, the parser,
//! exit-code handling and the agent's own files are checked together, per
//! preset, along with `git ralph agents`.
//!
//! Transcripts ending in `.doc.jsonl` / `.doc.txt` are documentation-based:
//! built from the CLI's documented output, not recorded (see each fixture
//! directory's README).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::harness::*;
use serde_json::Value;

const CHANGE: &str = "add-greeting";
const TASKS: &str = "openspec/changes/add-greeting/tasks.md";
const MODEL: &str = "test-model";

/// One preset and the exact arguments it must give its CLI, in order, with
/// `--model test-model` and `ralph.<agent>.args = "--extra one"`.
struct Case {
    preset: &'static str,
    program: &'static str,
    fixtures: &'static str,
    /// The transcript names: (the complete run, the failing run).
    transcripts: (&'static str, &'static str),
    model: bool,
    /// The arguments, as one line split at its spaces.
    args: &'static str,
    prompt: Prompt,
    /// Variables the preset sets in the CLI's environment.
    env: &'static [(&'static str, &'static str)],
    /// Files the real CLI leaves in the worktree, which the stand-in
    /// leaves too: none may reach a checkpoint or be reverted away.
    scratch: &'static [&'static str],
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Prompt {
    Stdin,
    LastArgument,
    File,
}

/// Recorded from the CLI: a complete run, and an API error.
const RECORDED: (&str, &str) = ("complete.jsonl", "api-error.jsonl");
/// Recorded from the CLI: a complete run, and a FAILED promise.
const RECORDED_FAILED_PROMISE: (&str, &str) = ("complete.jsonl", "failed.jsonl");
/// Built from the CLI's documented output.
const DOCUMENTED: (&str, &str) = ("complete.doc.jsonl", "api-error.doc.jsonl");

impl Case {
    /// A preset whose program and fixture directory bear its name, with
    /// [`RECORDED`] transcripts and a model option, that sets nothing in
    /// the CLI's environment and leaves no files of its own.
    const fn named(preset: &'static str, args: &'static str, prompt: Prompt) -> Case {
        Case {
            preset,
            program: preset,
            fixtures: preset,
            transcripts: RECORDED,
            model: true,
            args,
            prompt,
            env: &[],
            scratch: &[],
        }
    }

    fn args(&self) -> Vec<&'static str> {
        self.args.split(' ').collect()
    }
}

const CASES: &[Case] = &[
    Case {
        fixtures: "claude-code",
        ..Case::named(
            "claude",
            "-p --output-format stream-json --verbose --dangerously-skip-permissions \
             --model test-model --extra one",
            Prompt::Stdin,
        )
    },
    Case::named(
        "codex",
        "exec --json --dangerously-bypass-approvals-and-sandbox --model test-model --extra one -",
        Prompt::Stdin,
    ),
    Case::named(
        "gemini",
        "--output-format stream-json --yolo --skip-trust -m test-model --extra one -p",
        Prompt::LastArgument,
    ),
    Case::named(
        "opencode",
        "run --auto --format json --model test-model --extra one",
        Prompt::LastArgument,
    ),
    Case {
        transcripts: DOCUMENTED,
        model: false,
        ..Case::named(
            "amp",
            "-x --stream-json --dangerously-allow-all --extra one",
            Prompt::Stdin,
        )
    },
    Case {
        program: "cursor-agent",
        transcripts: DOCUMENTED,
        ..Case::named(
            "cursor",
            "-p --output-format stream-json --force --model test-model --extra one",
            Prompt::Stdin,
        )
    },
    Case::named(
        "copilot",
        "--allow-all-tools --allow-all-paths --allow-all-urls --output-format json \
         --model test-model --extra one -p",
        Prompt::LastArgument,
    ),
    Case {
        transcripts: ("complete.txt", "api-error.txt"),
        env: &[("COLUMNS", "10000")],
        scratch: &[".aider.chat.history.md", ".aider.tags.cache.v4/cache.db"],
        ..Case::named(
            "aider",
            "--yes-always --no-auto-commits --no-gitignore --no-stream --no-pretty \
             --model test-model --extra one --message-file",
            Prompt::File,
        )
    },
    Case {
        transcripts: RECORDED_FAILED_PROMISE,
        ..Case::named(
            "qwen",
            "--output-format stream-json --yolo --model test-model --extra one",
            Prompt::Stdin,
        )
    },
    Case {
        transcripts: RECORDED_FAILED_PROMISE,
        ..Case::named(
            "pi",
            "-p --mode json --no-session --model test-model --extra one",
            Prompt::Stdin,
        )
    },
    Case {
        transcripts: RECORDED_FAILED_PROMISE,
        ..Case::named(
            "kilo",
            "run --auto --format json --model test-model --extra one",
            Prompt::LastArgument,
        )
    },
    Case {
        transcripts: RECORDED_FAILED_PROMISE,
        ..Case::named(
            "droid",
            "exec --output-format stream-json --skip-permissions-unsafe --model test-model --extra one",
            Prompt::Stdin,
        )
    },
];

fn case(preset: &str) -> &'static Case {
    CASES
        .iter()
        .find(|case| case.preset == preset)
        .unwrap_or_else(|| panic!("no case for {preset}"))
}

fn fixture(dir: &str, name: &str) -> PathBuf {
    source_path("tests/fixtures").join(dir).join(name)
}

/// The `.exit` file next to a transcript.
fn exit_code_of(transcript: &Path) -> i32 {
    let name = transcript
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a transcript name");
    let stem = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".txt"))
        .expect("a transcript extension");
    let path = transcript.with_file_name(format!("{stem}.exit"));
    fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
        .trim()
        .parse()
        .expect("an exit code")
}

/// A repository whose last commit adds a one-story OpenSpec change.
fn project() -> TestRepo {
    TestRepo::with_change(CHANGE, "## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n")
}

fn records(repo: &TestRepo) -> PathBuf {
    repo.dir.path().join("cli-records")
}

fn quote(path: &Path) -> String {
    shell_quote(&path.to_string_lossy())
}

/// Puts a stand-in for `program` in the test's bin directory: it records its
/// arguments (NUL-separated), environment and stdin, works like an agent,
/// prints `transcript` and exits with the transcript's exit code.
fn install_cli(repo: &TestRepo, program: &str, transcript: &Path) {
    install_cli_leaving(repo, program, transcript, &[]);
}

/// [`install_cli`], with the stand-in also appending a line to each of
/// `scratch`, as the real CLI does to its history and cache.
fn install_cli_leaving(repo: &TestRepo, program: &str, transcript: &Path, scratch: &[&str]) {
    let bin = bin_dir(repo);
    fs::create_dir_all(&bin).expect("bin dir");
    let records = records(repo);
    fs::create_dir_all(&records).expect("records dir");
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = --version ]; then echo "{program} 9.9.9 (stand-in)"; exit 0; fi
rec={records}
printf '%s\0' "$@" > "$rec/argv"
env > "$rec/env"
cat > "$rec/stdin"
printf 'hello\n' > hello.txt
{scratch}sed 's/^- \[ \] 1\.1 /- [x] 1.1 /' {tasks} > {tasks}.new && mv {tasks}.new {tasks}
cat {transcript}
exit {code}
"#,
        records = quote(&records),
        program = program,
        tasks = TASKS,
        transcript = quote(transcript),
        code = exit_code_of(transcript),
        scratch = scratch
            .iter()
            .map(|path| format!(
                "mkdir -p \"$(dirname {path})\" && echo \"$RALPH_ATTEMPT\" >> {path}\n",
                path = quote(Path::new(path))
            ))
            .collect::<String>(),
    );
    let path = bin.join(program);
    fs::write(&path, script).expect("the stand-in is written");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("executable");
}

/// The stand-ins, then only the few tools they use: an agent CLI installed
/// on the machine must never be found, nor taken for a missing one.
fn path_with_bin(repo: &TestRepo) -> String {
    path_with_bin_and(
        repo,
        &[
            "sh", "sed", "cat", "printf", "mv", "env", "mkdir", "dirname", "git",
        ],
    )
}

/// `git ralph <args>` with the stand-ins first on PATH.
fn ralph_on_path(repo: &TestRepo, args: &[&str]) -> Output {
    run(ralph(repo).env("PATH", path_with_bin(repo)).args(args))
}

/// `start` with the case's preset, keeping the branch, as JSON lines,
/// and `args`.
fn start_args<'a>(case: &'a Case, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec![
        "start",
        CHANGE,
        "--agent",
        case.preset,
        "--on-finish",
        "keep",
    ];
    all.extend(args);
    all.push("--json");
    all
}

fn start(repo: &TestRepo, case: &Case) -> Output {
    repo.git(&[
        "config",
        &format!("ralph.{}.args", case.preset),
        "--extra one",
    ]);
    let mut args = start_args(case, &["--max-retries", "0"]);
    if case.model {
        args.extend(["--model", MODEL]);
    }
    ralph_on_path(repo, &args)
}

fn recorded_argv(repo: &TestRepo) -> Vec<String> {
    let raw = fs::read(records(repo).join("argv")).expect("the stand-in recorded its arguments");
    let text = String::from_utf8(raw).expect("UTF-8 arguments");
    let mut args: Vec<String> = text.split('\0').map(str::to_owned).collect();
    // Each argument ends with a NUL, so the last piece is empty.
    assert_eq!(args.pop().as_deref(), Some(""));
    args
}

fn recorded_env(repo: &TestRepo) -> Vec<String> {
    let env = fs::read_to_string(records(repo).join("env")).expect("the stand-in recorded env");
    env.lines().map(str::to_owned).collect()
}

fn recorded_stdin(repo: &TestRepo) -> String {
    fs::read_to_string(records(repo).join("stdin")).expect("the stand-in recorded stdin")
}

/// The prompt git-ralph saved for story 1, attempt 1.
fn saved_prompt_path(repo: &TestRepo) -> PathBuf {
    repo.path(".git/ralph")
        .join(CHANGE)
        .join("attempts/1-1.prompt.md")
}

/// Checks that the CLI got exactly its preset's arguments and the prompt
/// where it expects it.
fn assert_invocation(repo: &TestRepo, case: &Case) {
    let argv = recorded_argv(repo);
    let prompt_path = saved_prompt_path(repo);
    let prompt = fs::read_to_string(&prompt_path).expect("the prompt is saved");
    assert!(prompt.contains(CHANGE), "{prompt}");
    let args = case.args();
    let fixed = args.len();
    assert!(argv.len() >= fixed, "{}: {argv:?}", case.preset);
    assert_eq!(argv[..fixed], args[..], "{}", case.preset);
    let rest = &argv[fixed..];
    let env = recorded_env(repo);
    for (key, value) in case.env {
        let line = format!("{key}={value}");
        assert!(
            env.contains(&line),
            "{}: {line} not in {env:?}",
            case.preset
        );
    }
    let stdin = recorded_stdin(repo);
    match case.prompt {
        Prompt::Stdin => {
            assert!(rest.is_empty(), "{}: {rest:?}", case.preset);
            assert_eq!(stdin, prompt, "{}: the prompt goes to stdin", case.preset);
        }
        Prompt::LastArgument => {
            assert_eq!(rest, std::slice::from_ref(&prompt), "{}", case.preset);
            assert_eq!(stdin, "", "{}: stdin is empty", case.preset);
        }
        Prompt::File => {
            assert_eq!(rest.len(), 1, "{}: {rest:?}", case.preset);
            let given = fs::read_to_string(&rest[0]).expect("the prompt file exists");
            assert_eq!(given, prompt, "{}", case.preset);
            assert_eq!(stdin, "", "{}: stdin is empty", case.preset);
        }
    }
}

/// A complete transcript: the story is checkpointed and the run succeeds.
fn completes(preset: &str) {
    let case = case(preset);
    let repo = project();
    install_cli_leaving(
        &repo,
        case.program,
        &fixture(case.fixtures, case.transcripts.0),
        case.scratch,
    );
    let output = start(&repo, case);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_invocation(&repo, case);
    assert_scratch_left_alone(&repo, case, &output);

    let branch = format!("ralph/{CHANGE}");
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some(format!("refs/heads/{branch}").as_str())
    );
    let subject = repo.git(&["log", "-1", "--format=%s", &branch]);
    assert!(
        subject.starts_with(&format!("ralph({CHANGE}): story 1")),
        "{subject}"
    );
    assert_eq!(
        repo.git(&["show", &format!("{branch}:hello.txt")]),
        "hello\n"
    );
    let tasks = repo.git(&["show", &format!("{branch}:{TASKS}")]);
    assert!(tasks.contains("- [x] 1.1"), "{tasks}");
    // The receipt names the CLI at the version it gave.
    let trailers = repo.git(&["log", "-1", "--format=%(trailers:key=Ralph-Agent)", &branch]);
    assert!(
        trailers.starts_with(&format!("Ralph-Agent: {preset} 9.9.9 (")),
        "{trailers}"
    );
    assert_eq!(repo.status_porcelain(), untracked_scratch(case));

    // The parsed events were logged, ending in the agent's own final word.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let final_texts: Vec<String> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|record| {
            let text = record.pointer("/event/final_text")?;
            text.as_str().map(str::to_owned)
        })
        .collect();
    assert!(
        final_texts
            .iter()
            .any(|text| text.contains("<promise>COMPLETE</promise>")),
        "{preset}: no done event with the promise in:\n{stdout}"
    );
}

/// An API error, or a FAILED promise (for the CLIs recorded with one): the
/// attempt fails, is preserved and reverted, and with no retries left the
/// run stops with exit code 3; a FAILED promise's reason is shown.
fn fails(preset: &str) {
    let case = case(preset);
    let repo = project();
    let transcript = fixture(case.fixtures, case.transcripts.1);
    install_cli_leaving(&repo, case.program, &transcript, case.scratch);
    let output = start(&repo, case);
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    assert_invocation(&repo, case);
    assert_scratch_left_alone(&repo, case, &output);

    let preserved = format!("refs/ralph/{CHANGE}/attempts/1/1");
    assert_eq!(
        repo.git(&["show", &format!("{preserved}:hello.txt")]),
        "hello\n",
        "the attempt's work is preserved"
    );
    assert!(!repo.path("hello.txt").exists(), "the worktree is reverted");
    assert!(repo.read(TASKS).contains("- [ ] 1.1"));

    let status = ralph_on_path(&repo, &["status", CHANGE, "--json"]);
    let report: Value = serde_json::from_slice(&status.stdout).expect("status --json");
    let attempt = &report["stories"][0]["attempts"][0];
    let reason = attempt["reason"].as_str().unwrap_or_default();
    match promised_failure(&transcript) {
        Some(promised) => {
            assert_eq!(attempt["outcome"], "failed", "{report:#}");
            assert!(reason.contains(&promised), "{reason}");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(stdout.contains(&promised), "{}", describe(&output));
            let human = ralph_on_path(&repo, &["status", CHANGE]);
            let text = String::from_utf8_lossy(&human.stdout);
            assert!(text.contains(&promised), "{text}");
        }
        None => {
            assert_eq!(attempt["outcome"], "agent_error", "{report:#}");
            assert!(reason.starts_with("the agent failed"), "{reason}");
        }
    }
}

/// The reason of the FAILED promise a transcript's `.expect` file names.
fn promised_failure(transcript: &Path) -> Option<String> {
    let expect = transcript.with_extension("expect");
    let text = fs::read_to_string(&expect)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", expect.display()));
    text.trim()
        .strip_prefix("failed:")
        .map(|reason| reason.trim().to_owned())
}

/// `git status --porcelain` of a worktree holding nothing but the CLI's
/// own files beyond the last checkpoint.
fn untracked_scratch(case: &Case) -> String {
    let mut lines: Vec<String> = case
        .scratch
        .iter()
        .map(|path| format!("?? {path}\n"))
        .collect();
    lines.sort();
    lines.concat()
}

/// Issue 14: the CLI's own files never reach a commit, survive the revert
/// of a failed attempt, and are not taken for unfinished work at finish;
/// .gitignore is left as it was.
fn assert_scratch_left_alone(repo: &TestRepo, case: &Case, output: &Output) {
    let commits = repo.git(&["rev-list", "--all"]);
    for commit in commits.lines() {
        let files = repo.git(&["ls-tree", "-r", "--name-only", commit]);
        for path in case.scratch {
            assert!(
                !files.lines().any(|file| file == *path),
                "{}: {path} committed in {commit}:\n{files}",
                case.preset
            );
        }
        assert!(!files.lines().any(|file| file == ".gitignore"), "{files}");
    }
    for path in case.scratch {
        assert_eq!(repo.read(path), "1\n", "{}: {path} kept", case.preset);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("set aside"), "{}: {stderr}", case.preset);
    repo.assert_fsck_clean();
}

/// Issue 14: a rate limit, after the CLI's own retries, pauses the run
/// rather than spending a retry and reverting. With no time to wait, the
/// run ends there (and finishing sets the work aside).
fn pauses_for_a_rate_limit(preset: &str) {
    let case = case(preset);
    let repo = project();
    let transcript = fixture(case.fixtures, "rate-limit.jsonl");
    let transcript = if transcript.exists() {
        transcript
    } else {
        fixture(case.fixtures, "rate-limit.txt")
    };
    install_cli_leaving(&repo, case.program, &transcript, case.scratch);
    let args = start_args(case, &["--max-rate-limit-wait", "0"]);
    let output = ralph_on_path(&repo, &args);
    let status = ralph_on_path(&repo, &["status", CHANGE, "--json"]);
    let report: Value = serde_json::from_slice(&status.stdout).expect("status --json");
    let attempts = &report["stories"][0]["attempts"];
    assert_eq!(attempts.as_array().map(Vec::len), Some(1), "{report:#}");
    assert_eq!(attempts[0]["outcome"], "rate_limited", "{report:#}");
    let reason = attempts[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("usage limit: "), "{reason}");
    assert!(reason.contains("rate limit"), "{reason}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("would exceed --max-rate-limit-wait"),
        "{}",
        describe(&output)
    );
    assert!(
        !repo.git_ok(&[
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/ralph/{CHANGE}/attempts/1/1")
        ]),
        "nothing was preserved and reverted"
    );
}

#[test]
fn claude_preset_end_to_end() {
    completes("claude");
    fails("claude");
}

#[test]
fn codex_preset_end_to_end() {
    completes("codex");
    fails("codex");
}

#[test]
fn gemini_preset_end_to_end() {
    completes("gemini");
    fails("gemini");
}

#[test]
fn opencode_preset_end_to_end() {
    completes("opencode");
    fails("opencode");
    pauses_for_a_rate_limit("opencode");
}

#[test]
fn amp_preset_end_to_end_documentation_based() {
    completes("amp");
    fails("amp");
}

#[test]
fn cursor_preset_end_to_end_documentation_based() {
    completes("cursor");
    fails("cursor");
}

#[test]
fn copilot_preset_end_to_end() {
    completes("copilot");
    fails("copilot");
}

#[test]
fn aider_preset_end_to_end() {
    completes("aider");
    fails("aider");
    pauses_for_a_rate_limit("aider");
}

#[test]
fn qwen_preset_end_to_end() {
    completes("qwen");
    fails("qwen");
    pauses_for_a_rate_limit("qwen");
}

#[test]
fn pi_preset_end_to_end() {
    completes("pi");
    fails("pi");
    pauses_for_a_rate_limit("pi");
}

#[test]
fn kilo_preset_end_to_end() {
    completes("kilo");
    fails("kilo");
    pauses_for_a_rate_limit("kilo");
}

#[test]
fn droid_preset_end_to_end() {
    completes("droid");
    fails("droid");
    pauses_for_a_rate_limit("droid");
}

#[test]
fn a_preset_whose_program_is_missing_is_refused_before_anything_changes() {
    let repo = project();
    let head = repo.rev_parse("HEAD");
    let output = ralph_on_path(&repo, &["start", CHANGE, "--agent", "copilot"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("'copilot' is not on PATH"), "{stderr}");
    assert!(stderr.contains("git ralph agents"), "{stderr}");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), head);
}

#[test]
fn a_model_for_a_preset_without_a_model_option_is_refused() {
    let repo = project();
    install_cli(&repo, "amp", &fixture("amp", "complete.doc.jsonl"));
    let output = ralph_on_path(
        &repo,
        &["start", CHANGE, "--agent", "amp", "--model", "fast"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("has no model option"), "{stderr}");
    assert!(stderr.contains("ralph.amp.args"), "{stderr}");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert!(!records(&repo).join("argv").exists(), "amp never ran");
}

#[test]
fn agents_lists_every_preset_with_its_command_line_and_whether_it_is_installed() {
    let repo = project();
    install_cli(&repo, "codex", &fixture("codex", "complete.jsonl"));
    install_cli(
        &repo,
        "cursor-agent",
        &fixture("cursor", "complete.doc.jsonl"),
    );
    repo.git(&["config", "ralph.codex.args", "--profile  fast"]);
    repo.git(&["config", "ralph.agent", "cursor"]);

    let output = ralph_on_path(&repo, &["agents", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).expect("a JSON array");
    let names: Vec<&str> = rows.iter().filter_map(|row| row["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "claude", "codex", "gemini", "opencode", "amp", "cursor", "copilot", "aider", "qwen",
            "pi", "kilo", "droid"
        ]
    );
    let row = |name: &str| {
        rows.iter()
            .find(|row| row["name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}"))
    };
    for name in names.iter().copied() {
        let installed = matches!(name, "codex" | "cursor");
        assert_eq!(row(name)["on_path"], installed, "{name}");
        assert_eq!(row(name)["default"], name == "cursor", "{name}");
    }
    assert_eq!(
        row("codex")["command_line"],
        "codex exec --json --dangerously-bypass-approvals-and-sandbox --profile fast - < <prompt>"
    );
    assert_eq!(row("cursor")["program"], "cursor-agent");
    assert_eq!(
        row("aider")["command_line"],
        "COLUMNS=10000 aider --yes-always --no-auto-commits --no-gitignore --no-stream --no-pretty --message-file <prompt-file>"
    );
    assert_eq!(row("aider")["scratch"][0], ".aider.chat.history.md");
    assert_eq!(row("opencode")["scratch"], serde_json::json!([]));
    assert_eq!(row("amp")["model_option"], Value::Null);
    assert_eq!(row("gemini")["model_option"], "-m");
    // Every preset but the vendor-only ones names the release it was
    // verified on.
    let verified: Vec<&str> = rows
        .iter()
        .filter(|row| row["verified_release"].is_string())
        .filter_map(|row| row["name"].as_str())
        .collect();
    assert_eq!(verified.len(), 10, "{verified:?}");
    assert_eq!(row("amp")["verified_release"], Value::Null);
    assert_eq!(row("claude")["verified_release"], "2.1.332");
    assert_eq!(row("droid")["verified_release"], "0.225.2");

    let human = ralph_on_path(&repo, &["agents"]);
    assert_eq!(human.status.code(), Some(0), "{}", describe(&human));
    let text = String::from_utf8_lossy(&human.stdout);
    for row in &rows {
        let line = row["command_line"].as_str().expect("a command line");
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    assert!(text.contains("gemini not found"), "{text}");
    assert!(!text.contains("cursor-agent not found"), "{text}");
    assert!(
        text.contains("gemini   Gemini CLI · understands 0.61.0 · gemini not found"),
        "{text}"
    );
    assert!(
        text.contains("cursor   Cursor CLI · cannot be verified (its vendor's service only)"),
        "{text}"
    );
}

/// Issue 35: `agents` says which releases of each CLI git-ralph
/// understands: from the oldest whose transcripts the tests hold to the
/// one it was verified on.
#[test]
fn issue_35_agents_says_which_releases_each_preset_understands() {
    let repo = project();
    let output = ralph_on_path(&repo, &["agents", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).expect("a JSON array");
    let row = |name: &str| {
        rows.iter()
            .find(|row| row["name"] == name)
            .unwrap_or_else(|| panic!("no row for {name}"))
            .clone()
    };
    assert_eq!(row("qwen")["releases"], "0.15.10 to 0.24.4");
    assert_eq!(row("qwen")["oldest_release"], "0.15.10");
    assert_eq!(row("claude")["releases"], "2.1.197 to 2.1.332");
    assert_eq!(row("kilo")["releases"], "7.7.7");
    assert_eq!(row("amp")["releases"], Value::Null);
    for row in &rows {
        assert_eq!(
            row["releases"].is_string(),
            row["verified_release"].is_string(),
            "{row}"
        );
    }
    let human = ralph_on_path(&repo, &["agents"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("qwen     Qwen Code · understands 0.15.10 to 0.24.4 · qwen not found"),
        "{text}"
    );
}

#[test]
fn agents_names_the_configured_command_that_replaces_the_presets() {
    let repo = project();
    repo.git(&["config", "ralph.agentCommand", "my-agent --fast"]);
    let output = ralph_on_path(&repo, &["agents", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&output.stdout).expect("a JSON array");
    assert!(rows.iter().all(|row| row["default"] == false), "{rows:?}");
    let human = ralph_on_path(&repo, &["agents"]);
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains("sh -c 'my-agent --fast' < <prompt>"),
        "{stderr}"
    );
}

#[test]
fn agents_works_outside_a_repository() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let repo = TestRepo::new();
    let output = ralph(&repo)
        .current_dir(dir.path())
        .env("PATH", path_with_bin(&repo))
        .arg("agents")
        .output()
        .expect("git-ralph runs");
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not in a git repository"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("claude -p --output-format stream-json"),
        "{stdout}"
    );
}
