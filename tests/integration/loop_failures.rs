//! Attempts that do not verifiably finish their story, through the real
//! binary: a COMPLETE without ticked boxes, FAILED with a reason, no promise,
//! a crash, an agent error, a timeout. Each is preserved under
//! `refs/ralph/<change>/attempts/<story>/<n>`, the worktree goes back to the
//! last checkpoint, the retry is told what it needs to know, and a story
//! that uses up its retries stops the run without touching the next story.

use std::fs;
use std::time::{Duration, Instant};

use crate::harness::story_run::*;
use crate::harness::*;

#[test]
fn complete_without_ticked_boxes_is_a_failed_attempt_and_spends_the_retries() {
    let repo = project(THREE_STORIES);
    // Ticks one of the two boxes of story 1 and claims completion anyway.
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite hello.txt hello\ntick 1.1\npromise COMPLETE\n{}",
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "2"],
    );
    assert_exit(&output, 3);

    assert_eq!(
        agent_runs(&repo),
        [
            ("1".into(), "1".into()),
            ("1".into(), "2".into()),
            ("1".into(), "3".into())
        ],
        "--max-retries 2 allows three attempts, and story 2 is never started"
    );
    let reason = format!("story 1 is not marked done in {TASKS_PATH}");
    let state = state(&repo);
    assert_eq!(
        attempts_of(&state, "1"),
        vec![("rejected".to_string(), reason.clone()); 3]
    );
    assert_eq!(state["reason"], "max_retries");
    let retry = recorded_prompt(&repo, "1", 2);
    assert!(retry.contains(&reason), "the retry is told why:\n{retry}");

    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        ["ralph(greet): initial state"],
        "no checkpoint for an unverified story"
    );
    for n in 1..=3 {
        let preserved = format!("{NS}/attempts/1/{n}");
        assert_eq!(show(&repo, &preserved, "hello.txt"), "hello");
        assert!(show(&repo, &preserved, TASKS_PATH).contains("- [x] 1.1"));
    }
    assert_eq!(
        repo.status_porcelain(),
        "",
        "the worktree is back at the checkpoint"
    );
    assert!(!repo.path("hello.txt").exists());
    assert!(repo.read(TASKS_PATH).contains("- [ ] 1.1"));

    let events = events(&repo);
    let last = events.last().expect("events were logged");
    assert_eq!(last["type"], "error");
    assert_eq!(last["reason"], "max_retries");
    let message = last["message"].as_str().unwrap_or_default();
    assert!(message.contains(&reason), "{message}");
    repo.assert_fsck_clean();
}

#[test]
fn a_failed_attempt_is_preserved_and_the_worktree_reverted_ignored_files_kept() {
    let repo = project(TWO_STORIES);
    repo.write(".gitignore", "*.log\nbuild/\n");
    repo.write("doomed.txt", "tracked, deleted by the agent\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Ignore build output"]);
    repo.write("build/cache.bin", "precious cache\n");
    repo.write("debug.log", "old log\n");

    let agent = second_try(
        &repo,
        "write hello.txt half a greeting\n\
         write README.md # Rewritten by the agent\\n\n\
         rm doomed.txt\n\
         mkdir scratch/deeper\n\
         write scratch/deeper/tmp.txt temporary\n\
         write agent.log agent's own log\n\
         tick-story\n\
         final The database is down.\n\
         promise FAILED: the tests need a database\n",
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    let preserved = format!("{NS}/attempts/1/1");
    let initial = repo.rev_parse("ralph/greet~2");
    assert_eq!(
        repo.rev_parse(&format!("{preserved}^")),
        initial,
        "the attempt is kept on top of the checkpoint it started from"
    );
    assert_eq!(show(&repo, &preserved, "hello.txt"), "half a greeting");
    assert_eq!(
        show(&repo, &preserved, "README.md"),
        "# Rewritten by the agent\n"
    );
    assert_eq!(
        show(&repo, &preserved, "scratch/deeper/tmp.txt"),
        "temporary"
    );
    let kept_files = tree_files(&repo, &preserved);
    assert!(!kept_files.contains(&"doomed.txt".to_string()));
    assert!(
        !kept_files.iter().any(|f| f.ends_with(".log")),
        "ignored files are not preserved"
    );
    let message = repo.git(&["log", "-1", "--format=%B", &preserved]);
    assert!(message.contains("the tests need a database"), "{message}");

    // The retry started from the checkpoint, not from the failed work.
    let final_files = tree_files(&repo, "ralph/greet");
    assert!(final_files.contains(&"doomed.txt".to_string()));
    assert!(!final_files.iter().any(|f| f.starts_with("scratch/")));
    assert_eq!(show(&repo, "ralph/greet", "README.md"), "# Test project\n");
    assert!(
        !repo.path("scratch").exists(),
        "emptied directories are removed"
    );
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(repo.read("build/cache.bin"), "precious cache\n");
    assert_eq!(repo.read("debug.log"), "old log\n");
    assert_eq!(repo.read("agent.log"), "agent's own log");

    let retry = recorded_prompt(&repo, "1", 2);
    assert!(retry.contains("the tests need a database"), "{retry}");
    let state = state(&repo);
    assert_eq!(
        attempts_of(&state, "1"),
        [
            (
                "failed".to_string(),
                "the tests need a database".to_string()
            ),
            ("complete".to_string(), String::new())
        ]
    );
    let events = events(&repo);
    let failed = of_type(&events, "attempt_finished")
        .into_iter()
        .find(|e| e["outcome"] == "failed")
        .expect("an attempt_finished event for the failure");
    assert_eq!(failed["preserved"], preserved.as_str());
    repo.assert_fsck_clean();
}

