//! The checkpoint engine against git on random worktree histories.
//!
//! Hand-written cases cover the situations someone thought of; these cover
//! the ones nobody did. Each case mutates a fixture repository at random
//! (files, modes, symlinks, file/directory swaps, ignored files, unusual
//! names, CRLF and binary content) and then checkpoints, or preserves and
//! reverts, a few times over. After every engine operation the result is
//! compared with what the git CLI does to an identical copy of the
//! repository. The path alphabet is tiny on purpose, so that operations
//! collide and paths flip between file, symlink and directory often.
//!
//! `PROPTEST_CASES` sets the number of cases (64 by default).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::fixture::*;
use git_ralph::git::Repo;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;

/// One thing an agent might do to the worktree. Operations that do not apply
/// (deleting what is not there, chmod on a directory, anything below a file
/// or a symlink) do nothing.
#[derive(Debug, Clone)]
enum Mutation {
    /// Create a regular file, or rewrite one keeping its mode.
    Write {
        path: String,
        content: &'static str,
    },
    /// Remove a file, a symlink, or a directory with all it holds.
    Delete {
        path: String,
    },
    SetExecutable {
        path: String,
        executable: bool,
    },
    /// Create a symlink, replacing whatever is in the way.
    Symlink {
        path: String,
        target: &'static str,
    },
    /// Put a directory where a file or symlink was (or nothing was), empty
    /// or holding one file.
    MakeDir {
        path: String,
        child: Option<(&'static str, &'static str)>,
    },
    /// Put a regular file where a directory was.
    DirToFile {
        path: String,
        content: &'static str,
    },
}

/// How a round of mutations ends.
#[derive(Debug, Clone, Copy)]
enum Finish {
    Checkpoint,
    Revert,
    /// What a failed attempt goes through: its work is kept under a ref,
    /// then thrown away.
    PreserveThenRevert,
}

#[derive(Debug, Clone)]
struct Round {
    mutations: Vec<Mutation>,
    finish: Finish,
}

/// Directories the generated paths live in: the worktree root first, then
/// the fixture's own `src` and `docs`, fresh ones, and ignored `target/`
/// directories.
const PARENTS: &[&str] = &[
    "", "a", "b", "a/c", "src", "docs", "d/e", "target", "a/target",
];

/// Leaf names: some collide with the directories above, `z.log` is ignored,
/// `.gitignore` changes what is ignored, the rest are names that trip up path
/// handling.
const LEAVES: &[&str] = &[
    "x",
    "y",
    "ü",
    "sp ace",
    "日本",
    "e\u{301}",
    "a",
    "c",
    "src",
    "z.log",
    "link",
    "a.txt",
    ".gitignore",
];

/// Contents of equal length (`one`/`two`) make same-size rewrites, which only
/// a content check, not the stat cache, can tell apart. The last two are
/// also ignore rules, for when they land in a `.gitignore`.
const CONTENTS: &[&str] = &[
    "",
    "one\n",
    "two\n",
    "crlf\r\nline\r\n",
    "no newline",
    "nul\0byte\n",
    "x\n",
    "*\n!y\n",
];

/// Existing, dangling, escaping and self-referencing targets.
const LINK_TARGETS: &[&str] = &["x", "a", "a/x", "../x", "missing", "ü", "src/a.txt", "."];

/// Paths the fixture starts with, so that tracked files get hit as well.
const FIXTURE_PATHS: &[&str] = &[
    "src/a.txt",
    "docs/keep.txt",
    "docs/remove-me.txt",
    "run.sh",
    "link",
    ".gitignore",
];

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (select(PARENTS), select(LEAVES)).prop_map(|(parent, leaf)| {
            if parent.is_empty() {
                leaf.to_owned()
            } else {
                format!("{parent}/{leaf}")
            }
        }),
        1 => select(FIXTURE_PATHS).prop_map(ToOwned::to_owned),
        1 => select(&PARENTS[1..]).prop_map(ToOwned::to_owned),
    ]
}

