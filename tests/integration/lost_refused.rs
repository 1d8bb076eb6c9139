//! A command refused for what the user has in hand (a conflicted index
//! after a `git stash pop`) changes nothing, down to the object store:
//! it refuses before it writes a blob.

use crate::harness::story_run::*;
use crate::harness::*;

/// The loose objects and packs under `.git/objects`.
fn objects(repo: &TestRepo) -> Vec<String> {
    let mut found = Vec::new();
    let root = git_dir(repo).join("objects");
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push(path.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn finish_cleanup_refused_over_a_conflicted_index_writes_no_object() {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "v1\n");
    repo.write("a-first.txt", "v1\n");
    repo.commit_all("Notes");
    let agent = script(
        &repo,
        "[*]\nwrite half.txt half done\\n\nfinal FAILED: not yet\n",
    );
    let kept = start(
        &repo,
        &agent,
        &["--max-retries", "0", "--on-finish", "keep"],
    );
    assert_exit(&kept, 3);
    // On ralph/greet, the user stashes an edit, commits another edit of the
    // same lines and pops the stash: the index holds a conflict.
    repo.write("notes.txt", "stashed version\n");
    repo.write("fresh.txt", "a new file of the user's, never hashed\n");
    repo.git(&["stash", "push", "-q"]);
    repo.write("notes.txt", "committed version\n");
    repo.git(&["commit", "-q", "-am", "The user's own edit"]);
    assert!(!repo.git_ok(&["stash", "pop", "-q"]), "the pop conflicts");
    repo.write("fresh.txt", "a new file of the user's, never hashed\n");
    repo.write("a-first.txt", "an edit of the user's, never hashed\n");
    let before = (objects(&repo), work_state(&repo));

    let output = ralph_cmd(&repo, &["finish", CHANGE, "--cleanup"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("conflicted"),
        "{}",
        describe(&output)
    );
    assert_eq!(
        (objects(&repo), work_state(&repo)),
        before,
        "a refused finish wrote nothing: {}",
        describe(&output)
    );
    repo.assert_fsck_clean();
}
