//! The one harness every integration test stands on.
//!
//! - [`TestEnv`]: a temporary directory with its own `HOME` and an empty
//!   global git config, and commands locked down to it, so that no test sees
//!   the developer's git configuration, identity, clock or time zone, and no
//!   stray `GIT_*` variable from an outer git (a hook, a rebase) steers it;
//! - [`TestRepo`]: a repository inside such an environment;
//! - [`ralph`]: the one way to run the real binary, and [`run`], [`describe`]
//!   and [`assert_exit`] to judge what it did;
//! - the fake agent (`tests/support/fake_agent.rs`, see `FAKE_AGENT.md`):
//!   [`script`], [`ralph_with_fake`], [`fake_agent`] and what it recorded;
//! - readers for what a run leaves in `.git/ralph/<change>/`;
//! - [`forge`]: scripted `gh` and `glab` on PATH, for the hand-off;
//! - [`fuzz`]: the case counts and generators of the `fuzz_*` property tests;
//! - [`story_run`]: the story loop's end-to-end ground (a change, a
//!   recording agent wrapper, runs in the background);
//! - [`tmux`]: a tmux server of the test's own, for the loop screen;
//! - [`web`]: `git ralph serve` in the background and a raw HTTP client;
//! - [`browser`]: headless Chromium driven over WebDriver, for the pages.
#![allow(dead_code)]

pub mod api;
pub mod browser;
pub mod forge;
pub mod fuzz;
pub mod story_run;
pub mod tmux;
pub mod web;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// 2026-01-01T00:00:00Z in git's raw form, which both git and gix accept.
pub const FIXED_DATE: &str = "1767225600 +0000";
pub const AUTHOR_NAME: &str = "Test Author";
pub const AUTHOR_EMAIL: &str = "author@example.com";
pub const COMMITTER_NAME: &str = "Test Committer";
pub const COMMITTER_EMAIL: &str = "committer@example.com";

/// Variables from the outer environment that would change what git, gix, the
/// product or the fake agent do.
const LEAKY_PREFIXES: &[&str] = &["GIT_", "GIX_", "GITOXIDE_", "RALPH_", "FAKE_AGENT_"];
const LEAKY_NAMES: &[&str] = &[
    "EMAIL",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
];

/// Gives `cmd` the locked-down environment: no system config, an empty global
/// config at `global_config`, `HOME` at `home`, fixed identity and dates.
pub fn lock_env(cmd: &mut Command, home: &Path, global_config: &Path) {
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if LEAKY_PREFIXES.iter().any(|p| text.starts_with(p)) || LEAKY_NAMES.contains(&&*text) {
            cmd.env_remove(&name);
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", global_config)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_AUTHOR_NAME", AUTHOR_NAME)
        .env("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL)
        .env("GIT_AUTHOR_DATE", FIXED_DATE)
        .env("GIT_COMMITTER_NAME", COMMITTER_NAME)
        .env("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL)
        .env("GIT_COMMITTER_DATE", FIXED_DATE)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env("TZ", "UTC");
}

/// A home for commands that run outside any [`TestEnv`]; nothing writes there.
fn shared_home() -> PathBuf {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("locked-home");
    fs::create_dir_all(&home)
        .unwrap_or_else(|err| panic!("cannot create {}: {err}", home.display()));
    home
}

fn run_checked(cmd: &mut Command) -> String {
    let output = run(cmd);
    if !output.status.success() {
        panic!("{cmd:?} failed: {}", describe(&output));
    }
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn git_command(dir: &Path, home: &Path, global_config: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    lock_env(&mut cmd, home, global_config);
    cmd
}

/// Runs git in `dir` with the locked environment; returns stdout, panics with
/// stderr when git fails.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    run_checked(&mut git_command(
        dir,
        &shared_home(),
        Path::new("/dev/null"),
        args,
    ))
}

fn create_dir(path: &Path) {
    fs::create_dir_all(path)
        .unwrap_or_else(|err| panic!("cannot create {}: {err}", path.display()));
}