fn content() -> impl Strategy<Value = &'static str> {
    select(CONTENTS)
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        5 => (path(), content()).prop_map(|(path, content)| Mutation::Write { path, content }),
        2 => path().prop_map(|path| Mutation::Delete { path }),
        2 => (path(), any::<bool>()).prop_map(|(path, executable)| Mutation::SetExecutable { path, executable }),
        2 => (path(), select(LINK_TARGETS)).prop_map(|(path, target)| Mutation::Symlink { path, target }),
        2 => (path(), proptest::option::weighted(0.8, (select(&["x", "z.log", "ü"][..]), content())))
            .prop_map(|(path, child)| Mutation::MakeDir { path, child }),
        1 => (path(), content()).prop_map(|(path, content)| Mutation::DirToFile { path, content }),
    ]
}

fn round() -> impl Strategy<Value = Round> {
    (
        proptest::collection::vec(mutation(), 1..=12),
        prop_oneof![
            2 => Just(Finish::Checkpoint),
            1 => Just(Finish::Revert),
            1 => Just(Finish::PreserveThenRevert),
        ],
    )
        .prop_map(|(mutations, finish)| Round { mutations, finish })
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        // Failures found here become named regression tests below instead.
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn engine_agrees_with_git(rounds in proptest::collection::vec(round(), 1..=4)) {
        run_case(&rounds)?;
    }
}

/// Apply `rounds` to a fresh fixture, checking every engine operation
/// against git.
fn run_case(rounds: &[Round]) -> Result<(), TestCaseError> {
    let fx = Fixture::new();
    let mut repo = Repo::open(&fx.root).map_err(|err| failed("open", &err))?;
    for (number, round) in rounds.iter().enumerate() {
        for mutation in &round.mutations {
            apply(&fx.root, mutation);
        }
        match round.finish {
            Finish::Checkpoint => check_checkpoint(&fx, &mut repo, number)?,
            Finish::Revert => check_revert(&fx, &mut repo)?,
            Finish::PreserveThenRevert => {
                check_preserve(&fx, &mut repo, number)?;
                check_revert(&fx, &mut repo)?;
            }
        }
    }
    fx.assert_fsck_clean();
    Ok(())
}

fn check_checkpoint(fx: &Fixture, repo: &mut Repo, number: usize) -> Result<(), TestCaseError> {
    let expected = fx.oracle_tree();
    let head_before = fx.git(&["rev-parse", "HEAD"]);
    let head_tree_before = fx.git(&["rev-parse", "HEAD^{tree}"]);
    let listing_before = listing(&fx.root);

    let fingerprint = repo
        .fingerprint()
        .map_err(|err| failed("fingerprint", &err))?;
    prop_assert_eq!(
        fingerprint.to_string(),
        expected.clone(),
        "fingerprint differs from git add -A"
    );

    let checkpoint = repo
        .checkpoint(&format!("round {number}"))
        .map_err(|err| failed("checkpoint", &err))?;
    prop_assert_eq!(
        checkpoint.tree.to_string(),
        expected.clone(),
        "checkpoint tree differs from git add -A"
    );
    prop_assert_eq!(fx.git(&["rev-parse", "HEAD^{tree}"]), expected.clone());
    prop_assert_eq!(
        fx.git(&["rev-parse", "HEAD"]),
        checkpoint.commit.to_string()
    );
    prop_assert_eq!(fx.git(&["rev-parse", "HEAD^"]), head_before);
    prop_assert_eq!(
        checkpoint.changed,
        expected != head_tree_before,
        "changed flag is wrong"
    );
    prop_assert_eq!(
        status(fx),
        "",
        "the index must match the worktree after a checkpoint"
    );
    compare_listings(
        &listing_before,
        &listing(&fx.root),
        "a checkpoint changed the worktree",
    )
}