#[test]
fn attempts_without_a_verdict_are_preserved_and_the_retry_is_told_how_they_ended() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite no-signal.txt x\nsay I think I am done.\n\
             [story=1 attempt=2]\nwrite crash.txt x\ncrash\n\
             [story=1 attempt=3]\nwrite error.txt x\nerror the model is overloaded\n\
             [story=1 attempt=4]\nwrite exit.txt x\nsay bye\nexit 7\n\
             [story=1 attempt=5]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "4"],
    );
    assert_exit(&output, 0);

    let state = state(&repo);
    let attempts = attempts_of(&state, "1");
    let outcomes: Vec<&str> = attempts.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(
        outcomes,
        [
            "no_signal",
            "agent_error",
            "agent_error",
            "agent_error",
            "complete"
        ],
        "{attempts:?}"
    );
    assert!(
        attempts[2].1.contains("the model is overloaded"),
        "{attempts:?}"
    );
    for (n, file) in [
        (1, "no-signal.txt"),
        (2, "crash.txt"),
        (3, "error.txt"),
        (4, "exit.txt"),
    ] {
        let preserved = format!("{NS}/attempts/1/{n}");
        assert!(
            tree_files(&repo, &preserved).contains(&file.to_string()),
            "attempt {n} keeps {file}"
        );
        // The next attempt hears how this one ended (issue 33).
        let next = recorded_prompt(&repo, "1", n + 1);
        assert!(
            next.contains("## Previous attempt") && next.contains(&attempts[n as usize - 1].1),
            "attempt {} is told how the {} ended:\n{next}",
            n + 1,
            outcomes[n as usize - 1]
        );
    }
    let final_files = tree_files(&repo, "ralph/greet");
    for file in ["no-signal.txt", "crash.txt", "error.txt", "exit.txt"] {
        assert!(
            !final_files.contains(&file.to_string()),
            "{file} leaked into the branch"
        );
    }
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn an_attempt_past_the_agent_timeout_is_stopped_preserved_and_retried_with_a_note() {
    let repo = project(TWO_STORIES);
    let agent = second_try(
        &repo,
        "write partial.txt started\nsleep 5\nwrite late.txt too late\n",
    );
    let started = Instant::now();
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--agent-timeout", "1"],
    );
    let elapsed = started.elapsed();
    assert_exit(&output, 0);
    assert!(
        elapsed < Duration::from_secs(5),
        "the sleeping agent was not cut short ({elapsed:?})"
    );
    let pgid = agent_pid(&repo, "1", 1);
    assert!(
        !group_alive(pgid),
        "the timed-out agent's process group is gone"
    );

    let state = state(&repo);
    let attempts = attempts_of(&state, "1");
    assert_eq!(attempts[0].0, "timed_out");
    assert!(
        attempts[0].1.contains("(1s)"),
        "the reason names the limit: {attempts:?}"
    );
    let preserved = format!("{NS}/attempts/1/1");
    assert_eq!(show(&repo, &preserved, "partial.txt"), "started");
    assert!(!tree_files(&repo, &preserved).contains(&"late.txt".to_string()));
    assert!(!tree_files(&repo, "ralph/greet").contains(&"partial.txt".to_string()));
    let retry = recorded_prompt(&repo, "1", 2);
    assert!(
        retry.contains("The previous attempt at this story timed out"),
        "the retry is told about the timeout:\n{retry}"
    );
    assert_eq!(repo.status_porcelain(), "");
}

/// Story 1 finishes, story 2 fails every time, story 3 is never reached.
fn failing_second_story(repo: &crate::harness::TestRepo) -> std::path::PathBuf {
    script(
        repo,
        &format!(
            "{}[story=2]\nwrite bye.txt not quite\npromise FAILED: the farewell wording is not decided\n{}",
            story_done("1"),
            story_done("3")
        ),
    )
}

