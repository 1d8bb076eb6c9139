//! What the engine takes on trust to skip work in a full scan, tried where
//! trusting it would be wrong: each case leaves a cache that git wrote or the
//! engine keeps in a state that no longer describes the repository, and the
//! result must still be git's.

use super::fixture::*;
use git_ralph::git::Repo;

/// Checkpoint `repo` and assert it wrote the tree git would.
fn assert_checkpoint_is_gits(fx: &Fixture, repo: &mut Repo) {
    let expected = fx.oracle_tree();
    let checkpoint = repo.checkpoint("checkpoint").unwrap();
    assert_eq!(checkpoint.tree.to_string(), expected);
}

/// A second commit (docs/keep.txt changed, more/new.txt added), then
/// `git read-tree` of the first: an index whose valid cache-tree describes
/// a tree that is not HEAD's.
fn index_of_the_first_commit(fx: &Fixture) {
    let initial = fx.git(&["rev-parse", "HEAD"]);
    fx.write("docs/keep.txt", "second\n");
    fx.write("more/new.txt", "new\n");
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "second"]);
    fx.git(&["read-tree", &initial]);
}

/// `git reset --hard` and `git commit` leave a cache-tree in the index; `git
/// add` of one path invalidates it along that path. A checkpoint that
/// trusted it anyway would miss the staged change.
#[test]
fn a_checkpoint_after_git_staged_a_change_writes_gits_tree() {
    let fx = Fixture::new();
    fx.write("docs/keep.txt", "staged\n");
    fx.git(&["add", "docs/keep.txt"]);
    fx.write("src/a.txt", "unstaged\n");
    let mut repo = Repo::open(&fx.root).unwrap();
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

/// `git read-tree` leaves a cache-tree that is valid throughout, for a tree
/// that is not HEAD's: a checkpoint edits that tree, not HEAD's.
#[test]
fn a_checkpoint_over_an_index_of_another_tree_writes_gits_tree() {
    let fx = Fixture::new();
    index_of_the_first_commit(&fx);
    fx.write("src/a.txt", "changed\n");
    let mut repo = Repo::open(&fx.root).unwrap();
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

/// A revert whose index describes another tree than HEAD's, by a valid
/// cache-tree, must rebuild the index from HEAD: files only the index has
/// go, files only HEAD has come back.
#[test]
fn a_revert_over_an_index_of_another_tree_restores_head() {
    let fx = Fixture::new();
    index_of_the_first_commit(&fx);

    let mut repo = Repo::open(&fx.root).unwrap();
    repo.revert().unwrap();

    assert_eq!(fx.status(), "");
    assert_eq!(fx.read("docs/keep.txt"), "second\n");
    assert_eq!(fx.read("more/new.txt"), "new\n");
    assert_eq!(
        fx.git(&["write-tree"]),
        fx.git(&["rev-parse", "HEAD^{tree}"])
    );
    fx.assert_fsck_clean();
}

/// A revert right after `git add` of a new file: the cache-tree is no longer
/// valid, and the file, untracked in HEAD, is deleted as git does.
#[test]
fn a_revert_after_git_staged_a_new_file_deletes_it() {
    let fx = Fixture::new();
    fx.write("src/staged.txt", "staged\n");
    fx.git(&["add", "src/staged.txt"]);

    let mut repo = Repo::open(&fx.root).unwrap();
    repo.revert().unwrap();

    assert!(!fx.path("src/staged.txt").exists());
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

/// A fixture whose directories are old, scanned once by an operation that
/// writes the index (and with it the directory cache), so that the cache
/// holds every one of them.
fn scanned_with_old_directories() -> (Fixture, Repo) {
    let fx = Fixture::new();
    fx.age_directories();
    let mut repo = Repo::open(&fx.root).unwrap();
    repo.revert().unwrap();
    let cache = fx.read(".git/ralph/dir-cache");
    assert!(
        cache.lines().any(|line| line.ends_with("\tdocs")),
        "the scan kept docs/ in its cache:\n{cache}"
    );
    (fx, repo)
}

/// The plain case: a file added to a directory the cache holds changes its
/// mtime, and the next scan reads it again.
#[test]
fn a_file_added_to_a_cached_directory_is_checkpointed() {
    let (fx, mut repo) = scanned_with_old_directories();
    fx.write("docs/new.txt", "new\n");
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.status(), "");
}

/// Setting the directory's mtime back after adding a file (as `tar` and
/// `rsync -t` do) leaves its ctime changed, and that is enough.
#[test]
fn a_file_added_behind_a_restored_mtime_is_checkpointed() {
    let (fx, mut repo) = scanned_with_old_directories();
    let mtime = fx.path("docs").metadata().unwrap().modified().unwrap();
    fx.write("docs/new.txt", "new\n");
    fx.set_dir_mtime("docs", mtime);
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.status(), "");
}

/// A fresh process reads the cache from disk: the same file is found there.
#[test]
fn a_file_added_to_a_cached_directory_is_found_by_another_process() {
    let (fx, repo) = scanned_with_old_directories();
    drop(repo);
    fx.write("src/new.txt", "new\n");
    let mut repo = Repo::open(&fx.root).unwrap();
    assert_checkpoint_is_gits(&fx, &mut repo);
}

/// `git rm --cached` makes a file untracked without touching its
/// directory: the cache sees the index no longer has it there.
#[test]
fn a_file_git_stopped_tracking_in_a_cached_directory_is_checkpointed() {
    let (fx, mut repo) = scanned_with_old_directories();
    fx.git(&["rm", "-q", "--cached", "docs/keep.txt"]);
    fx.git(&["commit", "-q", "-m", "untrack"]);
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.git(&["ls-files", "docs/keep.txt"]), "docs/keep.txt");
}

