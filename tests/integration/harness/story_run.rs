//! The story loop's end-to-end ground, on top of the rest of the harness: a
//! project holding an OpenSpec change, `git ralph start` wired to the fake
//! agent through a shell wrapper that records what the agent process saw
//! (its environment, its prompt file, its process group), runs in the
//! background, and readers for what a run leaves behind, judged with the git
//! CLI wherever git can say it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;

use super::{TestRepo, fake_agent_path, ralph_with_fake, run, shell_quote};

/// The change every test works on.
pub const CHANGE: &str = "greet";
/// Its branch.
pub const BRANCH: &str = "ralph/greet";
/// Its ref namespace.
pub const NS: &str = "refs/ralph/greet";
/// Its tracking file, as the product names it in reasons.
pub const TASKS_PATH: &str = "openspec/changes/greet/tasks.md";

pub const THREE_STORIES: &str = "\
# Tasks

## 1. Greeting

- [ ] 1.1 Create hello.txt
- [ ] 1.2 Say hello in it

## 2. Farewell

- [ ] 2.1 Create bye.txt

## 3. Docs

- [ ] 3.1 Mention both files in README.md
";

pub const TWO_STORIES: &str = "\
# Tasks

## 1. Greeting

- [ ] 1.1 Create hello.txt

## 2. Farewell

- [ ] 2.1 Create bye.txt
";

/// A repository on `main` whose last commit adds the change `greet` with
/// `tasks_md`, so that the worktree starts clean.
pub fn project(tasks_md: &str) -> TestRepo {
    TestRepo::with_change(CHANGE, tasks_md)
}

/// [`project`] whose three stories say they are independent, so that
/// `--parallel` runs them at once.
pub fn independent_project() -> TestRepo {
    let repo = project(THREE_STORIES);
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n",
    );
    repo.commit_all("The stories of greet are independent");
    repo
}

/// Script lines that do story `id` properly: write its file, tick its boxes
/// and promise completion.
pub fn finish_story(id: &str) -> String {
    format!("write story-{id}.txt work of story {id}\\n\ntick-story\npromise COMPLETE\n")
}

/// A script section `[story=<id>]` that finishes the story.
pub fn story_done(id: &str) -> String {
    format!("[story={id}]\n{}", finish_story(id))
}