fn check_preserve(fx: &Fixture, repo: &mut Repo, number: usize) -> Result<(), TestCaseError> {
    let expected = fx.oracle_tree();
    let head_before = fx.git(&["rev-parse", "HEAD"]);
    let status_before = status(fx);
    let index_before = fx.index_bytes();
    let listing_before = listing(&fx.root);
    let refname = format!("refs/ralph/props/attempts/1/{number}");

    let commit = repo
        .preserve(&refname, "attempt")
        .map_err(|err| failed("preserve", &err))?;
    prop_assert_eq!(fx.git(&["rev-parse", &refname]), commit.to_string());
    prop_assert_eq!(
        fx.git(&["rev-parse", &format!("{refname}^{{tree}}")]),
        expected,
        "preserved tree differs from git add -A"
    );
    prop_assert_eq!(
        fx.git(&["rev-parse", &format!("{refname}^")]),
        head_before.clone()
    );
    prop_assert_eq!(fx.git(&["rev-parse", "HEAD"]), head_before);
    prop_assert!(
        fx.index_bytes() == index_before,
        "preserve rewrote the index"
    );
    prop_assert_eq!(status(fx), status_before);
    compare_listings(
        &listing_before,
        &listing(&fx.root),
        "preserve changed the worktree",
    )
}

fn check_revert(fx: &Fixture, repo: &mut Repo) -> Result<(), TestCaseError> {
    let head_before = fx.git(&["rev-parse", "HEAD"]);
    let expected = reset_and_clean_on_copy(fx);

    repo.revert().map_err(|err| failed("revert", &err))?;

    compare_listings(
        &listing(expected.path()),
        &listing(&fx.root),
        "revert left a worktree other than git reset --hard && git clean -fd",
    )?;
    prop_assert_eq!(fx.git(&["rev-parse", "HEAD"]), head_before);
    // Usually clean; but git clean keeps files ignored only by an untracked
    // .gitignore that it deletes, and then lists them as untracked too.
    prop_assert_eq!(
        status(fx),
        status_in(expected.path(), fx),
        "git status after a revert must be what git leaves"
    );
    Ok(())
}

/// `git status --porcelain -uall` without refreshing the index: a refresh
/// would repair stat data the engine left behind before the engine reads it
/// again, and hide what the engine does with it.
fn status(fx: &Fixture) -> String {
    fx.git(&["--no-optional-locks", "status", "--porcelain", "-uall"])
}

/// The same status, in the copy git reset and cleaned.
fn status_in(dir: &std::path::Path, fx: &Fixture) -> String {
    fx.git_at(
        dir,
        &["--no-optional-locks", "status", "--porcelain", "-uall"],
    )
}

/// An engine error as a test failure, with every cause in its chain.
fn failed(operation: &str, err: &dyn std::error::Error) -> TestCaseError {
    let mut message = format!("{operation} failed: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(&format!("\n  caused by: {cause}"));
        source = cause.source();
    }
    TestCaseError::fail(message)
}

/// A copy of the repository after `git reset --hard && git clean -fd`.
fn reset_and_clean_on_copy(fx: &Fixture) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", fx.root.display()))
        .arg(copy.path())
        .status()
        .expect("cp runs");
    assert!(status.success(), "could not copy the repository");
    fx.git_at(copy.path(), &["reset", "-q", "--hard"]);
    fx.git_at(copy.path(), &["clean", "-q", "-f", "-d"]);
    copy
}

// Mutations.

impl Mutation {
    fn path(&self) -> &str {
        match self {
            Mutation::Write { path, .. }
            | Mutation::Delete { path }
            | Mutation::SetExecutable { path, .. }
            | Mutation::Symlink { path, .. }
            | Mutation::MakeDir { path, .. }
            | Mutation::DirToFile { path, .. } => path,
        }
    }
}

