//! An attempt at the edges of the machine, end to end.
//!
//! - The user's own `git gc` and `git repack` during an attempt write
//!   `.git/info/refs`: that is git's maintenance, not the agent's doing,
//!   while a hook the agent plants in the same attempt is still undone.
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
fn the_users_gc_and_repack_during_an_attempt_are_not_blamed_on_the_agent() {
    let repo = project(TWO_STORIES);
    let gate = repo.dir.path().join("gate");
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite story-1.txt work of story 1\\n\nwait-for {}\n\
             write .git/hooks/pre-commit #!/bin/sh\\nexit 0\\n\nchmod +x .git/hooks/pre-commit\n\
             tick-story\npromise COMPLETE\n{}",
            gate.display(),
            stories_done(&["1", "2"])
        ),
    );
    let running = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.root, "1", 1, "story-1.txt");
    repo.git(&["gc", "--quiet"]);
    repo.git(&["repack", "-a", "-d", "-q"]);
    let info_refs = fs::read(repo.path(".git/info/refs")).expect("git wrote info/refs");
    fs::write(&gate, "").expect("gate");
    let finished = running.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(
        !finished.stdout.contains("info/refs"),
        "{}",
        finished.stdout
    );
    assert_eq!(
        fs::read(repo.path(".git/info/refs")).expect("info/refs is left"),
        info_refs,
        "git's info/refs is not rewound"
    );
    // The hook planted in the same attempt is still caught and undone.
    assert!(
        finished
            .stdout
            .contains("undone: the agent changed .git/hooks/pre-commit"),
        "{}",
        finished.stdout
    );
    assert!(!repo.path(".git/hooks/pre-commit").exists());
    let events = events(&repo);
    let changed = of_type(&events, "git_dir_changed");
    assert!(
        changed
            .iter()
            .all(|event| !event.to_string().contains("info/refs")),
        "{changed:?}"
    );
    for (what, said) in [
        ("status", ralph_cmd(&repo, &["status", CHANGE])),
        ("log", ralph_cmd(&repo, &["log", CHANGE])),
    ] {
        assert!(
            !stdout(&said).contains("info/refs"),
            "{what}: {}",
            stdout(&said)
        );
    }
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    repo.assert_fsck_clean();
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
