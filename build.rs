//! Names the commit git-ralph is built from, so that `git ralph --version`
//! and an internal error's report point at exact code.
//!
//! The commit is read from the checkout's `.git` as plain files (HEAD, the
//! branch it names, `packed-refs`), without running git: a build needs
//! nothing but cargo. A packager building from a tarball sets
//! `GIT_RALPH_COMMIT`; with neither, the commit is "unknown".

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=GIT_RALPH_COMMIT");
    let commit = std::env::var("GIT_RALPH_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(|| {
            let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
            checkout_commit(&root)
        })
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=GIT_RALPH_COMMIT={}", commit.trim());
}

/// The commit HEAD names in the checkout at `root`, watched for changes.
fn checkout_commit(root: &Path) -> Option<String> {
    let git_dir = git_dir(&root.join(".git"))?;
    let head_file = git_dir.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_file.display());
    let head = fs::read_to_string(&head_file).ok()?;
    let Some(refname) = head.trim().strip_prefix("ref: ") else {
        return hex_id(head.trim());
    };
    // A linked worktree keeps its branches in the main repository.
    let common = fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map_or_else(|| git_dir.clone(), |dir| git_dir.join(dir.trim()));
    let loose = common.join(refname);
    let packed = common.join("packed-refs");
    watch(&loose);
    watch(&packed);
    if let Some(id) = fs::read_to_string(&loose)
        .ok()
        .and_then(|text| hex_id(text.trim()))
    {
        return Some(id);
    }
    fs::read_to_string(&packed).ok()?.lines().find_map(|line| {
        let (id, name) = line.split_once(' ')?;
        (name == refname).then(|| hex_id(id)).flatten()
    })
}

/// Rebuild when `path` changes. cargo takes a path that does not exist
/// as always changed, so a branch that is only packed is watched through
/// its directory, where a commit would write it.
fn watch(path: &Path) {
    let watched = if path.exists() {
        Some(path)
    } else {
        path.parent().filter(|dir| dir.is_dir())
    };
    if let Some(watched) = watched {
        println!("cargo:rerun-if-changed={}", watched.display());
    }
}

/// `.git` itself, or the directory a `.git` file (a linked worktree, a
/// submodule) points at.
fn git_dir(dot_git: &Path) -> Option<PathBuf> {
    if dot_git.is_dir() {
        return Some(dot_git.to_owned());
    }
    let text = fs::read_to_string(dot_git).ok()?;
    let target = PathBuf::from(text.trim().strip_prefix("gitdir: ")?);
    Some(if target.is_absolute() {
        target
    } else {
        dot_git.parent()?.join(target)
    })
}

fn hex_id(text: &str) -> Option<String> {
    (text.len() == 40 && text.bytes().all(|byte| byte.is_ascii_hexdigit())).then(|| text.to_owned())
}
