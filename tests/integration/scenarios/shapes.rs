//! The repositories a scenario starts from. Every shape holds the change
//! `greet` (three stories, independent so that `--parallel` takes them at
//! once) and the matrix's contract (an `on_story_done` hook and a webhook
//! that record what they were told), a bare `origin`, and a busy user
//! (a stash, a staged edit, an unstaged one, an untracked file, an
//! ignored one); then what makes the shape: a linked worktree of the
//! user's, a detached HEAD, an unborn branch, `core.autocrlf` with CRLF
//! files, symlinks, executable bits, names that are not UTF-8 or hold a
//! newline, a large file, a shallow clone, a submodule, a sparse checkout,
//! a clean/smudge filter, a small disk the user fills ([`super::disk`]),
//! and the task file in the shapes git does not track as a file of the
//! repository (a tracked symlink leading out of it, a file `.gitignore`
//! names) or with CRLF line endings and a byte-order mark.
//!
//! Each shape also names the files the user's acts write ([`pool`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::disk::Disk;
use super::gates::{Known, gated};
use crate::harness::story_run::*;
use crate::harness::*;
use crate::matrix::world::World;
use crate::matrix::{Ending, Mode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Plain,
    Linked,
    Detached,
    Unborn,
    Crlf,
    Symlinks,
    Exec,
    Names,
    Large,
    Shallow,
    Submodule,
    Sparse,
    /// `notes.txt` and `src/lib.txt` pass through a clean/smudge filter.
    Filter,
    /// The repository on a small tmpfs.
    Full,
    /// The task file, tracked, is a symlink to a file outside.
    TodoLink,
    /// The task file is untracked and `.gitignore` names it.
    TodoIgnored,
    /// The task file has CRLF line endings and a byte-order mark.
    TodoCrlf,
}

pub const SHAPES: &[(Shape, &str)] = &[
    (Shape::Plain, "plain"),
    (Shape::Linked, "linked"),
    (Shape::Detached, "detached"),
    (Shape::Unborn, "unborn"),
    (Shape::Crlf, "crlf"),
    (Shape::Symlinks, "symlinks"),
    (Shape::Exec, "exec"),
    (Shape::Names, "names"),
    (Shape::Large, "large"),
    (Shape::Shallow, "shallow"),
    (Shape::Submodule, "submodule"),
    (Shape::Sparse, "sparse"),
    (Shape::Filter, "filter"),
    (Shape::Full, "full"),
    (Shape::TodoLink, "todo-link"),
    (Shape::TodoIgnored, "todo-ignored"),
    (Shape::TodoCrlf, "todo-crlf"),
];

impl Shape {
    pub fn name(self) -> &'static str {
        SHAPES
            .iter()
            .find(|(shape, _)| *shape == self)
            .map(|(_, name)| *name)
            .expect("named")
    }

    pub fn parse(name: &str) -> Option<Shape> {
        SHAPES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(shape, _)| *shape)
    }

    /// The shapes a generated sequence may start from.
    pub fn drawable() -> Vec<Shape> {
        SHAPES
            .iter()
            .map(|(shape, _)| *shape)
            .filter(|shape| match shape {
                Shape::Submodule => !gated(Known::Submodule),
                Shape::Sparse => !gated(Known::Sparse),
                Shape::Full => super::disk::can_mount(),
                _ => true,
            })
            .collect()
    }
}

/// A name that is not UTF-8, and one that holds a newline.
fn odd_names() -> [PathBuf; 2] {
    [
        PathBuf::from(OsStr::from_bytes(b"caf\xe9.txt")),
        PathBuf::from("new\nline.txt"),
    ]
}

pub const LARGE: usize = 3 << 20;

/// The content of a large file, different for each `n`.
pub fn large(n: u32) -> Vec<u8> {
    let line = format!("large file, version {n}\n");
    line.as_bytes()
        .iter()
        .copied()
        .cycle()
        .take(LARGE)
        .collect()
}

/// The files the user's acts write, relative to the worktree.
pub fn pool(shape: Shape) -> Vec<PathBuf> {
    let mut pool: Vec<PathBuf> = ["notes.txt", "README.md", "src/lib.txt", "mine.txt"]
        .iter()
        .map(PathBuf::from)
        .collect();
    match shape {
        Shape::Crlf => pool.push("crlf.txt".into()),
        Shape::Symlinks => pool.push("link".into()),
        Shape::Exec => pool.push("run.sh".into()),
        Shape::Names => pool.extend(odd_names()),
        Shape::Large => pool.push("big.bin".into()),
        Shape::Linked => pool.push("../linked/notes.txt".into()),
        Shape::Submodule => pool.push("sub/file.txt".into()),
        Shape::Sparse => pool.push("in/a.txt".into()),
        _ => {}
    }
    pool
}

/// What the smudge filter puts before every line, and the clean filter
/// takes away.
pub const SMUDGED: &str = "smudged: ";

