//! Independent stories at once (`start --parallel N`, issue 23), through
//! the real binary with git as the oracle: each story works in a worktree
//! of its own; its work reaches `ralph/<change>` only through a merge made
//! by git-ralph, in story order, with its checks passing on the merged
//! tree; a conflict is never a success; abort, finish and a resume after
//! kill -9 leave no worktree, branch or story behind.

use std::fs;
use std::path::{Path, PathBuf};

use crate::harness::story_run::*;
use crate::harness::*;

/// `git worktree list --porcelain`'s worktree lines.
fn worktrees(repo: &TestRepo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter(|line| line.starts_with("worktree "))
        .map(str::to_string)
        .collect()
}

/// Nothing of a parallel run is left: one worktree, no story branch, git
/// content with it all.
pub(crate) fn assert_nothing_left(repo: &TestRepo) {
    assert_eq!(worktrees(repo).len(), 1, "{:?}", worktrees(repo));
    let branches = repo.git(&["branch", "--list", "ralph/greet.story-*"]);
    assert_eq!(branches.trim(), "", "story branches are left");
    let prune = repo.git_output(&["worktree", "prune", "-n", "-v"]);
    assert_eq!(format!("{}{}", stdout(&prune), stderr(&prune)), "");
    repo.assert_fsck_clean();
}

/// Where the run of `greet` works.
fn run_worktree(repo: &TestRepo) -> PathBuf {
    let parent = fs::canonicalize(repo.root.parent().expect("a parent")).expect("it exists");
    parent.join("repo.ralph").join(CHANGE)
}

/// Start `agent` at `--parallel 2` (and `extra`) in the background, and
/// wait until the agents of stories 1 and 2 are at work, each having
/// written its file. Returns the run, and where story worktrees go.
fn two_stories_at_work(repo: &TestRepo, agent: &Path, extra: &[&str]) -> (Background, PathBuf) {
    let mut args = vec!["--parallel", "2"];
    args.extend_from_slice(extra);
    let run = Background::start(repo, agent, &args);
    let beside = run_worktree(repo).parent().expect("a parent").to_owned();
    agent_at_work(repo, &beside.join("greet.story-1"), "1", 1, "one.txt");
    agent_at_work(repo, &beside.join("greet.story-2"), "2", 1, "two.txt");
    (run, beside)
}

/// kill -9 the loop, and its agents after it.
fn kill_9(repo: &TestRepo, run: Background) {
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(std::time::Duration::from_secs(30));
    kill_agents(&repo.record_dir());
}

#[test]
fn issue_23_independent_stories_run_at_once_and_merge_in_story_order() {
    let repo = independent_project();
    let agent = script(
        &repo,
        "[story=1]\nwrite hello.txt hello\\n\nsleep 1\ntick-story\npromise COMPLETE\n\
         [story=2]\nwrite bye.txt bye\\n\ntick-story\npromise COMPLETE\n\
         [story=3]\nwrite README.md both files\\n\nsleep 0.5\ntick-story\npromise COMPLETE\n",
    );
    let output = start(&repo, &agent, &["--parallel", "3", "--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell", "1 Greeting"]),
        "{}",
        describe(&output)
    );
    assert_eq!(show(&repo, BRANCH, "hello.txt"), "hello\n");
    assert_eq!(show(&repo, BRANCH, "bye.txt"), "bye\n");
    assert_eq!(show(&repo, BRANCH, "README.md"), "both files\n");
    let tasks = show(&repo, BRANCH, TASKS_PATH);
    assert!(!tasks.contains("[ ]"), "every box is ticked:\n{tasks}");
    // Each merged commit carries its story's receipt, as the run's own.
    let body = repo.git(&["log", "-1", "--format=%B", BRANCH]);
    assert!(body.contains("Ralph-Change: greet\n"), "{body}");
    assert!(body.contains("Ralph-Story: 3"), "{body}");
    assert!(!body.contains("greet.story"), "{body}");
    assert_nothing_left(&repo);
    // The events name every story at work, and each merge.
    let merged: Vec<String> = events(&repo)
        .iter()
        .filter(|e| e["type"] == "merged" && e["merged"] == true)
        .map(|e| e["story_id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(merged, ["1", "2", "3"]);
    assert!(
        events(&repo).iter().any(
            |e| e["type"] == "workers" && e["stories"].as_array().is_some_and(|s| s.len() == 3)
        ),
        "three stories were at work at once"
    );
}

/// Two independent stories that write the same file: story 2 is done
/// first in its worktree, but merges after story 1 and conflicts.
fn clashing_script(repo: &TestRepo) -> PathBuf {
    script(
        repo,
        "[story=1]\nwrite shared.txt one\\n\nsleep 1\ntick-story\npromise COMPLETE\n\
         [story=2 attempt=1]\nwrite shared.txt two\\n\ntick-story\npromise COMPLETE\n\
         [story=2 attempt=2]\nappend shared.txt two\\n\ntick-story\npromise COMPLETE\n",
    )
}

fn two_independent() -> TestRepo {
    let repo = project(TWO_STORIES);
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n",
    );
    repo.commit_all("The stories of greet are independent");
    repo
}

