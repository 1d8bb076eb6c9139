//! The loop's ordinary path through the real binary: start moves onto
//! `ralph/<change>` with the user's uncommitted work as the "initial state",
//! each agent gets a complete prompt and its `RALPH_*` environment, and each
//! verifiably finished story becomes exactly one checkpoint commit, until the
//! run completes and offers keep or cleanup.

use crate::harness::story_run::*;
use crate::harness::*;

#[test]
fn start_moves_onto_the_branch_with_the_uncommitted_work_as_initial_state() {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "tracked\n");
    repo.write("old.txt", "to be deleted\n");
    repo.git(&["add", "notes.txt", "old.txt"]);
    repo.git(&["commit", "-q", "-m", "More files"]);
    let main_before = repo.rev_parse("main");
    // Staged, unstaged, staged-then-changed, deleted and untracked work.
    repo.write("README.md", "# Staged edit\n");
    repo.git(&["add", "README.md"]);
    repo.write("notes.txt", "staged\n");
    repo.git(&["add", "notes.txt"]);
    repo.write("notes.txt", "staged, then changed again\n");
    std::fs::remove_file(repo.path("old.txt")).expect("old.txt is removed");
    repo.write("new/untracked.txt", "untracked\n");
    let expected_tree = repo.write_tree_of_worktree_copy();

    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    assert_eq!(repo.rev_parse("main"), main_before, "main must not move");
    let commits: Vec<String> = repo
        .git(&["rev-list", "--reverse", "main..ralph/greet"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(commits.len(), 3, "initial state plus one commit per story");
    let initial = &commits[0];
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", initial]).trim(),
        "ralph(greet): initial state"
    );
    assert_eq!(repo.rev_parse(&format!("{initial}^")), main_before);
    assert_eq!(
        repo.rev_parse(&format!("{initial}^{{tree}}")),
        expected_tree,
        "the initial state holds staged, unstaged and untracked work alike"
    );
    assert_eq!(
        show(&repo, initial, "notes.txt"),
        "staged, then changed again\n"
    );
    assert!(!tree_files(&repo, initial).contains(&"old.txt".to_string()));
    let reflog = repo.git(&["reflog", "--format=%gs", "HEAD"]);
    assert!(
        reflog.contains("checkout: moving from main to ralph/greet"),
        "HEAD's reflog records the switch for 'git checkout -':\n{reflog}"
    );
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn work_starts_at_the_first_incomplete_story() {
    let tasks = THREE_STORIES
        .replace("- [ ] 1.1", "- [x] 1.1")
        .replace("- [ ] 1.2", "- [X] 1.2");
    let repo = project(&tasks);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(
        agent_runs(&repo),
        [("2".into(), "1".into()), ("3".into(), "1".into())],
        "story 1 is already done and must not be given to the agent"
    );
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell"])
    );
}

