//! A start that is refused must leave no trace. Each bad input (a missing
//! change, a missing or box-less task list, an unsafe change name, no
//! repository, an unknown agent, a broken prompt template) is answered with
//! a non-zero exit, `error:` and `hint:` on stderr, and a repository that is
//! byte for byte what it was: status, refs, HEAD and every file under the
//! worktree and `.git`.

use std::path::Path;
use std::process::Output;

use crate::harness::story_run::*;
use crate::harness::*;

/// A repository with the change `greet`, another change, and uncommitted
/// work of every kind, so that a refused start has something to spoil.
fn busy_project() -> TestRepo {
    let repo = project(TWO_STORIES);
    repo.openspec_change("tidy-docs", "## 1. Tidy\n\n- [ ] 1.1 Tidy the docs\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Another change"]);
    repo.write("README.md", "# Staged\n");
    repo.git(&["add", "README.md"]);
    repo.write("README.md", "# Staged, then edited\n");
    repo.write("scratch.txt", "untracked\n");
    repo
}

fn assert_refused(output: &Output, what: &str) -> String {
    assert!(
        !output.status.success(),
        "{what}: expected a refusal, got {}\nstdout:\n{}",
        output.status,
        stdout(output)
    );
    let err = stderr(output);
    assert!(err.starts_with("error: "), "{what}: no error line:\n{err}");
    assert!(err.contains("\nhint: "), "{what}: no hint:\n{err}");
    err
}

/// `git ralph start <change>` with the fake agent and `extra` options.
fn try_start(repo: &TestRepo, change: &str, extra: &[&str]) -> Output {
    let agent = script(repo, &story_done("1"));
    let mut cmd = ralph_with_fake(repo, &agent);
    cmd.arg("start")
        .args(extra)
        .args(["--agent-command", fake_agent_path()]);
    cmd.args(["--on-finish", "keep", "--", change]);
    run(&mut cmd)
}

/// Runs the refused start and checks that nothing moved.
fn refused(repo: &TestRepo, change: &str, extra: &[&str], code: i32, what: &str) -> String {
    let before = Untouched::take(repo);
    let output = try_start(repo, change, extra);
    let err = assert_refused(&output, what);
    assert_exit(&output, code);
    before.assert_still(repo, what);
    assert!(recorded_calls(repo).is_empty(), "{what}: an agent ran");
    err
}

#[test]
fn a_missing_change_is_refused_listing_the_existing_ones() {
    let repo = busy_project();
    let err = refused(&repo, "no-such-change", &[], 1, "missing change");
    assert!(err.contains("no-such-change"), "{err}");
    assert!(
        err.contains("greet, tidy-docs"),
        "the existing changes are listed:\n{err}"
    );
}

#[test]
fn a_change_without_tasks_md_is_refused() {
    let repo = busy_project();
    repo.write(
        "openspec/changes/empty/proposal.md",
        "## Why\nNo tasks yet.\n",
    );
    let err = refused(&repo, "empty", &[], 1, "missing tasks.md");
    assert!(err.contains("openspec/changes/empty/tasks.md"), "{err}");
}

#[test]
fn a_tasks_md_without_checkboxes_is_refused() {
    let repo = busy_project();
    repo.write(
        "openspec/changes/prose/tasks.md",
        "## 1. Prose\n\nJust write it, no boxes.\n\n```\n- [ ] a box in a fence does not count\n```\n",
    );
    let err = refused(&repo, "prose", &[], 1, "tasks.md without boxes");
    assert!(err.contains("no checkbox"), "{err}");
}

#[test]
fn unsafe_change_names_are_refused() {
    let repo = busy_project();
    for name in ["../x", "-rf", "a b", "x..y", "refs/heads"] {
        let err = refused(&repo, name, &[], 2, &format!("change name {name:?}"));
        assert!(err.contains(name), "the name is quoted back:\n{err}");
    }
}

#[test]
fn an_unknown_agent_is_refused() {
    let repo = busy_project();
    let before = Untouched::take(&repo);
    let agent = script(&repo, &story_done("1"));
    let output = run(ralph_with_fake(&repo, &agent).args([
        "start",
        CHANGE,
        "--agent",
        "no-such-agent",
        "--on-finish",
        "keep",
    ]));
    let err = assert_refused(&output, "unknown agent");
    assert_exit(&output, 1);
    assert!(err.contains("no-such-agent"), "{err}");
    before.assert_still(&repo, "unknown agent");
}

#[test]
fn a_broken_prompt_template_is_refused_before_anything_moves() {
    let repo = busy_project();
    let template = repo.dir.path().join("broken.md");
    std::fs::write(&template, "Story {{story_id}} of {{no_such_placeholder}}\n").expect("template");
    let template = template.to_string_lossy().into_owned();
    let err = refused(
        &repo,
        CHANGE,
        &["--prompt-template", &template],
        1,
        "unknown placeholder",
    );
    assert!(err.contains("no_such_placeholder"), "{err}");
}

#[test]
fn outside_a_repository_start_is_refused_and_creates_nothing() {
    let repo = TestRepo::new();
    let outside = repo.dir.path().join("plain-dir");
    repo.write("../plain-dir/openspec/changes/greet/tasks.md", TWO_STORIES);
    let before = disk_snapshot(&outside);
    let mut cmd = ralph(&repo);
    cmd.current_dir(&outside)
        // Discovery must not wander above the test's own directory.
        .env("GIT_CEILING_DIRECTORIES", repo.dir.path())
        .args(["start", CHANGE, "--agent-command", fake_agent_path()]);
    let output = run(&mut cmd);
    let err = assert_refused(&output, "not a repository");
    assert_exit(&output, 1);
    assert!(err.contains("not a git repository"), "{err}");
    let diff = snapshot_diff(&before, &disk_snapshot(&outside));
    assert!(
        diff.is_empty(),
        "the directory changed:\n{}",
        diff.join("\n")
    );
    assert!(!Path::new(&outside).join(".git").exists());
}
