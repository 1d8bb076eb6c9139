//! Controlling a run from outside the loop, through the real binary:
//! `status` (human and JSON, while running and after), `abort` (from another
//! terminal while the loop runs, and after a stop), `finish --keep` and
//! `--cleanup` on a stopped run, resuming after the loop was killed, the
//! one-loop-per-repository lock, a graceful stop on SIGINT, and the keep or
//! cleanup menu answered in a pseudo-terminal.

use std::fs;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;
use nix::sys::signal::Signal;

const PATIENCE: Duration = Duration::from_secs(30);

/// A pre-start state with every kind of uncommitted work: a staged edit, a
/// file staged and then changed again, an unstaged edit and untracked files.
fn messy_project(tasks: &str) -> TestRepo {
    let repo = project(tasks);
    repo.write("notes.txt", "v1\n");
    repo.write("plan.txt", "plan v1\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "More files"]);
    repo.write("README.md", "# Staged edit\n");
    repo.git(&["add", "README.md"]);
    repo.write("notes.txt", "v2, staged\n");
    repo.git(&["add", "notes.txt"]);
    repo.write("notes.txt", "v3, unstaged on top of the staged v2\n");
    repo.write("plan.txt", "plan v2, unstaged\n");
    repo.write("untracked/idea.txt", "untracked\n");
    repo
}

/// Waits until the agent of that attempt has started and written `marker`.
fn wait_for_agent(repo: &TestRepo, story: &str, attempt: u32, marker: &str) {
    agent_at_work(repo, &repo.path(""), story, attempt, marker);
}

#[test]
fn status_reports_a_stopped_run_in_json_and_for_people() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "format claude\n[story=1]\nusage 1000 200 0.25\n{}\
             [story=2]\nwrite bye.txt draft\nusage 500 100 0.1\npromise FAILED: no farewell yet\n",
            finish_story("1")
        ),
    );
    let output = start(&repo, &agent, &["--max-retries", "1", "--on-finish", "ask"]);
    assert_exit(&output, 3);

    let status = status_json(&repo);
    assert_eq!(status["change"], "greet");
    assert_eq!(status["branch"], "ralph/greet");
    assert_eq!(status["state"], "stopped");
    assert_eq!(status["reason"], "max_retries");
    assert_eq!(status["alive"], false);
    assert_eq!(status["pid"], serde_json::Value::Null);
    assert_eq!(status["stories_done"], 1);
    assert_eq!(status["stories_total"], 2);
    assert_eq!(status["current_story"], "2");
    assert_eq!(status["current_attempt"], 2);
    let last_failure = status["last_failure"].as_str().unwrap_or_default();
    assert!(last_failure.contains("no farewell yet"), "{last_failure}");
    let totals = &status["totals"];
    assert_eq!(totals["attempts"], 3);
    assert_eq!(totals["input_tokens"], 2000);
    assert_eq!(totals["output_tokens"], 400);
    let cost = totals["cost_usd"].as_f64().expect("a cost");
    assert!((cost - 0.45).abs() < 1e-9, "cost {cost}");
    let stories = status["stories"].as_array().expect("stories");
    let outcomes = |i: usize| -> Vec<String> {
        stories[i]["attempts"]
            .as_array()
            .expect("attempts")
            .iter()
            .map(|a| a["outcome"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(outcomes(0), ["complete"]);
    assert_eq!(outcomes(1), ["failed", "failed"]);
    assert_eq!(stories[0]["attempts"][0]["input_tokens"], 1000);
    assert_eq!(
        stories[1]["attempts"][1]["preserved"],
        format!("{NS}/attempts/2/2").as_str()
    );

    let output = ralph_cmd(&repo, &["status"]);
    assert_exit(&output, 0);
    let text = stdout(&output);
    for line in [
        "change: greet",
        "branch: ralph/greet",
        "stopped (max_retries)",
        "no loop process",
        "stories: 1/2 done",
        "1. Greeting [1/1 tasks] · #1 complete",
        "2. Farewell [0/1 tasks] · #1 failed, #2 failed",
        "current: story 2, attempt 2",
        "last failure:",
        "no farewell yet",
        "3 attempts · 2000 tokens in, 400 out · $0.45",
    ] {
        assert!(text.contains(line), "status lacks {line:?}:\n{text}");
    }
}

#[test]
fn abort_from_another_terminal_stops_the_loop_and_restores_the_exact_pre_start_state() {
    let repo = messy_project(TWO_STORIES);
    let before = work_state(&repo);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\nwrite half.txt half done\nsleep 30\n",
            story_done("1")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_for_agent(&repo, "2", 1, "half.txt");

    let status = status_json(&repo);
    assert_eq!(status["state"], "running");
    assert_eq!(status["alive"], true);
    assert_eq!(status["pid"], run.pid());
    assert_eq!(status["current_story"], "2");
    assert_eq!(status["current_attempt"], 1);
    assert_eq!(status["stories_done"], 1);
    let output = ralph_cmd(&repo, &["status"]);
    assert!(
        stdout(&output).contains(&format!("loop alive (pid {})", run.pid())),
        "{}",
        stdout(&output)
    );

    // The loop is our child: reap it while abort waits for it to go.
    let abort = ralph(&repo)
        .arg("abort")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("abort starts");
    let stopped = run.wait(PATIENCE);
    let abort = abort.wait_with_output().expect("abort finishes");
    assert_exit(&abort, 0);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    assert!(
        !group_alive(agent_pid(&repo, "2", 1)),
        "the agent was stopped"
    );

    assert_eq!(
        work_state(&repo),
        before,
        "the exact pre-start state is back"
    );
    assert_eq!(
        repo.read("notes.txt"),
        "v3, unstaged on top of the staged v2\n"
    );
    assert!(!repo.path("half.txt").exists());
    assert!(!repo.path("story-1.txt").exists());
    assert!(
        !has_ref(&repo, "refs/heads/ralph/greet"),
        "the branch is deleted"
    );
    assert_eq!(
        subjects(&repo, &format!("main..{NS}/aborted"))[0],
        "ralph(greet): story 1 Greeting",
        "the aborted tip stays reachable"
    );
    assert_eq!(status_json(&repo)["state"], "aborted");
    repo.assert_fsck_clean();
}

#[test]
fn sigint_stops_gracefully_and_abort_afterwards_restores_the_pre_start_state() {
    let repo = messy_project(THREE_STORIES);
    let before = work_state(&repo);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\nwrite half.txt half done\nsleep 30\n{}",
            story_done("1"),
            story_done("3")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_for_agent(&repo, "2", 1, "half.txt");
    run.signal(Signal::SIGINT);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stderr);
    assert!(
        !group_alive(agent_pid(&repo, "2", 1)),
        "the agent's process group was killed"
    );
    assert!(
        stopped.stderr.contains("git ralph start greet"),
        "the user is told how to resume:\n{}",
        stopped.stderr
    );

    // Completed stories are kept, the half-done attempt is set aside.
    assert_on_branch(&repo, &["1 Greeting"]);
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/2/1"), "half.txt"),
        "half done"
    );
    let state = state(&repo);
    assert_eq!(state["status"], "stopped");
    assert_eq!(state["reason"], "stopped");
    assert_eq!(attempts_of(&state, "2")[0].0, "interrupted");
    assert!(!agent_runs(&repo).iter().any(|(story, _)| story == "3"));
    assert_eq!(status_json(&repo)["alive"], false);

    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    assert_eq!(
        work_state(&repo),
        before,
        "the exact pre-start state is back"
    );
    assert!(!has_ref(&repo, "refs/heads/ralph/greet"));
    repo.assert_fsck_clean();
}

