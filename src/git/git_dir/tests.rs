use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;

/// A fake git directory with a config, a sample hook and info/exclude.
fn git_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let git = dir.path().join(".git");
    fs::create_dir_all(git.join("hooks")).unwrap();
    fs::create_dir_all(git.join("info")).unwrap();
    fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
    fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
    fs::write(git.join("info/exclude"), "# nothing\n").unwrap();
    dir
}

fn take(dir: &Path) -> GitDirSnapshot {
    GitDirSnapshot::take(&[&dir.join(".git")], &[], dir).expect("a snapshot")
}

fn whats(changes: &[GitDirChange]) -> Vec<(String, Risk)> {
    changes.iter().map(|c| (c.what(), c.risk)).collect()
}

#[test]
fn nothing_changed_is_no_change() {
    let dir = git_dir();
    assert!(take(dir.path()).changes().unwrap().is_empty());
}

#[test]
fn a_new_hook_runs_code_and_is_removed_on_restore() {
    let dir = git_dir();
    let snapshot = take(dir.path());
    let hook = dir.path().join(".git/hooks/pre-commit");
    fs::write(&hook, "#!/bin/sh\ntouch pwned\n").unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    let changes = snapshot.changes().unwrap();
    assert_eq!(
        whats(&changes),
        [(".git/hooks/pre-commit".to_owned(), Risk::RunsCode)]
    );
    assert_eq!(changes[0].change, FileChange::Added);
    snapshot.restore().unwrap();
    assert!(!hook.exists());
    assert!(snapshot.changes().unwrap().is_empty());
}

#[test]
fn an_edited_sample_only_changes_and_is_put_back_with_its_mode() {
    let dir = git_dir();
    let sample = dir.path().join(".git/hooks/pre-commit.sample");
    fs::set_permissions(&sample, fs::Permissions::from_mode(0o644)).unwrap();
    let snapshot = take(dir.path());
    fs::write(&sample, "changed").unwrap();
    fs::set_permissions(&sample, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        whats(&snapshot.changes().unwrap()),
        [(".git/hooks/pre-commit.sample".to_owned(), Risk::Changes)]
    );
    snapshot.restore().unwrap();
    assert_eq!(fs::read_to_string(&sample).unwrap(), "#!/bin/sh\n");
    let mode = fs::metadata(&sample).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn config_changes_are_named_key_by_key_with_their_risk() {
    let dir = git_dir();
    let snapshot = take(dir.path());
    fs::write(
        dir.path().join(".git/config"),
        "[core]\n\tbare = false\n\thooksPath = /tmp/x\n[alias]\n\tst = !touch pwned\n\tco = checkout\n\
         [user]\n\tname = Agent\n[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil\n[filter \"lfs\"]\n\tclean = cat\n",
    )
    .unwrap();
    let mut changes = whats(&snapshot.changes().unwrap());
    changes.sort();
    assert_eq!(
        changes,
        [
            (".git/config (alias.co)".to_owned(), Risk::Changes),
            (".git/config (alias.st)".to_owned(), Risk::RunsCode),
            (".git/config (core.hooksPath)".to_owned(), Risk::RunsCode),
            (".git/config (filter.lfs.clean)".to_owned(), Risk::RunsCode),
            (
                ".git/config (includeIf.gitdir:/.path)".to_owned(),
                Risk::RunsCode
            ),
            (".git/config (user.name)".to_owned(), Risk::Changes),
        ]
    );
    snapshot.restore().unwrap();
    assert_eq!(
        fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
}

#[test]
fn a_removed_dangerous_key_is_named_and_a_comment_is_a_plain_change() {
    let dir = git_dir();
    fs::write(
        dir.path().join(".git/config"),
        "[core]\n\tfsmonitor = true\n",
    )
    .unwrap();
    let snapshot = take(dir.path());
    fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    assert_eq!(
        whats(&snapshot.changes().unwrap()),
        [(".git/config (core.fsmonitor)".to_owned(), Risk::RunsCode)]
    );
    fs::write(
        dir.path().join(".git/config"),
        "# a comment\n[core]\n\tfsmonitor = true\n",
    )
    .unwrap();
    assert_eq!(
        whats(&snapshot.changes().unwrap()),
        [(".git/config".to_owned(), Risk::Changes)]
    );
}

#[test]
fn unreadable_config_is_taken_as_running_code() {
    let dir = git_dir();
    let snapshot = take(dir.path());
    fs::write(dir.path().join(".git/config"), "[core\n\tbroken").unwrap();
    assert_eq!(
        whats(&snapshot.changes().unwrap()),
        [(".git/config".to_owned(), Risk::RunsCode)]
    );
}

#[test]
fn info_files_and_a_new_config_worktree_are_noticed() {
    let dir = git_dir();
    let snapshot = take(dir.path());
    fs::write(dir.path().join(".git/info/exclude"), "secret/\n").unwrap();
    fs::write(dir.path().join(".git/info/attributes"), "* -diff\n").unwrap();
    fs::write(
        dir.path().join(".git/config.worktree"),
        "[core]\n\thooksPath = /tmp/x\n",
    )
    .unwrap();
    let mut changes = whats(&snapshot.changes().unwrap());
    changes.sort();
    assert_eq!(
        changes,
        [
            (
                ".git/config.worktree (core.hooksPath)".to_owned(),
                Risk::RunsCode
            ),
            (".git/info/attributes".to_owned(), Risk::Changes),
            (".git/info/exclude".to_owned(), Risk::Changes),
        ]
    );
    snapshot.restore().unwrap();
    assert!(snapshot.changes().unwrap().is_empty());
    assert!(!dir.path().join(".git/config.worktree").exists());
}

#[test]
fn the_runs_own_files_are_its_rules() {
    let dir = git_dir();
    let run = dir.path().join(".git/ralph/greet");
    fs::create_dir_all(run.join("contract")).unwrap();
    fs::write(run.join("contract.json"), "{\"checks\":[]}").unwrap();
    fs::write(run.join("contract/ralph.toml"), "x").unwrap();
    let snapshot = GitDirSnapshot::take(
        &[&dir.path().join(".git")],
        &[run.join("contract.json"), run.join("contract")],
        dir.path(),
    )
    .unwrap();
    fs::write(run.join("contract.json"), "{}").unwrap();
    fs::write(run.join("contract/extra.toml"), "y").unwrap();
    let mut changes = whats(&snapshot.changes().unwrap());
    changes.sort();
    assert_eq!(
        changes,
        [
            (".git/ralph/greet/contract.json".to_owned(), Risk::RunRules),
            (
                ".git/ralph/greet/contract/extra.toml".to_owned(),
                Risk::RunRules
            ),
        ]
    );
    snapshot.restore().unwrap();
    assert!(snapshot.changes().unwrap().is_empty());
}

#[test]
fn info_refs_written_by_git_maintenance_is_no_change_and_is_left_alone() {
    let dir = git_dir();
    let info_refs = dir.path().join(".git/info/refs");
    fs::write(&info_refs, "0000 refs/heads/main\n").unwrap();
    let snapshot = take(dir.path());
    fs::write(&info_refs, "1111 refs/heads/main\n").unwrap();
    let exclude = dir.path().join(".git/info/exclude");
    fs::write(&exclude, "*.secret\n").unwrap();
    assert_eq!(
        whats(&snapshot.changes().unwrap()),
        [(".git/info/exclude".to_owned(), Risk::Changes)]
    );
    snapshot.restore().unwrap();
    assert_eq!(fs::read(&info_refs).unwrap(), b"1111 refs/heads/main\n");
    assert_eq!(fs::read(&exclude).unwrap(), b"# nothing\n");
}
