//! The checkpoint engine judged by git itself: every operation runs through
//! the library on a repository built with the git CLI, and the result is
//! checked with `git write-tree`, `git status`, `git fsck` and `git reflog`.

use super::fixture::*;
use git_ralph::git::{ChangeName, HeadState, Repo};

#[test]
fn checkpoint_matches_git_add_all() {
    let fx = Fixture::new();
    fx.write("src/a.txt", "changed\n");
    fx.write("new dir/b.txt", "added\n");
    fx.write("ünïcødé.txt", "unicode\n");
    fx.remove("docs/remove-me.txt");
    fx.chmod_x("run.sh", false);
    fx.write("build.log", "ignored\n");
    fx.write("target/out.bin", "ignored dir\n");
    fx.symlink("src/a.txt", "link-to-a");
    let expected = fx.oracle_tree();

    let mut repo = Repo::open(&fx.root).unwrap();
    let checkpoint = repo.checkpoint("ralph(x): story 1").unwrap();

    assert_eq!(checkpoint.tree.to_string(), expected);
    assert!(checkpoint.changed);
    assert_eq!(fx.git(&["rev-parse", "HEAD^{tree}"]), expected);
    assert_eq!(
        fx.status(),
        "",
        "the index must match the worktree after a checkpoint"
    );
    assert_eq!(fx.git(&["log", "-1", "--format=%s"]), "ralph(x): story 1");
    assert_eq!(fx.reflog(1), vec!["commit: ralph(x): story 1"]);
    fx.assert_fsck_clean();
    assert!(fx.path("build.log").exists());
}

#[test]
fn checkpoint_without_changes_is_an_empty_commit() {
    let fx = Fixture::new();
    let before = fx.git(&["rev-parse", "HEAD"]);
    let mut repo = Repo::open(&fx.root).unwrap();
    let checkpoint = repo.checkpoint("nothing").unwrap();
    assert!(!checkpoint.changed);
    assert_eq!(fx.git(&["rev-parse", "HEAD^"]), before);
    assert_eq!(
        fx.git(&["rev-parse", "HEAD^{tree}"]),
        fx.git(&["rev-parse", "HEAD^^{tree}"])
    );
    assert_eq!(fx.status(), "");
}

#[test]
fn revert_matches_reset_hard_and_clean() {
    let fx = Fixture::new();
    let untouched_mtime = fx.mtime("docs/keep.txt");
    fx.write("src/a.txt", "garbage\n");
    fx.remove("docs/remove-me.txt");
    fx.chmod_x("run.sh", false);
    fx.write("untracked.txt", "x\n");
    fx.write("fresh/deep/file.txt", "x\n");
    fx.write("fresh/deep/debug.log", "ignored inside an untracked dir\n");
    fx.write("build.log", "ignored\n");
    fx.write("target/out.bin", "ignored dir\n");
    fx.remove("link");
    fx.write("link", "now a file\n");
    fx.nested_repo("vendor/nested");

    let mut repo = Repo::open(&fx.root).unwrap();
    repo.revert().unwrap();

    // git clean -fd keeps nested repositories too, so git still lists it.
    assert_eq!(fx.status(), "?? vendor/nested/");
    assert_eq!(fx.read("src/a.txt"), "original a\n");
    assert!(fx.path("docs/remove-me.txt").exists());
    assert!(fx.is_executable("run.sh"));
    assert_eq!(fx.readlink("link"), "src/a.txt");
    assert!(!fx.path("untracked.txt").exists());
    assert!(!fx.path("fresh/deep/file.txt").exists());
    assert_eq!(
        fx.read("fresh/deep/debug.log"),
        "ignored inside an untracked dir\n"
    );
    assert!(fx.path("build.log").exists());
    assert!(fx.path("target/out.bin").exists());
    assert!(
        fx.path("vendor/nested/.git").exists(),
        "nested repositories are never deleted"
    );
    assert_eq!(
        fx.mtime("docs/keep.txt"),
        untouched_mtime,
        "untouched files are not rewritten"
    );
    fx.assert_fsck_clean();
}

