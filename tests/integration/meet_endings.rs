//! Where features meet (issue 33), at the end of a run: a cleanup refused
//! for the user's own edits says what works, which then does. Through the
//! real binary, git the oracle.

use std::fs;
use std::path::PathBuf;

use crate::harness::story_run::*;
use crate::harness::*;

/// Where a run of `greet` works by default, beside the user's worktree.
fn run_worktree(repo: &TestRepo) -> PathBuf {
    let parent = fs::canonicalize(repo.root.parent().expect("a parent")).expect("it exists");
    parent.join("repo.ralph").join(CHANGE)
}

/// `git worktree list --porcelain`'s worktree lines.
fn worktrees(repo: &TestRepo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter(|line| line.starts_with("worktree "))
        .map(str::to_string)
        .collect()
}

/// Only the user's worktree is left, and git is content with it all.
fn assert_only_the_users_worktree(repo: &TestRepo) {
    assert_eq!(worktrees(repo).len(), 1, "{:?}", worktrees(repo));
    let prune = repo.git_output(&["worktree", "prune", "-n", "-v"]);
    assert_eq!(format!("{}{}", stdout(&prune), stderr(&prune)), "");
    repo.assert_fsck_clean();
}

/// A run of TWO_STORIES in its own worktree whose story 2 always fails:
/// stopped at max_retries, its worktree kept.
fn stopped_worktree_run(repo: &TestRepo) -> PathBuf {
    let agent = script(
        repo,
        &format!(
            "[story=1]\nappend README.md story 1 was here\\n\n{}[story=2]\npromise FAILED: cannot do it\n",
            finish_story("1")
        ),
    );
    let output = start(repo, &agent, &["--worktree", "--max-retries", "0"]);
    assert_exit(&output, 3);
    let path = run_worktree(repo);
    assert!(path.join(".git").is_file(), "{}", describe(&output));
    path
}

// Case 10: a cleanup refused for the user's own edits says what works.

/// A README of several lines, so that an edit at its top and one at its
/// end merge.
const README: &str = "# Test project\n\nWhat it is.\n\nHow to use it.\n";

/// The `hint:` lines of a refusal.
fn hint(output: &std::process::Output) -> String {
    stderr(output)
        .lines()
        .filter(|line| line.starts_with("hint:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn issue_33_a_cleanup_refused_for_the_users_edits_says_what_works_and_it_does() {
    let repo = project(TWO_STORIES);
    repo.write("README.md", README);
    repo.commit_all("A longer README");
    let path = stopped_worktree_run(&repo);
    // The user edits the top of the README the run added a line to.
    let mine = README.replace("# Test project", "# My project");
    repo.write("README.md", &mine);
    let untouched = Untouched::take(&repo);

    let refused = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&refused, 1);
    assert!(
        stderr(&refused).contains("README.md"),
        "{}",
        describe(&refused)
    );
    let said = hint(&refused);
    assert!(
        said.contains("commit your changes to README.md, then clean up again"),
        "{said}"
    );
    untouched.assert_still(&repo, "a refused cleanup");

    // As the hint says: commit, then clean up again.
    repo.git(&["commit", "-q", "-am", "My project"]);
    let mine_committed = repo.rev_parse("HEAD");
    let output = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_success(&output);
    assert_eq!(
        repo.rev_parse("HEAD"),
        mine_committed,
        "nothing is committed for the user"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.read("README.md"), format!("{mine}story 1 was here\n"));
    // The run's one line is all the diff holds: the user's is committed.
    let diff = repo.git(&["diff", "-U0", "--", "README.md"]);
    let changed: Vec<&str> = diff
        .lines()
        .filter(|line| {
            line.starts_with(['+', '-']) && !line.starts_with("+++") && !line.starts_with("---")
        })
        .collect();
    assert_eq!(changed, ["+story 1 was here"], "{diff}");
    let status = repo.status_porcelain();
    assert!(status.contains(" M README.md"), "{status}");
    assert!(status.contains("?? story-1.txt"), "{status}");
    assert!(!path.exists());
    assert!(!has_ref(&repo, BRANCH));
    assert_only_the_users_worktree(&repo);
}

#[test]
fn issue_33_a_cleanup_that_clashes_with_the_users_commits_says_to_keep_and_merge() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    // The user's commit changes the very line the run's work is next to.
    repo.write("README.md", "# The user's own README\n");
    repo.git(&["commit", "-q", "-am", "My README"]);
    let untouched = Untouched::take(&repo);
    let refused = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&refused, 1);
    let err = stderr(&refused);
    assert!(err.contains("README.md"), "{err}");
    let said = hint(&refused);
    assert!(
        said.contains(&format!("git ralph finish {CHANGE} --keep")),
        "{said}"
    );
    assert!(!said.contains("commit your"), "{said}");
    assert!(!said.contains("stash"), "{said}");
    untouched.assert_still(&repo, "a refused cleanup");

    // As the hint says: keep, and merge the branch.
    assert_success(&ralph_cmd(&repo, &["finish", "--keep"]));
    assert!(!path.exists());
    assert!(
        said.contains(&format!("git merge --squash {BRANCH}")),
        "{said}"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_only_the_users_worktree(&repo);
    // The merge is git's own: the clash is named there, to be resolved.
    let merge = repo.git_output(&["merge", "--squash", BRANCH]);
    assert!(
        stdout(&merge).contains("CONFLICT (content): Merge conflict in README.md"),
        "{}",
        describe(&merge)
    );
    assert!(repo.read("README.md").contains("story 1 was here"));
}