/// The script of a run in which the first attempt at story 1 does `first`
/// (script lines), the second finishes it, and story 2 is done at once.
pub fn second_try(repo: &TestRepo, first: &str) -> PathBuf {
    super::script(
        repo,
        &format!(
            "[story=1 attempt=1]\n{first}[story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    )
}

/// Waits (30 s at most) until the agent of `attempt` at `story` has started
/// and written `marker` in `worktree`: written, not only created, because
/// an agent killed mid-attempt must leave it to be preserved.
pub fn agent_at_work(repo: &TestRepo, worktree: &Path, story: &str, attempt: u32, marker: &str) {
    let pid_file = repo.record_dir().join(format!("pid-{story}-{attempt}"));
    super::wait_until(
        &format!("the agent of story {story} attempt {attempt} is at work"),
        Duration::from_secs(30),
        || {
            pid_file.exists()
                && fs::metadata(worktree.join(marker)).is_ok_and(|meta| meta.len() > 0)
        },
    );
}

/// The command git-ralph runs through `sh -c`: it records, from inside the
/// agent's process, its `RALPH_*` environment, a copy of `$RALPH_PROMPT_FILE`
/// and its PID (which `exec` keeps, and which leads the agent's process
/// group), then becomes the fake agent.
pub fn agent_command(repo: &TestRepo) -> String {
    let records = repo.record_dir();
    fs::create_dir_all(&records)
        .unwrap_or_else(|err| panic!("cannot create {}: {err}", records.display()));
    let rec = shell_quote(&records.to_string_lossy());
    let tag = "$RALPH_STORY-$RALPH_ATTEMPT";
    format!(
        "echo $$ > {rec}/pid-{tag}; \
         env | grep '^RALPH_' | sort > {rec}/env-{tag}; \
         cat \"$RALPH_PROMPT_FILE\" > {rec}/promptfile-{tag}; \
         exec {}",
        shell_quote(fake_agent_path())
    )
}

/// `git ralph start greet` with the fake agent and `extra` options.
pub fn start_command(repo: &TestRepo, script: &Path, extra: &[&str]) -> Command {
    let mut cmd = ralph_with_fake(repo, script);
    cmd.args(["start", CHANGE, "--agent-command", &agent_command(repo)])
        .args(extra);
    cmd
}

pub fn start(repo: &TestRepo, script: &Path, extra: &[&str]) -> Output {
    run(&mut start_command(repo, script, extra))
}

pub fn git_dir(repo: &TestRepo) -> PathBuf {
    repo.path(".git")
}

pub fn run_dir(repo: &TestRepo) -> PathBuf {
    repo.run_dir(CHANGE)
}

/// `events.jsonl` of the run.
pub fn events(repo: &TestRepo) -> Vec<Value> {
    repo.run_events(CHANGE)
}

/// `state.json` of the run.
pub fn state(repo: &TestRepo) -> Value {
    repo.run_state(CHANGE)
}

/// The recorded attempts of a story in `state.json`, as (outcome, reason).
pub fn attempts_of(state: &Value, story: &str) -> Vec<(String, String)> {
    let stories = state["stories"].as_array().expect("stories is an array");
    let record = stories
        .iter()
        .find(|s| s["id"] == story)
        .unwrap_or_else(|| panic!("no story {story} in state.json"));
    record["attempts"]
        .as_array()
        .expect("attempts is an array")
        .iter()
        .map(|a| {
            (
                a["outcome"].as_str().unwrap_or_default().to_string(),
                a["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// `git ralph status greet --json`, parsed.
pub fn status_json(repo: &TestRepo) -> Value {
    repo.status_json(CHANGE)
}

/// Commit subjects of `range`, newest first.
pub fn subjects(repo: &TestRepo, range: &str) -> Vec<String> {
    repo.subjects(range)
}

/// Refs under `prefix` with the objects they name.
pub fn refs_under(repo: &TestRepo, prefix: &str) -> Vec<(String, String)> {
    repo.git(&["for-each-ref", "--format=%(refname) %(objectname)", prefix])
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, id)| (name.to_string(), id.to_string()))
        .collect()
}

/// Every file path in the tree of `rev`.
pub fn tree_files(repo: &TestRepo, rev: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

pub fn has_ref(repo: &TestRepo, name: &str) -> bool {
    repo.git_ok(&["rev-parse", "--verify", "-q", "--end-of-options", name])
}

/// A file's content in `rev`.
pub fn show(repo: &TestRepo, rev: &str, path: &str) -> String {
    repo.git(&["show", &format!("{rev}:{path}")])
}

/// What the wrapper recorded from inside the agent for that attempt.
pub fn agent_record(repo: &TestRepo, what: &str, story: &str, attempt: u32) -> String {
    let path = repo.record_dir().join(format!("{what}-{story}-{attempt}"));
    fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// The PID of the agent of that attempt, which leads its process group.
pub fn agent_pid(repo: &TestRepo, story: &str, attempt: u32) -> i32 {
    agent_record(repo, "pid", story, attempt)
        .trim()
        .parse()
        .expect("the agent's pid was recorded")
}

/// The `story=… attempt=…` pairs of every agent run, oldest first.
pub fn agent_runs(repo: &TestRepo) -> Vec<(String, String)> {
    super::recorded_calls(repo)
        .iter()
        .map(|line| {
            let mut story = String::new();
            let mut attempt = String::new();
            for word in line.split(' ') {
                if let Some(value) = word.strip_prefix("story=") {
                    story = value.to_string();
                } else if let Some(value) = word.strip_prefix("attempt=") {
                    attempt = value.to_string();
                }
            }
            (story, attempt)
        })
        .collect()
}

/// A `git ralph` process running in the background, its output going to
/// files. If it was never waited for, it and its agents are killed when
/// dropped, so a failing test leaves no process behind.
pub struct Background {
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
    records: PathBuf,
}

pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Background {
    pub fn spawn(repo: &TestRepo, mut cmd: Command) -> Background {
        let n = (1..)
            .find(|n| !repo.dir.path().join(format!("bg-{n}.out")).exists())
            .unwrap_or(0);
        let out = repo.dir.path().join(format!("bg-{n}.out"));
        let err = repo.dir.path().join(format!("bg-{n}.err"));
        let file = |path: &Path| {
            fs::File::create(path)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()))
        };
        cmd.stdout(file(&out)).stderr(file(&err));
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Background {
            child: Some(child),
            out,
            err,
            records: repo.record_dir(),
        }
    }

    pub fn start(repo: &TestRepo, script: &Path, extra: &[&str]) -> Background {
        Background::spawn(repo, start_command(repo, script, extra))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Whether the process has not exited yet (it is reaped if it has).
    pub fn still_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid() as i32), signal)
            .unwrap_or_else(|err| panic!("cannot send {signal} to {}: {err}", self.pid()));
    }

    pub fn stderr_so_far(&self) -> String {
        fs::read_to_string(&self.err).unwrap_or_default()
    }

    pub fn stdout_so_far(&self) -> String {
        fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// Waits for the process to exit (and reaps it).
    pub fn wait(mut self, timeout: Duration) -> Finished {
        let mut child = self.child.take().expect("the process is still ours");
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "git-ralph did not exit within {timeout:?}; stderr:\n{}",
                        fs::read_to_string(&self.err).unwrap_or_default()
                    );
                }
                Err(err) => panic!("cannot wait for git-ralph: {err}"),
            }
        };
        Finished {
            status,
            stdout: fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: fs::read_to_string(&self.err).unwrap_or_default(),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // A process that was waited for is left to the test's own checks;
        // one abandoned half-way (a failed assertion) is cleaned up.
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            kill_agents(&self.records);
        }
    }
}