#[test]
fn a_killed_loop_is_resumed_at_its_story_after_preserving_the_half_done_attempt() {
    let repo = project(THREE_STORIES);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2 attempt=1]\nwrite half.txt half done\nsleep 30\n\
             [story=2 attempt=2]\n{}{}",
            story_done("1"),
            finish_story("2"),
            story_done("3")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_for_agent(&repo, "2", 1, "half.txt");
    let dead_loop = run.pid();
    run.signal(Signal::SIGKILL);
    let killed = run.wait(PATIENCE);
    assert_eq!(killed.status.code(), None, "killed by a signal");
    // Its agent runs in its own process group and outlives it; stop it as
    // the user would before resuming.
    kill_agents(&repo.record_dir());
    wait_until("the orphaned agent is gone", PATIENCE, || {
        !group_alive(agent_pid(&repo, "2", 1))
    });
    assert_eq!(
        status_json(&repo)["state"],
        "stopped",
        "a dead loop is not running"
    );

    let output = run_resume(&repo, &agent);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "took over the lock of a loop that is no longer running (pid {dead_loop}"
        )),
        "the dead loop's lock is taken over with a warning:\n{err}"
    );
    assert_eq!(
        agent_runs(&repo),
        [
            ("1".into(), "1".into()),
            ("2".into(), "1".into()),
            ("2".into(), "2".into()),
            ("3".into(), "1".into())
        ],
        "the run resumed at story 2 with a new attempt"
    );
    assert!(agent_record(&repo, "env", "2", 2).contains("RALPH_ATTEMPT=2"));
    let preserved = format!("{NS}/attempts/2/1");
    assert_eq!(show(&repo, &preserved, "half.txt"), "half done");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell", "1 Greeting"])
    );
    assert!(!tree_files(&repo, "ralph/greet").contains(&"half.txt".to_string()));
    assert!(!repo.path("half.txt").exists());
    assert_eq!(repo.status_porcelain(), "");
    let state = state(&repo);
    let attempts = attempts_of(&state, "2");
    assert_eq!(attempts[0].0, "interrupted");
    assert_eq!(attempts[1].0, "complete");
    let events = events(&repo);
    let starts = of_type(&events, "run_started");
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["resumed"], true);
    assert!(
        of_type(&events, "warning").iter().any(|w| w["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&preserved)),
        "the resume says where the half-done work went"
    );
    assert!(
        !git_dir(&repo).join("ralph/lock").exists(),
        "the lock is released"
    );
    repo.assert_fsck_clean();
}

#[test]
fn resuming_after_a_killed_loop_stops_the_agent_it_left_behind() {
    let repo = project(TWO_STORIES);
    let _reaper = Reaper(repo.record_dir());
    let agent = second_try(
        &repo,
        "write half.txt half done\nsleep 30\nwrite late.txt written long after its loop died\n",
    );
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_for_agent(&repo, "1", 1, "half.txt");
    run.signal(Signal::SIGKILL);
    run.wait(PATIENCE);
    let orphan = agent_pid(&repo, "1", 1);
    assert!(
        group_alive(orphan),
        "SIGKILL cannot take the agent's group along"
    );

    let output = run_resume(&repo, &agent);
    assert_exit(&output, 0);
    assert!(
        !group_alive(orphan),
        "the resumed run left the killed loop's agent (process group {orphan}) \
         running in the worktree it now works in"
    );
}

/// `git ralph start greet` with nothing else: the run's own settings apply.
fn run_resume(repo: &TestRepo, agent: &std::path::Path) -> std::process::Output {
    run(crate::harness::ralph_with_fake(repo, agent).args(["start", CHANGE]))
}

#[test]
fn a_second_start_while_a_loop_runs_is_refused_naming_its_pid() {
    let repo = project(TWO_STORIES);
    repo.openspec_change("other", "## 1. Other\n\n- [ ] 1.1 Something else\n");
    let agent = script(&repo, "[*]\nwrite busy.txt busy\nsleep 30\n");
    let _reaper = Reaper(repo.record_dir());
    let first = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_for_agent(&repo, "1", 1, "busy.txt");
    let state_before = fs::read(run_dir(&repo).join("state.json")).expect("state.json");

    let second = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&second, 1);
    let err = stderr(&second);
    assert!(err.contains("error:"), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.pid())),
        "the error names the pid:\n{err}"
    );
    assert!(err.contains("hint:"), "{err}");

    let other = run(crate::harness::ralph_with_fake(&repo, &agent).args([
        "start",
        "other",
        "--agent-command",
        &agent_command(&repo),
    ]));
    assert_exit(&other, 1);
    assert!(
        stderr(&other).contains(&format!("pid {}", first.pid())),
        "{}",
        stderr(&other)
    );
    assert!(!has_ref(&repo, "refs/heads/ralph/other"));

    assert_eq!(
        fs::read(run_dir(&repo).join("state.json")).expect("state.json"),
        state_before,
        "the refused starts left the running loop's state alone"
    );
    let status = status_json(&repo);
    assert_eq!(status["alive"], true);
    assert_eq!(status["pid"], first.pid());
    assert_eq!(recorded_runs(&repo), 1, "only the first loop ran an agent");
    drop(first);
}