#[test]
fn used_up_retries_stop_the_run_with_an_error_and_keep_earlier_stories() {
    let repo = project(THREE_STORIES);
    let agent = failing_second_story(&repo);
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 3);

    assert_eq!(
        agent_runs(&repo),
        [
            ("1".into(), "1".into()),
            ("2".into(), "1".into()),
            ("2".into(), "2".into())
        ],
        "story 3 is never started"
    );
    assert_on_branch(&repo, &["1 Greeting"]);
    assert_eq!(repo.read("story-1.txt"), "work of story 1\n");
    assert!(!repo.path("bye.txt").exists());
    assert_eq!(repo.status_porcelain(), "");
    assert!(has_ref(&repo, &format!("{NS}/attempts/2/1")));
    assert!(has_ref(&repo, &format!("{NS}/attempts/2/2")));
    assert!(!has_ref(&repo, &format!("{NS}/attempts/2/3")));

    let events = events(&repo);
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1, "one error event: {errors:?}");
    let error = errors[0];
    assert_eq!(error["reason"], "max_retries");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("story 2"), "{message}");
    assert!(
        message.contains("the farewell wording is not decided"),
        "{message}"
    );
    assert_eq!(error["totals"]["attempts"], 3);
    assert!(of_type(&events, "complete").is_empty());
    let err = stderr(&output);
    assert!(
        err.contains("kept: ralph/greet"),
        "keep was applied:\n{err}"
    );
    assert_eq!(state(&repo)["status"], "finished");
    assert_eq!(
        error["story_id"], "2",
        "the error event names the story that used up its retries: {error}"
    );
}

#[test]
fn used_up_retries_with_cleanup_go_back_with_earlier_work_uncommitted() {
    let repo = project(THREE_STORIES);
    repo.write("draft.txt", "the user's own unstaged work\n");
    let before = work_state(&repo);
    let agent = failing_second_story(&repo);
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "cleanup", "--max-retries", "0"],
    );
    assert_exit(&output, 3);

    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), before.head, "main did not move");
    assert!(
        !has_ref(&repo, "refs/heads/ralph/greet"),
        "the branch is deleted"
    );
    assert!(has_ref(&repo, &format!("{NS}/finished")));
    assert_eq!(
        subjects(&repo, &format!("main..{NS}/finished")),
        [
            "ralph(greet): story 1 Greeting",
            "ralph(greet): initial state"
        ]
    );
    assert_eq!(
        repo.git(&["diff", "--cached"]),
        "",
        "the original index is back"
    );
    assert_eq!(
        repo.status_porcelain(),
        format!(" M {TASKS_PATH}\n?? draft.txt\n?? story-1.txt\n"),
        "story 1's work and the user's own work are uncommitted; story 2's failed work is not there"
    );
    assert_eq!(repo.read("story-1.txt"), "work of story 1\n");
    assert_eq!(repo.read("draft.txt"), "the user's own unstaged work\n");
    assert!(repo.read(TASKS_PATH).contains("- [x] 1.1"));
    assert!(repo.read(TASKS_PATH).contains("- [ ] 2.1"));
    assert!(!repo.path("bye.txt").exists());
    let state = state(&repo);
    assert_eq!(state["status"], "finished");
    assert_eq!(state["finished_with"], "cleanup");
    repo.assert_fsck_clean();
}

/// A promise that is not the final message's is no signal, even with the
/// boxes ticked: echoed in a tool's output, said in an earlier message, or
/// printed by a plain agent before its last line.
#[test]
fn a_promise_echoed_by_a_tool_or_said_too_early_is_not_a_completion() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nformat claude\ntick-story\ntool <promise>COMPLETE</promise>\nfinal Ran the tool.\n\
             [story=1 attempt=2]\nformat claude\ntick-story\nsay Plan: end with <promise>COMPLETE</promise>\nfinal Not there yet.\n\
             [story=1 attempt=3]\ntick-story\nsay <promise>COMPLETE</promise>\nsay ...but one more thing is left.\n\
             [story=1 attempt=4]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "3"],
    );
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    let outcomes: Vec<&str> = attempts.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(
        outcomes,
        ["no_signal", "no_signal", "no_signal", "complete"],
        "{attempts:?}"
    );
    assert_eq!(
        subjects(&repo, "main..HEAD"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
}

#[test]
fn a_run_stopped_on_its_retries_says_how_many_to_resume_with_and_that_resumes_it() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, "[story=1]\npromise FAILED: not yet\n");
    // No terminal to ask on: the run is left stopped, with what to do.
    let output = start(&repo, &agent, &["--max-retries", "0"]);
    assert_exit(&output, 3);
    let said = stderr(&output);
    assert!(
        said.contains("git ralph start greet --max-retries 2"),
        "two more retries than the run had:\n{said}"
    );
    assert_eq!(state(&repo)["status"], "stopped");

    // The command it gave resumes the run, with those retries.
    fs::write(&agent, format!("{}{}", story_done("1"), story_done("2"))).unwrap();
    let output = start(
        &repo,
        &agent,
        &["--max-retries", "2", "--on-finish", "keep"],
    );
    assert_exit(&output, 0);
    let run = state(&repo);
    assert_eq!(run["reason"], "completed");
    assert_eq!(run["settings"]["max_retries"], 2);
    assert_eq!(
        attempts_of(&run, "1").len(),
        2,
        "the failed attempt, then the resumed one: {run}"
    );
    repo.assert_fsck_clean();
}
