//! Where features meet (issue 33): each case in which two features, each
//! right on its own, broke together, through the real binary with git as
//! the oracle. The record (status, the events, the hooks) must agree with
//! the branch in every mode, and the user's stash is the user's. The cases
//! of a run's ending (hand-off, resume, watch, history) are in
//! `meet_endings`.

use std::fs;

use crate::harness::story_run::*;
use crate::harness::*;

/// Two stashes of the user's, on a clean worktree.
fn two_stashes(repo: &TestRepo) -> String {
    repo.write("notes.txt", "v1\n");
    repo.commit_all("Notes");
    for edit in ["first stashed edit\n", "second stashed edit\n"] {
        repo.write("notes.txt", edit);
        repo.git(&["stash", "-q"]);
    }
    let list = stash_list(repo);
    assert_eq!(list.lines().count(), 2, "{list}");
    list
}

/// `git stash list`, with each entry's commit.
fn stash_list(repo: &TestRepo) -> String {
    repo.git(&["stash", "list", "--format=%H %gd %gs"])
}

fn warnings(repo: &TestRepo) -> Vec<String> {
    of_type(&events(repo), "warning")
        .iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn issue_33_an_agent_that_clears_or_drops_the_stash_has_it_put_back_and_reported() {
    let repo = project(TWO_STORIES);
    let before = two_stashes(&repo);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\ngit stash clear\n{}[story=2]\ngit stash drop -q\n{}",
            finish_story("1"),
            finish_story("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(stash_list(&repo), before, "{}", describe(&output));
    let said = warnings(&repo);
    assert!(
        said.iter()
            .any(|w| w.contains("stash") && w.contains("put back")),
        "{said:?}"
    );
    repo.assert_fsck_clean();
    // Each entry still holds the user's work.
    let oldest = repo.git(&["stash", "show", "-p", "stash@{1}"]);
    assert!(oldest.contains("+first stashed edit"), "{oldest}");
    let newest = repo.git(&["stash", "show", "-p", "stash@{0}"]);
    assert!(newest.contains("+second stashed edit"), "{newest}");
}

#[test]
fn issue_33_a_stash_the_agent_cleared_before_it_was_killed_is_back_after_abort() {
    let repo = project(TWO_STORIES);
    let before = two_stashes(&repo);
    let pre = work_state(&repo);
    let agent = script(
        &repo,
        "[story=1 attempt=1]\ngit stash clear\ngit update-ref refs/heads/main HEAD\nwrite story-1.txt half\nsleep 30\n",
    );
    let main = repo.rev_parse("main");
    let run = Background::start(&repo, &agent, &[]);
    agent_at_work(&repo, &repo.root, "1", 1, "story-1.txt");
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(std::time::Duration::from_secs(30));
    kill_agents(&repo.record_dir());
    assert_eq!(stash_list(&repo), "", "the agent cleared it");
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_success(&output);
    assert_eq!(stash_list(&repo), before, "{}", describe(&output));
    assert_eq!(repo.rev_parse("main"), main, "{}", describe(&output));
    assert_eq!(work_state(&repo), pre);
    assert!(stderr(&output).contains("stash"), "{}", describe(&output));
    repo.assert_fsck_clean();
}

#[test]
fn issue_33_a_stash_the_agent_cleared_before_it_was_killed_is_back_on_resume() {
    let repo = project(TWO_STORIES);
    let before = two_stashes(&repo);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\ngit stash clear\nwrite story-1.txt half\nsleep 30\n\
             [story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.root, "1", 1, "story-1.txt");
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(std::time::Duration::from_secs(30));
    kill_agents(&repo.record_dir());
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(stash_list(&repo), before, "{}", describe(&output));
    let said = warnings(&repo);
    assert!(
        said.iter()
            .any(|w| w.contains("before the loop stopped") && w.contains("stash")),
        "{said:?}"
    );
}

#[test]
fn issue_33_what_an_agent_stashes_stays_on_top_of_the_users_stash_reported() {
    let repo = project(TWO_STORIES);
    let before = two_stashes(&repo);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite scratch.txt the agent's scratch\ngit stash -q -u\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let now = stash_list(&repo);
    assert_eq!(now.lines().count(), 3, "{now}");
    let ids = |list: &str| -> Vec<String> {
        list.lines()
            .map(|line| line.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&now)[1..],
        ids(&before),
        "the user's entries stay below"
    );
    let said = warnings(&repo);
    assert!(
        said.iter()
            .any(|w| w.contains("stashed on top of your stash")),
        "{said:?}"
    );
}

#[test]
fn issue_33_a_failed_promise_keeps_its_reason_when_the_agent_exits_non_zero() {
    let repo = project(TWO_STORIES);
    let agent = second_try(&repo, "promise FAILED: the parser is missing\nexit 1\n");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let state = state(&repo);
    assert_eq!(
        attempts_of(&state, "1")[0],
        ("failed".to_owned(), "the parser is missing".to_owned()),
        "{}",
        describe(&output)
    );
    let retry = recorded_prompt(&repo, "1", 2);
    assert!(retry.contains("Previous attempt"), "{retry}");
    assert!(retry.contains("the parser is missing"), "{retry}");
}

#[test]
fn issue_33_a_coder_retried_after_no_signal_is_told_of_its_previous_attempt() {
    let repo = project("# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create story-1.txt\n");
    let coder = script(
        &repo,
        "[story=1 attempt=1]\nwrite story-1.txt half\nsay I stopped half-way\n\
         [story=1 attempt=2]\nwrite story-1.txt work of story 1\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n",
    );
    let reviewer = script(&repo, "[*]\npromise REVIEW_PASSED\n");
    let reviewer = format!(
        "FAKE_AGENT_SCRIPT={} {}",
        shell_quote(&reviewer.to_string_lossy()),
        shell_quote(fake_agent_path())
    );
    let output = start(
        &repo,
        &coder,
        &[
            "--on-finish",
            "keep",
            "--roles",
            "coder,reviewer",
            "--role-agent-command",
            &format!("reviewer={reviewer}"),
        ],
    );
    assert_exit(&output, 0);
    let retry = recorded_prompt(&repo, "1", 2);
    assert!(retry.contains("Previous attempt"), "{retry}");
}

/// A hook command, as a TOML string, that fails the first time it runs.
fn failing_once(repo: &TestRepo) -> String {
    let once = repo.dir.path().join("failed-once");
    let command = format!(
        "test -e {0} || {{ touch {0}; echo not deployed >&2; exit 1; }}",
        shell_quote(&once.to_string_lossy())
    );
    format!("\"{}\"", command.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn issue_33_a_hook_that_stops_the_run_leaves_status_in_step_with_the_branch() {
    let repo = project(THREE_STORIES);
    repo.write(
        "ralph.toml",
        format!(
            "[hooks.on_story_done]\ncommand = {}\non_error = \"stop\"\n",
            failing_once(&repo)
        ),
    );
    repo.commit_all("Add the contract");
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 130);
    assert!(tree_files(&repo, BRANCH).contains(&"story-1.txt".to_owned()));
    let status = status_json(&repo);
    let stories = status["stories"].as_array().expect("stories");
    let one = stories.iter().find(|s| s["id"] == "1").expect("story 1");
    assert_eq!(one["done"], true, "{status:#}");
    assert_ne!(status["current_story"], "1", "{status:#}");
    let text = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(text.contains("1/3") || text.contains("1 of 3"), "{text}");
}

#[test]
fn issue_33_a_rewound_branch_is_brought_back_and_the_story_after_it_still_counts() {
    let repo = project(THREE_STORIES);
    let agent = script(
        &repo,
        &format!(
            "{}{}[story=3]\ngit reset -q --hard HEAD~2\n{}",
            story_done("1"),
            story_done("2"),
            finish_story("3")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 0);
    assert_on_branch(&repo, &["3 Docs", "2 Farewell", "1 Greeting"]);
    for id in ["1", "2", "3"] {
        assert_eq!(
            show(&repo, BRANCH, &format!("story-{id}.txt")),
            format!("work of story {id}\n")
        );
    }
    let tasks = show(&repo, BRANCH, TASKS_PATH);
    assert!(!tasks.contains("[ ]"), "{tasks}");
    let said = warnings(&repo);
    assert!(
        said.iter()
            .any(|w| w.contains("carried onto the last checkpoint")),
        "{said:?}"
    );
    repo.assert_fsck_clean();
}

/// What a rewinding agent left unticked stays unticked: carrying its work
/// back onto the branch must not mark its story done for it.
#[test]
fn a_rewinding_agent_that_claims_a_story_it_never_ticked_is_refused() {
    let repo = project(THREE_STORIES);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\ngit reset -q --hard HEAD~1\nwrite story-2.txt work of story 2\\n\npromise COMPLETE\n",
            story_done("1"),
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 3);
    assert_on_branch(&repo, &["1 Greeting"]);
    let tasks = show(&repo, BRANCH, TASKS_PATH);
    assert!(tasks.contains("- [ ] 2.1"), "{tasks}");
    let status = status_json(&repo);
    let two = status["stories"]
        .as_array()
        .and_then(|stories| stories.iter().find(|s| s["id"] == "2"))
        .cloned()
        .expect("story 2");
    assert_eq!(two["done"], false, "{status:#}");
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(log.contains("not marked done"), "{log}");
    repo.assert_fsck_clean();
}

/// A prd.json story's `passes` is carried as the rewinding agent set it:
/// set, the story is done; left false, its claim is refused.
#[test]
fn a_rewinding_agents_prd_marks_are_carried_as_it_left_them() {
    let prd = r#"{
  "project": "greet",
  "userStories": [
    {"id": "US-1", "title": "Greeting", "priority": 1, "passes": false},
    {"id": "US-2", "title": "Farewell", "priority": 2, "passes": false},
    {"id": "US-3", "title": "Docs", "priority": 3, "passes": false}
  ]
}
"#;
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let agent = script(
        &repo,
        "[story=US-1]\nwrite one.txt one\nset-passes US-1 true\npromise COMPLETE\n\
         [story=US-2]\ngit reset -q --hard HEAD~1\nwrite two.txt two\nset-passes US-2 true\npromise COMPLETE\n\
         [story=US-3]\ngit reset -q --hard HEAD~1\nwrite three.txt three\npromise COMPLETE\n",
    );
    let output = run(ralph_with_fake(&repo, &agent)
        .args(["start", "greet", "--prd", "prd.json", "--on-finish", "keep"])
        .args(["--max-retries", "0", "--agent-command", fake_agent_path()]));
    assert_exit(&output, 3);
    let files = tree_files(&repo, BRANCH);
    assert!(files.contains(&"two.txt".to_owned()), "{files:?}");
    assert!(!files.contains(&"three.txt".to_owned()), "{files:?}");
    let prd_now: serde_json::Value =
        serde_json::from_str(&show(&repo, BRANCH, "prd.json")).expect("prd.json is JSON");
    let passes: Vec<bool> = (0..3)
        .map(|i| prd_now["userStories"][i]["passes"] == true)
        .collect();
    assert_eq!(passes, [true, true, false], "{}", describe(&output));
    repo.assert_fsck_clean();
}

/// A single pass keeps a failed attempt's work on the branch; after a
/// rewind, that work must not come with a tick the agent never made.
#[test]
fn a_single_pass_keeps_a_rewinding_agents_failed_work_without_calling_it_done() {
    let repo = project(THREE_STORIES);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\ngit reset -q --hard HEAD~1\nwrite story-2.txt half of story 2\\n\npromise FAILED: ran out of ideas\nexit 1\n{}",
            story_done("1"),
            story_done("3"),
        ),
    );
    let output = start(&repo, &agent, &["--once", "--on-finish", "keep"]);
    assert_exit(&output, 3);
    let tasks = show(&repo, BRANCH, TASKS_PATH);
    assert!(tasks.contains("- [ ] 2.1"), "{tasks}");
    let status = status_json(&repo);
    let done: Vec<String> = status["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .filter(|s| s["done"] == true)
        .map(|s| s["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(done, ["1", "3"], "{status:#}");
    let text = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(text.contains("2/3") || text.contains("2 of 3"), "{text}");
    repo.assert_fsck_clean();
}

#[test]
fn issue_33_work_done_on_another_branch_is_carried_onto_the_run_and_that_branch_put_back() {
    let repo = project(THREE_STORIES);
    let main = repo.rev_parse("main");
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\ngit checkout -q main\n{}git add -A\ngit commit -q -m 'story 2, on main'\npromise COMPLETE\n{}",
            story_done("1"),
            finish_story("2").replace("promise COMPLETE\n", ""),
            story_done("3")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 0);
    assert_on_branch(&repo, &["3 Docs", "2 Farewell", "1 Greeting"]);
    assert_eq!(repo.rev_parse("main"), main, "main is put back");
    for id in ["1", "2", "3"] {
        assert_eq!(
            show(&repo, BRANCH, &format!("story-{id}.txt")),
            format!("work of story {id}\n")
        );
    }
    repo.assert_fsck_clean();
}

/// A hook command (TOML string) that appends `<story> <tip of ralph/greet>`
/// to `log` each time it runs.
fn tip_recorder(log: &std::path::Path) -> String {
    let command = format!(
        "echo \"$RALPH_STORY $(git rev-parse {BRANCH})\" >> {}",
        shell_quote(&log.to_string_lossy())
    );
    format!("\"{}\"", command.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn issue_33_a_parallel_story_is_done_only_once_it_is_merged() {
    let repo = project(THREE_STORIES);
    let log = repo.dir.path().join("done.log");
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n",
    );
    repo.write(
        "ralph.toml",
        format!("[hooks]\non_story_done = {}\n", tip_recorder(&log)),
    );
    repo.commit_all("Independent stories, and a hook");
    // Story 2 is done first, but merges after story 1 and conflicts with
    // it; story 3 touches nothing of theirs.
    let agent = script(
        &repo,
        "[story=1]\nsleep 1.5\nwrite shared.txt one\\n\nwrite story-1.txt work of story 1\\n\ntick-story\npromise COMPLETE\n\
         [story=2 attempt=1]\nwrite shared.txt two\\n\nwrite story-2.txt work of story 2\\n\ntick-story\npromise COMPLETE\n\
         [story=2 attempt=2]\nappend shared.txt two\\n\nwrite story-2.txt work of story 2\\n\ntick-story\npromise COMPLETE\n\
         [story=3]\nwrite story-3.txt work of story 3\\n\ntick-story\npromise COMPLETE\n",
    );
    let output = start(&repo, &agent, &["--parallel", "3", "--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(show(&repo, BRANCH, "shared.txt"), "one\ntwo\n");

    // Every on_story_done ran once per story, with the story's work
    // already on the branch.
    let calls = fs::read_to_string(&log).unwrap_or_default();
    let mut stories: Vec<&str> = Vec::new();
    for line in calls.lines() {
        let (story, tip) = line.split_once(' ').expect("story and tip");
        assert!(
            repo.git_ok(&["cat-file", "-e", &format!("{tip}:story-{story}.txt")]),
            "on_story_done for story {story} ran before its work was on {BRANCH}:\n{calls}"
        );
        stories.push(story);
    }
    stories.sort();
    assert_eq!(stories, ["1", "2", "3"], "{calls}");

    // The events say complete once per story, each at a checkpoint on the
    // branch holding its work.
    let completes: Vec<(String, String)> = of_type(&events(&repo), "attempt_finished")
        .iter()
        .filter(|e| e["outcome"] == "complete")
        .map(|e| {
            (
                e["story_id"].as_str().unwrap_or_default().to_owned(),
                e["checkpoint"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(completes.len(), 3, "{completes:?}");
    for (story, checkpoint) in &completes {
        assert!(
            repo.git_ok(&["merge-base", "--is-ancestor", checkpoint, BRANCH]),
            "story {story}'s checkpoint {checkpoint} is not on {BRANCH}"
        );
        assert!(repo.git_ok(&["cat-file", "-e", &format!("{checkpoint}:story-{story}.txt")]));
    }
    // The console says so once per story, too.
    let said = stdout(&output);
    assert_eq!(said.matches("story 2 done").count(), 1, "{said}");
    // Story 2's conflict names story 1, which touched the file, not
    // story 3, which did not.
    let refused = of_type(&events(&repo), "merged")
        .into_iter()
        .find(|e| e["merged"] == false)
        .cloned()
        .expect("story 2's first merge was refused");
    let reason = refused["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("story 1"), "{reason}");
    assert!(!reason.contains('3'), "{reason}");
    let status = status_json(&repo);
    assert_eq!(status["stories_done"], 3, "{status:#}");
}

/// `start` arguments for a coder-then-reviewer pipeline whose reviewer
/// follows its own script.
fn with_reviewer(repo: &TestRepo, reviewer_script: &str) -> Vec<String> {
    let reviewer = script(repo, reviewer_script);
    let reviewer = format!(
        "FAKE_AGENT_SCRIPT={} {}",
        shell_quote(&reviewer.to_string_lossy()),
        shell_quote(fake_agent_path())
    );
    [
        "--on-finish",
        "keep",
        "--roles",
        "coder,reviewer",
        "--role-agent-command",
        &format!("reviewer={reviewer}"),
    ]
    .map(str::to_owned)
    .to_vec()
}

#[test]
fn issue_33_roles_and_retries_speak_of_the_same_bounds() {
    let repo = project("# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create story-1.txt\n");
    // The coder first promises in the words of a plain run.
    let coder = script(
        &repo,
        "[story=1 attempt=1]\nwrite story-1.txt work of story 1\\n\ntick-story\npromise COMPLETE\n\
         [story=1]\nwrite story-1.txt work of story 1\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n",
    );
    let args = with_reviewer(
        &repo,
        "[call=1]\npromise REVIEW_FAILED: no\n[*]\npromise REVIEW_PASSED\n",
    );
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--max-retries", "0"]);
    let output = start(&repo, &coder, &args);
    assert_exit(&output, 0);
    let state = state(&repo);
    let (outcome, reason) = attempts_of(&state, "1")[0].clone();
    assert_eq!(outcome, "no_signal");
    assert!(
        reason.contains("the coder's promise is <promise>IMPLEMENTATION_COMPLETE</promise>")
            && reason.contains("<promise>COMPLETE</promise>"),
        "{reason}"
    );
    // Every attempt announced stays within the bound it is shown with,
    // --max-retries 0 notwithstanding.
    for progress in of_type(&events(&repo), "story_progress") {
        let (attempt, max) = (&progress["attempt"], &progress["max_attempts"]);
        assert!(
            attempt.as_u64() <= max.as_u64(),
            "attempt {attempt}/{max}: {progress}"
        );
    }
    // The dry run names one bound per story, not two that disagree.
    let fresh = project("# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create story-1.txt\n");
    let plan = dry_run(
        &fresh,
        &[CHANGE, "--roles", "coder,reviewer", "--max-retries", "3"],
    );
    assert_success(&plan);
    let plan = stdout(&plan);
    assert!(
        !plan.contains("attempts per story: 4 (3 retries)"),
        "{plan}"
    );
    assert!(plan.contains("each role's own iterations"), "{plan}");
}