/// No conflict marker anywhere on the run's branch.
fn assert_no_markers(repo: &TestRepo) {
    let grep = repo.git_output(&["grep", "-n", "-e", "<<<<<<<", "-e", ">>>>>>>", BRANCH]);
    assert_eq!(stdout(&grep), "", "conflict markers landed");
}

#[test]
fn issue_23_a_conflict_is_never_success_the_story_runs_again_on_top() {
    let repo = two_independent();
    let agent = clashing_script(&repo);
    let output = start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_no_markers(&repo);
    // Both stories' work, story 2's done again on top of story 1's.
    assert_eq!(show(&repo, BRANCH, "shared.txt"), "one\ntwo\n");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"]),
        "{}",
        describe(&output)
    );
    let refused: Vec<_> = events(&repo)
        .into_iter()
        .filter(|e| e["type"] == "merged" && e["merged"] == false)
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    let reason = refused[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("shared.txt") && reason.contains("story 1"),
        "{reason}"
    );
    // The conflicting work is kept, and the rerun was told why.
    let kept = refused[0]["preserved"].as_str().expect("kept under a ref");
    assert_eq!(show(&repo, kept, "shared.txt"), "two\n");
    let prompt = agent_record(&repo, "promptfile", "2", 2);
    assert!(
        prompt.contains("conflicts with the work of story 1"),
        "{prompt}"
    );
    assert_eq!(
        attempts_of(&state(&repo), "2")
            .iter()
            .map(|(outcome, _)| outcome.as_str())
            .collect::<Vec<_>>(),
        ["rejected", "complete"]
    );
    assert_nothing_left(&repo);
}

#[test]
fn issue_23_a_story_that_cannot_be_merged_is_named_and_nothing_of_it_lands() {
    let repo = two_independent();
    let agent = clashing_script(&repo);
    let output = start(
        &repo,
        &agent,
        &[
            "--parallel",
            "2",
            "--max-retries",
            "0",
            "--on-finish",
            "keep",
        ],
    );
    assert_exit(&output, 3);
    assert!(
        stdout(&output).contains("story 2 used its retries"),
        "{}",
        describe(&output)
    );
    assert_no_markers(&repo);
    assert_eq!(show(&repo, BRANCH, "shared.txt"), "one\n");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["1 Greeting"])
    );
    let tasks = show(&repo, BRANCH, TASKS_PATH);
    assert!(
        tasks.contains("- [ ] 2.1"),
        "story 2 is not marked done:\n{tasks}"
    );
    repo.assert_fsck_clean();
}