/// The locked-down environment: a temporary directory that holds `HOME`, the
/// (empty) global git config, fake-agent scripts and recordings. Every
/// command a test runs gets it through [`TestEnv::lock`].
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    home: PathBuf,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("cannot create tempdir: {err}"));
        let home = dir.path().join("home");
        create_dir(&home);
        let env = TestEnv { dir, home };
        let config = env.global_config();
        fs::write(&config, "")
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", config.display()));
        env
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The (empty) file that stands in for `~/.gitconfig`.
    pub fn global_config(&self) -> PathBuf {
        self.dir.path().join("gitconfig")
    }

    /// Where the fake agent records prompts and calls: outside any worktree.
    pub fn record_dir(&self) -> PathBuf {
        self.dir.path().join("records")
    }

    /// Locks `cmd` to this environment.
    pub fn lock(&self, cmd: &mut Command) {
        lock_env(cmd, &self.home, &self.global_config());
    }

    /// `program` locked to this environment, in `dir`, with no stdin.
    pub fn command(&self, program: impl AsRef<OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir).stdin(Stdio::null());
        self.lock(&mut cmd);
        cmd
    }

    /// Runs git in `dir` (any repository, not only [`TestRepo`]'s) with this
    /// environment; returns stdout, panics with stderr on failure.
    pub fn git_at(&self, dir: &Path, args: &[&str]) -> String {
        run_checked(&mut git_command(
            dir,
            &self.home,
            &self.global_config(),
            args,
        ))
    }
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

/// A repository in a [`TestEnv`], its worktree beside (not around) `HOME`,
/// the global config and the fake agent's files.
pub struct TestRepo {
    env: TestEnv,
    /// The worktree.
    pub root: PathBuf,
}

impl std::ops::Deref for TestRepo {
    type Target = TestEnv;

    fn deref(&self) -> &TestEnv {
        &self.env
    }
}

impl TestRepo {
    /// A repository on `main` with one commit holding a README.
    pub fn new() -> Self {
        let repo = Self::empty();
        repo.write("README.md", "# Test project\n");
        repo.git(&["add", "README.md"]);
        repo.git(&["commit", "-q", "-m", "Initial commit"]);
        repo
    }

