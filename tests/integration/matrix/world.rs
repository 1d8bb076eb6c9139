//! One cell's ground: a project whose user is busy (two stashes, a staged
//! edit, an unstaged edit, an untracked file, an ignored one), a contract
//! whose `on_story_done` hook and webhook record what they were told and
//! what the branch held at that moment, a bare remote and a scripted `gh`
//! when the ending hands off, and the runs of `git ralph` in the mode of
//! the cell. What goes wrong is gathered as findings, so that a cell
//! reports every disagreement it saw, not only the first.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Ending, Mode};
use crate::harness::forge::FakeForge;
use crate::harness::story_run::*;
use crate::harness::*;

/// Everything of the user's a run must give back: HEAD, index, staged,
/// unstaged and untracked work, the stashes, the refs outside the run's
/// namespace, the hooks, and every byte of the worktree.
#[derive(Debug, PartialEq, Eq)]
pub struct UserState {
    pub work: WorkState,
    pub stashes: String,
    /// Every ref but the run's (`refs/ralph/`, `refs/heads/ralph/`).
    pub refs: String,
    /// `.git/hooks`, byte for byte.
    pub hooks: BTreeMap<String, (u32, Vec<u8>)>,
    /// The worktree, `.git` aside, byte for byte.
    pub files: BTreeMap<String, (u32, Vec<u8>)>,
}

/// The user's files (path, content) as they stand before the run.
pub const USER_FILES: &[(&str, &str)] = &[
    ("README.md", "# Test project\nstaged by the user\n"),
    ("notes.txt", "v2, the user's unstaged edit\n"),
    ("mine.txt", "the user's untracked file\n"),
    ("build.log", "ignored, the user's\n"),
];

pub fn user_state(repo: &TestRepo) -> UserState {
    let mut files = disk_snapshot(&repo.root);
    files.retain(|name, _| name != ".git" && name != ".git/" && !name.starts_with(".git/"));
    UserState {
        work: work_state(repo),
        stashes: repo.git(&["stash", "list", "--format=%H %gs"]),
        refs: repo
            .git(&["for-each-ref", "--format=%(refname) %(objectname)"])
            .lines()
            .filter(|line| !is_the_runs(line))
            .map(|line| format!("{line}\n"))
            .collect(),
        hooks: disk_snapshot(&repo.path(".git/hooks")),
        files,
    }
}

/// A ref of the run: its namespace, its branches, and their copies on a
/// remote it was pushed to.
fn is_the_runs(line: &str) -> bool {
    line.starts_with("refs/ralph/")
        || line.starts_with("refs/heads/ralph/")
        || (line.starts_with("refs/remotes/") && line.contains("/ralph/"))
}

/// What a hook or the webhook was told, and what was true at that moment.
#[derive(Debug, Clone)]
pub struct Told {
    pub story: String,
    /// The files on `ralph/<change>` when it was told.
    pub on_branch: Vec<String>,
    /// state.json when it was told (hooks), or the payload (webhook).
    pub json: Value,
}

/// The webhook's listener: each POST is kept with the files the run's
/// branch held when it arrived.
pub struct Webhook {
    pub url: String,
    pub received: Arc<Mutex<Vec<Told>>>,
}

/// The files of `rev` in the repository at `root`; none if it is not there.
/// The files on `rev`, but for those of a story whose work is there only
/// as a kept failure (see [`kept_failures`]).
fn files_on(root: &Path, rev: &str) -> Vec<String> {
    let kept: Vec<String> = kept_failures(root, rev)
        .iter()
        .map(|id| format!("story-{id}.txt"))
        .collect();
    git_at(root, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .filter(|file| !kept.iter().any(|k| k == file))
        .map(str::to_string)
        .collect()
}

fn git_at(root: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    cmd.args(args).current_dir(root);
    let home = root.parent().unwrap().join("home");
    lock_env(&mut cmd, &home, Path::new("/dev/null"));
    stdout(&run(&mut cmd))
}

/// The stories whose last checkpoint on `rev` kept a failed attempt's
/// work (a single pass, a prompt-mode iteration): their files are on the
/// branch, yet they are not done.
pub fn kept_failures(root: &Path, rev: &str) -> BTreeSet<String> {
    let log = git_at(
        root,
        &[
            "log",
            "--format=%s%x00%(trailers:key=Ralph-Story,valueonly,separator=)%x01",
            rev,
            "--",
        ],
    );
    let mut seen = BTreeSet::new();
    let mut kept = BTreeSet::new();
    for entry in log.split('\u{1}') {
        let Some((subject, story)) = entry.trim().split_once('\0') else {
            continue;
        };
        let story = story.trim();
        if story.is_empty() || !seen.insert(story.to_owned()) {
            continue;
        }
        if subject.ends_with("(single pass)") || subject.contains(", kept: ") {
            kept.insert(story.to_owned());
        }
    }
    kept
}

impl Webhook {
    fn listen(root: PathBuf) -> Webhook {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let url = format!("http://{}/matrix", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let into = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some((key, value)) = line.split_once(':')
                        && key.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                // Looked at before answering: the run waits for the answer.
                let on_branch = files_on(&root, "refs/heads/ralph/greet");
                let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
                into.lock().unwrap().push(Told {
                    story: String::new(),
                    on_branch,
                    json,
                });
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                );
            }
        });
        Webhook { url, received }
    }
}

