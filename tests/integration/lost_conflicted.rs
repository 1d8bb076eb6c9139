//! `abort` while the user's index holds conflicts: on `ralph/<change>`
//! after the run was kept, a `git stash pop` that conflicted. The user
//! asked to abort, so the run is aborted: the pre-start state comes back,
//! and the conflicted state is set aside under a ref the output names,
//! the worktree with its markers and every stage of the conflicted index.

use crate::harness::story_run::*;
use crate::harness::*;

const STASHED: &str = "the user's stashed notes\n";
const COMMITTED: &str = "the user's committed notes\n";

/// A kept run; on its branch the user commits over a file a stash of
/// theirs also changes, then pops the stash: a conflict.
fn conflicted_after_keep() -> (TestRepo, WorkState) {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "v1\n");
    repo.commit_all("Notes");
    repo.write("mine.txt", "uncommitted before the start\n");
    let before = work_state(&repo);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    repo.write("notes.txt", STASHED);
    repo.git(&["stash", "push", "-q"]);
    repo.write("notes.txt", COMMITTED);
    repo.git(&["commit", "-q", "-a", "-m", "The user's notes"]);
    repo.write("other.txt", "staged beside the conflict\n");
    repo.git(&["add", "other.txt"]);
    assert!(!repo.git_ok(&["stash", "pop", "-q"]), "the pop conflicts");
    assert!(!repo.git(&["ls-files", "--unmerged"]).is_empty());
    (repo, before)
}

/// The `interrupted/<ms>` ref named in `said`.
fn named_ref(said: &str) -> String {
    let at = said
        .find(&format!("{NS}/interrupted/"))
        .unwrap_or_else(|| panic!("abort names no interrupted ref:\n{said}"));
    said[at..]
        .split(|c: char| c.is_whitespace() || c == '\'' || c == ')' || c == ',' || c == ';')
        .next()
        .expect("a ref name")
        .trim_end_matches('.')
        .to_string()
}

#[test]
fn abort_sets_aside_a_conflicted_index_and_gives_back_the_state_before_the_start() {
    let (repo, before) = conflicted_after_keep();
    let markers = repo.read("notes.txt");
    assert!(markers.contains("<<<<<<<"), "{markers}");
    let stash_list = repo.git(&["stash", "list"]);

    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(
        work_state(&repo),
        before,
        "the state before the start:\n{said}"
    );
    assert!(repo.git(&["ls-files", "--unmerged"]).is_empty());
    assert_eq!(repo.git(&["stash", "list"]), stash_list, "the stash stays");

    let kept = named_ref(&said);
    assert_eq!(
        show(&repo, &kept, "notes.txt"),
        markers,
        "the worktree, markers and all"
    );
    assert_eq!(
        show(&repo, &kept, "other.txt"),
        "staged beside the conflict\n"
    );
    // Each stage of the conflicted index, where the output says it is.
    for (stage, content) in [("ours", COMMITTED), ("theirs", STASHED), ("base", "v1\n")] {
        let rev = said
            .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')')
            .skip_while(|word| !word.starts_with(stage))
            .find(|word| word.starts_with(&kept))
            .unwrap_or_else(|| panic!("the output says where {stage} is:\n{said}"));
        assert_eq!(show(&repo, rev, "notes.txt"), content, "{stage} at {rev}");
        assert_eq!(
            show(&repo, rev, "other.txt"),
            "staged beside the conflict\n"
        );
    }
    repo.assert_fsck_clean();
}

#[test]
fn abort_of_a_conflicted_index_records_the_run_aborted() {
    let (repo, _) = conflicted_after_keep();
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    assert_eq!(state(&repo)["status"].as_str(), Some("aborted"));
    assert!(has_ref(&repo, &format!("{NS}/aborted")));
    assert!(!has_ref(&repo, &format!("refs/heads/{BRANCH}")));
}
