//! A sparse checkout, handed back sparse: paths outside the sparse
//! patterns stay skip-worktree and off the disk through the initial-state
//! commit, the loop's reverts and checkpoints, `finish --keep`, `finish
//! --cleanup` and `abort`, and `git status` never shows a deletion the user
//! did not make. An agent that writes outside the patterns has its work
//! kept, and the index handed back is the one git itself makes of a file
//! present at a skip-worktree path: an ordinary tracked entry.

use crate::harness::story_run::*;
use crate::harness::*;

/// `in/a.txt` inside the sparse patterns, `out/b.txt` outside (cone mode:
/// `git sparse-checkout set --cone in openspec`; else the same as
/// non-cone patterns), and an in-cone edit of the user's, uncommitted.
fn sparse_project(cone: bool) -> TestRepo {
    let repo = project(TWO_STORIES);
    repo.write("in/a.txt", "inside\n");
    repo.write("out/b.txt", "outside\n");
    repo.write("out/deep/c.txt", "deep outside\n");
    repo.commit_all("Files inside and outside the sparse patterns");
    if cone {
        repo.git(&["sparse-checkout", "set", "--cone", "in", "openspec"]);
    } else {
        repo.git(&["sparse-checkout", "set", "--no-cone", "/*", "!/out/"]);
    }
    assert!(!repo.path("out").exists(), "out/ is not on disk");
    repo.write("in/a.txt", "inside, the user's edit\n");
    repo
}

/// Every index entry with its flag letter, as `git ls-files -t` shows them.
fn flags(repo: &TestRepo) -> String {
    repo.git(&["ls-files", "-t"])
}

fn assert_out_is_sparse(repo: &TestRepo, what: &str) {
    let flags = flags(repo);
    for path in ["out/b.txt", "out/deep/c.txt"] {
        assert!(
            flags.contains(&format!("S {path}\n")),
            "{path} is skip-worktree {what}:\n{flags}"
        );
    }
    assert!(!repo.path("out").exists(), "out/ is not on disk {what}");
}

fn cleanup_hands_the_sparse_checkout_back(cone: bool) {
    let repo = sparse_project(cone);
    let status = repo.status_porcelain();
    let ls_v = repo.git(&["ls-files", "-v"]);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "cleanup"]);
    assert_exit(&output, 0);
    assert_eq!(
        repo.status_porcelain(),
        format!("{status} M {TASKS_PATH}\n?? story-1.txt\n?? story-2.txt\n"),
        "what it was plus the run's work, and no deletion"
    );
    assert_out_is_sparse(&repo, "after cleanup");
    let tasks_line = |line: &&str| line.ends_with(TASKS_PATH);
    let untouched = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|line| !tasks_line(line))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        untouched(&repo.git(&["ls-files", "-v"])),
        untouched(&ls_v),
        "the flags of untouched paths are as before"
    );
    assert_eq!(repo.read("in/a.txt"), "inside, the user's edit\n");
    repo.assert_fsck_clean();
}

#[test]
fn finish_cleanup_keeps_cone_sparse_paths_skip_worktree() {
    cleanup_hands_the_sparse_checkout_back(true);
}

#[test]
fn finish_cleanup_keeps_non_cone_sparse_paths_skip_worktree() {
    cleanup_hands_the_sparse_checkout_back(false);
}

#[test]
fn the_run_and_finish_keep_never_write_sparse_paths_to_disk() {
    let repo = sparse_project(true);
    // The first attempt fails, and is reverted.
    let agent = second_try(&repo, "write in/half.txt half\npromise FAILED: not yet\n");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(repo.status_porcelain(), "");
    assert_out_is_sparse(&repo, "after the run and keep");
    assert_eq!(
        show(&repo, "HEAD", "out/b.txt"),
        "outside\n",
        "the checkpoints keep what is outside the patterns"
    );
    repo.assert_fsck_clean();
}

#[test]
fn abort_hands_a_cone_sparse_checkout_back_exactly() {
    let repo = sparse_project(true);
    let before = work_state(&repo);
    let ls_v = repo.git(&["ls-files", "-v"]);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    assert_eq!(work_state(&repo), before);
    assert_eq!(repo.git(&["ls-files", "-v"]), ls_v, "every flag as before");
    assert_out_is_sparse(&repo, "after abort");
    repo.assert_fsck_clean();
}

#[test]
fn an_agent_writing_outside_the_cone_has_its_work_kept_and_reverted() {
    let repo = sparse_project(true);
    let agent = second_try(
        &repo,
        "write out/b.txt the agent's attempt\nwrite out/new.txt new outside\n\
         promise FAILED: not yet\n",
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/1/1"), "out/b.txt"),
        "the agent's attempt",
        "the failed attempt's work outside the cone is kept"
    );
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/1/1"), "out/new.txt"),
        "new outside",
        "so is a new file there"
    );
    assert_eq!(repo.status_porcelain(), "");
    assert_out_is_sparse(&repo, "after the failed attempt was reverted");
    repo.assert_fsck_clean();
}

#[test]
fn work_outside_the_cone_is_checkpointed_and_handed_back_as_git_sees_it() {
    let repo = sparse_project(true);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite out/b.txt the agent's line\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "cleanup"]);
    assert_exit(&output, 0);
    assert_eq!(
        show(&repo, &format!("{NS}/finished"), "out/b.txt"),
        "the agent's line",
        "the checkpoint holds the work outside the cone"
    );
    assert_eq!(repo.read("out/b.txt"), "the agent's line");
    // As git itself treats a file present at a skip-worktree path: an
    // ordinary tracked entry, modified.
    let flags = flags(&repo);
    assert!(flags.contains("H out/b.txt\n"), "{flags}");
    assert!(flags.contains("S out/deep/c.txt\n"), "{flags}");
    assert!(!repo.path("out/deep").exists());
    assert_eq!(
        repo.status_porcelain(),
        format!(" M in/a.txt\n M {TASKS_PATH}\n M out/b.txt\n?? story-1.txt\n?? story-2.txt\n")
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_run_in_its_own_worktree_hands_a_sparse_checkout_back_as_it_was() {
    for ending in ["abort", "cleanup"] {
        let repo = sparse_project(true);
        let ls_v = repo.git(&["ls-files", "-v"]);
        let status = repo.status_porcelain();
        let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
        let output = start(&repo, &agent, &["--worktree", "--on-finish", "keep"]);
        assert_exit(&output, 0);
        let output = match ending {
            "abort" => ralph_cmd(&repo, &["abort", CHANGE]),
            _ => ralph_cmd(&repo, &["finish", CHANGE, "--cleanup"]),
        };
        assert_exit(&output, 0);
        assert_eq!(
            repo.git(&["ls-files", "-v"]),
            ls_v,
            "{ending}: every flag as before"
        );
        assert_out_is_sparse(&repo, ending);
        let expected = match ending {
            "abort" => status.clone(),
            _ => format!("{status} M {TASKS_PATH}\n?? story-1.txt\n?? story-2.txt\n"),
        };
        assert_eq!(repo.status_porcelain(), expected, "{ending}");
        repo.assert_fsck_clean();
    }
}