/// Copies the OpenSpec fixture change `add-greeting` (proposal, design,
/// delta spec, tasks) in as the change `greet`.
fn fixture_project() -> TestRepo {
    let repo = TestRepo::new();
    let fixture = source_path("tests/fixtures/openspec/repo/openspec/changes/add-greeting");
    for file in [
        "proposal.md",
        "design.md",
        "tasks.md",
        "specs/greeting/spec.md",
    ] {
        let text = std::fs::read_to_string(fixture.join(file))
            .unwrap_or_else(|err| panic!("cannot read fixture {file}: {err}"));
        repo.write(format!("openspec/changes/greet/{file}"), text);
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add the change"]);
    repo
}

#[test]
fn the_prompt_carries_context_story_protocol_and_the_agent_gets_its_environment() {
    let repo = fixture_project();
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\npromise FAILED: the test runner needs a database\n\
             [story=1 attempt=2]\n{}{}{}",
            finish_story("1"),
            story_done("2"),
            story_done("3")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    let prompt = recorded_prompt(&repo, "1", 1);
    let expected_parts = [
        // Context files: proposal, design and every delta spec.
        "Visitors are not greeted, and they leave without a farewell.",
        "Plain text files keep the greeting easy to translate.",
        "The system SHALL provide a greeting in hello.txt.",
        "specs/greeting/spec.md",
        // The story, by id and title, with its own tasks.
        "story 1 of 3, attempt 1",
        "Greeting",
        "1.1 Create hello.txt containing a greeting",
        "1.2 Add a test that checks hello.txt is not empty",
        "1.2.1 Nested detail: run the test in CI",
        // How to record progress, and where it is read from.
        "tick each box of story 1",
        "openspec/changes/greet/tasks.md",
        // The promise protocol.
        "<promise>COMPLETE</promise>",
        "<promise>FAILED: <reason></promise>",
        "Do not commit, switch branches or rewrite history; git-ralph checkpoints for you",
    ];
    for part in expected_parts {
        assert!(
            prompt.contains(part),
            "the prompt lacks {part:?}:\n{prompt}"
        );
    }
    assert!(
        !prompt.contains("2.2 Create bye.txt"),
        "another story's task leaked into the prompt:\n{prompt}"
    );
    assert!(
        !prompt.contains("Previous attempt"),
        "a first attempt has no history"
    );

    // What the agent process itself saw.
    let env = agent_record(&repo, "env", "1", 1);
    let prompt_file = run_dir(&repo).join("attempts/1-1.prompt.md");
    for line in [
        "RALPH_CHANGE=greet".to_string(),
        "RALPH_STORY=1".to_string(),
        "RALPH_ATTEMPT=1".to_string(),
        format!(
            "RALPH_PROMPT_FILE={}",
            prompt_file
                .canonicalize()
                .expect("the prompt file exists")
                .display()
        ),
    ] {
        assert!(
            env.lines().any(|l| l == line),
            "the agent's environment lacks {line}:\n{env}"
        );
    }
    assert_eq!(
        agent_record(&repo, "promptfile", "1", 1),
        prompt,
        "$RALPH_PROMPT_FILE holds the prompt given on stdin"
    );

    let retry_env = agent_record(&repo, "env", "1", 2);
    assert!(
        retry_env.lines().any(|l| l == "RALPH_ATTEMPT=2"),
        "{retry_env}"
    );
    let retry = recorded_prompt(&repo, "1", 2);
    assert!(retry.contains("attempt 2"), "{retry}");
    assert!(retry.contains("## Previous attempt"), "{retry}");
    assert!(
        retry.contains("the test runner needs a database"),
        "the retry prompt carries the reason:\n{retry}"
    );
    assert_eq!(agent_record(&repo, "promptfile", "1", 2), retry);
}

#[test]
fn a_prompt_template_in_the_git_dir_replaces_the_built_in_one() {
    let repo = project(TWO_STORIES);
    std::fs::create_dir_all(git_dir(&repo).join("ralph")).expect("ralph dir");
    std::fs::write(
        git_dir(&repo).join("ralph/prompt.md"),
        "Repository template for {{change}}: story {{story_id}} ({{story_title}}), attempt {{attempt}}.\n\
         {{tasks}}\nWhen done, end with {{promise_complete}}.\n",
    )
    .expect("the template is written");
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    let prompt = recorded_prompt(&repo, "1", 1);
    assert!(
        prompt.starts_with("Repository template for greet: story 1 (Greeting), attempt 1.\n"),
        "{prompt}"
    );
    assert!(prompt.contains("1.1 Create hello.txt"), "{prompt}");
    assert!(
        !prompt.contains("git-ralph checkpoints for you"),
        "the built-in template was used:\n{prompt}"
    );
    assert!(
        recorded_prompt(&repo, "2", 1)
            .starts_with("Repository template for greet: story 2 (Farewell)")
    );
}

#[test]
fn prompt_template_option_wins_over_the_git_dir_template() {
    let repo = project(TWO_STORIES);
    std::fs::create_dir_all(git_dir(&repo).join("ralph")).expect("ralph dir");
    std::fs::write(
        git_dir(&repo).join("ralph/prompt.md"),
        "Repository template {{story_id}}\n",
    )
    .expect("the repository template is written");
    // Outside the worktree, named relative to it.
    std::fs::write(
        repo.dir.path().join("flag-template.md"),
        "Flag template: {{story_title}} of {{change}}, {{story_index}}/{{story_total}}.\n",
    )
    .expect("the flag template is written");
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(
        &repo,
        &agent,
        &[
            "--on-finish",
            "keep",
            "--prompt-template",
            "../flag-template.md",
        ],
    );
    assert_exit(&output, 0);
    assert_eq!(
        recorded_prompt(&repo, "1", 1),
        "Flag template: Greeting of greet, 1/2.\n"
    );
    assert_eq!(
        recorded_prompt(&repo, "2", 1),
        "Flag template: Farewell of greet, 2/2.\n"
    );
}

#[test]
fn each_finished_story_becomes_one_checkpoint_commit() {
    let repo = project(THREE_STORIES);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell", "1 Greeting"])
    );
    // Each checkpoint holds exactly its own story's work.
    for (n, rev) in [
        (1, "ralph/greet~2"),
        (2, "ralph/greet~1"),
        (3, "ralph/greet"),
    ] {
        let changed = repo.git(&["diff-tree", "--no-commit-id", "--name-only", "-r", rev]);
        assert_eq!(
            changed.lines().collect::<Vec<_>>(),
            [TASKS_PATH, &format!("story-{n}.txt")],
            "checkpoint of story {n}"
        );
        assert_eq!(
            show(&repo, rev, &format!("story-{n}.txt")),
            format!("work of story {n}\n")
        );
    }
    let tasks = show(&repo, "ralph/greet", TASKS_PATH);
    assert!(!tasks.contains("[ ]"), "every box is ticked:\n{tasks}");
    let branch_log = repo.git(&["reflog", "show", "--format=%gs", "refs/heads/ralph/greet"]);
    for story in ["story 1 Greeting", "story 2 Farewell", "story 3 Docs"] {
        assert!(
            branch_log.contains(&format!("ralph(greet): {story}")),
            "the branch reflog lacks the checkpoint of {story}:\n{branch_log}"
        );
    }
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();

    // The run's own record agrees with git.
    let events = events(&repo);
    let checkpoints: Vec<String> = of_type(&events, "attempt_finished")
        .iter()
        .map(|e| {
            assert_eq!(e["outcome"], "complete");
            e["checkpoint"].as_str().expect("a checkpoint").to_string()
        })
        .collect();
    assert_eq!(
        checkpoints,
        [
            repo.rev_parse("ralph/greet~2"),
            repo.rev_parse("ralph/greet~1"),
            repo.rev_parse("ralph/greet"),
        ]
    );
    let last = events.last().expect("events were logged");
    assert_eq!(last["type"], "complete");
    assert_eq!(last["reason"], "completed");
    assert_eq!(last["stories_total"], 3);
    let state = state(&repo);
    assert_eq!(state["status"], "finished");
    assert_eq!(state["finished_with"], "keep");
    assert_eq!(state["reason"], "completed");
    assert_eq!(state["checkpoint"], repo.rev_parse("ralph/greet").as_str());
}

