//! The agents as they really behave, against the checkpoint engine: the
//! files an agent keeps for itself in the worktree (Aider's chat history and
//! tag cache) are left out of checkpoints, preserved attempts and the
//! no-progress fingerprint, and a revert leaves them as the agent left them.
//! Git itself judges the result.

use crate::harness::TestRepo;
use git_ralph::agent::presets;
use git_ralph::git::Repo;

const HISTORY: &str = ".aider.chat.history.md";
const CACHE: &str = ".aider.tags.cache.v4/cache.db";

fn project() -> TestRepo {
    let repo = TestRepo::new();
    repo.git(&["config", "user.name", "Ralph Test"]);
    repo.git(&["config", "user.email", "ralph@example.com"]);
    // Aider's configuration is the user's, and may be committed.
    repo.write(".aider.conf.yml", "model: sonnet\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Configure aider"]);
    repo
}

fn aider_repo(repo: &TestRepo) -> Repo {
    Repo::open(&repo.root)
        .expect("the repository opens")
        .with_scratch(presets::scratch_of("aider"))
}

fn files_of(repo: &TestRepo, rev: &str) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Issue 14: Aider's history and cache landed in story checkpoints.
#[test]
fn an_agents_own_files_stay_out_of_checkpoints_and_survive_reverts() {
    let repo = project();
    repo.write(HISTORY, "# aider chat started\n");
    repo.write(CACHE, "cache\n");
    repo.write("hello.txt", "hello\n");
    repo.write(".aider.conf.yml", "model: opus\n");
    let mut engine = aider_repo(&repo);

    let checkpoint = engine
        .checkpoint("ralph(x): story 1")
        .expect("a checkpoint");
    assert!(checkpoint.changed);
    assert_eq!(
        files_of(&repo, "HEAD"),
        [".aider.conf.yml", "README.md", "hello.txt"]
    );
    assert_eq!(repo.git(&["show", "HEAD:.aider.conf.yml"]), "model: opus\n");
    assert_eq!(
        repo.status_porcelain(),
        format!("?? {HISTORY}\n?? {CACHE}\n"),
        "the agent's files stay untracked"
    );

    // The agent talks more and caches more, nothing else: no progress.
    repo.write(HISTORY, "# aider chat started\nmore\n");
    repo.write(".aider.tags.cache.v4/cache.db-wal", "wal\n");
    let head_tree = repo.rev_parse("HEAD^{tree}");
    assert_eq!(
        engine.fingerprint().expect("a fingerprint").to_string(),
        head_tree
    );

    // A failed attempt: preserved without the agent's files, then reverted
    // around them.
    repo.write("hello.txt", "broken\n");
    repo.write("junk/stray.txt", "stray\n");
    let preserved = engine
        .preserve("refs/ralph/x/attempts/2/1", "ralph(x): attempt 2.1")
        .expect("preserved");
    assert_eq!(
        files_of(&repo, &preserved.to_string()),
        [
            ".aider.conf.yml",
            "README.md",
            "hello.txt",
            "junk/stray.txt"
        ]
    );
    engine.revert().expect("reverted");
    assert_eq!(repo.read("hello.txt"), "hello\n");
    assert!(!repo.path("junk").exists(), "the attempt's own files go");
    assert_eq!(repo.read(HISTORY), "# aider chat started\nmore\n");
    assert_eq!(repo.read(CACHE), "cache\n");
    assert_eq!(
        repo.status_porcelain(),
        format!("?? {HISTORY}\n?? {CACHE}\n?? .aider.tags.cache.v4/cache.db-wal\n")
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_tracked_scratch_file_keeps_its_committed_content_in_checkpoints() {
    let repo = project();
    repo.write(HISTORY, "committed by the user\n");
    repo.git(&["add", HISTORY]);
    repo.git(&["commit", "-q", "-m", "Keep the chat history"]);
    repo.write(HISTORY, "committed by the user\nand the agent's turn\n");
    repo.write("hello.txt", "hello\n");
    let mut engine = aider_repo(&repo);

    engine
        .checkpoint("ralph(x): story 1")
        .expect("a checkpoint");
    assert_eq!(
        repo.git(&["show", &format!("HEAD:{HISTORY}")]),
        "committed by the user\n"
    );
    repo.write("hello.txt", "broken\n");
    engine.revert().expect("reverted");
    assert_eq!(repo.read("hello.txt"), "hello\n");
    assert_eq!(
        repo.read(HISTORY),
        "committed by the user\nand the agent's turn\n",
        "a revert does not take the agent's history back"
    );
    assert_eq!(repo.status_porcelain(), format!(" M {HISTORY}\n"));
    repo.assert_fsck_clean();
}

#[test]
fn without_scratch_files_the_engine_is_git_add_all() {
    let repo = project();
    repo.write(HISTORY, "history\n");
    let mut engine = Repo::open(&repo.root).expect("the repository opens");
    let expected = repo.write_tree_of_worktree_copy();
    let checkpoint = engine
        .checkpoint("ralph(x): story 1")
        .expect("a checkpoint");
    assert_eq!(checkpoint.tree.to_string(), expected);
    assert!(files_of(&repo, "HEAD").contains(&HISTORY.to_owned()));
    engine.set_scratch(&[HISTORY]);
    repo.write(HISTORY, "history\nmore\n");
    let head_tree = repo.rev_parse("HEAD^{tree}");
    assert_eq!(
        engine.fingerprint().expect("a fingerprint").to_string(),
        head_tree
    );
}
