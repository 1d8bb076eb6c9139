//! The shared ground for integration tests: throwaway repositories and
//! commands that run with a locked-down environment, so that no test sees the
//! developer's git configuration, identity, clock or time zone, and no stray
//! `GIT_*` variable from an outer git (a hook, a rebase) steers a test repo.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// A home for commands that run outside any [`TestRepo`]; nothing writes there.
fn shared_home() -> PathBuf {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("locked-home");
    fs::create_dir_all(&home)
        .unwrap_or_else(|err| panic!("cannot create {}: {err}", home.display()));
    home
}

fn run_checked(cmd: &mut Command) -> String {
    let output = cmd
        .output()
        .unwrap_or_else(|err| panic!("cannot run {cmd:?}: {err}"));
    if !output.status.success() {
        panic!(
            "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
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

/// A repository in a temporary directory that also holds its `HOME`, its
/// global config, fake-agent scripts and recordings, all outside the worktree.
pub struct TestRepo {
    pub dir: tempfile::TempDir,
    /// The worktree.
    pub root: PathBuf,
    home: PathBuf,
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
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("cannot create tempdir: {err}"));
        let root = dir.path().join("repo");
        let home = dir.path().join("home");
        for path in [&root, &home] {
            fs::create_dir_all(path)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", path.display()));
        }
        let config = dir.path().join("gitconfig");
        fs::write(&config, "")
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", config.display()));
        let repo = TestRepo { dir, root, home };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The (empty) file that stands in for `~/.gitconfig`.
    pub fn global_config(&self) -> PathBuf {
        self.dir.path().join("gitconfig")
    }

    /// Where the fake agent records prompts and calls: outside the worktree.
    pub fn record_dir(&self) -> PathBuf {
        self.dir.path().join("records")
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file in the worktree, creating its directories.
    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|err| panic!("cannot create {}: {err}", parent.display()));
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

    /// Locks `cmd` to this repository's environment.
    pub fn lock(&self, cmd: &mut Command) {
        lock_env(cmd, &self.home, &self.global_config());
    }

    fn git_cmd(&self, args: &[&str]) -> Command {
        git_command(&self.root, &self.home, &self.global_config(), args)
    }

    /// Runs git in the worktree; returns stdout, panics with stderr on failure.
    pub fn git(&self, args: &[&str]) -> String {
        run_checked(&mut self.git_cmd(args))
    }

    pub fn git_ok(&self, args: &[&str]) -> bool {
        self.git_output(args).status.success()
    }

    pub fn git_output(&self, args: &[&str]) -> Output {
        self.git_cmd(args)
            .output()
            .unwrap_or_else(|err| panic!("cannot run git {args:?}: {err}"))
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
        let git = |args: &[&str]| {
            run_checked(&mut git_command(
                &target,
                &self.home,
                &self.global_config(),
                args,
            ))
        };
        git(&["add", "-A"]);
        git(&["write-tree"]).trim().to_string()
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

/// The real `git-ralph` binary, locked down, in the repository's worktree.
pub fn ralph(repo: &TestRepo) -> Command {
    // A crate that builds only the fake agent has no git-ralph binary to offer.
    let Some(binary) = option_env!("CARGO_BIN_EXE_git-ralph") else {
        panic!("this test crate was built without the git-ralph binary");
    };
    let mut cmd = Command::new(binary);
    cmd.current_dir(&repo.root).stdin(Stdio::null());
    repo.lock(&mut cmd);
    cmd
}

pub fn fake_agent_path() -> &'static str {
    env!("CARGO_BIN_EXE_fake-agent")
}

/// Writes a fake-agent script next to (not inside) the worktree and returns
/// its path; every call makes a new file, with its own call counter.
pub fn script(repo: &TestRepo, text: &str) -> PathBuf {
    let dir = repo.dir.path().join("scripts");
    fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
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

/// The fake agent run directly, as git-ralph would run it but without any
/// `RALPH_*` variable: the test sets those it needs.
pub fn fake_agent(repo: &TestRepo, script_path: &Path) -> Command {
    let mut cmd = Command::new(fake_agent_path());
    cmd.current_dir(&repo.root).stdin(Stdio::null());
    repo.lock(&mut cmd);
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
