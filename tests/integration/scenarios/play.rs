//! Plays a sequence of steps on a world of one shape, through the real
//! binary and the fake agent, and judges what git says after each
//! command. Findings gather in the world (as the matrix's do); the first
//! step after which there is one ends the play. The commands beyond a
//! run's start and end (`plan`, `answer`, two starts at once, `watch`, the
//! web view, the small disk) are [`more`]'s.

mod more;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::disk::Disk;
use super::gates::{Known, gated};
use super::invariants::{Holdings, Picture, skip_worktree, sound};
use super::shapes::{self, Shape};
use super::steps::{Agent, Finish, Live, Read, RunMode, Start, Step, Stop};
use crate::harness::story_run::*;
use crate::harness::*;
use crate::matrix::Mode;
use crate::matrix::oracle::{Shelf, assert_record_agrees_with_branch};
use crate::matrix::world::{UserState, World, user_state};

const PATIENCE: Duration = Duration::from_secs(120);
const KILLED_AT_RANDOM: &str = "a start killed -9 at a random moment";

/// A start held open: the loop in the background, the file that lets its
/// agents (or its check) go on.
struct Held {
    /// Attempts the record called complete before the start.
    complete_before: usize,
    loop_: Background,
    gate: PathBuf,
    beside: bool,
    start: Start,
}

/// What a fresh start set aside of the run before it.
struct Aside {
    told: PathBuf,
    judged: usize,
    before_start: Option<UserState>,
    acted_since_start: bool,
    in_place: bool,
}

pub struct Scenario {
    /// The small disk the repository is on (the `full` shape): declared
    /// first, so that it is unmounted before the world's directory goes.
    disk: Option<Disk>,
    /// The disk was filled and not freed since.
    disk_full: bool,
    /// The disk was full at some moment of the command being judged.
    full_during: bool,
    /// `.git/info/refs` as the user's `git gc` or `git repack` left it
    /// while an agent worked, until the held start is judged.
    info_refs: Option<Vec<u8>>,
    /// The user's state before a `plan` that was killed, until a command
    /// that meets the killed plan is judged.
    plan_killed: Option<more::BeforePlan>,
    /// A plan was killed -9 and no plan has met it since.
    plan_cut: bool,
    /// The command judged was two starts at once.
    raced: bool,
    /// The pid files of the children agents left in sessions of their own.
    escapees: Vec<PathBuf>,
    pub w: World,
    shape: Shape,
    pool: Vec<PathBuf>,
    /// Numbers every file, branch and content the steps make.
    counter: u32,
    held: Option<Held>,
    /// What the user held before the command that runs (or ran last).
    holdings: Holdings,
    /// The user's state before the start of the run there is, if any.
    before_start: Option<UserState>,
    /// The user acted since that start.
    acted_since_start: bool,
    /// The worktree holds what the run's record does not: the user acted,
    /// or a loop was killed, since the last command.
    unrecorded: bool,
    unrecorded_before: bool,
    /// The run's last start was in the user's own worktree.
    in_place: bool,
    shelf: Option<Shelf>,
    /// What the hook was told before a fresh start, and how much of it
    /// was judged, until the start is known not to be refused.
    aside: Option<Aside>,
    /// The behaviour of the agents of the start being judged.
    agent: Option<Agent>,
    /// A kill -9 at a random moment left a record that may lag the branch.
    record_lags: bool,
    hooks: std::collections::BTreeMap<String, (u32, Vec<u8>)>,
    sparse: std::collections::BTreeSet<String>,
    /// What happened, step by step, for the failure message.
    pub transcript: Vec<String>,
}

impl Scenario {
    pub fn new(shape: Shape) -> Scenario {
        let (w, disk) = shapes::build(shape);
        let hooks = disk_snapshot(&w.repo.path(".git/hooks"));
        let sparse = skip_worktree(&w.repo);
        let mut scenario = Scenario {
            disk,
            disk_full: false,
            full_during: false,
            info_refs: None,
            plan_killed: None,
            plan_cut: false,
            raced: false,
            escapees: Vec::new(),
            pool: shapes::pool(shape),
            shape,
            counter: 0,
            held: None,
            holdings: Holdings::default(),
            before_start: None,
            acted_since_start: false,
            unrecorded: false,
            unrecorded_before: false,
            in_place: true,
            shelf: None,
            aside: None,
            record_lags: false,
            agent: None,
            hooks,
            sparse,
            transcript: Vec::new(),
            w,
        };
        scenario.holdings = scenario.hold();
        scenario
    }

