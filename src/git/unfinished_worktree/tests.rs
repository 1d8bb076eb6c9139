use std::fs;

use super::*;

#[test]
fn an_administrative_directory_locked_initializing_is_unfinished() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let admin = dir.path().join("story");
    fs::create_dir(&admin).unwrap();
    assert!(is_unfinished(&admin), "reserved and still empty");
    fs::write(admin.join("locked"), "").unwrap();
    assert!(is_unfinished(&admin), "the lock cut short while written");
    fs::write(admin.join("locked"), "init").unwrap();
    assert!(is_unfinished(&admin));
    fs::write(admin.join("locked"), INITIALIZING).unwrap();
    fs::write(admin.join("gitdir"), "/somewhere/.git\n").unwrap();
    assert!(is_unfinished(&admin));
}

#[test]
fn a_link_cut_short_while_written_is_how_the_path_begins() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let real = fs::canonicalize(dir.path()).unwrap();
    let dot_git = real.join("story/.git");
    let whole = dot_git.to_string_lossy().into_owned();
    assert!(is_start_of("", &dot_git));
    assert!(is_start_of(&whole[..whole.len() / 2], &dot_git));
    assert!(is_start_of(&whole, &dot_git));
    assert!(!is_start_of("/elsewhere/", &dot_git));
}

#[test]
fn a_worktree_git_finished_making_is_not_unfinished() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let admin = dir.path().join("story");
    fs::create_dir(&admin).unwrap();
    fs::write(admin.join("gitdir"), "/somewhere/.git\n").unwrap();
    assert!(!is_unfinished(&admin), "no lock: made");
    fs::write(admin.join("locked"), "a run works here\n").unwrap();
    assert!(!is_unfinished(&admin), "locked by someone for a reason");
    fs::write(admin.join("index"), "DIRC").unwrap();
    fs::write(admin.join("locked"), "").unwrap();
    assert!(!is_unfinished(&admin), "locked by someone with no reason");
    fs::write(admin.join("locked"), INITIALIZING).unwrap();
    assert!(!is_unfinished(&admin), "checked out, about to be unlocked");
    assert!(!is_unfinished(&dir.path().join("missing")));
}

#[test]
fn the_recorded_link_is_compared_with_symbolic_links_resolved() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    let alias = dir.path().join("alias");
    std::os::unix::fs::symlink(&real, &alias).unwrap();
    let recorded = real.join(".git");
    assert!(leads_to(recorded.to_str().unwrap(), &alias.join(".git")));
    assert!(!leads_to(
        recorded.to_str().unwrap(),
        &dir.path().join("other/.git")
    ));
}

#[test]
fn a_git_directory_of_its_own_is_never_a_link() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    assert!(dot_git_is_a_link(dir.path()), "no .git yet");
    fs::write(dir.path().join(".git"), "gitdir: ").unwrap();
    assert!(dot_git_is_a_link(dir.path()), "half written");
    fs::remove_file(dir.path().join(".git")).unwrap();
    fs::create_dir(dir.path().join(".git")).unwrap();
    assert!(!dot_git_is_a_link(dir.path()), "someone's repository");
}