/// A cell's repository, what it is run with, and what it found wrong.
pub struct World {
    pub mode: Mode,
    pub ending: Ending,
    pub repo: TestRepo,
    /// The user's state just before the first run.
    pub before: UserState,
    pub webhook: Webhook,
    /// Where the `on_story_done` hook writes.
    pub told_dir: PathBuf,
    pub forge: FakeForge,
    /// The bare remote `origin`, when the ending hands off.
    pub remote: Option<PathBuf>,
    /// The reviewer's command, in a role pipeline.
    reviewer: Option<String>,
    pub findings: Vec<String>,
    /// How many hook calls and webhook posts were judged already.
    pub judged: (usize, usize),
    /// Stories the user did by hand (their file written, their boxes
    /// ticked): no account of the run has to say anything of them.
    pub by_hand: BTreeSet<String>,
}

impl World {
    pub fn new(mode: Mode, ending: Ending) -> World {
        let world = World::around(project(THREE_STORIES), mode, ending, ending.hands_off());
        busy_user(&world.repo);
        World {
            before: user_state(&world.repo),
            ..world
        }
    }

    /// A world around a project of three stories someone else made (a
    /// repository of a particular shape): the contract committed (the
    /// stories independent in any mode, so a later run may take them at
    /// once), a bare `origin` when `with_origin`; the user not yet busy.
    pub fn around(repo: TestRepo, mode: Mode, ending: Ending, with_origin: bool) -> World {
        let told_dir = repo.dir.path().join("told");
        fs::create_dir_all(&told_dir).unwrap();
        let webhook = Webhook::listen(repo.root.clone());
        commit_contract(&repo, mode, ending, &told_dir, &webhook.url);
        let remote = with_origin.then(|| bare_origin(&repo));
        // Any run of the world may be a role pipeline.
        let reviewer = Some({
            let reviewer = script(&repo, "[*]\npromise REVIEW_PASSED\n");
            format!(
                "reviewer=FAKE_AGENT_SCRIPT={} {}",
                shell_quote(&reviewer.to_string_lossy()),
                shell_quote(fake_agent_path())
            )
        });
        World {
            mode,
            ending,
            before: user_state(&repo),
            forge: FakeForge::new(&repo),
            repo,
            webhook,
            told_dir,
            remote,
            reviewer,
            findings: Vec::new(),
            judged: (0, 0),
            by_hand: BTreeSet::new(),
        }
    }

    /// What the run's hook was told, in order.
    pub fn hook_calls(&self) -> Vec<Told> {
        let count = fs::read_dir(&self.told_dir).map_or(0, |dir| {
            dir.filter_map(Result::ok)
                .filter(|entry| entry.file_name().to_string_lossy().ends_with(".call"))
                .count()
        });
        (0..count)
            .filter_map(|n| {
                let call = fs::read_to_string(self.told_dir.join(format!("{n}.call"))).ok()?;
                let mut fields = call.trim().split('|');
                let _hook = fields.next();
                let story = fields.next().unwrap_or_default().to_string();
                let on_branch = fs::read_to_string(self.told_dir.join(format!("{n}.branch")))
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect();
                let json = fs::read_to_string(self.told_dir.join(format!("{n}.state")))
                    .ok()
                    .and_then(|text| serde_json::from_str(&text).ok())
                    .unwrap_or(Value::Null);
                Some(Told {
                    story,
                    on_branch,
                    json,
                })
            })
            .collect()
    }

    /// Where the agent of `story` works in this mode.
    pub fn workdir_of(&self, story: &str) -> PathBuf {
        let beside = fs::canonicalize(self.repo.root.parent().unwrap())
            .unwrap()
            .join("repo.ralph");
        match self.mode {
            Mode::Worktree => beside.join(CHANGE),
            Mode::Parallel => beside.join(format!("{CHANGE}.story-{story}")),
            Mode::Here | Mode::Roles | Mode::Prompt => self.repo.root.clone(),
        }
    }