    /// A repository whose `main` is unborn.
    pub fn empty() -> Self {
        let env = TestEnv::new();
        let root = env.dir.path().join("repo");
        create_dir(&root);
        let repo = TestRepo { env, root };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// Another machine: a clone of `url` (a bare repository standing in
    /// for the remote, as `origin`) in an environment of its own.
    pub fn clone_of(url: &Path) -> Self {
        let env = TestEnv::new();
        let root = env.dir.path().join("repo");
        env.git_at(
            env.dir.path(),
            &["clone", "-q", &url.to_string_lossy(), "repo"],
        );
        TestRepo { env, root }
    }

    /// [`TestRepo::new`] whose last commit adds the OpenSpec change `name`
    /// with `tasks_md`, so that the worktree starts clean.
    pub fn with_change(name: &str, tasks_md: &str) -> Self {
        let repo = Self::new();
        repo.openspec_change(name, tasks_md);
        repo.commit_all("Add the change");
        repo
    }

    /// [`TestRepo::new`] whose last commit adds `files` (path, content).
    pub fn with_files(files: &[(&str, &str)]) -> Self {
        let repo = Self::new();
        for (path, content) in files {
            repo.write(path, content);
        }
        repo.commit_all("Add the files");
        repo
    }

    /// Stages everything and commits it.
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file in the worktree, creating its directories.
    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            create_dir(parent);
        }
        fs::write(&path, content)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
        path
    }

    pub fn read(&self, rel: impl AsRef<Path>) -> String {
        let path = self.path(rel);
        fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
    }

    /// `program` locked to this environment, in the worktree.
    pub fn command_here(&self, program: impl AsRef<OsStr>) -> Command {
        self.command(program, &self.root)
    }

    /// `wrapper` (a program and its own arguments) running `template`: the
    /// template's program and arguments follow, in the worktree, locked,
    /// with the template's environment changes on top.
    pub fn wrap(&self, mut wrapper: Command, template: &Command) -> Command {
        wrapper
            .arg(template.get_program())
            .args(template.get_args())
            .current_dir(&self.root)
            .stdin(Stdio::null());
        self.lock(&mut wrapper);
        for (key, value) in template.get_envs() {
            match value {
                Some(value) => wrapper.env(key, value),
                None => wrapper.env_remove(key),
            };
        }
        wrapper
    }

    /// Runs git in the worktree; returns stdout, panics with stderr on failure.
    pub fn git(&self, args: &[&str]) -> String {
        self.git_at(&self.root, args)
    }

    pub fn git_ok(&self, args: &[&str]) -> bool {
        self.git_output(args).status.success()
    }

    pub fn git_output(&self, args: &[&str]) -> Output {
        run(&mut git_command(
            &self.root,
            self.home(),
            &self.global_config(),
            args,
        ))
    }

    pub fn status_porcelain(&self) -> String {
        self.git(&["status", "--porcelain=v1", "-uall", "--ignored=no"])
    }

    /// Asserts that the object database and refs are sound.
    pub fn assert_fsck_clean(&self) {
        let output = self.git_output(&["fsck", "--strict"]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "git fsck failed ({}):\n{stdout}{stderr}",
            output.status
        );
        let bad: Vec<&str> = stdout
            .lines()
            .chain(stderr.lines())
            .filter(|line| {
                let line = line.to_ascii_lowercase();
                line.contains("error") || line.contains("warning")
            })
            .collect();
        assert!(bad.is_empty(), "git fsck complained:\n{}", bad.join("\n"));
    }

    /// The full object id `rev` names; panics when it names nothing.
    pub fn rev_parse(&self, rev: &str) -> String {
        self.git(&["rev-parse", "--verify", "--end-of-options", rev])
            .trim()
            .to_string()
    }

    /// The ref HEAD points at, or `None` when HEAD is detached.
    pub fn head_symbolic(&self) -> Option<String> {
        let output = self.git_output(&["symbolic-ref", "-q", "HEAD"]);
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// The subjects of the newest `n` entries of HEAD's reflog, newest first.
    pub fn reflog(&self, n: usize) -> Vec<String> {
        self.git(&["reflog", "-n", &n.to_string(), "--format=%gs"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The tree git itself would record for the worktree as it stands,
    /// computed on a copy so this repository's index is left alone.
    pub fn write_tree_of_worktree_copy(&self) -> String {
        let copy = tempfile::tempdir().unwrap_or_else(|err| panic!("cannot create tempdir: {err}"));
        let target = copy.path().join("worktree");
        let status = Command::new("cp")
            .arg("-a")
            .arg(&self.root)
            .arg(&target)
            .status()
            .unwrap_or_else(|err| panic!("cannot run cp: {err}"));
        assert!(status.success(), "cp -a {} failed", self.root.display());
        self.git_at(&target, &["add", "-A"]);
        self.git_at(&target, &["write-tree"]).trim().to_string()
    }

    /// Writes an OpenSpec change with the given `tasks.md` and a short proposal.
    pub fn openspec_change(&self, name: &str, tasks_md: &str) -> PathBuf {
        let dir = Path::new("openspec/changes").join(name);
        self.write(
            dir.join("proposal.md"),
            format!(
                "## Why\nThe change `{name}` exists for a test.\n\n\
                 ## What Changes\n- Whatever its tasks say.\n"
            ),
        );
        self.write(dir.join("tasks.md"), tasks_md)
    }
}

impl Default for TestRepo {
    fn default() -> Self {
        Self::new()
    }
}

/// The path of the real `git-ralph` binary.
pub fn ralph_path() -> &'static str {
    env!("CARGO_BIN_EXE_git-ralph")
}

/// The real `git-ralph` binary, locked down, in the repository's worktree.
pub fn ralph(repo: &TestRepo) -> Command {
    repo.command_here(ralph_path())
}

/// `git ralph <args>` in the repository, run to the end.
pub fn ralph_cmd(repo: &TestRepo, args: &[&str]) -> Output {
    run(ralph(repo).args(args))
}

/// `git ralph start <args> --dry-run --agent-command true`: the preview,
/// with an agent that is never run.
pub fn dry_run(repo: &TestRepo, args: &[&str]) -> Output {
    run(ralph(repo)
        .arg("start")
        .args(args)
        .args(["--dry-run", "--agent-command", "true"]))
}

/// Runs `cmd` to the end; panics only when it cannot start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|err| panic!("cannot run {cmd:?}: {err}"))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The exit status and both streams, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        stdout(output),
        stderr(output)
    )
}

/// Asserts the exit code, showing both streams when it differs.
pub fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "expected exit {code}, got {}",
        describe(output)
    );
}

/// Asserts success, showing both streams when it failed.
pub fn assert_success(output: &Output) {
    assert!(output.status.success(), "{}", describe(output));
}

pub fn fake_agent_path() -> &'static str {
    env!("CARGO_BIN_EXE_fake-agent")
}

/// Writes a fake-agent script next to (not inside) the worktree and returns
/// its path; every call makes a new file, with its own call counter.
pub fn script(repo: &TestRepo, text: &str) -> PathBuf {
    let dir = repo.dir.path().join("scripts");
    create_dir(&dir);
    let taken = fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()))
        .count();
    let path = (taken + 1..)
        .map(|n| dir.join(format!("agent-{n}.script")))
        .find(|path| !path.exists())
        .unwrap_or_else(|| panic!("no free script name in {}", dir.display()));
    fs::write(&path, text).unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
    path
}

