//! A run as release 0.1.0 left it (`tests/fixtures/state-v1/`, see its
//! README): the current binary reads it, resumes it to completion, and
//! finishes or aborts it, on the stopped run and on the run kept with
//! `finish --keep`. State files are a public format; these tests fail the
//! day a change stops reading what an earlier release wrote.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::harness::story_run::{CHANGE, NS, finish_story, start};
use crate::harness::*;

const BRANCH_REF: &str = "refs/heads/ralph/greet";
/// The tip the release left on `ralph/greet`: story 1's checkpoint.
const CHECKPOINT: &str = "df92900cc5f1fd367582f424ad4c0716fe2455a5";
/// `main` when the run began.
const MAIN: &str = "ce8bad1a040f16f80adfcd240596dcd59f9106e3";
/// The failed attempt of story 2, kept by the release.
const ATTEMPT_2_1: &str = "acc267f2c851a58222cbe51121301e7116931313";

fn fixture(rel: &str) -> PathBuf {
    source_path("tests/fixtures/state-v1").join(rel)
}

/// Which run directory of the fixture to take up.
#[derive(Clone, Copy)]
enum Left {
    /// Stopped for max_retries, on `ralph/greet`.
    Stopped,
    /// The same run after `finish --keep`.
    Kept,
}

/// The fixture's repository and run, in a fresh locked-down repository.
fn restore(left: Left) -> TestRepo {
    let repo = TestRepo::empty();
    let stream = fs::File::open(fixture("git.fast-export")).expect("the fast-export stream");
    let imported = run(repo
        .command_here("git")
        .args(["fast-import", "--quiet"])
        .stdin(stream));
    assert_success(&imported);
    let head = fs::read_to_string(fixture("HEAD")).expect("HEAD");
    repo.git(&["symbolic-ref", "HEAD", head.trim()]);
    repo.git(&["reset", "-q", "--hard"]);
    let from = fixture(match left {
        Left::Stopped => "stopped",
        Left::Kept => "kept",
    });
    copy_run_dir(&from, &repo.run_dir(CHANGE), &repo.root.to_string_lossy());
    repo
}

/// Copies the run's directory, the worktree's path put back in.
fn copy_run_dir(from: &Path, to: &Path, worktree: &str) {
    fs::create_dir_all(to).expect("the run directory");
    for entry in fs::read_dir(from).expect("the fixture directory") {
        let path = entry.expect("an entry").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_run_dir(&path, &target, worktree);
        } else {
            let bytes = fs::read(&path).expect("a fixture file");
            let text = String::from_utf8(bytes).expect("fixture files are text");
            fs::write(&target, text.replace("@WORKTREE@", worktree)).expect("a run file");
        }
    }
}

fn state(repo: &TestRepo) -> Value {
    repo.run_state(CHANGE)
}

/// `git ralph <args>`, which must exit with `code`; returns stdout and stderr.
fn ralph_ok(repo: &TestRepo, args: &[&str], code: i32) -> (String, String) {
    let output = ralph_cmd(repo, args);
    assert_exit(&output, code);
    (stdout(&output), stderr(&output))
}

#[test]
fn the_fixture_is_the_run_its_files_describe() {
    let repo = restore(Left::Stopped);
    let state = state(&repo);
    assert_eq!(repo.rev_parse(BRANCH_REF), CHECKPOINT);
    assert_eq!(state["checkpoint"], CHECKPOINT);
    assert_eq!(state["stories"][0]["attempts"][0]["checkpoint"], CHECKPOINT);
    assert_eq!(repo.rev_parse("refs/heads/main"), MAIN);
    assert_eq!(state["original"]["head"]["commit"], MAIN);
    assert_eq!(repo.rev_parse(&format!("{NS}/attempts/2/1")), ATTEMPT_2_1);
    for id in [&state["initial_commit"], &state["original"]["index_tree"]] {
        assert!(repo.git_ok(&["cat-file", "-e", id.as_str().expect("an id")]));
    }
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn status_reports_a_run_the_previous_release_stopped() {
    let repo = restore(Left::Stopped);
    let (out, _) = ralph_ok(&repo, &["status"], 0);
    for line in [
        "change: greet",
        "branch: ralph/greet",
        "state:  stopped (max_retries) · no loop process",
        "source: openspec · agent: /tmp/ralph-state-v1-bin/fake-agent",
        "started from: branch 'main'",
        "stories: 1/3 done",
        "  ✓ 1. Greeting [2/2 tasks] · #1 complete",
        "    2. Farewell [0/1 tasks] · #1 failed ← current",
        "    3. Docs [0/1 tasks]",
        "current: story 2, attempt 1",
        "last failure: the farewell needs a decision",
        "totals: 2 attempts · 2000 tokens in, 500 out · $0.08",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?} in:\n{out}");
    }

    let json = repo.status_json(CHANGE);
    assert_eq!(json["state"], "stopped");
    assert_eq!(json["reason"], "max_retries");
    assert_eq!(json["alive"], false);
    assert_eq!(json["finished_with"], Value::Null);
    assert_eq!(json["stories_done"], 1);
    assert_eq!(json["stories_total"], 3);
    assert_eq!(json["current_story"], "2");
    assert_eq!(json["totals"]["input_tokens"], 2000);
    assert_eq!(json["stories"][1]["attempts"][0]["outcome"], "failed");
    assert_eq!(
        json["stories"][1]["attempts"][0]["preserved"],
        format!("{NS}/attempts/2/1")
    );
}