/// A worktree left empty (a story's worktree cut short while it was being
/// made) is preserved as a commit of the empty tree, which git must find.
#[test]
fn preserving_an_empty_worktree_leaves_git_content() {
    let fx = Fixture::new();
    for file in fx.git(&["ls-files"]).lines() {
        std::fs::remove_file(fx.root.join(file)).unwrap();
    }
    std::fs::remove_file(fx.root.join(".git/index")).unwrap();
    let mut repo = Repo::open(&fx.root).unwrap();
    repo.preserve("refs/ralph/x/attempts/1/1", "nothing left")
        .unwrap();
    assert_eq!(
        fx.git(&["rev-parse", "refs/ralph/x/attempts/1/1^{tree}"]),
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    );
    fx.assert_fsck_clean();
}

#[test]
fn preserve_touches_neither_head_index_nor_worktree() {
    let fx = Fixture::new();
    fx.write("src/a.txt", "attempt\n");
    fx.write("new.txt", "new\n");
    let expected = fx.oracle_tree();
    let head = fx.git(&["rev-parse", "HEAD"]);
    let index = fx.index_bytes();
    let status = fx.status();

    let mut repo = Repo::open(&fx.root).unwrap();
    let commit = repo
        .preserve("refs/ralph/x/attempts/1/1", "attempt 1")
        .unwrap();

    assert_eq!(
        fx.git(&["rev-parse", "refs/ralph/x/attempts/1/1"]),
        commit.to_string()
    );
    assert_eq!(
        fx.git(&["rev-parse", "refs/ralph/x/attempts/1/1^{tree}"]),
        expected
    );
    assert_eq!(fx.git(&["rev-parse", "refs/ralph/x/attempts/1/1^"]), head);
    assert_eq!(fx.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(fx.index_bytes(), index);
    assert_eq!(fx.status(), status);
    fx.assert_fsck_clean();
}

#[test]
fn begin_captures_uncommitted_work_and_abort_restores_it() {
    let fx = Fixture::new();
    fx.write("src/a.txt", "staged\n");
    fx.git(&["add", "src/a.txt"]);
    fx.write("src/a.txt", "staged then changed\n");
    fx.write("untracked.txt", "mine\n");
    fx.write("build.log", "ignored\n");
    let status_before = fx.status();
    let cached_before = fx.git(&["diff", "--cached"]);
    let diff_before = fx.git(&["diff"]);
    let index_tree_before = fx.git(&["write-tree"]);
    let worktree_tree = fx.oracle_tree();
    let head_before = fx.git(&["rev-parse", "HEAD"]);

    let change = ChangeName::parse("demo").unwrap();
    let mut repo = Repo::open(&fx.root).unwrap();
    let begin = repo.begin(&change).unwrap();

    assert_eq!(fx.git(&["symbolic-ref", "HEAD"]), "refs/heads/ralph/demo");
    assert_eq!(begin.original.index_tree.to_string(), index_tree_before);
    assert_eq!(begin.initial.tree.to_string(), worktree_tree);
    assert_eq!(fx.git(&["rev-parse", "HEAD^"]), head_before);
    assert_eq!(
        fx.git(&["log", "-1", "--format=%s"]),
        "ralph(demo): initial state"
    );
    assert_eq!(fx.status(), "");
    let reflog = fx.reflog(2);
    assert_eq!(
        reflog,
        vec![
            "commit: ralph(demo): initial state",
            "checkout: moving from main to ralph/demo"
        ]
    );
    assert_eq!(fx.git(&["rev-parse", "--abbrev-ref", "@{-1}"]), "main");

    // The agent works; a checkpoint lands, more work is left uncommitted.
    fx.write("story.txt", "done\n");
    repo.checkpoint("ralph(demo): story 1").unwrap();
    fx.write("half-done.txt", "x\n");
    fx.write("src/a.txt", "agent scribbles\n");

    repo.abort(&change, &begin.original, begin.initial.commit)
        .unwrap();

    assert_eq!(fx.git(&["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(fx.git(&["rev-parse", "HEAD"]), head_before);
    assert_eq!(fx.status(), status_before);
    assert_eq!(fx.git(&["diff", "--cached"]), cached_before);
    assert_eq!(fx.git(&["diff"]), diff_before);
    assert_eq!(fx.read("untracked.txt"), "mine\n");
    assert!(!fx.path("story.txt").exists());
    assert!(!fx.path("half-done.txt").exists());
    assert!(fx.path("build.log").exists());
    assert!(!fx.git_ok(&["rev-parse", "--verify", "-q", "refs/heads/ralph/demo"]));
    assert!(fx.git_ok(&["rev-parse", "--verify", "-q", "refs/ralph/demo/aborted"]));
    assert_eq!(
        fx.reflog(1),
        vec!["checkout: moving from ralph/demo to main"]
    );
    fx.assert_fsck_clean();
}

#[test]
fn checkout_dash_returns_to_the_original_branch() {
    let fx = Fixture::new();
    let change = ChangeName::parse("dash").unwrap();
    Repo::open(&fx.root).unwrap().begin(&change).unwrap();
    fx.git(&["checkout", "-q", "-"]);
    assert_eq!(fx.git(&["symbolic-ref", "HEAD"]), "refs/heads/main");
}

#[test]
fn finish_cleanup_leaves_all_work_uncommitted_on_the_original_branch() {
    let fx = Fixture::new();
    fx.write("mine.txt", "user work\n");
    let change = ChangeName::parse("sq").unwrap();
    let mut repo = Repo::open(&fx.root).unwrap();
    let begin = repo.begin(&change).unwrap();
    fx.write("src/a.txt", "story one\n");
    fx.write("new/file.txt", "story two\n");
    let checkpoint = repo.checkpoint("ralph(sq): story 1").unwrap();

    repo.finish_cleanup(&change, &begin.original).unwrap();

    assert_eq!(fx.git(&["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(
        fx.oracle_tree(),
        checkpoint.tree.to_string(),
        "the worktree keeps the final state"
    );
    assert_eq!(fx.status(), " M src/a.txt\n?? mine.txt\n?? new/file.txt");
    assert_eq!(
        fx.git(&["rev-parse", "refs/ralph/sq/finished"]),
        checkpoint.commit.to_string()
    );
    assert!(!fx.git_ok(&["rev-parse", "--verify", "-q", "refs/heads/ralph/sq"]));
    assert_eq!(fx.reflog(1), vec!["checkout: moving from ralph/sq to main"]);
    fx.assert_fsck_clean();
}

#[test]
fn detached_head_round_trip() {
    let fx = Fixture::new();
    fx.git(&["checkout", "-q", "--detach"]);
    let head = fx.git(&["rev-parse", "HEAD"]);
    let change = ChangeName::parse("det").unwrap();
    let mut repo = Repo::open(&fx.root).unwrap();
    let begin = repo.begin(&change).unwrap();
    assert_eq!(
        begin.original.head,
        HeadState::Detached {
            commit: head.parse().unwrap()
        }
    );
    assert_eq!(
        fx.reflog(2)[1],
        format!("checkout: moving from {head} to ralph/det")
    );
    repo.abort(&change, &begin.original, begin.initial.commit)
        .unwrap();
    assert!(!fx.git_ok(&["symbolic-ref", "-q", "HEAD"]));
    assert_eq!(fx.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

#[test]
fn unborn_head_round_trip() {
    let fx = Fixture::empty();
    fx.write("first.txt", "hello\n");
    fx.git(&["add", "first.txt"]);
    fx.write("second.txt", "untracked\n");
    let status_before = fx.status();
    let change = ChangeName::parse("unborn").unwrap();
    let mut repo = Repo::open(&fx.root).unwrap();
    let begin = repo.begin(&change).unwrap();
    assert!(matches!(begin.original.head, HeadState::Unborn { .. }));
    assert_eq!(fx.git(&["rev-list", "--count", "HEAD"]), "1");
    repo.abort(&change, &begin.original, begin.initial.commit)
        .unwrap();
    assert_eq!(fx.git(&["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert!(!fx.git_ok(&["rev-parse", "--verify", "-q", "HEAD"]));
    assert_eq!(fx.status(), status_before);
    fx.assert_fsck_clean();
}

#[test]
fn file_mode_false_keeps_the_recorded_executable_bit() {
    let fx = Fixture::new();
    fx.git(&["config", "core.fileMode", "false"]);
    fx.chmod_x("run.sh", false);
    fx.write("new.sh", "#!/bin/sh\n");
    fx.chmod_x("new.sh", true);
    fx.write("src/a.txt", "changed\n");
    let expected = fx.oracle_tree();
    let checkpoint = Repo::open(&fx.root).unwrap().checkpoint("mode").unwrap();
    assert_eq!(checkpoint.tree.to_string(), expected);
    assert_eq!(
        fx.git(&["ls-tree", "HEAD", "run.sh"]).split(' ').next(),
        Some("100755")
    );
    assert_eq!(
        fx.git(&["ls-tree", "HEAD", "new.sh"]).split(' ').next(),
        Some("100644")
    );
    assert_eq!(fx.status(), "");
}

#[test]
fn eol_attributes_are_applied_when_hashing() {
    let fx = Fixture::new();
    fx.write(".gitattributes", "*.txt text eol=crlf\n*.bin binary\n");
    fx.git(&["add", ".gitattributes"]);
    fx.git(&["commit", "-q", "-m", "attributes"]);
    fx.write("crlf.txt", "one\r\ntwo\r\n");
    fx.write("lf.txt", "one\ntwo\n");
    fx.write("data.bin", "a\r\nb\0\r\n");
    let expected = fx.oracle_tree();
    let mut repo = Repo::open(&fx.root).unwrap();
    let checkpoint = repo.checkpoint("eol").unwrap();
    assert_eq!(checkpoint.tree.to_string(), expected);
    assert_eq!(fx.git(&["cat-file", "-p", "HEAD:crlf.txt"]), "one\ntwo");
    assert_eq!(fx.status(), "");

    // A revert writes the worktree form back.
    std::fs::remove_file(fx.path("crlf.txt")).unwrap();
    repo.revert().unwrap();
    assert_eq!(fx.read("crlf.txt"), "one\r\ntwo\r\n");
    assert_eq!(fx.status(), "");
}

#[test]
fn file_and_directory_swaps_round_trip() {
    let fx = Fixture::new();
    fx.remove("docs");
    fx.write("docs", "now a file\n");
    fx.remove("run.sh");
    fx.write("run.sh/inside.txt", "now a dir\n");
    let expected = fx.oracle_tree();
    let mut repo = Repo::open(&fx.root).unwrap();
    assert_eq!(repo.fingerprint().unwrap().to_string(), expected);
    let checkpoint = repo.checkpoint("swap").unwrap();
    assert_eq!(checkpoint.tree.to_string(), expected);
    assert_eq!(fx.status(), "");

    fx.remove("docs");
    fx.write("docs/keep.txt", "back to a dir\n");
    fx.remove("run.sh");
    fx.write("run.sh", "back to a file\n");
    repo.revert().unwrap();
    assert_eq!(fx.read("docs"), "now a file\n");
    assert_eq!(fx.read("run.sh/inside.txt"), "now a dir\n");
    assert_eq!(fx.status(), "");
    fx.assert_fsck_clean();
}

#[test]
fn linked_worktree_keeps_state_in_its_own_git_dir() {
    let fx = Fixture::new();
    let linked = fx.root.parent().unwrap().join("linked");
    fx.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "side",
        linked.to_str().unwrap(),
    ]);
    std::fs::write(linked.join("side.txt"), "side work\n").unwrap();

    let change = ChangeName::parse("wt").unwrap();
    let mut repo = Repo::open(&linked).unwrap();
    assert!(repo.ralph_dir().starts_with(fx.path(".git/worktrees")));
    repo.begin(&change).unwrap();
    let git = |args: &[&str]| fx.git_at(&linked, args);
    assert_eq!(git(&["symbolic-ref", "HEAD"]), "refs/heads/ralph/wt");
    assert_eq!(git(&["show", "HEAD:side.txt"]), "side work");
    assert_eq!(
        fx.git(&["symbolic-ref", "HEAD"]),
        "refs/heads/main",
        "the main worktree is untouched"
    );

    // The branch is now checked out there: the main worktree may not take it.
    let before = fx.disk_snapshot();
    let err = Repo::open(&fx.root).unwrap().begin(&change).unwrap_err();
    assert!(err.to_string().contains("checked out"), "{err}");
    assert!(err.hint().unwrap().contains("linked"), "{:?}", err.hint());
    assert_eq!(fx.disk_snapshot(), before);
}

#[test]
fn a_submodule_survives_checkpoint_and_revert() {
    let fx = Fixture::new();
    let upstream = fx.root.parent().unwrap().join("upstream");
    std::fs::create_dir_all(&upstream).unwrap();
    fx.git_at(&upstream, &["init", "-q", "-b", "main"]);
    std::fs::write(upstream.join("lib.txt"), "lib\n").unwrap();
    fx.git_at(&upstream, &["add", "-A"]);
    fx.git_at(&upstream, &["commit", "-q", "-m", "lib"]);
    fx.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        upstream.to_str().unwrap(),
        "sub",
    ]);
    fx.git(&["commit", "-q", "-m", "add submodule"]);

    fx.write("src/a.txt", "changed\n");
    fx.write("sub/scratch.txt", "inside the submodule\n");
    let expected = fx.oracle_tree();
    let mut repo = Repo::open(&fx.root).unwrap();
    let checkpoint = repo.checkpoint("with submodule").unwrap();
    assert_eq!(checkpoint.tree.to_string(), expected);

    fx.write("src/a.txt", "agent\n");
    repo.revert().unwrap();
    assert_eq!(fx.read("src/a.txt"), "changed\n");
    assert_eq!(
        fx.read("sub/lib.txt"),
        "lib\n",
        "the submodule's worktree is left alone"
    );
    assert_eq!(fx.read("sub/scratch.txt"), "inside the submodule\n");
    fx.assert_fsck_clean();
}

mod refusals {
    use super::*;

    #[test]
    fn outside_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let err = Repo::open(dir.path()).err().unwrap();
        assert!(err.to_string().contains("not a git repository"), "{err}");
        assert!(err.hint().is_some());
    }

    #[test]
    fn a_bare_repository() {
        let fx = Fixture::new();
        let bare = fx.root.parent().unwrap().join("bare.git");
        fx.git(&["clone", "-q", "--bare", ".", bare.to_str().unwrap()]);
        let err = Repo::open(&bare).err().unwrap();
        assert!(err.to_string().contains("bare"), "{err}");
    }

    #[test]
    fn a_merge_in_progress_and_a_conflicted_index() {
        let fx = Fixture::new();
        fx.git(&["checkout", "-q", "-b", "other"]);
        fx.write("src/a.txt", "other side\n");
        fx.git(&["commit", "-q", "-am", "other"]);
        fx.git(&["checkout", "-q", "main"]);
        fx.write("src/a.txt", "main side\n");
        fx.git(&["commit", "-q", "-am", "main"]);
        assert!(!fx.git_ok(&["merge", "-q", "other"]));
        let before = fx.disk_snapshot();

        let err = Repo::open(&fx.root).err().unwrap();
        assert!(err.to_string().contains("merge is in progress"), "{err}");
        assert!(err.hint().unwrap().contains("git merge --abort"));

        std::fs::remove_file(fx.path(".git/MERGE_HEAD")).unwrap();
        let err = Repo::open(&fx.root).err().unwrap();
        assert!(err.to_string().contains("conflicts in src/a.txt"), "{err}");
        std::fs::write(
            fx.path(".git/MERGE_HEAD"),
            before[".git/MERGE_HEAD"].1.clone(),
        )
        .unwrap();
        assert_eq!(fx.disk_snapshot(), before);
    }

    #[test]
    fn a_held_index_lock_is_waited_on_then_reported() {
        let fx = Fixture::new();
        fx.write("src/a.txt", "changed\n");
        std::fs::write(fx.path(".git/index.lock"), "").unwrap();
        let before = fx.disk_snapshot();
        let mut repo = Repo::open(&fx.root).unwrap();
        let err = repo.checkpoint("blocked").unwrap_err();
        assert!(err.to_string().contains("index.lock"), "{err}");
        assert!(err.hint().unwrap().contains("remove"));
        let err = repo
            .begin(&ChangeName::parse("blocked").unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("index.lock"), "{err}");
        assert_eq!(
            fx.disk_snapshot(),
            before,
            "a refusal leaves the disk as it was"
        );
    }
}

/// Racy git: a same-size change made in the same second as the index was
/// written must still be seen by checkpoint and undone by revert.
#[test]
fn same_second_same_size_changes_are_not_missed() {
    let fx = Fixture::new();
    fx.write("tasks.md", "- [ ] one\n");
    fx.git(&["add", "-A"]);
    fx.git(&["commit", "-q", "-m", "tasks"]);
    let change = ChangeName::parse("racy").unwrap();
    let mut repo = Repo::open(&fx.root).unwrap();
    repo.begin(&change).unwrap();
    fx.write("tasks.md", "- [x] one\n");
    // The revert happens in a later second than the index write and the
    // change, so only the stat data can tell the change apart.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(
        std::time::Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos()))
            + std::time::Duration::from_millis(50),
    );
    repo.preserve("refs/ralph/racy/attempts/1/1", "attempt")
        .unwrap();
    repo.revert().unwrap();
    assert_eq!(fx.read("tasks.md"), "- [ ] one\n");
    assert_eq!(
        fx.git(&["show", "refs/ralph/racy/attempts/1/1:tasks.md"]),
        "- [x] one"
    );

    fx.write("tasks.md", "- [x] one\n");
    let checkpoint = repo.checkpoint("ticked").unwrap();
    assert!(checkpoint.changed, "the tick must be committed");
    assert_eq!(fx.git(&["show", "HEAD:tasks.md"]), "- [x] one");
}

mod big_files {
    use super::*;

    /// Three megabytes of bytes git calls binary, above the size the engine
    /// streams from.
    fn big_binary() -> Vec<u8> {
        (0..3 * 1024 * 1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect()
    }

    #[test]
    fn issue_24_a_big_file_is_checkpointed_preserved_and_reverted_as_git_would() {
        let fx = Fixture::new();
        let mut repo = Repo::open(&fx.root).unwrap();
        fx.write("big.bin", big_binary());
        fx.write("assets/exec.bin", big_binary());
        fx.chmod_x("assets/exec.bin", true);
        let expected = fx.oracle_tree();
        assert_eq!(repo.fingerprint().unwrap().to_string(), expected);
        let kept = repo.preserve("refs/ralph/x/attempts/1/1", "kept").unwrap();
        assert_eq!(
            fx.git(&["rev-parse", &format!("{kept}^{{tree}}")]),
            expected
        );
        repo.revert().unwrap();
        assert!(!fx.path("big.bin").exists());
        assert_eq!(fx.status(), "");

        fx.write("big.bin", big_binary());
        fx.write("assets/exec.bin", big_binary());
        fx.chmod_x("assets/exec.bin", true);
        let checkpoint = repo.checkpoint("big").unwrap();
        assert_eq!(checkpoint.tree.to_string(), fx.oracle_tree());
        assert_eq!(fx.status(), "");
        // Big tracked files the agent rewrites, deletes or replaces come
        // back whole, streamed from their objects, with their modes.
        fx.write("big.bin", b"small now".as_slice());
        fx.remove("assets/exec.bin");
        fx.symlink("big.bin", "assets/exec.bin");
        repo.revert().unwrap();
        assert_eq!(std::fs::read(fx.path("big.bin")).unwrap(), big_binary());
        assert_eq!(
            std::fs::read(fx.path("assets/exec.bin")).unwrap(),
            big_binary()
        );
        assert!(fx.is_executable("assets/exec.bin"));
        assert!(!fx.is_executable("big.bin"));
        assert_eq!(fx.status(), "");

        fx.assert_fsck_clean();
    }

    #[test]
    fn issue_24_the_live_diff_names_a_big_file_by_its_size_and_writes_nothing() {
        let fx = Fixture::new();
        let repo = Repo::open(&fx.root).unwrap();
        let head = repo.head().unwrap().commit().unwrap();
        fx.write("big.bin", big_binary());
        let objects = fx.git(&["count-objects", "-v"]);
        let patch = repo.worktree_patch(head).unwrap();
        assert!(
            patch.contains("Binary files /dev/null and b/big.bin differ (binary, 3.1 MB)"),
            "{patch}"
        );
        assert_eq!(fx.git(&["count-objects", "-v"]), objects);
    }
}

mod watched {
    use super::*;
    use git_ralph::git::Scan;

    /// A change made just before a checkpoint reaches the watch's thread
    /// only later; the checkpoint waits for its cookie, so the change is
    /// never missed, however quickly the checkpoint follows it.
    #[test]
    fn issue_24_a_change_right_before_a_checkpoint_is_never_missed() {
        let fx = Fixture::new();
        let mut repo = Repo::open(&fx.root).unwrap();
        repo.watch_worktree().unwrap();
        repo.fingerprint().unwrap();
        for round in 0..20 {
            // A burst of new files, which nothing but the watch can name,
            // so that the watch's thread is still at work when the
            // checkpoint begins.
            for file in 0..100 {
                fx.write(format!("src/r{round}/n{file}.txt"), "new\n");
            }
            let checkpoint = repo.checkpoint(&format!("round {round}")).unwrap();
            assert!(
                matches!(repo.last_scan(), Some(Scan::Watched { .. })),
                "round {round}: {:?}",
                repo.last_scan()
            );
            assert_eq!(
                checkpoint.tree.to_string(),
                fx.oracle_tree(),
                "round {round}"
            );
            assert_eq!(
                fx.git(&["--no-optional-locks", "status", "--porcelain"]),
                "",
                "round {round}"
            );
        }
        fx.assert_fsck_clean();
    }

    /// The first operation after the watch starts has no baseline, and a
    /// changed info/exclude may change what is ignored anywhere: both scan
    /// in full. An index another program wrote (an agent's `git add` or
    /// `git status`) only adds the entries that differ.
    #[test]
    fn issue_24_without_a_trusted_baseline_the_scan_is_full() {
        let fx = Fixture::new();
        let mut repo = Repo::open(&fx.root).unwrap();
        assert_eq!(repo.last_scan(), None);
        repo.watch_worktree().unwrap();
        fx.write("src/a.txt", "one\n");
        repo.checkpoint("first").unwrap();
        assert!(matches!(repo.last_scan(), Some(Scan::Full { .. })));

        fx.write("src/a.txt", "two\n");
        repo.checkpoint("second").unwrap();
        assert!(matches!(repo.last_scan(), Some(Scan::Watched { .. })));

        // `git add` rewrites the index behind the engine's back, and `git
        // status` refreshes it.
        fx.write("docs/keep.txt", "changed\n");
        fx.git(&["add", "docs/keep.txt"]);
        fx.git(&["status", "--porcelain"]);
        fx.git(&["rm", "-q", "--cached", "run.sh"]);
        fx.write("src/a.txt", "three\n");
        let checkpoint = repo.checkpoint("third").unwrap();
        assert!(matches!(repo.last_scan(), Some(Scan::Watched { .. })));
        assert_eq!(checkpoint.tree.to_string(), fx.oracle_tree());

        fx.write(".git/info/exclude", "*.txt\n");
        fx.write("new.txt", "ignored now\n");
        let checkpoint = repo.checkpoint("fourth").unwrap();
        let Some(Scan::Full { why }) = repo.last_scan() else {
            panic!("a changed info/exclude must mean a full scan");
        };
        assert!(why.contains("exclude"), "{why}");
        assert_eq!(checkpoint.tree.to_string(), fx.oracle_tree());

        repo.stop_watching();
        fx.write("src/a.txt", "four\n");
        repo.checkpoint("fifth").unwrap();
        assert_eq!(repo.last_scan(), None);
        assert_eq!(fx.status(), "");
        fx.assert_fsck_clean();
    }

    /// A tracked file rewritten with the same size in the second git wrote
    /// the index looks unchanged by its stat data; only the index's time
    /// tells that it must be read. The slice of the index a watched scan
    /// compares must keep that time, or the rewrite goes unseen once the
    /// clock has moved on.
    #[test]
    fn issue_24_a_same_size_rewrite_in_the_index_second_is_seen() {
        use std::os::unix::fs::MetadataExt;
        let second = |fx: &Fixture| std::fs::metadata(fx.path("docs/keep.txt")).unwrap().mtime();
        for _ in 0..5 {
            let fx = Fixture::new();
            let written = second(&fx);
            let mut repo = Repo::open(&fx.root).unwrap();
            repo.watch_worktree().unwrap();
            repo.fingerprint().unwrap();
            fx.write("docs/keep.txt", "*\n!y\n");
            if second(&fx) != written {
                continue;
            }
            std::thread::sleep(std::time::Duration::from_millis(1100));
            repo.revert().unwrap();
            assert!(matches!(repo.last_scan(), Some(Scan::Watched { .. })));
            assert_eq!(fx.read("docs/keep.txt"), "keep\n");
            return;
        }
        panic!("could not rewrite the file within the second it was written");
    }
}