fn point_at_script(cmd: &mut Command, repo: &TestRepo, script_path: &Path) {
    cmd.env("FAKE_AGENT_SCRIPT", script_path)
        .env("FAKE_AGENT_RECORD_DIR", repo.record_dir());
}

/// [`ralph`] with the environment the fake agent reads; the test still passes
/// the options that make git-ralph run [`fake_agent_path`].
pub fn ralph_with_fake(repo: &TestRepo, script_path: &Path) -> Command {
    let mut cmd = ralph(repo);
    point_at_script(&mut cmd, repo, script_path);
    cmd
}

/// `git ralph start <change> --agent-command <fake agent> --on-finish keep`
/// with the fake agent following `script_path`; the test adds the rest.
pub fn fake_start(repo: &TestRepo, change: &str, script_path: &Path) -> Command {
    let mut cmd = ralph_with_fake(repo, script_path);
    cmd.args(["start", change, "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep"]);
    cmd
}

/// [`fake_start`] with a new script of `script_text`, `extra` options last,
/// run to the end.
pub fn start_with_fake(repo: &TestRepo, change: &str, script_text: &str, extra: &[&str]) -> Output {
    run(fake_start(repo, change, &script(repo, script_text)).args(extra))
}

/// The fake agent run directly, as git-ralph would run it but without any
/// `RALPH_*` variable: the test sets those it needs.
pub fn fake_agent(repo: &TestRepo, script_path: &Path) -> Command {
    let mut cmd = repo.command_here(fake_agent_path());
    point_at_script(&mut cmd, repo, script_path);
    cmd
}

/// The lines the fake agent appended to `calls.log`, oldest first.
pub fn recorded_calls(repo: &TestRepo) -> Vec<String> {
    let path = repo.record_dir().join("calls.log");
    match fs::read_to_string(&path) {
        Ok(text) => text.lines().map(str::to_string).collect(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => panic!("cannot read {}: {err}", path.display()),
    }
}

/// The prompt the fake agent received for that story and attempt.
pub fn recorded_prompt(repo: &TestRepo, story: &str, attempt: u32) -> String {
    let path = repo
        .record_dir()
        .join(format!("prompt-{story}-{attempt}.txt"));
    fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// How many times the fake agent ran with this script.
pub fn script_calls(script_path: &Path) -> u64 {
    let mut name = script_path.as_os_str().to_owned();
    name.push(OsStr::new(".calls"));
    match fs::read_to_string(PathBuf::from(name)) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("call counter holds {text:?}")),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => 0,
        Err(err) => panic!("cannot read the call counter: {err}"),
    }
}

/// What a run of `change` leaves in `.git/ralph/<change>/`, and what
/// `git ralph status` says of it.
impl TestRepo {
    pub fn run_dir(&self, change: &str) -> PathBuf {
        self.path(".git/ralph").join(change)
    }

    /// `events.jsonl` of the run.
    pub fn run_events(&self, change: &str) -> Vec<Value> {
        json_lines(&self.run_dir(change).join("events.jsonl"))
    }

    /// `state.json` of the run.
    pub fn run_state(&self, change: &str) -> Value {
        let path = self.run_dir(change).join("state.json");
        let text = fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
        serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()))
    }

    /// `git ralph status <change> --json`, which must succeed, parsed.
    pub fn status_json(&self, change: &str) -> Value {
        let output = ralph_cmd(self, &["status", change, "--json"]);
        assert_exit(&output, 0);
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("status --json is not JSON: {err}\n{}", stdout(&output)))
    }

    /// Commit subjects of `range`, newest first.
    pub fn subjects(&self, range: &str) -> Vec<String> {
        self.git(&["log", "--format=%s", range, "--"])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// A file of JSON lines, parsed; every line must be JSON.
pub fn json_lines(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    parse_json_lines(&text, &path.display().to_string())
}

/// Text of JSON lines (from `what`), parsed; every line must be JSON.
pub fn parse_json_lines(text: &str, what: &str) -> Vec<Value> {
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("{what} has a line that is not JSON: {line:?}: {err}"))
        })
        .collect()
}