#[test]
fn log_and_show_read_a_run_the_previous_release_stopped() {
    let repo = restore(Left::Stopped);
    let (log, _) = ralph_ok(&repo, &["log"], 0);
    assert!(
        log.starts_with("run greet · ralph/greet · stopped (max_retries)"),
        "{log}"
    );
    assert!(log.contains("#1 complete · checkpoint df92900cc5"), "{log}");
    assert!(
        log.contains("#1 failed · refs/ralph/greet/attempts/2/1"),
        "{log}"
    );
    assert!(log.contains("the farewell needs a decision"), "{log}");

    let (show, _) = ralph_ok(&repo, &["show", "2"], 0);
    assert!(
        show.starts_with("attempt 2/1 · Farewell · failed: the farewell needs a decision"),
        "{show}"
    );
    // The prompt names this repository's learnings file.
    let learnings = repo.run_dir(CHANGE).join("learnings.md");
    assert!(show.contains(&learnings.display().to_string()), "{show}");
    // The attempt's diff against its checkpoint, read from git.
    assert!(show.contains("+half of story 2"), "{show}");

    let (json, _) = ralph_ok(&repo, &["log", "--json"], 0);
    let trail: Value = serde_json::from_str(&json).expect("log --json is JSON");
    assert_eq!(
        trail["stories"].as_array().map(Vec::len),
        Some(3),
        "{trail}"
    );
}

#[test]
fn a_run_the_previous_release_stopped_resumes_to_completion() {
    let repo = restore(Left::Stopped);
    let agent = script(
        &repo,
        &format!(
            "[story=2]\n{}[story=3]\n{}",
            finish_story("2"),
            finish_story("3")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--max-retries", "2", "--on-finish", "keep"],
    );
    assert_exit(&output, 0);
    let state = state(&repo);
    assert_eq!(state["status"], "finished", "{}", describe(&output));
    assert_eq!(state["reason"], "completed");
    assert_eq!(state["finished_with"], "keep");
    // Story 2's earlier attempt is kept; the new one is its second.
    let story_2 = &state["stories"][1]["attempts"];
    assert_eq!(story_2[0]["outcome"], "failed");
    assert_eq!(story_2[1]["attempt"], 2);
    assert_eq!(story_2[1]["outcome"], "complete");
    assert_eq!(
        repo.subjects(&format!("{MAIN}..{BRANCH_REF}")),
        [
            "ralph(greet): story 3 Docs",
            "ralph(greet): story 2 Farewell",
            "ralph(greet): story 1 Greeting",
            "ralph(greet): initial state",
        ]
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some(BRANCH_REF));
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();

    let json = repo.status_json(CHANGE);
    assert_eq!(json["state"], "finished");
    assert_eq!(json["stories_done"], 3);
}

#[test]
fn finish_keep_closes_a_run_the_previous_release_stopped() {
    let repo = restore(Left::Stopped);
    let (_, err) = ralph_ok(&repo, &["finish", "--keep"], 0);
    assert_eq!(
        err,
        "kept: ralph/greet holds one commit per finished story (1 of 3 done).\n\
         resume it with more retries:\n  git ralph start greet --max-retries 2\n"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some(BRANCH_REF));
    assert_eq!(repo.rev_parse(BRANCH_REF), CHECKPOINT);
    assert_eq!(repo.status_porcelain(), "");
    let state = state(&repo);
    assert_eq!(state["status"], "finished");
    assert_eq!(state["finished_with"], "keep");
    repo.assert_fsck_clean();
}

/// What `finish --cleanup` leaves: `main` as it was, and the run's work
/// (story 1, the ticked boxes) on top of the user's, uncommitted.
fn assert_cleaned_up(repo: &TestRepo, err: &str) {
    let receipts = repo.run_dir(CHANGE).join("receipts.txt");
    assert_eq!(
        err,
        format!(
            "cleaned up: back on main with all the work as uncommitted changes; ralph/greet was deleted (its tip df92900cc5 is kept at refs/ralph/greet/finished).\n\
             receipts: 1 checkpoint over 2 attempts, 2500 tokens, $0.08; each checkpoint's trailers are kept in {}.\n",
            receipts.display()
        )
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), MAIN);
    assert!(!repo.git_ok(&["rev-parse", "--verify", "-q", BRANCH_REF]));
    assert_eq!(repo.rev_parse(&format!("{NS}/finished")), CHECKPOINT);
    assert_eq!(
        repo.status_porcelain(),
        " M README.md\nA  notes.txt\n M openspec/changes/greet/tasks.md\n?? scratch.txt\n?? story-1.txt\n"
    );
    assert_eq!(repo.read("story-1.txt"), "work of story 1\n");
    let state = state(repo);
    assert_eq!(state["status"], "finished");
    assert_eq!(state["finished_with"], "cleanup");
    repo.assert_fsck_clean();
}

