//! Two stories of a `--parallel 2` run whose agents both clear the stash:
//! when story 2's attempt begins after story 1's agent has cleared it, and
//! clears it again once story 1 has put it back, the snapshot story 2 took
//! holds no stash. The user's stash entries are all given back, byte for
//! byte, whatever the agents do and however their attempts overlap.
//!
//! Which of the two attempts begins first is the loop's to decide; each
//! round meets the overlap above now and then, so several rounds are
//! played, and every one must give the stash back.

use std::path::Path;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(90);
const ROUNDS: usize = 8;

/// The stash list with what each entry holds.
fn stashes(repo: &TestRepo) -> String {
    repo.git(&["stash", "list", "--format=%gd %H %s"])
}

fn quoted(path: &Path) -> String {
    path.display().to_string()
}

/// One run whose agents of stories 1 and 2 clear the stash, story 2's
/// after story 1's attempt has ended.
fn round() {
    let repo = independent_project();
    repo.write("first.txt", "stashed first\n");
    repo.git(&["add", "first.txt"]);
    repo.git(&["stash", "push", "-q", "-m", "the user's first"]);
    repo.write("second.txt", "stashed second\n");
    repo.git(&["add", "second.txt"]);
    repo.git(&["stash", "push", "-q", "-m", "the user's second"]);
    let before = stashes(&repo);
    assert_eq!(before.lines().count(), 2, "{before}");

    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let second_at_work = quoted(&marks.join("second-at-work"));
    let go_on = quoted(&marks.join("go-on"));
    let agent = script(
        &repo,
        &format!(
            "[story=1]\ngit stash clear\nwait-for {second_at_work}\n{one}\
             [story=2]\nwrite {second_at_work} x\nwait-for {go_on}\n\
             git stash clear\n{two}\
             {three}",
            one = finish_story("1"),
            two = finish_story("2"),
            three = story_done("3"),
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    // Story 1's attempt ends, and puts back what its agent took.
    wait_until("story 1 is done in its worktree", PATIENCE, || {
        std::fs::read_to_string(repo.path(".git/ralph/greet/workers/1/state.json"))
            .is_ok_and(|state| state.contains("\"complete\""))
    });
    std::fs::write(marks.join("go-on"), "").unwrap();
    let ended = run.wait(PATIENCE);
    let said = format!("stdout:\n{}\nstderr:\n{}", ended.stdout, ended.stderr);
    assert_eq!(ended.status.code(), Some(0), "{said}");

    assert_eq!(
        stashes(&repo),
        before,
        "the user's stash is not given back:\n{said}"
    );
    assert_eq!(show(&repo, "stash@{0}", "second.txt"), "stashed second\n");
    assert_eq!(show(&repo, "stash@{1}", "first.txt"), "stashed first\n");
    repo.assert_fsck_clean();
}

#[test]
fn a_stash_cleared_by_overlapping_parallel_agents_is_given_back_whole() {
    for _ in 0..ROUNDS {
        round();
    }
}