/// A run whose loop is stopped by `signal` while story 2's agent is at
/// work, story 1 done; with SIGKILL its agent is ended too. The reaper
/// ends what is left when the test ends.
pub fn stopped_at_story_2(repo: &TestRepo, signal: Signal) -> Reaper {
    let agent = super::script(
        repo,
        &format!(
            "{}[story=2]\nwrite half.txt half done\nsleep 30\n",
            story_done("1")
        ),
    );
    let reaper = Reaper(repo.record_dir());
    let run = Background::start(repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(repo, &repo.path(""), "2", 1, "half.txt");
    run.signal(signal);
    let stopped = run.wait(Duration::from_secs(60));
    if signal == Signal::SIGKILL {
        kill_agents(&repo.record_dir());
    } else {
        assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    }
    reaper
}

/// Kills every agent recorded in `records` when dropped, so that a test
/// that lets an agent outlive its loop leaves nothing behind.
pub struct Reaper(pub PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        kill_agents(&self.0);
    }
}

/// The process groups of the agents started with [`agent_command`].
pub fn agent_groups(records: &Path) -> Vec<i32> {
    let Ok(entries) = fs::read_dir(records) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("pid-"))
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .filter_map(|text| text.trim().parse().ok())
        .collect()
}

/// Is any process of the group `pgid` alive (zombies aside)?
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return killpg(Pid::from_raw(pgid), None).is_ok();
    };
    entries.filter_map(Result::ok).any(|entry| {
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces, so split after ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// Kills the agents' process groups, for cleanup only.
pub fn kill_agents(records: &Path) {
    for pgid in agent_groups(records) {
        if pgid > 1 {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// Everything `abort` must restore: where HEAD is, the index entry by entry,
/// staged and unstaged changes, and untracked files with their content.
#[derive(Debug, PartialEq, Eq)]
pub struct WorkState {
    pub head_ref: Option<String>,
    pub head: String,
    pub index: String,
    pub staged: String,
    pub unstaged: String,
    pub untracked: BTreeMap<String, Vec<u8>>,
    pub status: String,
}

pub fn work_state(repo: &TestRepo) -> WorkState {
    let untracked = repo
        .git(&["ls-files", "--others", "--exclude-standard", "-z"])
        .split('\0')
        .filter(|name| !name.is_empty())
        .map(|name| {
            let bytes =
                fs::read(repo.path(name)).unwrap_or_else(|err| panic!("cannot read {name}: {err}"));
            (name.to_string(), bytes)
        })
        .collect();
    WorkState {
        head_ref: repo.head_symbolic(),
        head: repo.rev_parse("HEAD"),
        index: repo.git(&["ls-files", "--stage"]),
        staged: repo.git(&["diff", "--cached", "--binary"]),
        unstaged: repo.git(&["diff", "--binary"]),
        untracked,
        status: repo.status_porcelain(),
    }
}

/// Runs a command in a pseudo-terminal; once `trigger` shows, types `keys`
/// (Python escapes such as `\x1b` are decoded). Prints the transcript and
/// exits as the command did, or with 124 when `trigger` never showed.
const PTY_DRIVER: &str = r#"
import fcntl, os, pty, select, struct, sys, termios, time
trigger = sys.argv[1].encode()
keys = sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
argv = sys.argv[3:]
size = os.environ.get("PTY_SIZE")
pid, fd = pty.fork()
if pid == 0:
    if size:
        rows, cols = (int(n) for n in size.split("x"))
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    os.execvp(argv[0], argv)
seen = b""
sent = False
deadline = time.time() + float(os.environ.get("PTY_SECONDS", "30"))
while True:
    if time.time() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.stdout.write(seen.decode("utf-8", "replace"))
        sys.exit(124)
    ready, _, _ = select.select([fd], [], [], 0.1)
    if not ready:
        continue
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    seen += data
    if not sent and trigger in seen:
        time.sleep(0.5)
        os.write(fd, keys)
        sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// Runs `template` (program, arguments, environment) on a terminal, typing
/// `keys` once `trigger` shows; the output's stdout is the terminal's
/// transcript. Panics when `trigger` never showed.
pub fn in_terminal(repo: &TestRepo, template: &Command, trigger: &str, keys: &str) -> Output {
    let output = on_a_terminal(repo, template, (trigger, keys), None, 30);
    assert_ne!(
        output.status.code(),
        Some(124),
        "{trigger:?} never showed:\n{}",
        super::stdout(&output)
    );
    output
}

/// Runs `template` on a terminal of `size` (lines, columns; the
/// terminal's own when `None`), typing `keys` once `trigger` shows. The
/// output's stdout is the terminal's transcript; it exits as the command
/// did, or with 124 when `trigger` did not show within `seconds`.
pub fn on_a_terminal(
    repo: &TestRepo,
    template: &Command,
    (trigger, keys): (&str, &str),
    size: Option<(u16, u16)>,
    seconds: u64,
) -> Output {
    let driver = repo.dir.path().join("pty_driver.py");
    fs::write(&driver, PTY_DRIVER)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", driver.display()));
    let mut driver_cmd = Command::new("python3");
    driver_cmd.arg(&driver).arg(trigger).arg(keys);
    let mut cmd = repo.wrap(driver_cmd, template);
    cmd.env("TERM", "xterm")
        .env("PTY_SECONDS", seconds.to_string());
    if let Some((lines, columns)) = size {
        cmd.env("PTY_SIZE", format!("{lines}x{columns}"));
    }
    cmd.output()
        .unwrap_or_else(|err| panic!("python3 is needed to drive a pseudo-terminal: {err}"))
}

/// The subjects of a branch of `greet` that holds the checkpoints of
/// `stories` (`"2 Farewell"`, newest first) on top of the initial state.
pub fn checkpoint_subjects(stories: &[&str]) -> Vec<String> {
    stories
        .iter()
        .map(|story| format!("ralph({CHANGE}): story {story}"))
        .chain([format!("ralph({CHANGE}): initial state")])
        .collect()
}

/// Asserts that HEAD is on the run's branch and that the branch holds the
/// checkpoints of `stories`, newest first, as [`checkpoint_subjects`] says.
pub fn assert_on_branch(repo: &TestRepo, stories: &[&str]) {
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some(format!("refs/heads/{BRANCH}").as_str())
    );
    assert_eq!(subjects(repo, "main..HEAD"), checkpoint_subjects(stories));
}

/// Script sections that finish each of `stories` ([`story_done`]).
pub fn stories_done(stories: &[&str]) -> String {
    stories.iter().map(|id| story_done(id)).collect()
}

/// The prompt git-ralph saved for an attempt.
pub fn saved_prompt(repo: &TestRepo, story: &str, attempt: u32) -> String {
    let path = run_dir(repo)
        .join("attempts")
        .join(format!("{story}-{attempt}.prompt.md"));
    fs::read_to_string(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// The attempt records of a story in `state.json`.
pub fn attempt_records(state: &serde_json::Value, story: &str) -> Vec<serde_json::Value> {
    state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|s| s["id"] == story)
        .unwrap_or_else(|| panic!("no story {story}"))["attempts"]
        .as_array()
        .expect("attempts")
        .clone()
}