#[test]
fn finish_cleanup_closes_a_run_the_previous_release_stopped() {
    let repo = restore(Left::Stopped);
    let (_, err) = ralph_ok(&repo, &["finish", "--cleanup"], 0);
    assert_cleaned_up(&repo, &err);
}

#[test]
fn finish_cleanup_closes_a_run_the_previous_release_kept() {
    let repo = restore(Left::Kept);
    let (_, err) = ralph_ok(&repo, &["finish", "greet", "--cleanup"], 0);
    assert_cleaned_up(&repo, &err);
}

#[test]
fn finish_keep_on_a_run_the_previous_release_kept_changes_nothing() {
    let repo = restore(Left::Kept);
    let before = Untouched::take(&repo);
    let (_, err) = ralph_ok(&repo, &["finish", "--keep"], 0);
    assert_eq!(err, "the run 'greet' is already kept on ralph/greet\n");
    before.assert_still(&repo, "finish --keep on a kept run");
}

/// What `abort` leaves: exactly the state before the run began.
fn assert_aborted(repo: &TestRepo, err: &str) {
    assert_eq!(
        err,
        "aborted: back on main exactly as before the run; ralph/greet was deleted (its tip df92900cc5 is kept at refs/ralph/greet/aborted).\n"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), MAIN);
    assert!(!repo.git_ok(&["rev-parse", "--verify", "-q", BRANCH_REF]));
    assert_eq!(repo.rev_parse(&format!("{NS}/aborted")), CHECKPOINT);
    assert_eq!(
        repo.status_porcelain(),
        " M README.md\nA  notes.txt\n?? scratch.txt\n"
    );
    // The index is the user's, staged work and all.
    let index_tree = state(repo)["original"]["index_tree"]
        .as_str()
        .expect("the index tree")
        .to_owned();
    assert_eq!(repo.git(&["write-tree"]).trim(), index_tree);
    assert_eq!(repo.read("notes.txt"), "notes in progress\n");
    assert_eq!(
        repo.read("README.md"),
        "# Test project\n\nA line not yet committed.\n"
    );
    assert_eq!(repo.read("scratch.txt"), "scratch\n");
    assert!(!repo.path("story-1.txt").exists());
    assert_eq!(state(repo)["status"], "aborted");
    repo.assert_fsck_clean();
}

#[test]
fn abort_restores_the_state_before_a_run_the_previous_release_stopped() {
    let repo = restore(Left::Stopped);
    let (_, err) = ralph_ok(&repo, &["abort"], 0);
    assert_aborted(&repo, &err);
}

#[test]
fn abort_restores_the_state_before_a_run_the_previous_release_kept() {
    let repo = restore(Left::Kept);
    let (_, err) = ralph_ok(&repo, &["abort", "greet"], 0);
    assert_aborted(&repo, &err);
}

#[test]
fn finish_sets_aside_work_a_killed_loop_of_the_previous_release_left() {
    let repo = restore(Left::Stopped);
    // What a loop killed mid-attempt leaves beyond the checkpoint.
    repo.write("story-2.txt", "half of story 2, again\n");
    let (_, err) = ralph_ok(&repo, &["finish", "--keep"], 0);
    let refs = repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("{NS}/interrupted/"),
    ]);
    let set_aside = refs.trim();
    assert!(!set_aside.is_empty() && !set_aside.contains('\n'), "{refs}");
    assert_eq!(
        err,
        format!(
            "warning: work beyond the last checkpoint was set aside at {set_aside} (see it with 'git show {set_aside}')\n\
             kept: ralph/greet holds one commit per finished story (1 of 3 done).\n\
             resume it with more retries:\n  git ralph start greet --max-retries 2\n"
        )
    );
    assert_eq!(
        repo.git(&["show", &format!("{set_aside}:story-2.txt")]),
        "half of story 2, again\n"
    );
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(repo.rev_parse(BRANCH_REF), CHECKPOINT);
    repo.assert_fsck_clean();
}
