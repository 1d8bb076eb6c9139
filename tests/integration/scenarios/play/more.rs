//! The commands of a scenario beyond a run's start and its endings:
//!
//! - `plan` of the change `extra`, its agent also rewriting and staging a
//!   file of the user's and leaving a stray one, which the plan undoes; the
//!   same plan killed -9, which the next `plan` puts back, or refuses to
//!   once the user moved HEAD or a ref since it began; `plan --refine`;
//! - `answer` to the story a run parked on its agent's question;
//! - two starts launched at the same moment: exactly one runs, the other
//!   is refused and its agent never called;
//! - `watch` on a terminal and the web view (`serve` on a free port, its
//!   pages read over HTTP): reads, which change nothing, and whose pages
//!   agree with `status`;
//! - the children agents leave in sessions of their own: none outlives
//!   the loop that started it.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::{Ended, PATIENCE, Scenario};
use crate::harness::story_run::*;
use crate::harness::web::{Client, alive};
use crate::harness::*;
use crate::matrix::Mode;
use crate::plan_e2e::good_plan_in;
use crate::scenarios::invariants::Picture;
use crate::scenarios::shapes::SMUDGED;
use crate::scenarios::steps::{Agent, Live, Plan, RunMode, Start};
use crate::serve::shown;

/// The change `plan` makes.
const PLANNED: &str = "extra";
/// The file of the user's the planning agent rewrites and stages.
const MEDDLED: &str = "notes.txt";
/// The file it leaves.
const STRAY: &str = "stray-plan.txt";

/// What a plan's agent may touch of the user's, as it was before the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeforePlan {
    on_disk: Option<Vec<u8>>,
    staged: String,
    stray: bool,
}