/// A parallel run of three stories killed with kill -9 while the first
/// attempts of stories 1 and 2 are at work; each story is done by its
/// next attempt. Returns the repository, the agent, where story worktrees
/// go, and the reaper of the killed agents.
pub(crate) fn killed_with_two_at_work() -> (TestRepo, PathBuf, PathBuf, Reaper) {
    let repo = independent_project();
    let agent = script(
        &repo,
        "[story=1 attempt=1]\nwrite one.txt half of one\nsleep 30\n\
         [story=2 attempt=1]\nwrite two.txt half of two\nsleep 30\n\
         [story=1 attempt=2]\nwrite one.txt one\\n\ntick-story\npromise COMPLETE\n\
         [story=2 attempt=2]\nwrite two.txt two\\n\ntick-story\npromise COMPLETE\n\
         [story=3]\nwrite three.txt three\\n\ntick-story\npromise COMPLETE\n",
    );
    let reaper = Reaper(repo.record_dir());
    let (run, beside) = two_stories_at_work(&repo, &agent, &["--on-finish", "keep"]);
    kill_9(&repo, run);
    (repo, agent, beside, reaper)
}

#[test]
fn issue_23_kill_9_during_a_parallel_run_then_resume_loses_no_story_and_does_none_twice() {
    let (repo, agent, _, _reaper) = killed_with_two_at_work();
    assert_eq!(worktrees(&repo).len(), 4, "{:?}", worktrees(&repo));
    repo.assert_fsck_clean();
    // Status shows every story at work.
    let status = status_json(&repo);
    let at_work: Vec<&str> = status["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w["story"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(at_work, ["1", "2"], "{status}");

    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell", "1 Greeting"]),
        "{}",
        describe(&output)
    );
    // What the killed attempts left is kept.
    let kept: Vec<String> = refs_under(&repo, &format!("{NS}/stories/"))
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.ends_with("-uncommitted"))
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let halves: Vec<String> = kept
        .iter()
        .flat_map(|name| ["one.txt", "two.txt"].map(|file| (name.clone(), file)))
        .filter_map(|(name, file)| {
            let out = repo.git_output(&["show", &format!("{name}:{file}")]);
            out.status.success().then(|| stdout(&out))
        })
        .collect();
    assert_eq!(halves.len(), 2, "{halves:?}");
    assert!(halves.contains(&"half of one".to_string()), "{halves:?}");
    assert_nothing_left(&repo);
}

#[test]
fn issue_23_abort_of_a_killed_parallel_run_restores_exactly_and_removes_every_worktree() {
    let repo = independent_project();
    repo.write("mine.txt", "the user's uncommitted work\n");
    let before = work_state(&repo);
    let agent = script(
        &repo,
        "[story=1]\nwrite one.txt half\nsleep 30\n[story=2]\nwrite two.txt half\nsleep 30\n",
    );
    let _reaper = Reaper(repo.record_dir());
    let (loop_run, beside) = two_stories_at_work(&repo, &agent, &[]);
    kill_9(&repo, loop_run);

    let output = run(ralph(&repo).args(["abort", CHANGE]));
    assert_exit(&output, 0);
    assert_eq!(work_state(&repo), before, "{}", describe(&output));
    assert!(!beside.join("greet.story-1").exists());
    assert!(!beside.join("greet.story-2").exists());
    assert!(!has_ref(&repo, "refs/heads/ralph/greet"));
    assert_nothing_left(&repo);
    // What the stories left is kept.
    assert_eq!(
        refs_under(&repo, &format!("{NS}/stories/"))
            .iter()
            .filter(|(name, _)| name.ends_with("-uncommitted"))
            .count(),
        2
    );
}