fn apply(root: &Path, mutation: &Mutation) {
    // Through a symlinked directory a mutation would land somewhere else,
    // possibly outside the worktree.
    if !parents_are_dirs(root, mutation.path()) {
        return;
    }
    match mutation {
        Mutation::Write { path, content } => {
            let full = root.join(path);
            match kind_at(&full) {
                Some(Kind::File) => write(&full, content),
                None if make_parents(root, path) => write(&full, content),
                _ => {}
            }
        }
        Mutation::Delete { path } => remove_any(&root.join(path)),
        Mutation::SetExecutable { path, executable } => {
            let full = root.join(path);
            if kind_at(&full) == Some(Kind::File) {
                let mode = if *executable { 0o755 } else { 0o644 };
                std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode))
                    .expect("chmod");
            }
        }
        // git itself commits a symlinked .gitignore, but fsck --strict
        // rejects the result, so the end-of-case check could not hold.
        Mutation::Symlink { path, .. } if path.ends_with(".gitignore") => {}
        Mutation::Symlink { path, target } => {
            let full = root.join(path);
            let ready = match kind_at(&full) {
                Some(_) => {
                    remove_any(&full);
                    true
                }
                None => make_parents(root, path),
            };
            if ready {
                std::os::unix::fs::symlink(target, &full).expect("symlink");
            }
        }
        Mutation::MakeDir { path, child } => {
            let full = root.join(path);
            let ready = match kind_at(&full) {
                Some(Kind::File | Kind::Symlink) => {
                    remove_any(&full);
                    true
                }
                Some(Kind::Dir) => false,
                None => make_parents(root, path),
            };
            if ready {
                std::fs::create_dir(&full).expect("mkdir");
                if let Some((name, content)) = child {
                    write(&full.join(name), content);
                }
            }
        }
        Mutation::DirToFile { path, content } => {
            let full = root.join(path);
            if kind_at(&full) == Some(Kind::Dir) {
                remove_any(&full);
                write(&full, content);
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink,
}

/// What is at `path` itself, symlinks not followed.
fn kind_at(path: &Path) -> Option<Kind> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    let kind = metadata.file_type();
    Some(if kind.is_symlink() {
        Kind::Symlink
    } else if kind.is_dir() {
        Kind::Dir
    } else {
        Kind::File
    })
}

/// Whether everything above `rel` is a real directory or missing.
fn parents_are_dirs(root: &Path, rel: &str) -> bool {
    let mut at = root.to_path_buf();
    for component in Path::new(rel)
        .parent()
        .into_iter()
        .flat_map(Path::components)
    {
        at.push(component);
        match kind_at(&at) {
            Some(Kind::Dir) => {}
            None => return true,
            Some(Kind::File | Kind::Symlink) => return false,
        }
    }
    true
}

/// Create the missing directories above `rel`; `false` when a file or a
/// symlink is in the way.
fn make_parents(root: &Path, rel: &str) -> bool {
    let Some(parent) = Path::new(rel).parent() else {
        return true;
    };
    let mut at = root.to_path_buf();
    for component in parent.components() {
        at.push(component);
        match kind_at(&at) {
            Some(Kind::Dir) => {}
            None => std::fs::create_dir(&at).expect("mkdir"),
            Some(Kind::File | Kind::Symlink) => return false,
        }
    }
    true
}

fn write(path: &Path, content: &str) {
    std::fs::write(path, content).expect("write");
}

fn remove_any(path: &Path) {
    match kind_at(path) {
        Some(Kind::Dir) => std::fs::remove_dir_all(path).expect("rm -r"),
        Some(Kind::File | Kind::Symlink) => std::fs::remove_file(path).expect("rm"),
        None => {}
    }
}

// Worktree listings.

/// Everything an observer of the worktree can see of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Dir,
    File {
        /// The `0o111` bits, in octal.
        executable_bits: String,
        content: Content,
    },
    Symlink {
        target: PathBuf,
    },
}

/// File content, shown escaped in failure reports.
#[derive(Clone, PartialEq, Eq)]
struct Content(Vec<u8>);

impl std::fmt::Debug for Content {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}

/// Every entry under `root` but `.git`, ignored files included.
fn listing(root: &Path) -> BTreeMap<PathBuf, Seen> {
    let mut seen = BTreeMap::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(root.join(&dir)).expect("read_dir");
        for entry in entries {
            let entry = entry.expect("a directory entry");
            let rel = dir.join(entry.file_name());
            if rel == Path::new(".git") {
                continue;
            }
            let full = root.join(&rel);
            let metadata = std::fs::symlink_metadata(&full).expect("lstat");
            let kind = metadata.file_type();
            let item = if kind.is_symlink() {
                Seen::Symlink {
                    target: std::fs::read_link(&full).expect("readlink"),
                }
            } else if kind.is_dir() {
                pending.push(rel.clone());
                Seen::Dir
            } else {
                Seen::File {
                    executable_bits: format!("{:#o}", metadata.permissions().mode() & 0o111),
                    content: Content(std::fs::read(&full).expect("read")),
                }
            };
            seen.insert(rel, item);
        }
    }
    seen
}