#[test]
fn json_output_is_json_lines_ending_with_complete() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--on-finish", "keep", "--json"]);
    assert_exit(&output, 0);
    let events: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("stdout has a line that is not JSON: {line:?}: {err}"))
        })
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().expect("every event has a type"))
        .collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"complete"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "story_progress").count(), 2);
    assert_eq!(
        kinds.iter().filter(|k| **k == "attempt_finished").count(),
        2
    );
    assert!(events.iter().all(|e| e["change"] == "greet"));
    assert_eq!(
        events.last().map(|e| e["stories_total"].clone()),
        Some(2.into())
    );
}

#[test]
fn a_completed_run_offers_keep_or_cleanup_and_cleanup_leaves_the_work_uncommitted() {
    let repo = project(TWO_STORIES);
    let before = work_state(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    // With no terminal to ask on, the run stays and says how to finish.
    let output = start(&repo, &agent, &["--on-finish", "ask"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("git ralph finish greet --cleanup"), "{err}");
    assert!(err.contains("git ralph finish greet --keep"), "{err}");
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    let tip = repo.rev_parse("ralph/greet");
    assert_eq!(state(&repo)["reason"], "completed");

    let output = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&output, 0);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), before.head);
    assert!(
        !has_ref(&repo, "refs/heads/ralph/greet"),
        "the branch is deleted"
    );
    assert_eq!(repo.rev_parse(&format!("{NS}/finished")), tip);
    assert_eq!(
        repo.git(&["diff", "--cached"]),
        "",
        "the index is the original one"
    );
    assert_eq!(
        repo.status_porcelain(),
        format!(" M {TASKS_PATH}\n?? story-1.txt\n?? story-2.txt\n")
    );
    assert_eq!(repo.read("story-2.txt"), "work of story 2\n");
    assert_eq!(
        repo.write_tree_of_worktree_copy(),
        repo.rev_parse(&format!("{tip}^{{tree}}")),
        "the worktree is the final state"
    );
    let status = status_json(&repo);
    assert_eq!(status["state"], "finished");
    assert_eq!(status["finished_with"], "cleanup");
    repo.assert_fsck_clean();
}
