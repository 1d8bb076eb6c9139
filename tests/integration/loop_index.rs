//! The index of a large repository through a whole run: written split while
//! the loop runs (each checkpoint writes what changed, not every entry),
//! read by git and by the agent's own git commands as the same index, and
//! handed back whole, as git would have written it, however the run ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

/// More files than the loop writes the index split from.
const BULK_FILES: usize = 10_050;

/// [`project`] with [`BULK_FILES`] more files committed.
fn large_project() -> TestRepo {
    with_bulk(project(THREE_STORIES))
}

fn with_bulk(repo: TestRepo) -> TestRepo {
    for n in 0..BULK_FILES {
        repo.write(
            format!("bulk/d{:02}/f{n:05}.txt", n % 100),
            format!("file {n}\n"),
        );
    }
    repo.commit_all("Add many files");
    repo
}

fn shared_indexes(repo: &TestRepo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(git_dir(repo))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("sharedindex."))
        .collect();
    names.sort();
    names
}

fn index_size(repo: &TestRepo) -> u64 {
    std::fs::metadata(git_dir(repo).join("index"))
        .unwrap()
        .len()
}

/// The run's script: story 2's agent waits for `gate` (outside the
/// worktree) once it has written its file; story 3's agent stages its work
/// with git itself, which then writes the index as it found it.
fn gated_script(repo: &TestRepo, gate: &Path) -> PathBuf {
    script(
        repo,
        &format!(
            "{}[story=2]\nwrite story-2.txt work of story 2\\n\nwait-for {}\ntick-story\npromise COMPLETE\n\
             [story=3]\nwrite story-3.txt work of story 3\\n\ngit add story-3.txt\ntick-story\npromise COMPLETE\n",
            story_done("1"),
            gate.display()
        ),
    )
}

/// Mid-run: git reads the split index as the whole one.
fn assert_split_and_read_by_git(repo: &TestRepo) {
    let shared = shared_indexes(repo);
    assert_eq!(
        shared.len(),
        1,
        "one shared index while the loop runs: {shared:?}"
    );
    assert!(
        index_size(repo) < 64 * 1024,
        "the index file holds only what changed: {} bytes",
        index_size(repo)
    );
    let entries = repo.git(&["ls-files", "--stage"]).lines().count();
    assert!(entries > BULK_FILES, "git read {entries} entries");
    // Story 1's checkpoint is in the index: only story 2's work shows.
    assert_eq!(repo.status_porcelain(), "?? story-2.txt\n");
}

/// `git status --porcelain=v2` and `git ls-files --stage` of `repo`, and of
/// a copy of it after `git_does`.
fn ours_and_gits(repo: &TestRepo, git_does: &[&str]) -> ([String; 2], [String; 2]) {
    let copy = repo.dir.path().join("copy");
    let _ = std::fs::remove_dir_all(&copy);
    let status = std::process::Command::new("cp")
        .args(["-a"])
        .arg(repo.path(""))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let look = |dir: &Path| {
        [
            repo.git_at(dir, &["status", "--porcelain=v2"]),
            repo.git_at(dir, &["ls-files", "--stage"]),
        ]
    };
    let ours = look(&repo.path(""));
    std::fs::remove_file(copy.join(".git/index")).unwrap();
    for name in shared_indexes(repo) {
        let _ = std::fs::remove_file(copy.join(".git").join(name));
    }
    repo.git_at(&copy, &["read-tree", "HEAD"]);
    repo.git_at(&copy, git_does);
    (ours, look(&copy))
}

fn assert_handed_back_whole(repo: &TestRepo) {
    assert_eq!(shared_indexes(repo), Vec::<String>::new());
    assert!(!git_dir(repo).join("ralph/shared-indexes").exists());
    assert!(
        index_size(repo) > 100 * BULK_FILES as u64 / 2,
        "the index is whole again: {} bytes",
        index_size(repo)
    );
    repo.assert_fsck_clean();
}

#[test]
fn issue_39_a_kept_run_hands_back_the_index_git_add_would_write() {
    let repo = large_project();
    let gate = repo.dir.path().join("gate");
    let agent = gated_script(&repo, &gate);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.path(""), "2", 1, "story-2.txt");
    assert_split_and_read_by_git(&repo);
    std::fs::write(&gate, "").unwrap();
    let finished = run.wait(Duration::from_secs(120));
    assert!(finished.status.success(), "{}", finished.stderr);
    assert_eq!(subjects(&repo, "main..ralph/greet").len(), 4);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );

    assert_handed_back_whole(&repo);
    let (ours, gits) = ours_and_gits(&repo, &["add", "-A"]);
    assert_eq!(ours, gits);
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_39_a_cleaned_up_run_hands_back_the_index_git_reset_would_write() {
    let repo = large_project();
    let gate = repo.dir.path().join("gate");
    std::fs::write(&gate, "").unwrap();
    let agent = gated_script(&repo, &gate);
    let output = start(&repo, &agent, &["--on-finish", "cleanup"]);
    assert_exit(&output, 0);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));

    assert_handed_back_whole(&repo);
    // All the run's work is in the worktree, none of it staged.
    let (ours, gits) = ours_and_gits(&repo, &["reset", "-q"]);
    assert_eq!(ours, gits);
    assert!(repo.status_porcelain().contains("?? story-3.txt"));
}

