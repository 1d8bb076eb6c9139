//! Independent stories at once (`start --parallel N`, issue 23), through
//! the real binary with git as the oracle: each story works in a worktree
//! of its own; its work reaches `ralph/<change>` only through a merge made
//! by git-ralph, in story order, with its checks passing on the merged
//! tree; a conflict is never a success; abort, finish and a resume after
//! kill -9 leave no worktree, branch or story behind.

use std::fs;
use std::path::PathBuf;

use crate::harness::story_run::*;
use crate::harness::*;

/// Three stories that say they are independent.
fn independent_project() -> TestRepo {
    let repo = project(THREE_STORIES);
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n",
    );
    repo.commit_all("The stories of greet are independent");
    repo
}

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
fn assert_nothing_left(repo: &TestRepo) {
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
    let _ = run_worktree(&repo);
}
