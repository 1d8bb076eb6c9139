//! Stopping from the keyboard, through the real binary: `q` in a terminal
//! stops gracefully, three interrupts within three seconds force-quit, and a
//! force-quit run resumes with its half-done attempt preserved. Also: the
//! repository is found through GIT_DIR and GIT_WORK_TREE.

use std::fs;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;
use nix::sys::signal::Signal;

#[test]
fn q_in_a_terminal_stops_the_loop_gracefully() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!("{}[story=2]\nwrite half.txt x\nsleep 30\n", story_done("1")),
    );
    let template = start_command(&repo, &agent, &["--plain"]);
    let output = in_terminal(&repo, &template, "story 2/2", "q");
    let transcript = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(130), "{transcript}");
    assert!(transcript.contains("stopping"), "{transcript}");
    let state = state(&repo);
    assert_eq!(state["reason"], "stopped");
    assert_eq!(attempts_of(&state, "2")[0].0, "interrupted");
    assert!(!group_alive(agent_pid(&repo, "2", 1)));
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
    let agent = script(&repo, &stories_done(&["1", "2"]));
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
    let background = Background::spawn(&repo, cmd);
    wait_until(
        "the second story's agent runs",
        Duration::from_secs(20),
        || {
            repo.record_dir().join("pid-2-1").exists()
                && std::fs::metadata(repo.path("half.txt")).is_ok_and(|meta| meta.len() > 0)
        },
    );
    for _ in 0..3 {
        background.signal(Signal::SIGINT);
        std::thread::sleep(Duration::from_millis(100));
    }
    let finished = background.wait(Duration::from_secs(10));
    assert_eq!(finished.status.code(), Some(130), "{}", finished.stderr);
    assert!(
        finished.stderr.contains("force-quit"),
        "{}",
        finished.stderr
    );
    let pid = agent_pid(&repo, "2", 1);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!group_alive(pid), "the agent's process group was killed");

    // The state still says running: a resume preserves the half-done
    // attempt, then finishes the story.
    let resumed = run(ralph_with_fake(&repo, &agent).args([
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
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    repo.assert_fsck_clean();
}

#[test]
fn the_repository_is_found_through_git_dir_and_git_work_tree() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &stories_done(&["1", "2"]));
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