#[test]
fn issue_39_a_run_killed_mid_run_leaves_an_index_git_reads_and_abort_settles_it() {
    let repo = large_project();
    let before = work_state(&repo);
    let gate = repo.dir.path().join("never");
    let agent = gated_script(&repo, &gate);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.path(""), "2", 1, "story-2.txt");
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(Duration::from_secs(30));
    kill_agents(&repo.record_dir());

    // Split as the killed loop left it: git reads it, whole.
    assert_split_and_read_by_git(&repo);
    repo.assert_fsck_clean();

    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    assert_handed_back_whole(&repo);
    assert_eq!(work_state(&repo), before);
}

#[test]
fn issue_39_core_split_index_false_is_honoured() {
    let repo = large_project();
    repo.git(&["config", "core.splitIndex", "false"]);
    let gate = repo.dir.path().join("gate");
    let agent = gated_script(&repo, &gate);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.path(""), "2", 1, "story-2.txt");
    assert_eq!(shared_indexes(&repo), Vec::<String>::new());
    std::fs::write(&gate, "").unwrap();
    let finished = run.wait(Duration::from_secs(120));
    assert!(finished.status.success(), "{}", finished.stderr);
    assert_handed_back_whole(&repo);
}

/// A loop killed mid-run, its index left split, then `finish` with
/// `choice`: the index handed back is whole and is the one `git_does`
/// writes on a copy of the same worktree. Story 2's agent is killed before it writes anything, so that `finish`
/// has no attempt's work to set aside and writes no index of its own.
fn killed_then_finished(choice: &str, git_does: &[&str]) -> TestRepo {
    let repo = large_project();
    let gate = repo.dir.path().join("never");
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\nwait-for {}\n{}",
            story_done("1"),
            gate.display(),
            finish_story("2")
        ),
    );
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let started = repo.record_dir().join("pid-2-1");
    wait_until(
        "story 2's agent is at work",
        Duration::from_secs(60),
        || started.exists(),
    );
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(Duration::from_secs(30));
    kill_agents(&repo.record_dir());
    assert_eq!(
        shared_indexes(&repo).len(),
        1,
        "the killed loop left it split"
    );

    let output = ralph_cmd(&repo, &["finish", choice]);
    assert_exit(&output, 0);
    assert_handed_back_whole(&repo);
    let (ours, gits) = ours_and_gits(&repo, git_does);
    assert_eq!(ours, gits);
    repo
}

#[test]
fn issue_39_finish_keep_after_a_kill_hands_back_the_index_git_add_would_write() {
    let repo = killed_then_finished("--keep", &["add", "-A"]);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
}

#[test]
fn issue_39_finish_cleanup_after_a_kill_hands_back_the_index_git_reset_would_write() {
    let repo = killed_then_finished("--cleanup", &["reset", "-q"]);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
}

/// Every shared index anywhere in the git directory, linked worktrees'
/// included.
fn shared_indexes_anywhere(repo: &TestRepo) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if entry
                .file_name()
                .to_string_lossy()
                .starts_with("sharedindex.")
            {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&git_dir(repo), &mut found);
    found
}

#[test]
fn issue_39_a_run_in_its_own_worktree_writes_that_index_split_and_hands_it_back_whole() {
    let repo = large_project();
    let gate = repo.dir.path().join("gate");
    let agent = gated_script(&repo, &gate);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep", "--worktree"]);
    let started = repo.record_dir().join("pid-2-1");
    wait_until(
        "story 2's agent is at work",
        Duration::from_secs(60),
        || started.exists(),
    );
    let mid_run = shared_indexes_anywhere(&repo);
    assert_eq!(mid_run.len(), 1, "{mid_run:?}");
    assert!(
        mid_run[0].starts_with(git_dir(&repo).join("worktrees")),
        "the run's worktree has its own index: {mid_run:?}"
    );
    std::fs::write(&gate, "").unwrap();
    let finished = run.wait(Duration::from_secs(120));
    assert!(finished.status.success(), "{}", finished.stderr);
    assert_eq!(shared_indexes_anywhere(&repo), Vec::<PathBuf>::new());
    assert_eq!(subjects(&repo, "main..ralph/greet").len(), 4);
    // The user's worktree was never the run's: its index is git's own.
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn issue_39_stories_run_at_once_leave_no_shared_index_and_the_users_index_whole() {
    let repo = with_bulk(independent_project());
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep", "--parallel", "2"]);
    assert_exit(&output, 0);
    assert_eq!(subjects(&repo, "main..ralph/greet").len(), 4);
    assert_eq!(shared_indexes_anywhere(&repo), Vec::<PathBuf>::new());
    assert_handed_back_whole(&repo);
    let (ours, gits) = ours_and_gits(&repo, &["add", "-A"]);
    assert_eq!(ours, gits);
}