/// The largest set of stories at work at once, by the run's events, and
/// every set in order.
fn at_work(repo: &TestRepo, change: &str) -> Vec<Vec<String>> {
    let log = repo.path(format!(".git/ralph/{change}/events.jsonl"));
    fs::read_to_string(&log)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", log.display()))
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
        .collect::<Vec<_>>()
        .iter()
        .filter(|e| e["type"] == "workers")
        .map(|e| {
            e["stories"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn issue_23_a_checklist_without_declared_independence_runs_in_order() {
    let repo = project(THREE_STORIES);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--parallel", "3", "--on-finish", "keep"]);
    assert_exit(&output, 0);
    let sets = at_work(&repo, CHANGE);
    assert!(sets.iter().all(|set| set.len() <= 1), "{sets:?}");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell", "1 Greeting"])
    );
    assert_nothing_left(&repo);
}

const PRD_DEPENDS: &str = r#"{"project": "p", "userStories": [
  {"id": "A", "title": "Base", "priority": 1, "passes": false},
  {"id": "B", "title": "On top", "priority": 2, "passes": false, "dependsOn": ["A"]},
  {"id": "C", "title": "Aside", "priority": 3, "passes": false}
]}
"#;

#[test]
fn issue_23_a_story_starts_only_once_what_it_depends_on_is_merged() {
    let repo = TestRepo::with_files(&[("prd.json", PRD_DEPENDS)]);
    let agent = script(
        &repo,
        "[story=A]\nwrite a.txt a\\n\nsleep 0.5\nset-passes A true\npromise COMPLETE\n\
         [story=B]\nwrite b.txt b\\n\nset-passes B true\npromise COMPLETE\n\
         [story=C]\nwrite c.txt c\\n\nset-passes C true\npromise COMPLETE\n",
    );
    let mut cmd = fake_start(&repo, "deps", &agent);
    cmd.args(["--prd", "prd.json", "--parallel", "3"]);
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    let sets = at_work(&repo, "deps");
    assert!(
        sets.iter()
            .all(|set| !(set.contains(&"A".into()) && set.contains(&"B".into()))),
        "B ran beside A: {sets:?}"
    );
    assert!(
        sets.iter()
            .any(|set| set.contains(&"A".into()) && set.contains(&"C".into())),
        "A and C ran at once: {sets:?}"
    );
    // B's work was made on top of A's: its branch's first commit holds a.txt.
    let prd = repo.git(&["show", "ralph/deps:prd.json"]);
    assert_eq!(prd.matches("\"passes\": true").count(), 3, "{prd}");
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert!(
            repo.git_output(&["cat-file", "-e", &format!("ralph/deps:{file}")])
                .status
                .success(),
            "{file}"
        );
    }
    repo.assert_fsck_clean();
}

#[test]
fn issue_23_a_story_done_in_its_worktree_before_kill_9_is_merged_on_resume_not_done_again() {
    let repo = independent_project();
    let agent = script(
        &repo,
        "[story=1 attempt=1]\nwrite one.txt half of one\nsleep 30\n\
         [story=1 attempt=2]\nwrite one.txt one\\n\ntick-story\npromise COMPLETE\n\
         [story=2]\nwrite two.txt two\\n\ntick-story\npromise COMPLETE\n\
         [story=3]\nwrite three.txt three\\n\ntick-story\npromise COMPLETE\n",
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    let beside = run_worktree(&repo).parent().expect("a parent").to_owned();
    agent_at_work(&repo, &beside.join("greet.story-1"), "1", 1, "one.txt");
    // Story 2 is done in its worktree, and waits for story 1 to be merged.
    wait_until(
        "story 2 is done in its worktree",
        std::time::Duration::from_secs(30),
        || {
            fs::read_to_string(repo.path(".git/ralph/greet/workers/2/state.json"))
                .is_ok_and(|state| state.contains("\"complete\""))
        },
    );
    kill_9(&repo, run);

    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    let story_2_runs = agent_runs(&repo)
        .into_iter()
        .filter(|(story, _)| story == "2")
        .count();
    assert_eq!(
        story_2_runs,
        1,
        "story 2 was done twice:\n{}",
        describe(&output)
    );
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "1 Greeting", "2 Farewell"]),
    );
    assert_eq!(show(&repo, BRANCH, "two.txt"), "two\n");
    assert_nothing_left(&repo);
}

