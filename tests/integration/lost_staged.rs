//! A run in place stopped (a SIGTERM, or `--on-finish keep` before its
//! stories were done); the user stages a version of a file and edits it
//! again. The resume commits what they did, and the version they staged
//! stays reachable from the run's branch, beneath the worktree's.

use crate::harness::story_run::*;
use crate::harness::*;
use nix::sys::signal::Signal;

const STAGED: &str = "the user's v2, staged\n";
const ON_TOP: &str = "the user's v3, unstaged on top of v2\n";

/// A project with a tracked `notes.txt`.
fn notes_project() -> TestRepo {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "v1\n");
    repo.commit_all("Notes");
    repo
}

/// The user stages a version of `notes.txt`, then edits it again.
fn stage_then_edit(repo: &TestRepo) {
    repo.write("notes.txt", STAGED);
    repo.git(&["add", "notes.txt"]);
    repo.write("notes.txt", ON_TOP);
}

/// The contents `notes.txt` has in the commits of `rev`'s history.
fn versions_on(repo: &TestRepo, rev: &str) -> Vec<String> {
    repo.git(&["rev-list", rev])
        .lines()
        .filter(|commit| repo.git_ok(&["cat-file", "-e", &format!("{commit}:notes.txt")]))
        .map(|commit| show(repo, commit, "notes.txt"))
        .collect()
}

/// After the resume: both versions are on the branch, the worktree's
/// last; the record's checkpoint is the branch's tip, the worktree clean.
fn both_versions_kept(repo: &TestRepo, said: &str) {
    let versions = versions_on(repo, &format!("refs/heads/{BRANCH}"));
    assert!(
        versions.iter().any(|v| v == STAGED),
        "the staged version is on {BRANCH}: {versions:?}\n{said}"
    );
    assert_eq!(
        show(repo, &format!("refs/heads/{BRANCH}"), "notes.txt"),
        ON_TOP
    );
    assert_eq!(repo.read("notes.txt"), ON_TOP);
    assert_eq!(repo.git(&["status", "--porcelain"]), "", "{said}");
    assert_eq!(
        state(repo)["checkpoint"].as_str(),
        Some(repo.rev_parse(&format!("refs/heads/{BRANCH}")).as_str()),
        "the record's checkpoint is the branch's tip"
    );
    let staged_commits = subjects(repo, &format!("main..refs/heads/{BRANCH}"));
    assert!(
        staged_commits.iter().any(|s| s.contains("staged")),
        "the commit of the staged version says so: {staged_commits:?}"
    );
    repo.assert_fsck_clean();
}

/// A run kept once story 2's agent failed, story 1 done.
fn kept_early(repo: &TestRepo) {
    let agent = script(repo, &format!("{}[story=2]\nexit 1\n", story_done("1")));
    let output = start(repo, &agent, &["--on-finish", "keep", "--max-retries", "0"]);
    assert_exit(&output, 8);
}

/// `start` again, its agent finishing story 2.
fn resume_to_the_end(repo: &TestRepo) -> std::process::Output {
    let agent = script(repo, &story_done("2"));
    let output = start(repo, &agent, &["--on-finish", "keep", "--max-retries", "2"]);
    assert_exit(&output, 0);
    output
}

#[test]
fn a_resume_after_a_sigterm_keeps_the_version_the_user_staged() {
    let repo = notes_project();
    let _reaper = stopped_at_story_2(&repo, Signal::SIGTERM);

    stage_then_edit(&repo);
    let output = resume_to_the_end(&repo);
    both_versions_kept(&repo, &stderr(&output));
}

#[test]
fn a_resume_of_a_run_kept_early_keeps_the_version_the_user_staged() {
    let repo = notes_project();
    kept_early(&repo);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );

    stage_then_edit(&repo);
    let output = resume_to_the_end(&repo);
    both_versions_kept(&repo, &stderr(&output));
}

#[test]
fn a_resume_with_only_staged_changes_commits_them_once() {
    let repo = notes_project();
    kept_early(&repo);
    let before = repo.rev_parse("HEAD");

    repo.write("notes.txt", STAGED);
    repo.git(&["add", "notes.txt"]);
    resume_to_the_end(&repo);
    let made = subjects(&repo, &format!("{before}..refs/heads/{BRANCH}"));
    assert_eq!(
        made.iter().filter(|s| s.contains("user changes")).count(),
        1,
        "one commit of the user's changes: {made:?}"
    );
    assert_eq!(
        show(&repo, &format!("refs/heads/{BRANCH}"), "notes.txt"),
        STAGED
    );
}

/// `finish` of a stopped run sets aside what is left uncommitted: the
/// version the user staged is kept too, as the parent of the worktree's.
#[test]
fn finish_after_a_sigterm_sets_aside_the_version_the_user_staged() {
    for how in ["--keep", "--cleanup"] {
        let repo = notes_project();
        let _reaper = stopped_at_story_2(&repo, Signal::SIGTERM);

        stage_then_edit(&repo);
        let output = ralph_cmd(&repo, &["finish", CHANGE, how]);
        assert_exit(&output, 0);
        let said = format!("{}{}", stdout(&output), stderr(&output));
        let kept = refs_under(&repo, &format!("{NS}/interrupted"));
        assert_eq!(kept.len(), 1, "{how}: one ref set aside: {kept:?}\n{said}");
        let refname = &kept[0].0;
        assert!(said.contains(refname.as_str()), "{how}: named:\n{said}");
        assert_eq!(show(&repo, refname, "notes.txt"), ON_TOP, "{how}");
        assert_eq!(
            show(&repo, &format!("{refname}^"), "notes.txt"),
            STAGED,
            "{how}: the staged version is the parent"
        );
        repo.assert_fsck_clean();
    }
}

/// A loop killed during an attempt; the user stages a version of a file
/// and edits it again; the resume sets the worktree aside under the
/// attempt's ref, and the staged version with it, as that ref's parent.
#[test]
fn a_resume_after_a_kill_keeps_the_version_the_user_staged() {
    let repo = notes_project();
    let _reaper = stopped_at_story_2(&repo, Signal::SIGKILL);

    stage_then_edit(&repo);
    let agent = script(&repo, &story_done("2"));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    let kept = format!("{NS}/attempts/2/1");
    assert!(has_ref(&repo, &kept), "{said}");
    assert_eq!(show(&repo, &kept, "notes.txt"), ON_TOP, "{said}");
    assert_eq!(
        show(&repo, &format!("{kept}^"), "notes.txt"),
        STAGED,
        "the staged version is the parent"
    );
    repo.assert_fsck_clean();
}
