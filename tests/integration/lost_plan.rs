//! A `git ralph plan` killed with kill -9 (issue 44, item 4), through the
//! real binary: its agent had rewritten a file of the user's that held
//! staged and unstaged edits, staged it, and left a stray file, when the
//! plan's process died. The next command that meets it (`plan` of the same
//! change, `plan --refine`, `plan` of another change, `abort`) puts the
//! user's files, index and untracked files back byte for byte as they were
//! before the plan began, keeps what the agent left under a ref it names,
//! and ends the agent still running; `status` tells of it and changes
//! nothing. Git is the oracle.

use std::fs;
use std::process::Output;
use std::time::Duration;

use crate::harness::story_run::{Background, WorkState, group_alive, work_state};
use crate::harness::*;
use crate::plan_e2e::{CHANGE, FOLDER, TASKS, good_plan, plan_with, project};
use nix::sys::signal::Signal;

const PATIENCE: Duration = Duration::from_secs(60);
/// The ref that keeps what the killed plan's agent left.
const KEPT: &str = "refs/ralph/greet/plan/1/cut-short";

/// The user's work before the plan: `src/lib.rs` staged at v2 and edited
/// again to v3, and an untracked file.
fn users_work(repo: &TestRepo) {
    repo.write("src/lib.rs", "pub fn greet() { /* v2, staged */ }\n");
    repo.git(&["add", "src/lib.rs"]);
    repo.write("src/lib.rs", "pub fn greet() { /* v3, unstaged */ }\n");
    repo.write("notes/idea.txt", "an untracked idea\n");
}

/// The killed plan's agent, whose group is killed when the test ends
/// whatever happened, so that a failing test leaves no process behind.
struct Agent(i32);

impl Drop for Agent {
    fn drop(&mut self) {
        if self.0 > 1 {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.0), Signal::SIGKILL);
        }
    }
}