/// The content git makes of a file's bytes in every shape: CRLF made LF
/// (`core.autocrlf`), the smudge filter's prefix taken off.
fn as_git_keeps(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .replace("\r\n", "\n")
        .lines()
        .map(|line| line.strip_prefix(SMUDGED).unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

impl BeforePlan {
    /// The same, as git sees it: a file put back by a checkout has the
    /// line endings and the smudging the configuration asks for, as after
    /// git's own `stash` and `stash pop`.
    fn same_to_git(&self, other: &BeforePlan) -> bool {
        self.staged == other.staged
            && self.stray == other.stray
            && self.on_disk.as_deref().map(as_git_keeps)
                == other.on_disk.as_deref().map(as_git_keeps)
    }

    fn take(s: &Scenario) -> BeforePlan {
        BeforePlan {
            on_disk: fs::read(s.w.repo.path(MEDDLED)).ok(),
            staged: stdout(&s.git(&["ls-files", "-s", "--", MEDDLED])),
            stray: s.w.repo.path(STRAY).exists(),
        }
    }
}

/// The pids a file of [`Agent::Escapes`] children holds.
fn pids_in(file: &Path) -> Vec<i32> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

impl Scenario {
    /// The script of `plan`: a good plan of `extra`; unless refining, the
    /// agent also meddles with the user's files; when `wait` is given, it
    /// then says so at `ready` and waits.
    fn plan_script(&self, plan: Plan, ready: &Path) -> String {
        let folder = format!("openspec/changes/{PLANNED}");
        let mut text = format!("[*]\n{}", good_plan_in(&folder));
        if plan != Plan::Refine {
            text.push_str(&format!(
                "write {MEDDLED} the planner's notes\\n\ngit add {MEDDLED}\n\
                 write {STRAY} left by the planner\\n\n"
            ));
        }
        if plan == Plan::Killed {
            let never = self.w.repo.record_dir().join("never");
            text.push_str(&format!(
                "write {} at work\nwait-for {}\n",
                ready.display(),
                never.display()
            ));
        }
        text
    }

    /// The user's branches, tags, stash and HEAD, which no plan moves: its
    /// agent here never touches them, so a plan that moves one undoes
    /// what the user did.
    fn users_refs(&self) -> String {
        let refs = self.git(&[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
        ]);
        let stash = self.git(&["stash", "list", "--format=%H"]);
        let head = self.git(&["rev-parse", "--symbolic-full-name", "HEAD"]);
        let at = self.git(&["rev-parse", "HEAD"]);
        format!(
            "{}{}HEAD {} {}",
            stdout(&refs),
            stdout(&stash),
            stdout(&head).trim(),
            stdout(&at).trim()
        )
    }

    pub(super) fn plan(&mut self, plan: Plan) {
        let before = BeforePlan::take(self);
        let refs_before = self.users_refs();
        let records = self.w.repo.record_dir();
        fs::create_dir_all(&records).unwrap();
        let k = self.next();
        let ready = records.join(format!("planning-{k}"));
        let agent = script(&self.w.repo, &self.plan_script(plan, &ready));
        let mut cmd = ralph_with_fake(&self.w.repo, &agent);
        cmd.args(["plan", PLANNED]);
        if plan == Plan::Refine {
            cmd.arg("--refine");
        } else {
            cmd.arg("Greet the visitors in French");
        }
        cmd.args(["--agent-command", &agent_command(&self.w.repo)]);
        // A plan that meets a killed one puts it back, refused or not.
        let killed = self.plan_killed.take();
        let picture = (!self.plan_cut).then(|| Picture::take(&self.w.repo));
        self.plan_cut = false;
        self.begin_command();
        let mut running = Background::spawn(&self.w.repo, cmd);
        let mut cut = false;
        if plan == Plan::Killed {
            wait_until(
                "the planning agent is at work, or the plan ended",
                PATIENCE,
                || {
                    cut = running.still_running();
                    ready.exists() || !cut
                },
            );
            if cut {
                running.signal(Signal::SIGKILL);
            }
        }
        let ended: Ended = running.wait(PATIENCE).into();
        if cut {
            kill_agents(&records);
        }
        let refused = matches!(ended.code, Some(1 | 2));
        // A killed plan is not put back once the user went on since it
        // began (HEAD or a ref moved): the plan refuses, and the killed
        // one waits for the next.
        let moved_on = refused
            && ended
                .stderr
                .contains("cannot tell what its agent did from what you did since");
        let what = format!("plan ({plan:?})");
        self.judge_command(&what, ended, picture);
        let refs_now = self.users_refs();
        if refs_now != refs_before {
            self.w.find(format!(
                "{what} moved the user's refs or HEAD:\nbefore\n{refs_before}\nafter\n{refs_now}"
            ));
        }
        if cut {
            self.plan_killed = Some(killed.unwrap_or(before));
            self.plan_cut = true;
            return;
        }
        if moved_on && killed.is_some() {
            self.plan_killed = killed;
            self.plan_cut = true;
            return;
        }
        // What the planning agent did to the user's files is undone once
        // the plan ends, and a killed plan's is undone by the next one,
        // whatever was done in between: what differs from how the files
        // stood before the killed plan is put back, kept under a ref.
        let wanted = match killed {
            Some(killed) => killed,
            None if refused => return,
            None => before,
        };
        let now = BeforePlan::take(self);
        if !now.same_to_git(&wanted) {
            self.w.find(format!(
                "after {what}: what a planning agent did to the user's {MEDDLED} or {STRAY} \
                 stays: before the plan {wanted:?}, now {now:?}"
            ));
        }
    }

    /// `answer` to the story that waits, or to story 1 when none does.
    pub(super) fn answer(&mut self) {
        let status = self.w.ralph(&["status", CHANGE, "--json"]);
        let json: serde_json::Value =
            serde_json::from_slice(&status.stdout).unwrap_or(serde_json::Value::Null);
        let story = json["waiting"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|waiting| waiting["answered"] != true)
            .and_then(|waiting| waiting["story"].as_str())
            .unwrap_or("1")
            .to_string();
        self.command(&["answer", CHANGE, &story, "Casual: one plain line."]);
    }

    /// Two starts of the run launched at the same moment, their agents
    /// held at work: exactly one runs.
    pub(super) fn start_twice(&mut self) {
        let start = Start {
            mode: RunMode::Here,
            agent: Agent::Succeeds,
            cleanup: false,
            once: false,
            live: Live::Agent,
        };
        if !self.start_takes_up() {
            self.fresh_run(start);
        }
        self.w.mode = Mode::Here;
        let k = self.next();
        let dir = self.w.repo.dir.path().to_owned();
        let gate = dir.join(format!("gate-{k}"));
        let barrier = dir.join(format!("barrier-{k}"));
        fs::create_dir_all(&barrier).unwrap();
        let records = self.w.repo.record_dir();
        fs::create_dir_all(&records).unwrap();
        let nowhere = records.join(format!("escapees-{k}"));
        let picture = Picture::take(&self.w.repo);
        self.begin_command();
        self.agent = Some(Agent::Succeeds);
        let mut starts = Vec::new();
        for side in ["a", "b"] {
            let marker = records.join(format!("live-{k}-{side}"));
            let text = self.script(start, &gate, &marker, &nowhere);
            let cmd =
                self.w
                    .start_command(&text, true, &["--max-retries", "0", "--on-finish", "keep"]);
            let ready = shell_quote(&barrier.join(side).display().to_string());
            let go = shell_quote(&barrier.join("go").display().to_string());
            let mut wrapper = Command::new("sh");
            wrapper
                .arg("-c")
                .arg(format!(
                    "touch {ready}; while [ ! -e {go} ]; do :; done; exec \"$@\""
                ))
                .arg("barrier");
            let cmd = self.w.repo.wrap(wrapper, &cmd);
            starts.push((marker, Some(Background::spawn(&self.w.repo, cmd))));
        }
        wait_until("both starts are at the barrier", PATIENCE, || {
            barrier.join("a").exists() && barrier.join("b").exists()
        });
        fs::write(barrier.join("go"), "").unwrap();
        let mut ended: Vec<Option<Finished>> = vec![None, None];
        let mut both_at_work = false;
        wait_until(
            "one start is at work and the other ended, or both ended",
            PATIENCE,
            || {
                for (n, (_, running)) in starts.iter_mut().enumerate() {
                    if running.as_mut().is_some_and(|bg| !bg.still_running()) {
                        ended[n] = running.take().map(|bg| bg.wait(PATIENCE));
                    }
                }
                both_at_work = starts.iter().all(|(marker, _)| marker.exists());
                let at_work = starts
                    .iter()
                    .any(|(marker, running)| running.is_some() && marker.exists());
                both_at_work
                    || ended.iter().all(Option::is_some)
                    || (at_work && ended.iter().any(Option::is_some))
            },
        );
        if both_at_work {
            self.w
                .find("two starts launched at the same moment both set an agent to work");
        }
        // The one that ended while the other's agent was at work was
        // refused, and its agent never ran.
        let one_at_work = starts
            .iter()
            .any(|(marker, running)| running.is_some() && marker.exists());
        if one_at_work {
            for (n, finished) in ended.iter().enumerate() {
                let Some(finished) = finished else { continue };
                self.note(format!(
                    "  the other start: exit {:?}\n{}",
                    finished.status.code(),
                    finished.stderr.trim()
                ));
                if !matches!(finished.status.code(), Some(1 | 2)) || starts[n].0.exists() {
                    self.w.find(format!(
                        "two starts at once: one ran, and the other was not refused \
                         (exit {:?}):\n{}{}",
                        finished.status.code(),
                        finished.stdout,
                        finished.stderr
                    ));
                }
            }
        }
        fs::write(&gate, "").unwrap();
        let mut last = None;
        for (n, (_, running)) in starts.into_iter().enumerate() {
            if let Some(running) = running {
                ended[n] = Some(running.wait(PATIENCE));
            }
        }
        // Judged as one command: the one that ran, or, both refused, the
        // first, with the picture of before.
        let ran = ended
            .iter()
            .flatten()
            .find(|finished| !matches!(finished.status.code(), Some(1 | 2)));
        let refused_both = ran.is_none();
        for finished in ended.into_iter().flatten() {
            if last.is_none() || !matches!(finished.status.code(), Some(1 | 2)) {
                last = Some(finished);
            }
        }
        let last = last.expect("two starts ended");
        self.raced = true;
        self.judge_command(
            "two starts at once",
            last.into(),
            refused_both.then_some(picture),
        );
    }

    /// `watch` on a terminal, left with q as soon as it shows the run.
    pub(super) fn watch(&mut self) {
        let picture = self.held.is_none().then(|| Picture::take(&self.w.repo));
        let mut template = ralph(&self.w.repo);
        template.args(["watch", CHANGE]);
        let output = on_a_terminal(&self.w.repo, &template, (CHANGE, "q"), Some((30, 100)), 60);
        if output.status.code() == Some(124) {
            self.w.find(format!(
                "watch never showed the run within a minute:\n{}",
                stdout(&output)
            ));
            return;
        }
        self.check_exit("watch", &output);
        if let Some(picture) = picture {
            for change in picture.changes(&Picture::take(&self.w.repo), &[]) {
                self.w
                    .find(format!("watch, a read, changed the repository: {change}"));
            }
        }
    }

    /// The web view: `serve` on a free port; its list and the run's page
    /// are read and held against `status --json`; then it is stopped.
    pub(super) fn web(&mut self) {
        let picture = self.held.is_none().then(|| Picture::take(&self.w.repo));
        let mut cmd = ralph(&self.w.repo);
        cmd.args(["serve", "--bind", "127.0.0.1:0"]);
        let mut server = Background::spawn(&self.w.repo, cmd);
        let mut url = String::new();
        let mut running = true;
        wait_until("the server prints its URL, or ends", PATIENCE, || {
            url = server
                .stdout_so_far()
                .lines()
                .next()
                .unwrap_or("")
                .to_owned();
            running = server.still_running();
            !url.is_empty() || !running
        });
        if url.is_empty() {
            let ended = server.wait(PATIENCE);
            let code = ended.status.code();
            self.note(format!("  serve: exit {code:?}"));
            let full = self.disk_full && code == Some(70);
            if !full && !matches!(code, Some(1 | 2)) {
                self.w.find(format!(
                    "serve ended without serving: exit {code:?}\n{}",
                    ended.stderr
                ));
            }
            return;
        }
        let client = Client::of(&url);
        let status = self.w.ralph(&["status", CHANGE, "--json"]);
        let run_page = client.get(&format!("/runs/{CHANGE}"));
        let list = client.get("/");
        server.signal(Signal::SIGTERM);
        let ended = server.wait(PATIENCE);
        self.note(format!("  serve: exit {:?}", ended.status.code()));
        if list.status != 200 {
            self.w.find(format!("the web view's list: {}", list.status));
        }
        if status.status.success() {
            self.page_agrees(&status, run_page.status, &shown(&run_page.body));
        }
        if let Some(picture) = picture {
            // The token is kept for the next server (the guide says so).
            let token = ["added .git/ralph/serve-token", "added .git/ralph/"];
            for change in picture.changes(&Picture::take(&self.w.repo), &token) {
                self.w.find(format!(
                    "the web view, a read, changed the repository: {change}"
                ));
            }
        }
    }

    /// The run's page shows each story as `status --json` does.
    fn page_agrees(&mut self, status: &std::process::Output, code: u16, page: &str) {
        let json: serde_json::Value =
            serde_json::from_slice(&status.stdout).unwrap_or(serde_json::Value::Null);
        if code != 200 {
            self.w.find(format!(
                "the run's page answered {code} while status reads the run"
            ));
            return;
        }
        for story in json["stories"].as_array().into_iter().flatten() {
            let id = story["id"].as_str().unwrap_or_default();
            let title = story["title"].as_str().unwrap_or_default();
            let shown_as = format!("{id}. {title}");
            if !page.contains(&shown_as) {
                self.w.find(format!(
                    "the run's page does not show {shown_as:?}, which status reads:\n{page}"
                ));
            }
        }
    }

    /// Every child an agent left in a session of its own is gone once the
    /// loop that started it ended: the attempt took it along.
    pub(super) fn judge_escapees(&mut self, what: &str) {
        if self.held.is_some() {
            return;
        }
        for file in std::mem::take(&mut self.escapees) {
            for pid in pids_in(&file) {
                if !alive(pid as u32) {
                    continue;
                }
                // Killed at the attempt's end, it may still be dying.
                let mut waited = 0;
                while alive(pid as u32) && waited < 100 {
                    std::thread::sleep(Duration::from_millis(50));
                    waited += 1;
                }
                if alive(pid as u32) {
                    self.w.find(format!(
                        "after {what}: the child {pid} an agent left in a session of its own \
                         outlived its attempt"
                    ));
                    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
        }
    }

    /// The escaped children of a loop killed -9, which nothing can end
    /// but the test (as the agents themselves).
    pub(super) fn kill_escapees(&mut self) {
        for file in std::mem::take(&mut self.escapees) {
            for pid in pids_in(&file) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
}
