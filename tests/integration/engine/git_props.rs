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
use git_ralph::git::{Repo, Scan};
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
    /// Move a file, symlink or directory to a path where nothing is.
    Rename {
        path: String,
        to: String,
    },
    /// Create directories three deep under `path` and fill them with
    /// `files` files each, as fast as possible: the watch learns of each new
    /// directory only after it exists, and the operation starts right after
    /// the last write, while its events are still on their way (the cookie
    /// race).
    Burst {
        path: String,
        files: usize,
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
        2 => (path(), path()).prop_map(|(path, to)| Mutation::Rename { path, to }),
        1 => (path(), 1..40usize).prop_map(|(path, files)| Mutation::Burst { path, files }),
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
        run_case(&rounds, Scanning::Full)?;
    }

    /// The same, with the worktree watched, as a loop runs: every operation
    /// after the first looks only at the paths the watch reported, and the
    /// index is written split (every write, however small the index), which
    /// git reads in every comparison; at the end it is handed back whole.
    #[test]
    fn issue_24_engine_agrees_with_git_when_watching(
        rounds in proptest::collection::vec(round(), 1..=4)
    ) {
        run_case(&rounds, Scanning::Watched)?;
    }
}

/// Whether the engine looks at every file or only at what a watch saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scanning {
    Full,
    Watched,
}

/// Apply `rounds` to a fresh fixture, checking every engine operation
/// against git.
fn run_case(rounds: &[Round], scanning: Scanning) -> Result<(), TestCaseError> {
    let fx = Fixture::new();
    // Old directories are what a full scan keeps in its directory cache:
    // the rounds then change some of them behind it.
    fx.age_directories();
    // Files older than the index are settled on their stat data alone.
    fx.age_files();
    let mut repo = Repo::open(&fx.root).map_err(|err| failed("open", &err))?;
    if scanning == Scanning::Watched {
        repo.watch_worktree().map_err(|err| failed("watch", &err))?;
        repo.write_index_split(0);
        // The full scan every later, watched one builds on.
        repo.fingerprint()
            .map_err(|err| failed("fingerprint", &err))?;
    }
    for (number, round) in rounds.iter().enumerate() {
        for mutation in &round.mutations {
            apply(&fx.root, mutation);
        }
        match round.finish {
            Finish::Checkpoint => check_checkpoint(&fx, &mut repo, number, scanning)?,
            Finish::Revert => check_revert(&fx, &mut repo, scanning)?,
            Finish::PreserveThenRevert => {
                check_preserve(&fx, &mut repo, number, scanning)?;
                check_revert(&fx, &mut repo, scanning)?;
            }
        }
    }
    if scanning == Scanning::Watched {
        let split = status(&fx);
        repo.settle_index()
            .map_err(|err| failed("settle the index", &err))?;
        prop_assert_eq!(status(&fx), split, "the index settled whole is another");
        let left: Vec<_> = std::fs::read_dir(fx.root.join(".git"))
            .unwrap()
            .flatten()
            .filter(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with("sharedindex.")
            })
            .map(|entry| entry.file_name())
            .collect();
        prop_assert!(left.is_empty(), "shared indexes left: {:?}", left);
    }
    fx.assert_fsck_clean();
    Ok(())
}

/// A watched operation must really have been watched: only a touched
/// top-level `.gitignore`, which changes what is ignored everywhere, may
/// send it back to a full scan.
fn check_scan(repo: &Repo, scanning: Scanning, operation: &str) -> Result<(), TestCaseError> {
    if scanning == Scanning::Full {
        return Ok(());
    }
    match repo.last_scan() {
        Some(Scan::Watched { .. }) => Ok(()),
        Some(Scan::Full { why }) if why.contains("top .gitignore") => Ok(()),
        other => Err(TestCaseError::fail(format!(
            "the {operation} was not watched: {other:?}"
        ))),
    }
}