/// The events of one type.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// Waits for `condition`, panicking with `what` after `timeout`.
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A byte-for-byte picture of a directory tree: every file's content and
/// mode, every directory and symlink.
pub fn disk_snapshot(root: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<String, (u32, Vec<u8>)>) {
        let entries =
            fs::read_dir(dir).unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()));
            let path = entry.path();
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let meta = fs::symlink_metadata(&path)
                .unwrap_or_else(|err| panic!("cannot stat {}: {err}", path.display()));
            let mode = meta.permissions().mode();
            if meta.is_dir() {
                into.insert(format!("{name}/"), (mode, Vec::new()));
                walk(root, &path, into);
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap_or_default();
                into.insert(name, (mode, target.to_string_lossy().as_bytes().to_vec()));
            } else {
                let bytes = fs::read(&path)
                    .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
                into.insert(name, (mode, bytes));
            }
        }
    }
    let mut into = BTreeMap::new();
    walk(root, root, &mut into);
    into
}

/// The names that differ between two snapshots.
pub fn snapshot_diff(
    before: &BTreeMap<String, (u32, Vec<u8>)>,
    after: &BTreeMap<String, (u32, Vec<u8>)>,
) -> Vec<String> {
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| before.get(*name) != after.get(*name))
        .map(
            |name| match (before.contains_key(name), after.contains_key(name)) {
                (true, false) => format!("removed {name}"),
                (false, true) => format!("added {name}"),
                _ => format!("changed {name}"),
            },
        )
        .collect()
}

/// Everything a refused command must not change: git's view of the
/// worktree, the refs, HEAD, and every byte on disk (`.git` included).
pub struct Untouched {
    status: String,
    refs: String,
    head: String,
    files: BTreeMap<String, (u32, Vec<u8>)>,
}

impl Untouched {
    /// Reads only: `status` runs without optional locks so that it does not
    /// refresh the index itself.
    pub fn take(repo: &TestRepo) -> Untouched {
        let status = repo.git(&[
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-uall",
            "--ignored",
        ]);
        Untouched {
            status,
            refs: repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            head: fs::read_to_string(repo.path(".git/HEAD")).expect("HEAD"),
            files: disk_snapshot(&repo.root),
        }
    }

    /// Asserts that nothing changed since this picture was taken.
    pub fn assert_still(&self, repo: &TestRepo, what: &str) {
        let after = Untouched::take(repo);
        assert_eq!(after.status, self.status, "{what}: git status changed");
        assert_eq!(after.refs, self.refs, "{what}: refs changed");
        assert_eq!(after.head, self.head, "{what}: HEAD changed");
        let diff = snapshot_diff(&self.files, &after.files);
        assert!(
            diff.is_empty(),
            "{what}: the disk changed:\n{}",
            diff.join("\n")
        );
    }
}

/// A path in the project's source tree.
pub fn source_path(rel: impl AsRef<Path>) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The first of `candidates` that is a file. A missing one is fine on a
/// developer's machine (the check is skipped with a note) but not in CI,
/// which installs it.
pub fn required(what: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    let found = candidates.iter().find(|path| path.is_file()).cloned();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is missing in CI; .ci/run should install it"
        );
        eprintln!("note: {what} is not installed; skipping this check");
    }
    found
}

/// A program on PATH, [`required`] in the same way.
pub fn required_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let candidates: Vec<PathBuf> = std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .collect();
    required(name, &candidates)
}

/// The test's own bin directory, where stand-ins for programs go.
pub fn bin_dir(repo: &TestRepo) -> PathBuf {
    repo.dir.path().join("bin")
}

/// A PATH of the test's [`bin_dir`], then links to `tools` alone: a
/// program installed on the machine that is neither is never found.
pub fn path_with_bin_and(repo: &TestRepo, tools: &[&str]) -> String {
    let linked = repo.dir.path().join("tools");
    if !linked.exists() {
        fs::create_dir_all(&linked).expect("tools dir");
        let outer = std::env::var_os("PATH").unwrap_or_default();
        for tool in tools {
            let found = std::env::split_paths(&outer)
                .map(|dir| dir.join(tool))
                .find(|path| path.is_file())
                .unwrap_or_else(|| panic!("{tool} is not on PATH"));
            std::os::unix::fs::symlink(found, linked.join(tool)).expect("a tool link");
        }
    }
    format!("{}:{}", bin_dir(repo).display(), linked.display())
}

/// `text` quoted for `sh`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Subjects of the story checkpoints of `change` on `ralph/<change>`,
/// oldest first.
pub fn story_commits_of(repo: &TestRepo, change: &str) -> Vec<String> {
    repo.git(&[
        "log",
        "--reverse",
        "--format=%s",
        &format!("main..ralph/{change}"),
    ])
    .lines()
    .filter(|subject| subject.starts_with(&format!("ralph({change}): story ")))
    .map(str::to_owned)
    .collect()
}
