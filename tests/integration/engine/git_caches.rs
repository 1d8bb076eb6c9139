//! What the engine takes on trust to skip work in a full scan, tried where
//! trusting it would be wrong: each case leaves a cache that git wrote or the
//! engine keeps in a state that no longer describes the repository, and the
//! result must still be git's.

use super::fixture::*;
use git_ralph::git::Repo;

/// `git reset --hard` and `git commit` leave a cache-tree in the index; `git
/// add` of one path invalidates it along that path. A checkpoint that
/// trusted it anyway would miss the staged change.
#[test]
fn a_checkpoint_after_git_staged_a_change_writes_gits_tree() {
    let fx = Fixture::new();
    fx.write("docs/keep.txt", "staged\n");
    fx.git(&["add", "docs/keep.txt"]);
    fx.write("src/a.txt", "unstaged\n");
    let expected = fx.oracle_tree();

    let mut repo = Repo::open(&fx.root).unwrap();
    let checkpoint = repo.checkpoint("after a staged change").unwrap();

    assert_eq!(checkpoint.tree.to_string(), expected);
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

/// `git read-tree` leaves a cache-tree that is valid throughout, for a tree
/// that is not HEAD's: a checkpoint edits that tree, not HEAD's.
#[test]
fn a_checkpoint_over_an_index_of_another_tree_writes_gits_tree() {
    let fx = Fixture::new();
    let initial = fx.git(&["rev-parse", "HEAD"]);
    fx.write("docs/keep.txt", "second\n");
    fx.write("more/new.txt", "new\n");
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "second"]);
    fx.git(&["read-tree", &initial]);
    fx.write("src/a.txt", "changed\n");
    let expected = fx.oracle_tree();

    let mut repo = Repo::open(&fx.root).unwrap();
    let checkpoint = repo.checkpoint("over another tree").unwrap();

    assert_eq!(checkpoint.tree.to_string(), expected);
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

/// A revert whose index describes another tree than HEAD's, by a valid
/// cache-tree, must rebuild the index from HEAD: files only the index has
/// go, files only HEAD has come back.
#[test]
fn a_revert_over_an_index_of_another_tree_restores_head() {
    let fx = Fixture::new();
    let initial = fx.git(&["rev-parse", "HEAD"]);
    fx.write("docs/keep.txt", "second\n");
    fx.write("more/new.txt", "new\n");
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "second"]);
    fx.git(&["read-tree", &initial]);

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
