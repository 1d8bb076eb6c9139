//! A run with the worktree watched, through the real binary: what it
//! commits, preserves and reverts is exactly what the same run commits,
//! preserves and reverts with `--full-scan`, which looks at every file as
//! git does.

use crate::harness::story_run::*;
use crate::harness::*;

/// Story 1 fails once (its work preserved and reverted), then passes;
/// stories 2 and 3 write, delete, empty and fill directories, and change a
/// nested `.gitignore`.
const SCRIPT: &str = "\
[story=1 attempt=1]
write src/draft.txt first try
mkdir empty/dir
rm README.md
write notes/x.log ignored
promise FAILED: not yet
[story=1 attempt=2]
write story-1.txt work of story 1
write nested/.gitignore y\\n
write nested/y kept out
tick-story
promise COMPLETE
[story=2]
write nested/.gitignore \\n
symlink story-1.txt link
chmod +x story-1.txt
write story-2.txt work of story 2
tick-story
promise COMPLETE
[story=3]
rm nested/y
rm nested/.gitignore
write story-3.txt work of story 3
tick-story
promise COMPLETE
";

/// What a run left, in terms that do not depend on when it ran.
fn outcome(repo: &TestRepo) -> Vec<String> {
    let mut trees: Vec<String> = [
        "ralph/greet",
        "ralph/greet~1",
        "ralph/greet~2",
        "ralph/greet~3",
    ]
    .iter()
    .map(|rev| {
        repo.git(&["rev-parse", &format!("{rev}^{{tree}}")])
            .trim()
            .to_owned()
    })
    .collect();
    trees.push(
        repo.git(&["rev-parse", &format!("{NS}/attempts/1/1^{{tree}}")])
            .trim()
            .to_owned(),
    );
    trees.push(repo.status_porcelain());
    trees
}

#[test]
fn issue_24_a_watched_run_leaves_what_a_full_scan_run_leaves() {
    let watched = project(THREE_STORIES);
    let agent = script(&watched, SCRIPT);
    let output = start(&watched, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(
        watched.path(".git/ralph/cookies").is_dir(),
        "the run did not watch the worktree"
    );

    let full = project(THREE_STORIES);
    let agent = script(&full, SCRIPT);
    let output = start(&full, &agent, &["--on-finish", "keep", "--full-scan"]);
    assert_exit(&output, 0);
    assert!(
        !full.path(".git/ralph/cookies").exists(),
        "--full-scan must not watch the worktree"
    );

    let listing = |repo: &TestRepo, rev: &str| repo.git(&["ls-tree", "-r", rev]);
    assert_eq!(
        outcome(&watched),
        outcome(&full),
        "watched:\n{}\nfull:\n{}",
        listing(&watched, "ralph/greet~2"),
        listing(&full, "ralph/greet~2")
    );
    // Story 1 ignored nested/y; story 2 emptied the rule without touching
    // the file, which its checkpoint must then hold.
    let y = "nested/y".to_owned();
    assert!(!tree_files(&watched, "ralph/greet~2").contains(&y));
    assert!(tree_files(&watched, "ralph/greet~1").contains(&y));
    assert!(!watched.path("src/draft.txt").exists());
    assert!(!watched.path("empty").exists(), "the revert left empty/");
    assert_eq!(watched.status_porcelain(), "");
    watched.assert_fsck_clean();
}

#[test]
fn issue_24_full_scan_can_be_set_in_git_config() {
    let repo = project(THREE_STORIES);
    repo.git(&["config", "ralph.fullScan", "true"]);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(!repo.path(".git/ralph/cookies").exists());
}