/// Fail with every path whose entry differs, so a failure reads as a diff.
fn compare_listings(
    expected: &BTreeMap<PathBuf, Seen>,
    actual: &BTreeMap<PathBuf, Seen>,
    what: &str,
) -> Result<(), TestCaseError> {
    let mut differences = Vec::new();
    for path in expected
        .keys()
        .chain(actual.keys().filter(|path| !expected.contains_key(*path)))
    {
        let (want, got) = (expected.get(path), actual.get(path));
        if want != got {
            differences.push(format!(
                "  {}: expected {:?}, found {:?}",
                path.display(),
                want,
                got
            ));
        }
    }
    if differences.is_empty() {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "{what}:\n{}",
            differences.join("\n")
        )))
    }
}

// Fixed histories: what the generator has found, kept so it stays found.

fn run_fixed(rounds: &[Round]) {
    if let Err(err) = run_case(rounds) {
        panic!("{err}");
    }
}

fn fixed_round(mutations: Vec<Mutation>, finish: Finish) -> Round {
    Round { mutations, finish }
}

fn write_op(path: &str, content: &'static str) -> Mutation {
    Mutation::Write {
        path: path.to_owned(),
        content,
    }
}

fn symlink_op(path: &str, target: &'static str) -> Mutation {
    Mutation::Symlink {
        path: path.to_owned(),
        target,
    }
}

/// `git clean` runs after `git reset --hard` has put the committed
/// `.gitignore` back, so what it ignores survives a revert even when the
/// attempt emptied `.gitignore`.
#[test]
fn revert_keeps_files_the_committed_gitignore_ignores() {
    run_fixed(&[fixed_round(
        vec![write_op(".gitignore", ""), write_op("target/x", "")],
        Finish::Revert,
    )]);
}

/// The converse: a file only the attempt's own ignore rule covered is
/// untracked once `.gitignore` is restored, so the revert removes it.
#[test]
fn revert_removes_files_only_the_discarded_gitignore_ignores() {
    run_fixed(&[fixed_round(
        vec![
            write_op(".gitignore", "*.log\ntarget/\nx\n"),
            write_op("x", "one\n"),
        ],
        Finish::Revert,
    )]);
}

/// An executable that became a dangling symlink is a type change to git.
/// The revert leaves `run.sh` with no trusted stat data (it was just
/// written), so its content is compared, and that must not follow the link.
#[test]
fn an_executable_replaced_by_a_dangling_symlink_is_a_type_change() {
    run_fixed(&[
        fixed_round(vec![write_op("run.sh", "one\n")], Finish::Revert),
        fixed_round(vec![symlink_op("run.sh", "missing")], Finish::Checkpoint),
    ]);
}

/// `git reset --hard` deletes a directory standing where a tracked file
/// belongs, ignored contents and all, and never writes a tracked path
/// through a symlink that replaced one of its directories.
#[test]
fn revert_undoes_swaps_under_ignored_files_and_symlinks() {
    run_fixed(&[
        fixed_round(vec![write_op("a/x", "one\n")], Finish::Checkpoint),
        fixed_round(
            vec![Mutation::MakeDir {
                path: "a/x".to_owned(),
                child: Some(("z.log", "two\n")),
            }],
            Finish::Revert,
        ),
        fixed_round(
            vec![write_op("b/x", "two\n"), write_op("b/y", "one\n")],
            Finish::Checkpoint,
        ),
        fixed_round(
            vec![symlink_op("b", "a"), write_op("a/y", "one\n")],
            Finish::PreserveThenRevert,
        ),
    ]);
}