/// The same for a whole directory: its parent, unchanged on disk, no longer
/// has it among its tracked directories.
#[test]
fn a_directory_git_stopped_tracking_is_checkpointed() {
    let (fx, mut repo) = scanned_with_old_directories();
    fx.git(&["rm", "-q", "-r", "--cached", "src"]);
    fx.git(&["commit", "-q", "-m", "untrack"]);
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.git(&["ls-files", "src"]), "src/a.txt");
}

/// A revert deletes a file added to a cached directory.
#[test]
fn a_file_added_to_a_cached_directory_is_reverted() {
    let (fx, mut repo) = scanned_with_old_directories();
    fx.write("docs/new.txt", "new\n");

    repo.revert().unwrap();

    assert!(!fx.path("docs/new.txt").exists());
    assert_eq!(fx.status(), "");
}

/// A directory changed in the second of the scan is never kept: files added
/// to it right after, in the same second, are found.
#[test]
fn files_added_in_the_same_second_as_a_scan_are_found() {
    let fx = Fixture::new();
    let mut repo = Repo::open(&fx.root).unwrap();
    for round in 0..5 {
        fx.write(format!("fresh/{round}.txt"), "x\n");
        let expected = fx.oracle_tree();
        let checkpoint = repo.checkpoint(&format!("round {round}")).unwrap();
        assert_eq!(checkpoint.tree.to_string(), expected, "round {round}");
    }
}

/// A nested repository below a tracked directory sends the scan back to a
/// full walk, which keeps it out of checkpoints and reverts alike.
#[test]
fn a_repository_inside_a_tracked_directory_is_left_alone() {
    let (fx, mut repo) = scanned_with_old_directories();
    fx.nested_repo("docs/nested");
    fx.write("docs/new.txt", "new\n");
    assert_checkpoint_is_gits(&fx, &mut repo);

    fx.write("docs/another.txt", "x\n");
    repo.revert().unwrap();
    assert!(fx.path("docs/nested/.git").exists());
    assert!(!fx.path("docs/another.txt").exists());
}

/// An operation that only reads (a fingerprint) leaves no cache behind.
#[test]
fn a_fingerprint_writes_no_directory_cache() {
    let fx = Fixture::new();
    fx.age_directories();
    let repo = Repo::open(&fx.root).unwrap();
    repo.fingerprint().unwrap();
    assert!(!fx.path(".git/ralph/dir-cache").exists());
}

/// Entries older than the index are taken as unchanged on their stat data,
/// with each directory opened on its own: a tracked directory moved away
/// and replaced by a symlink to it still holds files with the very same
/// stat data, but they are no longer at their paths.
#[test]
fn a_directory_replaced_by_a_symlink_to_it_is_seen() {
    let fx = Fixture::new();
    fx.age_files();
    std::fs::rename(fx.path("src"), fx.path("moved")).unwrap();
    fx.symlink("moved", "src");
    let mut repo = Repo::open(&fx.root).unwrap();
    assert_checkpoint_is_gits(&fx, &mut repo);
    assert_eq!(fx.status(), "");
}

/// A file rewritten with the same size keeps nothing of its stat data but
/// the size: it is hashed again.
#[test]
fn an_old_file_rewritten_with_the_same_size_is_seen() {
    let fx = Fixture::new();
    fx.age_files();
    fx.write("docs/keep.txt", "KEEP\n");
    let mut repo = Repo::open(&fx.root).unwrap();
    assert_checkpoint_is_gits(&fx, &mut repo);
}
