//! An attempt at the edges of the machine, end to end.
//!
//! - A child the agent moves into a session of its own ends with the
//!   attempt: its late write never lands in the next story's checkpoint.

use std::fs;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

/// Is the process `pid` alive (a zombie is not)?
fn alive(pid: i32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z")
}

#[test]
fn a_child_the_agent_moves_to_a_session_of_its_own_ends_with_the_attempt() {
    let repo = project(TWO_STORIES);
    let records = repo.record_dir();
    let escapee = records.join("escapee.pid");
    let gate = repo.dir.path().join("gate");
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\nwait-for {}\n{}",
            story_done("1"),
            gate.display(),
            finish_story("2")
        ),
    );
    // Story 1's agent leaves a child in a session of its own, its output
    // away from the agent's pipes, that writes into the worktree later.
    fs::create_dir_all(&records).expect("records");
    let child = records.join("escapee.sh");
    fs::write(
        &child,
        format!(
            "echo $$ > {}\nsleep 3\necho late > late.txt\n",
            shell_quote(&escapee.display().to_string())
        ),
    )
    .expect("the child's script");
    let command = format!(
        "if [ \"$RALPH_STORY\" = 1 ]; then \
           setsid sh {} </dev/null >/dev/null 2>&1 & \
           while [ ! -s {} ]; do sleep 0.05; done; \
         fi; {}",
        shell_quote(&child.display().to_string()),
        shell_quote(&escapee.display().to_string()),
        agent_command(&repo)
    );
    let mut cmd = ralph_with_fake(&repo, &agent);
    cmd.args([
        "start",
        CHANGE,
        "--agent-command",
        &command,
        "--on-finish",
        "keep",
    ]);
    let running = Background::spawn(&repo, cmd);
    wait_until(
        "story 2's agent has started",
        Duration::from_secs(60),
        || records.join("pid-2-1").exists(),
    );
    let pid: i32 = fs::read_to_string(&escapee)
        .expect("the child's pid")
        .trim()
        .parse()
        .expect("a pid");
    let outlived = alive(pid);
    // Whatever it does, the test goes on once it is gone.
    wait_until("the child is gone", Duration::from_secs(30), || !alive(pid));
    fs::write(&gate, "").expect("gate");
    let finished = running.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(!outlived, "the child outlived story 1's attempt");
    assert!(
        !tree_files(&repo, BRANCH).contains(&"late.txt".to_string()),
        "the late write landed in a checkpoint"
    );
    assert!(!repo.path("late.txt").exists());
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}