fn recorded_runs(repo: &TestRepo) -> usize {
    agent_runs(repo).len()
}

#[test]
fn the_lock_of_a_dead_loop_is_taken_over_with_a_warning() {
    let repo = project(TWO_STORIES);
    let mut gone = Command::new("true").spawn().expect("true starts");
    let dead = gone.id();
    gone.wait().expect("true is reaped");
    fs::create_dir_all(git_dir(&repo).join("ralph")).expect("ralph dir");
    fs::write(
        git_dir(&repo).join("ralph/lock"),
        format!("{dead}\nold-change\n"),
    )
    .expect("the stale lock is written");

    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "warning: took over the lock of a loop that is no longer running (pid {dead}, change 'old-change')"
        )),
        "{err}"
    );
    assert_eq!(subjects(&repo, "main..ralph/greet").len(), 3);
    assert!(
        !git_dir(&repo).join("ralph/lock").exists(),
        "the lock is released"
    );
}

/// Story 1 done, story 2 fails once and the run stops (max_retries), with no
/// terminal to ask on: the run waits, stopped, on its branch.
fn stopped_run(repo: &TestRepo) {
    let agent = script(
        repo,
        &format!(
            "{}[story=2]\nwrite bye.txt draft\npromise FAILED: undecided\n",
            story_done("1")
        ),
    );
    let output = start(repo, &agent, &["--max-retries", "0", "--on-finish", "ask"]);
    assert_exit(&output, 3);
    assert!(stderr(&output).contains("git ralph finish greet --keep"));
    assert_eq!(state(repo)["status"], "stopped");
}

