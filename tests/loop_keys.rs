//! Stopping from the keyboard, through the real binary: `q` in a terminal
//! stops gracefully, three interrupts within three seconds force-quit, and a
//! force-quit run resumes with its half-done attempt preserved. Also: the
//! repository is found through GIT_DIR and GIT_WORK_TREE.

mod common;
mod loop_support;

use std::fs;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use loop_support::*;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Runs a command in a pseudo-terminal; once `trigger` shows, types `keys`.
const PTY_DRIVER: &str = r#"
import os, pty, select, sys, time
trigger = sys.argv[1].encode()
keys = sys.argv[2].encode()
argv = sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
seen = b""
sent = False
deadline = time.time() + 30
while True:
    if time.time() > deadline:
        os.kill(pid, 9)
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

/// Is any process of group `pgid` still running? Zombies do not count: a
/// force-quit leaves no parent to reap the killed agent, and in a container
/// nothing else may.
fn group_alive(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    let Ok(entries) = fs::read_dir("/proc") else {
        return true;
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

#[test]
fn q_in_a_terminal_stops_the_loop_gracefully() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!("{}[story=2]\nwrite half.txt x\nsleep 30\n", story_done("1")),
    );
    let template = start_command(&repo, &agent, &[]);
    let driver = repo.dir.path().join("pty_driver.py");
    fs::write(&driver, PTY_DRIVER).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(&driver)
        .arg("story 2/2")
        .arg("q")
        .arg(template.get_program())
        .args(template.get_args())
        .current_dir(&repo.root)
        .stdin(Stdio::null());
    repo.lock(&mut cmd);
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("TERM", "xterm");
    let output = cmd.output().expect("python3 drives the pseudo-terminal");
    let transcript = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(130), "{transcript}");
    assert!(transcript.contains("stopping"), "{transcript}");
    let state = state(&repo);
    assert_eq!(state["reason"], "stopped");
    assert_eq!(attempts_of(&state, "2")[0].0, "interrupted");
    assert!(!group_alive(
        agent_record(&repo, "pid", "2", 1).trim().parse().unwrap()
    ));
    assert_eq!(
        subjects(&repo, "main..HEAD")[0],
        "ralph(greet): story 1 Greeting"
    );
    assert_eq!(
        repo.status_porcelain(),
        "",
        "the half-done attempt was set aside"
    );
    assert!(has_ref(&repo, &format!("{NS}/attempts/2/1")));
}

#[test]
fn three_interrupts_within_three_seconds_force_quit_and_the_run_resumes() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    // Story 2's first attempt ignores SIGTERM, so a graceful stop takes the
    // two seconds before SIGKILL: time for two more interrupts.
    let records = repo.record_dir();
    fs::create_dir_all(&records).unwrap();
    let stubborn = format!(
        "if [ \"$RALPH_STORY-$RALPH_ATTEMPT\" = 2-1 ]; then trap '' TERM; echo $$ > '{}/pid-2-1'; \
         printf x > half.txt; sleep 30; else exec '{}'; fi",
        records.display(),
        fake_agent_path()
    );
    let mut cmd = ralph_with_fake(&repo, &agent);
    cmd.args(["start", CHANGE, "--agent-command", &stubborn]);
    let run = Background::spawn(&repo, cmd);
    wait_until(
        "the second story's agent runs",
        Duration::from_secs(20),
        || repo.record_dir().join("pid-2-1").exists() && repo.path("half.txt").exists(),
    );
    for _ in 0..3 {
        run.signal(Signal::SIGINT);
        std::thread::sleep(Duration::from_millis(100));
    }
    let finished = run.wait(Duration::from_secs(10));
    assert_eq!(finished.status.code(), Some(130), "{}", finished.stderr);
    assert!(
        finished.stderr.contains("force-quit"),
        "{}",
        finished.stderr
    );
    let pid: i32 = agent_record(&repo, "pid", "2", 1).trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!group_alive(pid), "the agent's process group was killed");

    // The state still says running: a resume preserves the half-done
    // attempt, then finishes the story.
    let resumed = run_cmd(ralph_with_fake(&repo, &agent).args([
        "start",
        CHANGE,
        "--agent-command",
        &stubborn,
        "--on-finish",
        "keep",
    ]));
    assert_exit(&resumed, 0);
    assert!(has_ref(&repo, &format!("{NS}/attempts/2/1")));
    assert_eq!(show(&repo, &format!("{NS}/attempts/2/1"), "half.txt"), "x");
    assert!(!repo.path("half.txt").exists());
    assert_eq!(
        subjects(&repo, "main..HEAD"),
        [
            "ralph(greet): story 2 Farewell",
            "ralph(greet): story 1 Greeting",
            "ralph(greet): initial state",
        ]
    );
    repo.assert_fsck_clean();
}

fn run_cmd(cmd: &mut Command) -> std::process::Output {
    run(cmd)
}

#[test]
fn the_repository_is_found_through_git_dir_and_git_work_tree() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let elsewhere = repo.dir.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let mut cmd = start_command(&repo, &agent, &["--on-finish", "keep"]);
    cmd.current_dir(&elsewhere)
        .env("GIT_DIR", repo.path(".git"))
        .env("GIT_WORK_TREE", &repo.root);
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    assert_eq!(subjects(&repo, "main..HEAD").len(), 3);
    assert!(
        repo.path("story-2.txt").exists(),
        "the agent ran in the worktree"
    );
    assert!(!elsewhere.join("story-2.txt").exists());
}