    /// The user's worktrees.
    fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.w.repo.root.clone()];
        if self.shape == Shape::Linked {
            dirs.push(self.w.repo.dir.path().join("linked"));
        }
        dirs
    }

    fn hold(&self) -> Holdings {
        Holdings::take(&self.w.repo, &self.dirs())
    }

    fn next(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    fn note(&mut self, text: impl Into<String>) {
        self.transcript.push(text.into());
    }

    /// Plays one step; the findings it led to are in the world.
    pub fn play(&mut self, step: Step) {
        self.note(format!("> {step}"));
        let live_ok = match step {
            Step::Stop(_) | Step::Read(_) => true,
            Step::Gc | Step::Repack | Step::FillDisk | Step::FreeDisk => true,
            _ if step.is_users() => self.held.as_ref().is_some_and(|held| held.beside),
            _ => false,
        };
        if !live_ok && self.held.is_some() {
            self.stop(Stop::Release);
        }
        if step.is_users() && self.plan_cut && gated(Known::ActAfterKilledPlan) {
            self.note("  (gated: the user's act after a killed plan)");
            return;
        }
        if step.is_users() {
            let stages = matches!(step, Step::StageAll | Step::StagePart(_));
            if stages && gated(Known::StagedWhileStopped) && self.in_place && self.resumable() {
                self.note("  (gated: staging while a run in place is stopped)");
                return;
            }
            // What the user's own act drops (a staged version staged over)
            // is theirs to drop: only what it leaves is held to the run.
            // Beside a run in place (git's maintenance, the disk) the
            // worktree holds the agent's work, which is not the user's.
            let beside = self.held.as_ref().is_some_and(|held| held.beside);
            let just_before = beside.then(|| self.hold());
            if matches!(step, Step::Tick(_))
                && gated(Known::RolesTickByHand)
                && self.w.mode == Mode::Roles
                && self.run_open()
            {
                self.note("  (gated: a story ticked by hand in a stopped role pipeline)");
                return;
            }
            self.users_act(step);
            self.acted_since_start = true;
            self.unrecorded = true;
            if let Some(just_before) = just_before {
                let now = self.hold();
                self.holdings.forget_dropped(&just_before, &now);
                self.holdings.merge(now);
            }
            return;
        }
        match step {
            Step::Start(start) => self.start(start),
            Step::Stop(stop) => self.stop(stop),
            Step::Kill9(ms) => self.kill9(ms),
            Step::Finish(finish) => self.finish(finish),
            Step::Abort => self.abort(),
            Step::Read(Read::Watch) => self.watch(),
            Step::Read(Read::Web) => self.web(),
            Step::Read(read) => self.read(read),
            Step::StartTwice => self.start_twice(),
            Step::Plan(plan) => self.plan(plan),
            Step::Answer => self.answer(),
            _ => unreachable!("{step} is the user's"),
        }
    }

    /// Ends a scenario: a start still held is let go and judged.
    pub fn end(&mut self) {
        if self.held.is_some() {
            self.stop(Stop::Release);
        }
    }

    // The user's acts.

    fn git(&self, args: &[&str]) -> Output {
        self.w.repo.git_output(args)
    }

    fn pooled(&self, n: u8) -> PathBuf {
        self.w.repo.path(&self.pool[n as usize % self.pool.len()])
    }

    fn write_pooled(&mut self, n: u8) {
        let path = self.pooled(n);
        let k = self.next();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name == "link" {
            let _ = fs::remove_file(&path);
            let target = if k.is_multiple_of(2) {
                "README.md"
            } else {
                "notes.txt"
            };
            std::os::unix::fs::symlink(target, &path).unwrap();
            return;
        }
        let content = match &*name {
            "crlf.txt" => format!("edit {k}\r\nof the user\r\n").into_bytes(),
            "big.bin" => shapes::large(k),
            _ => format!("edit {k} of the user\n").into_bytes(),
        };
        if let Some(parent) = path.parent() {
            let _ = fs::create_dir_all(parent);
        }
        let _ = fs::remove_file(&path);
        // On a full disk the write fails, as the user's editor would.
        let _ = fs::write(&path, content);
    }

    /// Writes a file of the user's; on a full disk it may fail.
    fn put(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) {
        let path = self.w.repo.path(rel);
        if let Some(parent) = path.parent() {
            let _ = fs::create_dir_all(parent);
        }
        let _ = fs::write(path, content);
    }

    fn users_act(&mut self, step: Step) {
        match step {
            Step::Edit(n) => self.write_pooled(n),
            Step::Add => {
                let k = self.next();
                self.put(format!("new-{k}.txt"), format!("new file {k}\n"));
            }
            Step::Delete(n) => {
                let _ = fs::remove_file(self.pooled(n));
            }
            Step::Rename(n) => {
                let from = self.pooled(n);
                let k = self.next();
                let _ = fs::rename(&from, self.w.repo.path(format!("moved-{k}.txt")));
            }
            Step::Chmod(n) => {
                let path = self.pooled(n);
                if let Ok(meta) = fs::symlink_metadata(&path)
                    && meta.is_file()
                {
                    let mode = meta.permissions().mode() ^ 0o111;
                    let _ = fs::set_permissions(&path, fs::Permissions::from_mode(mode));
                }
            }
            Step::StageAll => {
                self.git(&["add", "-A"]);
            }
            Step::StagePart(n) => {
                self.write_pooled(n);
                let path = self.pooled(n);
                self.git(&["add", "--", path.to_str().unwrap_or("notes.txt")]);
                self.write_pooled(n);
            }
            Step::StashPush => {
                self.git(&["stash", "push", "-q"]);
            }
            Step::StashPop => {
                self.git(&["stash", "pop", "-q"]);
            }
            Step::StashDrop => {
                self.git(&["stash", "drop", "-q"]);
            }
            Step::Branch => {
                let k = self.next();
                self.git(&["branch", &format!("topic-{k}")]);
            }
            Step::DeleteBranch => {
                if let Some(topic) = self.newest("refs/heads/topic-") {
                    self.git(&["branch", "-q", "-D", &topic]);
                }
            }
            Step::Tag => {
                let k = self.next();
                self.git(&["tag", &format!("t-{k}")]);
            }
            Step::DeleteTag => {
                if let Some(tag) = self.newest("refs/tags/t-") {
                    self.git(&["tag", "-d", &tag]);
                }
            }
            Step::Commit => {
                let k = self.next();
                self.git(&[
                    "commit",
                    "-q",
                    "-a",
                    "-m",
                    &format!("the user's commit {k}"),
                ]);
            }
            Step::Switch(n) => {
                let to = match n % 3 {
                    0 => Some("main".to_string()),
                    1 => Some(BRANCH.to_string()),
                    _ => self.newest("refs/heads/topic-"),
                };
                if let Some(to) = to {
                    self.git(&["switch", "-q", &to]);
                }
            }
            Step::Tick(n) => self.tick(1 + n % 3),
            Step::AddStory => self.add_story(),
            Step::DeleteStory => self.delete_story(),
            Step::Gc | Step::Repack => {
                if step == Step::Gc {
                    self.git(&["gc", "-q"]);
                } else {
                    // Unreachable objects kept (-k): a commit-graph an
                    // earlier `gc` wrote may name them, and `fsck` would
                    // blame git's own stale graph on the run.
                    self.git(&["repack", "-a", "-d", "-k", "-q"]);
                }
                if self.held.is_some() {
                    self.info_refs = fs::read(self.w.repo.path(".git/info/refs")).ok();
                }
            }
            Step::FillDisk => {
                if let Some(disk) = &self.disk {
                    disk.fill();
                    self.disk_full = true;
                    self.full_during = true;
                }
            }
            Step::FreeDisk => {
                if let Some(disk) = &self.disk {
                    disk.free();
                    self.disk_full = false;
                }
            }
            other => unreachable!("{other} is a command"),
        }
    }

    /// The newest of the refs under `prefix`, by the number they end in.
    fn newest(&self, prefix: &str) -> Option<String> {
        let names = self
            .w
            .repo
            .git(&["for-each-ref", "--format=%(refname)", prefix]);
        names
            .lines()
            .max_by_key(|name| {
                name.rsplit('-')
                    .next()
                    .and_then(|n| n.parse::<u32>().ok())
                    .unwrap_or(0)
            })
            .map(|name| {
                name.trim_start_matches("refs/heads/")
                    .trim_start_matches("refs/tags/")
                    .to_string()
            })
    }

    fn tasks(&self) -> PathBuf {
        self.w.repo.path(TASKS_PATH)
    }

    /// The user does story `id` by hand: writes its file, ticks its boxes.
    fn tick(&mut self, id: u8) {
        self.w.by_hand.insert(id.to_string());
        let Ok(text) = fs::read_to_string(self.tasks()) else {
            return;
        };
        let ticked = text.replace(&format!("- [ ] {id}."), &format!("- [x] {id}."));
        self.put(
            format!("story-{id}.txt"),
            format!("work of story {id}, done by the user\n"),
        );
        let _ = fs::write(self.tasks(), ticked);
    }

    /// Puts story 3 back at the end of the task file, if it is not there.
    fn add_story(&mut self) {
        let Ok(mut text) = fs::read_to_string(self.tasks()) else {
            return;
        };
        if !text.contains("## 3.") {
            text.push_str("\n## 3. Docs\n\n- [ ] 3.1 Mention both files in README.md\n");
            let _ = fs::write(self.tasks(), text);
        }
    }

    /// Deletes story 3 while its work is nowhere yet (the record of a
    /// story done stays with the run).
    fn delete_story(&mut self) {
        let Ok(text) = fs::read_to_string(self.tasks()) else {
            return;
        };
        let done = self.w.repo.path("story-3.txt").exists()
            || self
                .git(&[
                    "cat-file",
                    "-e",
                    &format!("refs/heads/{BRANCH}:story-3.txt"),
                ])
                .status
                .success();
        let Some(at) = text.find("## 3.") else {
            return;
        };
        if done {
            return;
        }
        let end = text[at + 3..]
            .find("\n## ")
            .map_or(text.len(), |i| at + 3 + i + 1);
        let cut = format!("{}{}", &text[..at], &text[end..]);
        let _ = fs::write(self.tasks(), cut);
    }

    // Commands.

    /// How many attempts the run's events call complete.
    fn complete_attempts(&self) -> usize {
        let path = self.w.repo.run_dir(CHANGE).join("events.jsonl");
        fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("\"attempt_finished\"") && line.contains("\"complete\""))
            .count()
    }

    /// The status state.json gives the run, if there is one.
    fn run_status(&self) -> Option<String> {
        self.run_record()?["status"].as_str().map(str::to_string)
    }

    fn run_record(&self) -> Option<serde_json::Value> {
        let text = fs::read_to_string(self.w.repo.run_dir(CHANGE).join("state.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// A run a start would resume: neither finished nor aborted.
    fn run_open(&self) -> bool {
        self.run_status()
            .is_some_and(|status| status != "finished" && status != "aborted")
    }

    /// Whether a `start` now takes the run up again rather than beginning
    /// anew (and archiving it): a run still open, or one kept before its
    /// stories were all done whose branch is still there, in a worktree of
    /// its own or with HEAD on it.
    fn start_takes_up(&self) -> bool {
        if self.run_open() {
            return true;
        }
        let Some(state) = self.run_record() else {
            return false;
        };
        let kept_unfinished = state["status"] == "finished"
            && state["finished_with"] == "keep"
            && state["reason"].as_str().is_some_and(|r| r != "completed");
        let branch = format!("refs/heads/{BRANCH}");
        kept_unfinished
            && self
                .git(&["rev-parse", "-q", "--verify", &branch])
                .status
                .success()
            && (!state["worktree"].is_null()
                || stdout(&self.git(&["symbolic-ref", "-q", "HEAD"])).trim() == branch)
    }

    /// A run a `start` would take up again: open, or kept before its
    /// stories were all done.
    fn resumable(&self) -> bool {
        self.run_status().is_some_and(|status| status != "aborted")
    }

    fn run_exists(&self) -> bool {
        self.run_status().is_some()
    }

    /// The agent's script: every story done, each agent behaving as
    /// `start` says; when held, each first waits for the gate.
    fn script(&self, start: Start, gate: &Path, marker: &Path, escapees: &Path) -> String {
        let mut text = String::new();
        let mode = match start.mode {
            RunMode::Roles => Mode::Roles,
            _ => Mode::Here,
        };
        for id in 1..=3 {
            let held = if start.live == Live::Agent {
                format!(
                    "write wip-{id}.txt held\\n\nwrite {} at work\nwait-for {}\n",
                    marker.display(),
                    gate.display()
                )
            } else {
                String::new()
            };
            if start.agent == Agent::Asks {
                text.push_str(&format!(
                    "[story={id} attempt=1]\n{held}write wip-{id}.txt a draft\\n\n\
                     final I read the task.\\n\\nShould story {id} be formal or casual?\n"
                ));
            }
            text.push_str(&format!("[story={id}]\n{held}"));
            let does = mode.does(&id.to_string());
            // In a submodule, the agent overwrites the user's file.
            let meddles = if self.shape == Shape::Submodule {
                "write sub/file.txt the agent's, in the submodule\\n\n"
            } else {
                ""
            };
            let common = self.w.repo.path(".git");
            let lines = match start.agent {
                Agent::Succeeds => does,
                Agent::Fails => format!(
                    "{meddles}append wip-{id}.txt try\\n\npromise FAILED: the parser is missing\nexit 1\n"
                ),
                Agent::Commits => {
                    format!("{does}git add -A\ngit commit -q -m \"the agent's own commit\"\n")
                }
                Agent::Stash => format!("git stash clear\n{does}"),
                Agent::Rewinds => format!("git reset -q --hard HEAD~1\n{does}"),
                Agent::PlantsHook => {
                    let hook = common.join("hooks/post-checkout");
                    let hook = hook.display();
                    format!("write {hook} #!/bin/sh\\necho planted\\n\nchmod +x {hook}\n{does}")
                }
                Agent::Outside => {
                    format!("{meddles}write notes.txt the agent's notes\\n\n{does}")
                }
                Agent::Asks => does,
                Agent::Escapes => format!(
                    "detach 1.5 {} late-{id}.txt a late write\\n\n{does}",
                    escapees.display()
                ),
            };
            text.push_str(&lines);
        }
        text
    }

    fn start(&mut self, mut start: Start) {
        if start.mode == RunMode::Parallel
            && start.agent == Agent::Stash
            && gated(Known::ParallelStashClear)
        {
            self.note("  (gated: agents clearing the stash at once; they succeed)");
            start.agent = Agent::Succeeds;
        }
        if start.mode == RunMode::Parallel
            && start.agent == Agent::PlantsHook
            && (gated(Known::ParallelHook) || gated(Known::ParallelHookLeft))
        {
            self.note("  (gated: parallel agents planting hooks; they succeed)");
            start.agent = Agent::Succeeds;
        }
        if !self.start_takes_up() {
            self.fresh_run(start);
        }
        self.w.mode = match start.mode {
            RunMode::Worktree => Mode::Worktree,
            RunMode::Parallel => Mode::Parallel,
            RunMode::Roles => Mode::Roles,
            RunMode::Here | RunMode::Bare => Mode::Here,
        };
        let k = self.next();
        let gate = self.w.repo.dir.path().join(format!("gate-{k}"));
        let marker = self.w.repo.record_dir().join(format!("live-{k}"));
        fs::create_dir_all(self.w.repo.record_dir()).unwrap();
        let mut extra: Vec<String> = vec!["--max-retries".into(), "0".into()];
        extra.push("--on-finish".into());
        extra.push(if start.cleanup { "cleanup" } else { "keep" }.into());
        if start.once {
            extra.push("--once".into());
        }
        if start.live == Live::Check {
            extra.push("--check".into());
            extra.push(format!(
                "touch {m}; while [ ! -e {g} ]; do sleep 0.1; done",
                m = shell_quote(&marker.display().to_string()),
                g = shell_quote(&gate.display().to_string())
            ));
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let escapees = self.w.repo.record_dir().join(format!("escapees-{k}"));
        if start.agent == Agent::Escapes {
            self.escapees.push(escapees.clone());
        }
        let script = self.script(start, &gate, &marker, &escapees);
        self.agent = Some(start.agent);
        let cmd = self
            .w
            .start_command(&script, start.mode != RunMode::Bare, &extra);
        let picture = Picture::take(&self.w.repo);
        self.begin_command();
        let complete_before = self.complete_attempts();
        let loop_ = Background::spawn(&self.w.repo, cmd);
        let beside = matches!(start.mode, RunMode::Worktree | RunMode::Parallel);
        let mut held = Held {
            complete_before,
            loop_,
            gate,
            beside,
            start,
        };
        if start.live != Live::No {
            let mut running = true;
            wait_until(
                "the held attempt is at work, or the loop ended",
                PATIENCE,
                || {
                    running = held.loop_.still_running();
                    marker.exists() || !running
                },
            );
            if running {
                self.note("  (held at work)");
                self.held = Some(held);
                return;
            }
        }
        fs::write(&held.gate, "").unwrap();
        let ended: Ended = held.loop_.wait(PATIENCE).into();
        if std::env::var_os("GIT_RALPH_SCENARIO_VERBOSE").is_some() {
            self.note(format!("{}{}", ended.stdout, ended.stderr));
        }
        self.judge_command("start", ended, Some(picture));
    }

    /// A run is about to begin afresh: the user's state is kept to judge
    /// its abort, and what earlier runs told the hook is set aside.
    fn fresh_run(&mut self, start: Start) {
        let head_born = self
            .git(&["rev-parse", "-q", "--verify", "HEAD"])
            .status
            .success();
        let k = self.next();
        let told = self.w.repo.dir.path().join(format!("told-before-{k}"));
        fs::rename(&self.w.told_dir, &told).unwrap();
        fs::create_dir_all(&self.w.told_dir).unwrap();
        self.aside = Some(Aside {
            told,
            judged: self.w.judged.0,
            before_start: self.before_start.take(),
            acted_since_start: self.acted_since_start,
            in_place: self.in_place,
        });
        self.before_start = head_born.then(|| user_state(&self.w.repo));
        // A story's file the user already has (an earlier run's work, kept
        // uncommitted by a cleanup) is theirs: an in-place start commits it
        // as the state it began from, done by nobody.
        for id in self.w.mode.stories() {
            if self.w.repo.path(format!("story-{id}.txt")).exists() {
                self.w.by_hand.insert(id.to_string());
            }
        }
        self.acted_since_start = false;
        self.in_place = matches!(start.mode, RunMode::Here | RunMode::Roles | RunMode::Bare);
        self.w.judged.0 = 0;
    }

    /// A start that was refused began no run: the run before it, what its
    /// hook was told and the state before it are the record again.
    fn unless_refused(&mut self, refused: bool) {
        if let Some(aside) = self.aside.take()
            && refused
        {
            fs::remove_dir_all(&self.w.told_dir).unwrap();
            fs::rename(aside.told, &self.w.told_dir).unwrap();
            self.w.judged.0 = aside.judged;
            self.before_start = aside.before_start;
            self.acted_since_start = aside.acted_since_start;
            self.in_place = aside.in_place;
        }
    }

    fn stop(&mut self, stop: Stop) {
        let Some(held) = self.held.take() else {
            self.note("  (nothing held)");
            return;
        };
        let _reaper = Reaper(self.w.repo.record_dir());
        let ended: Ended = match stop {
            Stop::Release => {
                fs::write(&held.gate, "").unwrap();
                held.loop_.wait(PATIENCE).into()
            }
            Stop::Term | Stop::Kill => {
                let signal = if stop == Stop::Term {
                    Signal::SIGTERM
                } else {
                    Signal::SIGKILL
                };
                held.loop_.signal(signal);
                let ended = held.loop_.wait(PATIENCE);
                if stop == Stop::Kill {
                    kill_agents(&self.w.repo.record_dir());
                    self.kill_escapees();
                }
                ended.into()
            }
            Stop::Abort => {
                let mut abort = ralph(&self.w.repo);
                abort.args(["abort", CHANGE]);
                let aborting = std::thread::spawn(move || run(&mut abort));
                let ended = held.loop_.wait(PATIENCE);
                let output = aborting.join().expect("abort ran");
                self.note(format!("  the loop: {:?}", ended.status));
                self.after_abort(&output);
                Ended::from(&output)
            }
        };
        if std::env::var_os("GIT_RALPH_SCENARIO_VERBOSE").is_some() {
            eprintln!(
                "{stop:?}: exit {:?}\n{}{}",
                ended.code, ended.stdout, ended.stderr
            );
        }
        // A check is stopped with the loop: its story is neither
        // checkpointed nor failed by a check left to run to its timeout.
        if stop == Stop::Term
            && held.start.live == Live::Check
            && (self.complete_attempts() > held.complete_before
                || ended.stdout.contains("timed out"))
        {
            self.w.find(format!(
                "SIGTERM while a check ran was not honoured (exit {:?}):\n{}",
                ended.code, ended.stdout
            ));
        }
        // What the user's `git gc` or `git repack` wrote while the agent
        // worked is git's maintenance, not the agent's: it stays.
        if let Some(info_refs) = self.info_refs.take()
            && matches!(stop, Stop::Release | Stop::Term)
            && fs::read(self.w.repo.path(".git/info/refs")).ok().as_ref() != Some(&info_refs)
        {
            self.w.find(format!(
                "{stop:?}: .git/info/refs, written by the user's git gc or repack while the \
                 agent worked, was undone:\n{}",
                ended.stdout
            ));
        }
        // The gate is left for later attempts at once.
        let _ = fs::write(&held.gate, "");
        let what = format!("{stop:?} of a held start");
        self.judge_command(&what, ended, None);
        self.unrecorded = stop == Stop::Kill;
    }

    fn kill9(&mut self, ms: u16) {
        if gated(Known::RandomKill) {
            self.note("  (gated: a kill -9 at a random moment)");
            return;
        }
        if self.start_takes_up()
            && self.w.mode == Mode::Parallel
            && gated(Known::ParallelResumeKilled)
        {
            self.note("  (gated: a kill -9 of a parallel run's resume)");
            return;
        }
        if !self.start_takes_up() {
            self.fresh_run(Start {
                mode: RunMode::Here,
                agent: Agent::Succeeds,
                cleanup: false,
                once: false,
                live: Live::No,
            });
        }
        let script = Mode::Here.script(&[]);
        let cmd = self
            .w
            .start_command(&script, false, &["--on-finish", "keep"]);
        self.begin_command();
        let mut loop_ = Background::spawn(&self.w.repo, cmd);
        std::thread::sleep(Duration::from_millis(ms.into()));
        if loop_.still_running() {
            loop_.signal(Signal::SIGKILL);
        }
        let ended = loop_.wait(PATIENCE);
        kill_agents(&self.w.repo.record_dir());
        self.kill_escapees();
        self.judge_command(KILLED_AT_RANDOM, ended.into(), None);
        self.unrecorded = true;
    }

    fn finish(&mut self, finish: Finish) {
        let how = match finish {
            Finish::Keep => "--keep",
            Finish::Cleanup => "--cleanup",
            Finish::Push => "--push",
        };
        self.command(&["finish", CHANGE, how]);
    }

    fn abort(&mut self) {
        if gated(Known::AbortAfterStop)
            && self.in_place
            && self.run_status().is_some_and(|status| status != "aborted")
            && self.unrecorded
        {
            self.note("  (gated: abort in place of what no record holds)");
            return;
        }
        if gated(Known::AbortConflicted) && !self.w.repo.git(&["ls-files", "--unmerged"]).is_empty()
        {
            self.note("  (gated: abort over the conflicts of the user's stash pop)");
            return;
        }
        let output = self.command(&["abort", CHANGE]);
        self.after_abort(&output);
    }

    fn read(&mut self, read: Read) {
        let args: &[&str] = match read {
            Read::Status => &["status", CHANGE],
            Read::StatusJson => &["status", CHANGE, "--json"],
            Read::Log => &["log", CHANGE],
            Read::Show => &["show", "1", CHANGE],
            Read::Watch | Read::Web => unreachable!("played by more"),
        };
        if self.held.is_some() {
            let output = self.w.ralph(args);
            self.check_exit(&format!("{read:?} while an agent works"), &output);
            return;
        }
        let picture = Picture::take(&self.w.repo);
        let output = self.w.ralph(args);
        self.check_exit(&format!("{read:?}"), &output);
        for change in picture.changes(&Picture::take(&self.w.repo), &[]) {
            self.w.find(format!(
                "{read:?}, a read, changed the repository: {change}"
            ));
        }
    }

    /// What the user holds as a command begins; whether the worktree
    /// holds what no record does is known once the command is not refused.
    fn begin_command(&mut self) {
        self.full_during = self.disk_full;
        self.holdings = self.hold();
        self.unrecorded_before = self.unrecorded;
        self.unrecorded = false;
    }

    /// A command run to its end, judged.
    fn command(&mut self, args: &[&str]) -> Output {
        let picture = Picture::take(&self.w.repo);
        self.begin_command();
        let output = self.w.ralph(args);
        self.judge_command(&args.join(" "), Ended::from(&output), Some(picture));
        output
    }

    fn check_exit(&mut self, what: &str, output: &Output) {
        let code = output.status.code();
        self.note(format!("  exit {code:?}"));
        let full = self.disk_full && code == Some(70);
        if !full && !matches!(code, Some(0 | 1 | 2 | 3 | 8 | 9 | 130)) {
            self.w.find(format!("{what}: {}", describe(output)));
        }
    }

    /// After an `abort` that said it succeeded: with nothing done by the
    /// user since the start, everything is exactly as before it.
    fn after_abort(&mut self, output: &Output) {
        if !output.status.success() {
            return;
        }
        if self.acted_since_start {
            return;
        }
        if let Some(before) = &self.before_start {
            let now = user_state(&self.w.repo);
            if now.work != before.work || now.stashes != before.stashes {
                self.w.find(format!(
                    "abort did not give back the state before the start:\nbefore {:?}\nnow {:?}",
                    before.work, now.work
                ));
            }
            let mut diff = snapshot_diff(&before.files, &now.files);
            // git keeps no directory, only files: an empty directory of the
            // user's is not given back (said in the closing report).
            diff.retain(|entry| !entry.ends_with('/'));
            // With core.autocrlf, a file checked out again has the line
            // endings the configuration asks for, as after git's own
            // `stash` and `stash pop`: the same content to git.
            if self.shape == Shape::Crlf {
                diff.retain(|entry| {
                    let Some(path) = entry.strip_prefix("changed ") else {
                        return true;
                    };
                    let lf = |files: &BTreeMap<String, (u32, Vec<u8>)>| {
                        files.get(path).map(|(mode, bytes)| {
                            (*mode, String::from_utf8_lossy(bytes).replace("\r\n", "\n"))
                        })
                    };
                    lf(&before.files) != lf(&now.files)
                });
            }
            if !diff.is_empty() {
                self.w.find(format!(
                    "abort did not give back the user's files: {diff:?}"
                ));
            }
        }
    }

    /// Everything that must hold once a command has ended.
    fn judge_command(&mut self, what: &str, ended: Ended, picture: Option<Picture>) {
        self.note(format!("  exit {:?}", ended.code));
        let raced = std::mem::take(&mut self.raced);
        let output_said = format!("{}{}", ended.stdout, ended.stderr);
        // A start whose `--on-finish cleanup` is refused at its end (the
        // run's work clashes with what the user committed or left beside
        // it) is no refused start: its stories ran and are on the run's
        // branch, the run is kept, as the hint says; only the cleanup was
        // refused, and that changed nothing (`finish --cleanup` is judged
        // as the refusal it is).
        let cleanup_refused_at_end = what.contains("start")
            && [
                "the run's work clashes with what you committed",
                "cleanup would touch your own changes",
            ]
            .iter()
            .any(|words| output_said.contains(words));
        let refused = matches!(ended.code, Some(1 | 2)) && !cleanup_refused_at_end;
        self.unless_refused(refused);
        if refused {
            self.unrecorded = self.unrecorded_before;
        }
        // An agent that only writes its story's files has nothing to undo:
        // what is said undone is the user's, blamed on it. A run that ends
        // at once, its retries spent, quotes an earlier agent's reason.
        let harmless = matches!(
            self.agent.take(),
            Some(Agent::Succeeds | Agent::Fails | Agent::Asks | Agent::Escapes)
        );
        let said_undone = output_said.lines().any(|line| {
            line.contains("undone")
                && !line.contains("last reason:")
                && !line.contains("could not be undone")
        });
        if harmless && said_undone {
            self.w.find(format!(
                "{what}: what the user did is reported as the agent's:\n{}",
                output_said.trim()
            ));
        }
        // A full disk is the machine's failure: exit 70, said.
        let full = self.full_during && ended.code == Some(70);
        if !full && !matches!(ended.code, Some(0 | 1 | 2 | 3 | 8 | 9 | 130) | None) {
            self.w.find(format!(
                "{what}: exit {:?}\n{}",
                ended.code,
                output_said.trim()
            ));
        }
        // A push that fails once the run is kept is no refusal: the run
        // is kept, as the hint says (docs/handoff.md).
        let kept_then_failed = output_said.contains("hint: the run is kept on");
        if refused
            && !kept_then_failed
            && let Some(picture) = picture
        {
            // A lock a dead loop left is taken over, with a warning, by any
            // command that needs it, and the index lock it left is moved
            // aside, said: the changes a refusal may make.
            let mut allowed: Vec<String> = Vec::new();
            if output_said.contains("took over the lock") {
                allowed.push("removed .git/ralph/lock".into());
            }
            // The index lock that loop left, moved aside where it is said.
            for line in output_said.lines() {
                if let Some((_, to)) = line.split_once("it is moved aside to ")
                    && let Some(at) = to.find(".git/ralph/")
                {
                    allowed.push("removed .git/index.lock".into());
                    allowed.push(format!("added {}", to[at..].trim()));
                }
            }
            // A command the full disk stopped may leave objects and files
            // of its own in the git directory; the refs, HEAD, the index
            // and the worktree are as they were.
            if self.full_during {
                allowed.extend(["added .git/".into(), "changed .git/".into()]);
            }
            if raced && gated(Known::RacedRefusalLeavesDir) {
                allowed.push("added .git/ralph/".into());
            }
            let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
            for change in picture.changes(&Picture::take(&self.w.repo), &allowed) {
                self.w.find(format!(
                    "{what} was refused ({}) yet {change}",
                    output_said.trim()
                ));
            }
        }
        self.judge_escapees(what);
        let now = self.hold();
        for lost in self.holdings.lost_in(&now, &self.w.repo) {
            self.w.find(format!("after {what}: {lost}"));
        }
        self.holdings = now;
        for finding in sound(&self.w.repo, &self.hooks) {
            self.w.find(format!("after {what}: {finding}"));
        }
        self.judge_record(what, &ended);
    }

    /// The matrix's oracle, on the shelf the run's work is on now.
    fn judge_record(&mut self, what: &str, ended: &Ended) {
        let status = self.run_status();
        self.shelf = if has_ref(&self.w.repo, &format!("refs/heads/{BRANCH}")) {
            Some(Shelf::Branch)
        } else if status.as_deref() == Some("aborted") {
            Some(Shelf::Aborted)
        } else if status.as_deref() == Some("finished")
            && has_ref(&self.w.repo, &format!("{NS}/finished"))
        {
            Some(Shelf::Finished)
        } else {
            None
        };
        let sparse_back = matches!(self.shelf, Some(Shelf::Aborted | Shelf::Finished));
        if sparse_back && skip_worktree(&self.w.repo) != self.sparse {
            self.w.find(format!(
                "after {what}: the skip-worktree bits are {:?}, not the user's {:?}",
                skip_worktree(&self.w.repo),
                self.sparse
            ));
        }
        // A kill -9 at a random moment may fall between a checkpoint and
        // its record: the next command that goes on with the run (or ends
        // it) puts the record right, and is judged from then on.
        if what == KILLED_AT_RANDOM {
            self.record_lags = true;
        } else if ended.code.is_some_and(|code| code != 1 && code != 2) {
            self.record_lags = false;
        }
        if let Some(shelf) = self.shelf
            && self.run_exists()
            && !self.record_lags
        {
            assert_record_agrees_with_branch(&mut self.w, &format!("after {what}"), shelf);
        }
    }
}

/// How a command ended, whichever way it ran.
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl From<Finished> for Ended {
    fn from(finished: Finished) -> Ended {
        Ended {
            code: finished.status.code(),
            stdout: finished.stdout,
            stderr: finished.stderr,
        }
    }
}

impl From<&Output> for Ended {
    fn from(output: &Output) -> Ended {
        Ended {
            code: output.status.code(),
            stdout: stdout(output),
            stderr: stderr(output),
        }
    }
}