#[test]
fn finish_keep_on_a_stopped_run_stays_on_the_branch() {
    let repo = project(THREE_STORIES);
    stopped_run(&repo);
    let tip = repo.rev_parse("ralph/greet");

    let output = ralph_cmd(&repo, &["finish", CHANGE, "--keep"]);
    assert_exit(&output, 0);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    assert_eq!(repo.rev_parse("HEAD"), tip);
    assert_eq!(
        subjects(&repo, "main..HEAD"),
        checkpoint_subjects(&["1 Greeting"])
    );
    assert_eq!(repo.status_porcelain(), "");
    let status = status_json(&repo);
    assert_eq!(status["state"], "finished");
    assert_eq!(status["finished_with"], "keep");

    // Keep is not a dead end: the kept branch can still be cleaned up.
    let again = ralph_cmd(&repo, &["finish", CHANGE, "--keep"]);
    assert_exit(&again, 0);
    assert!(
        stderr(&again).contains("already kept"),
        "{}",
        stderr(&again)
    );
    let cleanup = ralph_cmd(&repo, &["finish", CHANGE, "--cleanup"]);
    assert_exit(&cleanup, 0);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    let twice = ralph_cmd(&repo, &["finish", CHANGE, "--cleanup"]);
    assert_exit(&twice, 1);
    assert!(
        stderr(&twice).contains("already finished"),
        "{}",
        stderr(&twice)
    );
}

#[test]
fn finish_cleanup_on_a_stopped_run_restores_the_original_index_with_the_work_uncommitted() {
    let repo = project(THREE_STORIES);
    repo.write("README.md", "# Staged before the run\n");
    repo.git(&["add", "README.md"]);
    let staged_before = repo.git(&["diff", "--cached", "--binary"]);
    let head_before = repo.rev_parse("HEAD");
    stopped_run(&repo);
    let tip = repo.rev_parse("ralph/greet");

    let output = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&output, 0);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), head_before);
    assert_eq!(
        repo.git(&["diff", "--cached", "--binary"]),
        staged_before,
        "what was staged before the run is staged again, and nothing else"
    );
    assert_eq!(
        repo.status_porcelain(),
        format!("M  README.md\n M {TASKS_PATH}\n?? story-1.txt\n")
    );
    assert!(
        !repo.path("bye.txt").exists(),
        "the failed attempt is not brought back"
    );
    assert!(!has_ref(&repo, "refs/heads/ralph/greet"));
    assert_eq!(repo.rev_parse(&format!("{NS}/finished")), tip);
    assert_eq!(status_json(&repo)["finished_with"], "cleanup");
    repo.assert_fsck_clean();
}

fn start_in_pty(repo: &TestRepo, keys: &str) -> std::process::Output {
    let agent = script(repo, &stories_done(&["1", "2"]));
    let template = start_command(repo, &agent, &["--on-finish", "ask", "--plain"]);
    in_terminal(repo, &template, "Finish with", keys)
}

#[test]
fn the_finish_menu_in_a_terminal_cleans_up_on_enter() {
    let repo = project(TWO_STORIES);
    let head_before = repo.rev_parse("HEAD");
    let output = start_in_pty(&repo, "\r");
    assert_exit(&output, 0);
    let transcript = stdout(&output);
    assert!(transcript.contains("cleanup: back to main"), "{transcript}");
    assert!(
        transcript.contains("keep: stay on ralph/greet"),
        "{transcript}"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), head_before);
    assert!(!has_ref(&repo, "refs/heads/ralph/greet"));
    assert_eq!(
        repo.status_porcelain(),
        format!(" M {TASKS_PATH}\n?? story-1.txt\n?? story-2.txt\n")
    );
    assert_eq!(state(&repo)["finished_with"], "cleanup");
}

#[test]
fn the_finish_menu_in_a_terminal_keeps_on_down_then_enter() {
    let repo = project(TWO_STORIES);
    let output = start_in_pty(&repo, "\\x1b[B\r");
    assert_exit(&output, 0);
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(state(&repo)["finished_with"], "keep");
}