/// A plan whose agent has written half a plan, rewritten and staged
/// `src/lib.rs`, written `stray.txt`, and waits, when the plan is killed
/// with SIGKILL. Returns the state before the plan and the agent's PID.
fn killed_plan(repo: &TestRepo) -> (WorkState, Agent) {
    users_work(repo);
    let before = work_state(repo);
    let records = repo.record_dir();
    fs::create_dir_all(&records).expect("records");
    let ready = records.join("agent-ready");
    let never = records.join("never");
    let agent = script(
        repo,
        &format!(
            "[*]\n{}write src/lib.rs the agent's own text\ngit add src/lib.rs\n\
             write stray.txt left by the agent\nwrite {} yes\nwait-for {}\n",
            good_plan(),
            ready.display(),
            never.display()
        ),
    );
    // The agent's shell records its PID, which leads its process group,
    // then becomes the fake agent.
    let pid_file = records.join("plan-agent.pid");
    let agent_command = format!(
        "echo $$ > {}; exec {}",
        shell_quote(&pid_file.to_string_lossy()),
        shell_quote(fake_agent_path())
    );
    let mut cmd = ralph_with_fake(repo, &agent);
    cmd.args(["plan", CHANGE, "Greet the visitors"])
        .args(["--agent-command", &agent_command]);
    let plan = Background::spawn(repo, cmd);
    wait_until("the planning agent is at work", PATIENCE, || ready.exists());
    let agent_pid: i32 = fs::read_to_string(&pid_file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or_else(|| panic!("the agent records its PID in {}", pid_file.display()));
    plan.signal(Signal::SIGKILL);
    let killed = plan.wait(PATIENCE);
    assert_eq!(killed.status.code(), None, "killed by a signal");
    // The kill left the agent's work in place: the mess to put back.
    assert_eq!(repo.read("src/lib.rs"), "the agent's own text");
    assert!(repo.path("stray.txt").exists());
    (before, Agent(agent_pid))
}

/// The user's files, index and untracked files as before the plan, byte
/// for byte, the plan's own folder aside.
fn assert_put_back(repo: &TestRepo, before: &WorkState) {
    let mut now = work_state(repo);
    now.untracked.retain(|name, _| !name.starts_with(FOLDER));
    let status: String = now
        .status
        .lines()
        .filter(|line| !line.contains("openspec/"))
        .map(|line| format!("{line}\n"))
        .collect();
    now.status = status;
    assert_eq!(now.index, before.index, "the index is as it was");
    assert_eq!(now.staged, before.staged, "git diff --cached is as it was");
    assert_eq!(now.unstaged, before.unstaged, "git diff is as it was");
    assert_eq!(now.untracked, before.untracked, "the untracked files");
    assert_eq!(now.head, before.head);
    assert_eq!(now.head_ref, before.head_ref);
    assert_eq!(
        fs::read(repo.path("src/lib.rs")).expect("src/lib.rs"),
        b"pub fn greet() { /* v3, unstaged */ }\n"
    );
    assert!(!repo.path("stray.txt").exists(), "the stray file is gone");
}

/// What the agent left is reachable from the ref the output names.
fn assert_kept(repo: &TestRepo, output: &Output) {
    let said = format!("{}{}", stdout(output), stderr(output));
    assert!(said.contains("cut short"), "the recovery is told:\n{said}");
    assert!(said.contains(KEPT), "the ref is named:\n{said}");
    assert_eq!(
        repo.git(&["show", &format!("{KEPT}:src/lib.rs")]),
        "the agent's own text"
    );
    assert_eq!(
        repo.git(&["show", &format!("{KEPT}:stray.txt")]),
        "left by the agent"
    );
    assert!(
        repo.git_ok(&["cat-file", "-e", &format!("{KEPT}:{TASKS}")]),
        "the half-written plan is kept too"
    );
    assert!(
        !repo.git_ok(&[
            "rev-parse",
            "--verify",
            "-q",
            "refs/ralph/greet/plan/1/before"
        ]),
        "what the plan noted is gone once put back"
    );
    let record = crate::plan_e2e::record(repo, 1);
    assert_eq!(record["status"], "stopped", "{record}");
    repo.assert_fsck_clean();
}

fn wait_gone(agent: &Agent) {
    wait_until("the killed plan's agent is gone", PATIENCE, || {
        !group_alive(agent.0)
    });
}

fn plan_again(repo: &TestRepo, args: &[&str]) -> Output {
    let agent = script(repo, &format!("[*]\n{}", good_plan()));
    plan_with(repo, &agent, args)
}

#[test]
fn the_next_plan_of_the_same_change_puts_back_a_killed_plan_then_plans() {
    let repo = project();
    let (before, agent) = killed_plan(&repo);
    let output = plan_again(&repo, &[CHANGE, "Greet the visitors"]);
    assert_exit(&output, 0);
    wait_gone(&agent);
    assert_put_back(&repo, &before);
    assert_kept(&repo, &output);
    assert!(repo.path(TASKS).is_file(), "the new plan is written");
}

#[test]
fn plan_refine_after_a_killed_plan_puts_it_back_and_finds_nothing_to_refine() {
    let repo = project();
    let (before, agent) = killed_plan(&repo);
    let output = plan_again(&repo, &[CHANGE, "--refine"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("there is no"),
        "{}",
        stderr(&output)
    );
    wait_gone(&agent);
    assert_put_back(&repo, &before);
    assert!(
        !repo.path(FOLDER).exists(),
        "the half-written plan is put back"
    );
    assert_kept(&repo, &output);
}

#[test]
fn a_plan_of_another_change_puts_back_a_killed_plan_first() {
    let repo = project();
    let (before, agent) = killed_plan(&repo);
    let output = plan_again(&repo, &["other", "Something else"]);
    wait_gone(&agent);
    assert_kept(&repo, &output);
    let mut now = work_state(&repo);
    now.untracked
        .retain(|name, _| !name.starts_with("openspec/"));
    assert_eq!(now.staged, before.staged);
    assert_eq!(now.unstaged, before.unstaged);
    assert_eq!(now.untracked, before.untracked);
}

#[test]
fn status_tells_of_a_killed_plan_and_abort_puts_everything_back() {
    let repo = project();
    let (before, agent) = killed_plan(&repo);
    let untouched = Untouched::take(&repo);
    let status = ralph_cmd(&repo, &["status"]);
    assert_exit(&status, 0);
    let said = stderr(&status);
    assert!(said.contains("cut short"), "{said}");
    assert!(said.contains("git ralph abort greet"), "{said}");
    untouched.assert_still(&repo, "status");

    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    wait_gone(&agent);
    assert_eq!(
        work_state(&repo),
        before,
        "exactly the state before the plan"
    );
    assert_kept(&repo, &output);
}

/// The ref that keeps how things stood before the killed plan.
const BEFORE: &str = "refs/ralph/greet/plan/1/before";

/// The repository as the user sees it: status, refs, HEAD and the
/// worktree's files (the git directory's own files aside, where a dead
/// agent's pid file may be dropped).
fn users_view(repo: &TestRepo) -> (String, String, String, Vec<(String, Vec<u8>)>) {
    let files = disk_snapshot(&repo.root)
        .into_iter()
        .filter(|(name, _)| !name.starts_with(".git/"))
        .map(|(name, (_, bytes))| (name, bytes))
        .collect();
    (
        repo.git(&["status", "--porcelain=v1", "-uall", "--ignored"]),
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        repo.git(&["symbolic-ref", "HEAD"]),
        files,
    )
}

/// Found by the generated scenarios (`plan-kill commit plan-refine`): a
/// commit the user makes after a plan was killed is theirs. The next plan
/// cannot tell what the killed plan's agent did from what the user did
/// since, so it refuses, naming what to do, and changes nothing; `abort`
/// then lets the killed plan go with the user's commit on their branch,
/// naming where how things stood before the plan is kept.
#[test]
fn a_commit_made_after_a_killed_plan_stays_on_its_branch() {
    let repo = project();
    let (_, agent) = killed_plan(&repo);
    drop(agent);
    repo.git(&[
        "commit",
        "-q",
        "-a",
        "-m",
        "the user's commit after the kill",
    ]);
    let commit = repo.git(&["rev-parse", "HEAD"]);
    let view = users_view(&repo);

    let output = plan_again(&repo, &[CHANGE, "--refine"]);
    assert_exit(&output, 1);
    let said = stderr(&output);
    assert!(said.contains("cut short"), "{said}");
    assert!(
        said.contains("refs/heads/main"),
        "what moved is named:\n{said}"
    );
    assert!(said.contains(BEFORE), "{said}");
    assert!(said.contains("git ralph abort greet"), "{said}");
    assert_eq!(users_view(&repo), view, "the refused plan changed nothing");

    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(said.contains(BEFORE), "{said}");
    assert_eq!(
        users_view(&repo),
        view,
        "abort changed nothing of the user's"
    );
    assert_eq!(repo.git(&["rev-parse", "refs/heads/main"]), commit);
    assert_eq!(
        repo.git(&["show", &format!("{BEFORE}^:src/lib.rs")]),
        "pub fn greet() { /* v3, unstaged */ }\n",
        "the worktree before the plan is kept"
    );
    let record = crate::plan_e2e::record(&repo, 1);
    assert_eq!(record["status"], "stopped", "{record}");
    repo.assert_fsck_clean();

    // The plan is let go: the next one works on the plan as it is.
    let output = plan_again(&repo, &[CHANGE, "--refine"]);
    assert_exit(&output, 0);
    assert_eq!(repo.git(&["rev-parse", "refs/heads/main"]), commit);
    assert!(
        repo.path("stray.txt").exists(),
        "the user's repository is theirs"
    );
}