/// The world of a scenario in `shape`, and the small disk it is on.
pub fn build(shape: Shape) -> (World, Option<Disk>) {
    let tasks = if shape == Shape::TodoCrlf {
        format!("\u{feff}{}", THREE_STORIES.replace('\n', "\r\n"))
    } else {
        THREE_STORIES.to_string()
    };
    let mut repo = project(&tasks);
    let mut disk = None;
    if shape == Shape::Full {
        let at = repo.dir.path().join("disk");
        disk = Disk::mount(&at);
        let clone = at.join("repo");
        let url = repo.root.display().to_string();
        repo.git_at(
            repo.dir.path(),
            &["clone", "-q", &url, clone.to_str().unwrap()],
        );
        repo.root = clone;
        repo.git(&["remote", "remove", "origin"]);
    }
    if shape == Shape::Shallow {
        repo.write("src/lib.txt", "the library\n");
        repo.commit_all("A second commit, cut off by the shallow clone");
        let clone = repo.dir.path().join("clone");
        let url = format!("file://{}", repo.root.display());
        repo.git_at(
            repo.dir.path(),
            &["clone", "-q", "--depth", "1", &url, clone.to_str().unwrap()],
        );
        repo.root = clone;
        // The remote the scenario pushes to is a bare one of its own.
        repo.git(&["remote", "set-head", "origin", "--delete"]);
        repo.git(&["remote", "remove", "origin"]);
    }
    committed(&repo, shape);
    let mut world = World::around(repo, Mode::Parallel, Ending::Keep, true);
    busy(&world.repo, shape);
    world.before = crate::matrix::world::user_state(&world.repo);
    if shape == Shape::Unborn {
        world.repo.git(&["checkout", "-q", "--orphan", "fresh"]);
    }
    (world, disk)
}

/// What the shape adds to the project's history.
fn committed(repo: &TestRepo, shape: Shape) {
    repo.write("src/lib.txt", "the library\n");
    match shape {
        Shape::Crlf => {
            repo.git(&["config", "core.autocrlf", "true"]);
            repo.write("crlf.txt", "one\r\ntwo\r\n");
        }
        Shape::Symlinks => {
            std::os::unix::fs::symlink("README.md", repo.path("link")).unwrap();
        }
        Shape::Exec => {
            let path = repo.write("run.sh", "#!/bin/sh\necho run\n");
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Shape::Names => {
            for name in odd_names() {
                repo.write(&name, "an odd name\n");
            }
        }
        Shape::Large => {
            repo.write("big.bin", large(0));
        }
        Shape::Submodule => {
            let source = repo.dir.path().join("sub-source");
            std::fs::create_dir_all(&source).unwrap();
            repo.git_at(&source, &["init", "-q", "-b", "main"]);
            std::fs::write(source.join("file.txt"), "the submodule's\n").unwrap();
            repo.git_at(&source, &["add", "file.txt"]);
            repo.git_at(&source, &["commit", "-q", "-m", "sub"]);
            repo.git(&[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                source.to_str().unwrap(),
                "sub",
            ]);
        }
        Shape::Sparse => {
            repo.write("in/a.txt", "in the cone\n");
            repo.write("out/b.txt", "out of the cone\n");
        }
        Shape::Filter => {
            repo.git(&[
                "config",
                "filter.x.clean",
                &format!("sed -e 's/^{SMUDGED}//'"),
            ]);
            repo.git(&[
                "config",
                "filter.x.smudge",
                &format!("sed -e 's/^/{SMUDGED}/'"),
            ]);
            repo.write(
                ".gitattributes",
                "notes.txt filter=x\nsrc/lib.txt filter=x\n",
            );
        }
        Shape::TodoLink => {
            let outside = repo.dir.path().join("outside-tasks.md");
            std::fs::write(&outside, THREE_STORIES).unwrap();
            let tasks = repo.path(TASKS_PATH);
            std::fs::remove_file(&tasks).unwrap();
            std::os::unix::fs::symlink(&outside, &tasks).unwrap();
        }
        Shape::TodoIgnored => {
            repo.git(&["rm", "-q", "--cached", TASKS_PATH]);
            repo.write(".gitignore", format!("{TASKS_PATH}\n"));
        }
        _ => {}
    }
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "The shape of the repository",
    ]);
}

/// The user at work: a stash, a staged edit, an unstaged one, an
/// untracked file, an ignored one; then what the shape asks.
fn busy(repo: &TestRepo, shape: Shape) {
    repo.write("notes.txt", "stashed by the user\n");
    repo.git(&["stash", "-q"]);
    repo.write("README.md", "# Test project\nstaged by the user\n");
    repo.git(&["add", "README.md"]);
    repo.write("notes.txt", "the user's unstaged edit\n");
    repo.write("mine.txt", "the user's untracked file\n");
    repo.write(".git/info/exclude", "*.log\n");
    repo.write("build.log", "ignored, the user's\n");
    match shape {
        Shape::Linked => {
            let linked = repo.dir.path().join("linked");
            repo.git(&[
                "worktree",
                "add",
                "-q",
                linked.to_str().unwrap(),
                "-b",
                "side",
            ]);
            std::fs::write(linked.join("notes.txt"), "edited in the linked worktree\n").unwrap();
            std::fs::write(linked.join("draft.txt"), "untracked there\n").unwrap();
        }
        Shape::Detached => {
            repo.git(&["switch", "-q", "--detach"]);
        }
        Shape::Crlf => {
            repo.write("crlf.txt", "one\r\ntwo, edited\r\n");
        }
        Shape::Submodule => {
            repo.write("sub/file.txt", "the user's edit in the submodule\n");
        }
        Shape::Sparse => {
            repo.git(&["sparse-checkout", "set", "--cone", "in", "openspec", "src"]);
        }
        _ => {}
    }
}