    /// The options that put a fresh run in this mode.
    fn mode_args(&self) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        match self.mode {
            Mode::Here => {}
            Mode::Worktree => args.push("--worktree".into()),
            Mode::Parallel => args.extend(["--parallel".into(), "2".into()]),
            Mode::Roles => {
                args.extend(["--roles".into(), "coder,reviewer".into()]);
                args.extend([
                    "--role-agent-command".into(),
                    self.reviewer.clone().unwrap(),
                ]);
            }
            Mode::Prompt => {
                let prompt = self.repo.dir.path().join("PROMPT.md");
                fs::write(&prompt, "Do the greeting: write story-1.txt.\n").unwrap();
                args.extend(["--prompt".into(), prompt.display().to_string()]);
                args.extend(["--check".into(), "test -f story-1.txt".into()]);
            }
        }
        args
    }

    /// `git ralph start greet` with the fake agent following `script_text`:
    /// in the cell's mode when `fresh`, as a bare resume otherwise.
    pub fn start_command(&self, script_text: &str, fresh: bool, extra: &[&str]) -> Command {
        let agent = script(&self.repo, script_text);
        let mut args = if fresh { self.mode_args() } else { Vec::new() };
        args.extend(extra.iter().map(|arg| arg.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = start_command(&self.repo, &agent, &args);
        self.forge.on_path(&mut cmd);
        cmd
    }

    pub fn start(&self, script_text: &str, extra: &[&str]) -> Output {
        run(&mut self.start_command(script_text, true, extra))
    }

    pub fn resume(&self, script_text: &str, extra: &[&str]) -> Output {
        run(&mut self.start_command(script_text, false, extra))
    }

    /// `git ralph <args>`, with the scripted forge on PATH.
    pub fn ralph(&self, args: &[&str]) -> Output {
        let mut cmd = ralph(&self.repo);
        cmd.args(args);
        self.forge.on_path(&mut cmd);
        run(&mut cmd)
    }

    /// A finding: something the cell saw that must not be.
    pub fn find(&mut self, what: impl Into<String>) {
        self.findings.push(what.into());
    }

    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.find(what());
        }
    }

    /// The exit code must be `code`; anything else ends the cell, since
    /// what follows would judge a run that did not happen.
    pub fn expect_exit(&mut self, what: &str, output: &Output, code: i32) {
        if output.status.code() != Some(code) {
            self.find(format!(
                "{what}: expected exit {code}, got {}",
                describe(output)
            ));
            self.fail_now();
        }
    }

    /// Panic with every finding so far.
    pub fn fail_now(&self) -> ! {
        panic!(
            "cell {:?} × {:?}: {} finding(s):\n- {}",
            self.mode,
            self.ending,
            self.findings.len(),
            self.findings.join("\n- ")
        );
    }

    pub fn finish(self) {
        if !self.findings.is_empty() {
            self.fail_now();
        }
    }
}

/// `ralph.toml`: an `on_story_done` hook (which stops the run when it
/// fails) recording what it was told and, at that moment, the files on
/// the run's branch and state.json; the webhook. When the stories run at
/// once, the change's own says they are independent.
fn commit_contract(repo: &TestRepo, mode: Mode, ending: Ending, told_dir: &Path, url: &str) {
    let told = shell_quote(&told_dir.display().to_string());
    let mut hook = format!(
        "n=$(ls {told} | grep -c '[.]call$')\n\
         git -C {root} ls-tree -r --name-only refs/heads/ralph/greet > {told}/$n.branch 2>/dev/null\n\
         cp {state} {told}/$n.state 2>/dev/null\n\
         printf '%s|%s\\n' \"$RALPH_HOOK\" \"$RALPH_STORY\" > {told}/$n.call\n",
        root = shell_quote(&repo.root.display().to_string()),
        state = shell_quote(
            &repo
                .run_dir(CHANGE)
                .join("state.json")
                .display()
                .to_string()
        ),
    );
    if ending == Ending::HookStop {
        // Fails once, the first time.
        let once = shell_quote(
            &repo
                .dir
                .path()
                .join("hook-failed-once")
                .display()
                .to_string(),
        );
        hook.push_str(&format!(
            "test -e {once} || {{ touch {once}; echo the preview did not deploy >&2; exit 1; }}\n"
        ));
    }
    let hook_path = repo.dir.path().join("on-story-done.sh");
    fs::write(&hook_path, hook).unwrap();
    repo.write(
        "ralph.toml",
        format!(
            "[hooks.on_story_done]\ncommand = {}\non_error = \"stop\"\n\n[notify]\nwebhook = \"{url}\"\n",
            toml_string(&format!("sh {}", shell_quote(&hook_path.display().to_string())))
        ),
    );
    if mode == Mode::Parallel {
        repo.write(
            "openspec/changes/greet/ralph.toml",
            "[stories]\nindependent = true\n",
        );
    }
    repo.write("notes.txt", "v1\n");
    repo.commit_all("The contract, and the user's notes");
}

/// A bare repository beside the worktree, as `origin`.
fn bare_origin(repo: &TestRepo) -> PathBuf {
    let path = repo.dir.path().join("origin.git");
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", path.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", path.to_str().unwrap()]);
    path
}

/// The user at work: two stashes, a staged edit, an unstaged one, an
/// untracked file and an ignored one.
fn busy_user(repo: &TestRepo) {
    repo.write("notes.txt", "the first stash\n");
    repo.git(&["stash", "-q"]);
    repo.write("notes.txt", "the second stash\n");
    repo.git(&["stash", "-q"]);
    for (path, content) in USER_FILES {
        repo.write(path, content);
    }
    repo.git(&["add", "README.md"]);
    repo.write(".git/info/exclude", "*.log\n");
    repo.git(&["status", "--porcelain"]);
}

/// A TOML string holding `text`.
fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}
