//! Worktrees of a run beside the user, through the library, judged by git:
//! a linked worktree made and removed in-process as `git worktree add` and
//! `remove` would, and a run's work brought into the user's worktree only
//! where it touches nothing of theirs.

use super::fixture::*;
use git_ralph::git::{BringError, Repo};

/// A branch `run` holding a run's work on top of `main`: a file changed,
/// one added in a new directory, one deleted, an executable bit and a
/// symlink. Returns the trees of `main` and `run`; HEAD stays on `main`.
fn run_branch(fx: &Fixture) -> (String, String) {
    let base = fx.git(&["rev-parse", "HEAD^{tree}"]);
    fx.git(&["switch", "-q", "-c", "run"]);
    fx.write("src/a.txt", "the run's a\n");
    fx.write("new/deep/b.txt", "added by the run\n");
    fx.remove("docs/remove-me.txt");
    fx.chmod_x("run.sh", false);
    fx.symlink("new/deep/b.txt", "link-to-b");
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "the run's work"]);
    let tip = fx.git(&["rev-parse", "HEAD^{tree}"]);
    fx.git(&["switch", "-q", "main"]);
    (base, tip)
}

fn id(hex: &str) -> git_ralph::git::ObjectId {
    git_ralph::git::ObjectId::from_hex(hex.as_bytes()).unwrap()
}

#[test]
fn bringing_a_runs_work_in_writes_the_files_and_leaves_the_index_alone() {
    let fx = Fixture::new();
    let (base, tip) = run_branch(&fx);
    // The user's own work elsewhere stays.
    fx.write("mine.txt", "the user's\n");
    let index = fx.index_bytes();

    let repo = Repo::open(&fx.root).unwrap();
    let brought = repo.bring_in(id(&base), id(&tip)).unwrap();

    assert_eq!(brought.removed, 1);
    assert_eq!(fx.index_bytes(), index, "the index is never written");
    assert_eq!(fx.read("src/a.txt"), "the run's a\n");
    assert_eq!(fx.read("new/deep/b.txt"), "added by the run\n");
    assert!(!fx.path("docs/remove-me.txt").exists());
    assert!(!fx.is_executable("run.sh"));
    assert_eq!(fx.readlink("link-to-b"), "new/deep/b.txt");
    assert_eq!(fx.read("mine.txt"), "the user's\n");
    // Everything but the user's own file is the run's tree.
    fx.remove("mine.txt");
    assert_eq!(fx.oracle_tree(), tip);
    fx.assert_fsck_clean();
}

#[test]
fn bringing_in_refuses_whatever_touches_the_users_changes_and_writes_nothing() {
    for (what, setup, path) in [
        (
            "a file the user changed",
            &(|fx: &Fixture| drop(fx.write("src/a.txt", "the user's a\n"))) as &dyn Fn(&Fixture),
            "src/a.txt",
        ),
        (
            "a file the run deletes, changed by the user",
            &|fx: &Fixture| drop(fx.write("docs/remove-me.txt", "kept by the user\n")),
            "docs/remove-me.txt",
        ),
        (
            "an ignored file where the run adds one",
            &|fx: &Fixture| {
                fx.write(".gitignore", "*.log\ntarget/\nnew/\n");
                fx.git(&["commit", "-q", "-am", "ignore new/"]);
                fx.write("new/deep/b.txt", "ignored, the user's\n");
            },
            "new/deep/b.txt",
        ),
        (
            "a file where the run needs a directory",
            &|fx: &Fixture| drop(fx.write("new", "a file of the user's\n")),
            "new",
        ),
    ] {
        let fx = Fixture::new();
        let (base, tip) = run_branch(&fx);
        setup(&fx);
        let before = fx.disk_snapshot();
        let repo = Repo::open(&fx.root).unwrap();
        match repo.bring_in(id(&base), id(&tip)) {
            Err(BringError::WouldTouch { paths }) => {
                assert!(paths.contains(&path.to_owned()), "{what}: {paths:?}");
            }
            other => panic!("{what}: {other:?}"),
        }
        assert!(
            crate::harness::snapshot_diff(&before, &fx.disk_snapshot()).is_empty(),
            "{what}: something was written"
        );
    }
}

#[test]
fn a_linked_worktree_is_made_and_removed_as_git_would() {
    let fx = Fixture::new();
    fx.git(&["branch", "ralph/x"]);
    let repo = Repo::open(&fx.root).unwrap();
    let place = fx.dir.path().join("beside").join("x");
    let linked = repo
        .add_worktree(&place, "refs/heads/ralph/x", "a run works here")
        .unwrap();

    let list = fx.git(&["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!(
            "worktree {}\nHEAD {}\nbranch refs/heads/ralph/x\nlocked a run works here",
            linked.path.display(),
            fx.git(&["rev-parse", "HEAD"])
        )),
        "{list}"
    );
    assert_eq!(fx.git_at(&linked.path, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_link(linked.path.join("link")).unwrap(),
        std::path::Path::new("src/a.txt")
    );
    assert_eq!(fx.git(&["worktree", "prune", "-n", "-v"]), "");
    fx.assert_fsck_clean();
    // Commands inside it find the run's state in the user's git directory.
    let inside = Repo::open(&linked.path).unwrap();
    assert_eq!(inside.ralph_dir(), repo.ralph_dir());

    // A directory that is not this worktree is never deleted.
    let stranger = git_ralph::git::LinkedWorktree {
        path: fx.dir.path().join("stranger"),
        id: linked.id.clone(),
    };
    std::fs::create_dir_all(&stranger.path).unwrap();
    std::fs::write(stranger.path.join("precious.txt"), "mine\n").unwrap();
    assert!(repo.remove_worktree(&stranger).is_err());
    assert!(stranger.path.join("precious.txt").exists());

    repo.remove_worktree(&linked).unwrap();
    assert!(!linked.path.exists());
    assert_eq!(
        fx.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    fx.assert_fsck_clean();
}