fn check_checkpoint(
    fx: &Fixture,
    repo: &mut Repo,
    number: usize,
    scanning: Scanning,
) -> Result<(), TestCaseError> {
    let expected = fx.oracle_tree();
    let head_before = fx.git(&["rev-parse", "HEAD"]);
    let head_tree_before = fx.git(&["rev-parse", "HEAD^{tree}"]);
    let listing_before = listing(&fx.root);

    let fingerprint = repo
        .fingerprint()
        .map_err(|err| failed("fingerprint", &err))?;
    check_scan(repo, scanning, "fingerprint")?;
    same_tree(
        fx,
        &fingerprint.to_string(),
        &expected,
        &format!("fingerprint of round {number}"),
    )?;

    let checkpoint = repo
        .checkpoint(&format!("round {number}"))
        .map_err(|err| failed("checkpoint", &err))?;
    check_scan(repo, scanning, "checkpoint")?;
    same_tree(
        fx,
        &checkpoint.tree.to_string(),
        &expected,
        &format!("checkpoint of round {number}"),
    )?;
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

fn check_preserve(
    fx: &Fixture,
    repo: &mut Repo,
    number: usize,
    scanning: Scanning,
) -> Result<(), TestCaseError> {
    let expected = fx.oracle_tree();
    let head_before = fx.git(&["rev-parse", "HEAD"]);
    let status_before = status(fx);
    let index_before = fx.index_bytes();
    let listing_before = listing(&fx.root);
    let refname = format!("refs/ralph/props/attempts/1/{number}");

    let commit = repo
        .preserve(&refname, "attempt")
        .map_err(|err| failed("preserve", &err))?;
    check_scan(repo, scanning, "preserve")?;
    prop_assert_eq!(fx.git(&["rev-parse", &refname]), commit.to_string());
    same_tree(
        fx,
        &fx.git(&["rev-parse", &format!("{refname}^{{tree}}")]),
        &expected,
        &format!("preserved tree of round {number}"),
    )?;
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

fn check_revert(fx: &Fixture, repo: &mut Repo, scanning: Scanning) -> Result<(), TestCaseError> {
    let head_before = fx.git(&["rev-parse", "HEAD"]);
    let expected = reset_and_clean_on_copy(fx);

    repo.revert().map_err(|err| failed("revert", &err))?;
    check_scan(repo, scanning, "revert")?;

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

/// The engine's tree must be git's; if not, say which paths differ.
fn same_tree(fx: &Fixture, ours: &str, git: &str, what: &str) -> Result<(), TestCaseError> {
    if ours == git {
        return Ok(());
    }
    // git's tree was written in a copy: list both there.
    let copy = copy_of(fx);
    fx.git_at(copy.path(), &["add", "-A"]);
    fx.git_at(copy.path(), &["write-tree"]);
    let differences = fx.git_at(copy.path(), &["diff-tree", "-r", git, ours]);
    Err(TestCaseError::fail(format!(
        "the {what} differs from git add -A (git's tree to ours):\n{differences}"
    )))
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

/// A copy of the repository, worktree, index and all.
fn copy_of(fx: &Fixture) -> tempfile::TempDir {
    let copy = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", fx.root.display()))
        .arg(copy.path())
        .status()
        .expect("cp runs");
    assert!(status.success(), "could not copy the repository");
    copy
}

/// A copy of the repository after `git reset --hard && git clean -fd`.
fn reset_and_clean_on_copy(fx: &Fixture) -> tempfile::TempDir {
    let copy = copy_of(fx);
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
            | Mutation::DirToFile { path, .. }
            | Mutation::Rename { path, .. }
            | Mutation::Burst { path, .. } => path,
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
        Mutation::Rename { path, to } => {
            let (from, dest) = (root.join(path), root.join(to));
            let Some(kind) = kind_at(&from) else { return };
            // A directory cannot move into itself, and a symlinked
            // .gitignore is refused as above.
            let into_itself = to == path || to.starts_with(&format!("{path}/"));
            let linked_rules = kind == Kind::Symlink && to.ends_with(".gitignore");
            if into_itself
                || linked_rules
                || !parents_are_dirs(root, to)
                || kind_at(&dest).is_some()
                || !make_parents(root, to)
            {
                return;
            }
            std::fs::rename(&from, &dest).expect("rename");
        }
        Mutation::Burst { path, files } => {
            if !parents_are_dirs(root, path) || kind_at(&root.join(path)).is_some() {
                return;
            }
            let mut dir = root.join(path);
            for depth in 0..3 {
                dir = dir.join(format!("b{depth}"));
                std::fs::create_dir_all(&dir).expect("mkdir");
                for file in 0..*files {
                    std::fs::write(dir.join(format!("f{file}.txt")), format!("{file}\n"))
                        .expect("write");
                }
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
    for scanning in [Scanning::Full, Scanning::Watched] {
        if let Err(err) = run_case(rounds, scanning) {
            panic!("{scanning:?}: {err}");
        }
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

// Watched scans: each kind of change a watch must not lose, run in both
// modes by `run_fixed`.

/// A tracked directory moved elsewhere: the watch reports the two names
/// only, never the files inside.
#[test]
fn issue_24_a_renamed_directory_is_seen_at_both_ends() {
    run_fixed(&[
        Round {
            mutations: vec![Mutation::Rename {
                path: "docs".to_owned(),
                to: "a/c".to_owned(),
            }],
            finish: Finish::Checkpoint,
        },
        Round {
            mutations: vec![Mutation::Rename {
                path: "a".to_owned(),
                to: "docs".to_owned(),
            }],
            finish: Finish::PreserveThenRevert,
        },
    ]);
}

/// Deleting the last file of a directory leaves it empty, and `git clean
/// -fd` deletes the empty directory too, though nothing touched it.
#[test]
fn issue_24_a_directory_emptied_by_deletions_is_cleaned() {
    run_fixed(&[
        Round {
            mutations: vec![Mutation::Delete {
                path: "src/a.txt".to_owned(),
            }],
            finish: Finish::Checkpoint,
        },
        Round {
            mutations: vec![write_op("x", "")],
            finish: Finish::Revert,
        },
    ]);
}

/// A directory replaced by a file, and a file by a directory, both ways.
#[test]
fn issue_24_directories_and_files_swap_places() {
    run_fixed(&[
        Round {
            mutations: vec![Mutation::DirToFile {
                path: "docs".to_owned(),
                content: "one\n",
            }],
            finish: Finish::Checkpoint,
        },
        Round {
            mutations: vec![Mutation::MakeDir {
                path: "docs".to_owned(),
                child: Some(("x", "two\n")),
            }],
            finish: Finish::PreserveThenRevert,
        },
    ]);
}

/// A symlink where a tracked directory was, and files written through
/// another symlink's target.
#[test]
fn issue_24_symlinks_replace_directories_and_files() {
    run_fixed(&[
        Round {
            mutations: vec![
                Mutation::Symlink {
                    path: "src".to_owned(),
                    target: "docs",
                },
                Mutation::Symlink {
                    path: "docs/keep.txt".to_owned(),
                    target: "missing",
                },
            ],
            finish: Finish::Checkpoint,
        },
        Round {
            mutations: vec![Mutation::Delete {
                path: "src".to_owned(),
            }],
            finish: Finish::PreserveThenRevert,
        },
    ]);
}

/// Ignored files are neither committed nor deleted, and a `.gitignore`
/// below the top that changes makes its whole directory count.
#[test]
fn issue_24_ignored_files_and_a_nested_gitignore() {
    run_fixed(&[
        Round {
            mutations: vec![
                write_op("a/c/z.log", "one\n"),
                write_op("a/target/x", "one\n"),
                write_op("a/.gitignore", "y\n"),
                write_op("a/c/y", "two\n"),
                write_op("a/x", "two\n"),
            ],
            finish: Finish::Checkpoint,
        },
        // `a/c/y` is untouched, but no longer ignored.
        Round {
            mutations: vec![write_op("a/.gitignore", "x\n")],
            finish: Finish::Checkpoint,
        },
        Round {
            mutations: vec![write_op("a/.gitignore", "*\n"), write_op("a/c/x", "one\n")],
            finish: Finish::PreserveThenRevert,
        },
    ]);
}

/// Hundreds of files written in directories that did not exist a moment
/// before, the last of them right before each operation: every one of them
/// must be in the checkpoint, and gone after the revert.
#[test]
fn issue_24_the_cookie_race() {
    run_fixed(&[
        Round {
            mutations: vec![Mutation::Burst {
                path: "src/new".to_owned(),
                files: 100,
            }],
            finish: Finish::Checkpoint,
        },
        Round {
            mutations: vec![
                Mutation::Burst {
                    path: "docs/more".to_owned(),
                    files: 100,
                },
                write_op("src/new/b0/b1/f7.txt", "changed\n"),
            ],
            finish: Finish::PreserveThenRevert,
        },
        Round {
            mutations: vec![Mutation::Burst {
                path: "a".to_owned(),
                files: 100,
            }],
            finish: Finish::Revert,
        },
    ]);
}