#[test]
fn issue_23_abort_of_a_live_parallel_run_stops_every_story_and_restores_exactly() {
    let repo = independent_project();
    repo.write("mine.txt", "the user's uncommitted work\n");
    let before = work_state(&repo);
    let agent = script(
        &repo,
        "[story=1]\nwrite one.txt half\nsleep 30\n[story=2]\nwrite two.txt half\nsleep 30\n",
    );
    let _reaper = Reaper(repo.record_dir());
    let (loop_run, beside) = two_stories_at_work(&repo, &agent, &["--on-finish", "keep"]);

    // The loop is reaped while abort waits for it to stop.
    let mut abort = ralph(&repo);
    abort.args(["abort", CHANGE]);
    let aborting = std::thread::spawn(move || run(&mut abort));
    let ended = loop_run.wait(std::time::Duration::from_secs(30));
    let output = aborting.join().expect("abort ran");
    assert!(
        output.status.success(),
        "{}\nthe loop said:\n{}{}",
        describe(&output),
        ended.stdout,
        ended.stderr
    );
    assert_eq!(
        work_state(&repo),
        before,
        "{}\nthe loop said:\n{}{}",
        describe(&output),
        ended.stdout,
        ended.stderr
    );
    assert!(!run_worktree(&repo).exists());
    assert!(!beside.join("greet.story-1").exists());
    assert!(!beside.join("greet.story-2").exists());
    assert_nothing_left(&repo);
    // Each story's interrupted attempt is on record, its work kept where
    // the record says.
    let state = state(&repo);
    for (story, file) in [("1", "one.txt"), ("2", "two.txt")] {
        let attempts = state["stories"]
            .as_array()
            .and_then(|stories| stories.iter().find(|s| s["id"] == story))
            .map(|s| s["attempts"].clone())
            .unwrap_or_default();
        let last = attempts
            .as_array()
            .and_then(|a| a.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(last["outcome"], "interrupted", "{state}");
        let kept = last["preserved"].as_str().expect("its work is kept");
        assert!(
            kept.starts_with(&format!("{NS}/stories/{story}/attempts/")),
            "{kept}"
        );
        assert_eq!(show(&repo, kept, file), "half");
    }
}

/// Everything a refused start must leave as it was.
fn untouched(repo: &TestRepo) -> (String, String, bool) {
    (
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        repo.status_porcelain(),
        repo.path(".git/ralph").exists(),
    )
}

#[test]
fn issue_23_a_parallel_run_that_cannot_be_is_refused_before_anything_is_written() {
    let repo = project(THREE_STORIES);
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n\n[story.\"1\"]\nafter = [\"3\"]\n\n[story.\"3\"]\nafter = [\"1\"]\n",
    );
    repo.commit_all("Stories that wait for each other");
    let before = untouched(&repo);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--parallel", "2"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("stories 1, 3 wait for each other"), "{err}");
    assert!(err.contains("after = [...]"), "what to do is said:\n{err}");
    assert_eq!(untouched(&repo), before);
    assert_eq!(worktrees(&repo).len(), 1);

    let repo = independent_project();
    let before = untouched(&repo);
    let output = start(&repo, &agent, &["--parallel", "2", "--once"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("--once"), "{}", describe(&output));
    assert_eq!(untouched(&repo), before);
}

#[test]
fn issue_23_a_run_in_the_users_worktree_is_not_resumed_in_parallel() {
    let repo = project(TWO_STORIES);
    let stop = script(&repo, "[story=1]\npromise FAILED: not yet\n");
    let output = start(&repo, &stop, &["--max-retries", "0"]);
    assert_exit(&output, 3);
    let before = untouched(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--parallel", "2"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("works in your worktree"),
        "{}",
        describe(&output)
    );
    assert_eq!(untouched(&repo), before);
}

#[test]
fn issue_23_cleanup_of_a_parallel_run_brings_every_story_into_the_users_worktree() {
    let repo = two_independent();
    repo.write("mine.txt", "the user's own work\n");
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(
        &repo,
        &agent,
        &["--parallel", "2", "--on-finish", "cleanup"],
    );
    assert_exit(&output, 0);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/main"),
        "{}",
        describe(&output)
    );
    assert_eq!(
        fs::read_to_string(repo.path("story-1.txt")).ok().as_deref(),
        Some("work of story 1\n")
    );
    assert_eq!(
        fs::read_to_string(repo.path("story-2.txt")).ok().as_deref(),
        Some("work of story 2\n")
    );
    assert_eq!(
        fs::read_to_string(repo.path("mine.txt")).ok().as_deref(),
        Some("the user's own work\n")
    );
    assert!(!has_ref(&repo, "refs/heads/ralph/greet"));
    assert_nothing_left(&repo);
}

#[test]
fn issue_23_each_story_at_once_goes_through_its_role_pipeline() {
    let repo = two_independent();
    let coder = script(
        &repo,
        "[story=1]\nwrite story-1.txt one\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n\
         [story=2]\nwrite story-2.txt two\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n",
    );
    let reviewer = script(&repo, "[*]\npromise REVIEW_PASSED\n");
    let reviewer_command = format!(
        "FAKE_AGENT_SCRIPT={} {}",
        shell_quote(&reviewer.to_string_lossy()),
        shell_quote(fake_agent_path())
    );
    let output = start(
        &repo,
        &coder,
        &[
            "--parallel",
            "2",
            "--on-finish",
            "keep",
            "--roles",
            "coder,reviewer",
            "--role-agent-command",
            &format!("reviewer={reviewer_command}"),
        ],
    );
    assert_exit(&output, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"]),
        "{}",
        describe(&output)
    );
    for story in ["1", "2"] {
        let roles: Vec<String> = state(&repo)["stories"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["id"] == story))
            .and_then(|s| s["attempts"].as_array())
            .into_iter()
            .flatten()
            .map(|a| {
                format!(
                    "{} {}",
                    a["role"].as_str().unwrap_or("-"),
                    a["outcome"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            roles,
            ["coder passed", "reviewer complete"],
            "story {story}"
        );
    }
    assert_nothing_left(&repo);
}

#[test]
fn issue_23_a_story_whose_checks_fail_on_the_merged_tree_is_not_done() {
    let repo = two_independent();
    // Passes in each story's worktree alone, fails once both are merged.
    let check = "test $(ls story-*.txt 2>/dev/null | wc -l) -lt 2";
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(
        &repo,
        &agent,
        &[
            "--parallel",
            "2",
            "--check",
            check,
            "--max-retries",
            "1",
            "--on-finish",
            "keep",
        ],
    );
    assert_exit(&output, 3);
    let refused: Vec<_> = events(&repo)
        .into_iter()
        .filter(|e| e["type"] == "merged" && e["merged"] == false)
        .collect();
    assert_eq!(refused.len(), 1, "{}", describe(&output));
    assert_eq!(refused[0]["story_id"], "2");
    let reason = refused[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("a check failed"), "{reason}");
    // The merged state that failed its check is kept; nothing of it lands.
    let kept = refused[0]["preserved"].as_str().expect("kept under a ref");
    assert!(kept.starts_with(&format!("{NS}/merges/2/")), "{kept}");
    assert_eq!(show(&repo, kept, "story-2.txt"), "work of story 2\n");
    assert_eq!(show(&repo, kept, "story-1.txt"), "work of story 1\n");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["1 Greeting"])
    );
    assert!(stdout(&output).contains("story 2 used its retries"));
    assert_nothing_left(&repo);
}
