//! What must hold after every command of a scenario, each judged by git:
//!
//! - [`Holdings`]: nothing is lost. Every file the user had on disk before
//!   a command is still there byte for byte, or its content is an object
//!   reachable from a ref (a stash entry or an index counts); every blob
//!   reachable before is reachable after.
//! - [`Picture`]: a refused command changes nothing (git status, refs,
//!   HEAD, every byte of the worktree and of `.git`).
//! - [`sound`]: `git fsck --strict` is content, the user's hooks are theirs.
//!
//! The record agreeing with the branch is the matrix's own oracle,
//! [`crate::matrix::oracle::assert_record_agrees_with_branch`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::shapes::SMUDGED;
use crate::harness::*;

/// One file as the user left it: its bytes (a symlink's target) and
/// whether it is a symlink or executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub bytes: Vec<u8>,
    pub link: bool,
    pub exec: bool,
}

impl Kept {
    /// The blob ids git may have stored this content as: the bytes, the
    /// bytes with CRLF made LF (what `core.autocrlf` stores), and the bytes
    /// the clean filter of the `filter` shape makes of them.
    fn blob_ids(&self) -> Vec<String> {
        let mut ids = vec![blob_id(&self.bytes)];
        let smudged = SMUDGED.as_bytes();
        if self.bytes.starts_with(smudged) {
            let clean: Vec<u8> = self
                .bytes
                .split_inclusive(|byte| *byte == b'\n')
                .flat_map(|line| line.strip_prefix(smudged).unwrap_or(line))
                .copied()
                .collect();
            ids.push(blob_id(&clean));
        }
        if self.bytes.windows(2).any(|pair| pair == b"\r\n") {
            let lf: Vec<u8> = self
                .bytes
                .iter()
                .enumerate()
                .filter(|(i, byte)| {
                    !(**byte == b'\r' && self.bytes.get(i + 1).copied() == Some(b'\n'))
                })
                .map(|(_, byte)| *byte)
                .collect();
            ids.push(blob_id(&lf));
        }
        ids
    }
}

fn blob_id(bytes: &[u8]) -> String {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .expect("a blob id")
        .to_string()
}

/// Everything the user holds at one moment: the files of their worktrees
/// and the blobs git can reach.
#[derive(Debug, Clone, Default)]
pub struct Holdings {
    pub files: BTreeMap<PathBuf, Kept>,
    pub blobs: BTreeSet<String>,
}

/// The files under `dir`, `.git` (a directory or a file) left out.
pub fn files_under(dir: &Path) -> BTreeMap<PathBuf, Kept> {
    fn walk(dir: &Path, into: &mut BTreeMap<PathBuf, Kept>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                walk(&path, into);
            } else if meta.file_type().is_symlink() {
                let target = fs::read_link(&path).unwrap_or_default();
                into.insert(
                    path,
                    Kept {
                        bytes: target.as_os_str().as_bytes().to_vec(),
                        link: true,
                        exec: false,
                    },
                );
            } else if let Ok(bytes) = fs::read(&path) {
                let exec = meta.permissions().mode() & 0o111 != 0;
                into.insert(
                    path,
                    Kept {
                        bytes,
                        link: false,
                        exec,
                    },
                );
            }
        }
    }
    let mut into = BTreeMap::new();
    walk(dir, &mut into);
    into
}

/// Every blob reachable from a ref, HEAD, a stash entry (the older ones
/// live only in the stash's reflog), or an entry of any worktree's index.
/// Not what the index's resolve-undo record still names of a conflict the
/// user resolved (which `--indexed-objects` counts): git's own next
/// checkout forgets it, and the file the user resolved holds what they
/// kept of it.
pub fn reachable_blobs(repo: &TestRepo) -> BTreeSet<String> {
    let stashes = repo.git(&["stash", "list", "--format=%H"]);
    let mut args = vec![
        "rev-list",
        "--objects",
        "--all",
        "--filter=object:type=blob",
        "--filter-provided-objects",
    ];
    args.extend(stashes.lines());
    let output = repo.git_output(&args);
    let mut blobs: BTreeSet<String> = stdout(&output)
        .lines()
        .filter_map(|line| line.split_once(' ').map(|(id, _)| id.to_string()))
        .collect();
    blobs.extend(indexed_blobs(repo));
    blobs
}

/// The blobs the index of every worktree of `repo` holds, at any stage.
fn indexed_blobs(repo: &TestRepo) -> BTreeSet<String> {
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    let mut blobs = BTreeSet::new();
    for place in list
        .lines()
        .filter_map(|line| line.strip_prefix("worktree "))
    {
        let mut cmd = repo.command_here("git");
        cmd.args(["-C", place, "ls-files", "--stage", "-z"]);
        let Ok(output) = cmd.output() else {
            continue;
        };
        if !output.status.success() {
            continue;
        }
        for entry in output.stdout.split(|byte| *byte == 0) {
            let text = String::from_utf8_lossy(entry);
            let mut fields = text.split_whitespace();
            if let (Some(mode), Some(id)) = (fields.next(), fields.next())
                && mode != "160000"
            {
                blobs.insert(id.to_string());
            }
        }
    }
    blobs
}

impl Holdings {
    pub fn take(repo: &TestRepo, dirs: &[PathBuf]) -> Holdings {
        let mut files = BTreeMap::new();
        for dir in dirs {
            files.extend(files_under(dir));
        }
        Holdings {
            files,
            blobs: reachable_blobs(repo),
        }
    }

    /// What the user did while a command ran is theirs too: their files
    /// as they are now, and every blob either moment held.
    pub fn merge(&mut self, later: Holdings) {
        self.files = later.files;
        self.blobs.extend(later.blobs);
    }

    /// Forget the blobs an act of the user's own dropped: reachable
    /// `before` it and no more `after` it.
    pub fn forget_dropped(&mut self, before: &Holdings, after: &Holdings) {
        for id in before.blobs.difference(&after.blobs) {
            self.blobs.remove(id);
        }
    }

    /// What of these holdings `now` no longer has; `repo` says what a
    /// lost blob held, while git still has the object.
    pub fn lost_in(&self, now: &Holdings, repo: &TestRepo) -> Vec<String> {
        let on_disk: BTreeSet<String> = now.files.values().flat_map(Kept::blob_ids).collect();
        let found = |id: &String| now.blobs.contains(id) || on_disk.contains(id);
        let mut lost = Vec::new();
        for (path, kept) in &self.files {
            let same = now
                .files
                .get(path)
                .is_some_and(|there| there.bytes == kept.bytes && there.link == kept.link);
            if !same && !kept.blob_ids().iter().any(found) {
                lost.push(format!(
                    "the user's {} ({} bytes{}) is neither on disk as they left it nor in any \
                     object a ref reaches",
                    path.display(),
                    kept.bytes.len(),
                    if kept.link { ", a symlink" } else { "" }
                ));
            }
        }
        let gone: Vec<&String> = self.blobs.iter().filter(|id| !found(id)).collect();
        for id in gone {
            let held = repo.git_output(&["cat-file", "-p", id]);
            let text = stdout(&held);
            let text: String = text.chars().take(80).collect();
            lost.push(format!(
                "the blob {id} a ref, stash or index reached is reachable no more ({text:?})"
            ));
        }
        lost
    }
}

/// Everything a refused command must leave as it was.
#[derive(Debug, PartialEq, Eq)]
pub struct Picture {
    status: String,
    refs: String,
    stashes: String,
    head: String,
    files: BTreeMap<String, (u32, Vec<u8>)>,
}

impl Picture {
    pub fn take(repo: &TestRepo) -> Picture {
        Picture {
            status: repo.git(&[
                "--no-optional-locks",
                "status",
                "--porcelain=v1",
                "-uall",
                "--ignored",
            ]),
            refs: repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            stashes: repo.git(&["stash", "list", "--format=%H"]),
            head: fs::read_to_string(repo.path(".git/HEAD")).unwrap_or_default(),
            files: disk_snapshot(&repo.root),
        }
    }

    /// How `now` differs from this picture, `allowed` (entries of
    /// [`snapshot_diff`], or, ending in `/`, the beginnings of entries)
    /// aside.
    pub fn changes(&self, now: &Picture, allowed: &[&str]) -> Vec<String> {
        let mut changes = Vec::new();
        let mut differ = |what: &str, before: &str, after: &str| {
            if before != after {
                changes.push(format!("{what} changed:\nbefore\n{before}after\n{after}"));
            }
        };
        differ("git status", &self.status, &now.status);
        differ("the refs", &self.refs, &now.refs);
        differ("the stashes", &self.stashes, &now.stashes);
        differ("HEAD", &self.head, &now.head);
        let mut diff = snapshot_diff(&self.files, &now.files);
        diff.retain(|entry| {
            !allowed
                .iter()
                .any(|a| a == entry || (a.ends_with('/') && entry.starts_with(a)))
        });
        if !diff.is_empty() {
            changes.push(format!("the disk changed: {diff:?}"));
        }
        changes
    }
}

/// The paths git marks skip-worktree (a sparse checkout's).
pub fn skip_worktree(repo: &TestRepo) -> BTreeSet<String> {
    repo.git(&["ls-files", "-t", "-z"])
        .split('\0')
        .filter_map(|entry| entry.strip_prefix("S "))
        .map(str::to_string)
        .collect()
}

/// git's own view of the repository: `fsck --strict` content, and the
/// hooks as the user set them.
pub fn sound(repo: &TestRepo, hooks: &BTreeMap<String, (u32, Vec<u8>)>) -> Vec<String> {
    let mut found = Vec::new();
    let fsck = repo.git_output(&["fsck", "--strict", "--no-progress"]);
    let said = format!("{}{}", stdout(&fsck), stderr(&fsck));
    let complaints: Vec<&str> = said
        .lines()
        .filter(|line| {
            let line = line.to_lowercase();
            (line.contains("error") || line.contains("warning") || line.contains("missing"))
                && !line.starts_with("dangling")
        })
        .collect();
    if !fsck.status.success() || !complaints.is_empty() {
        found.push(format!("git fsck --strict: {said}"));
    }
    let now = disk_snapshot(&repo.path(".git/hooks"));
    if &now != hooks {
        found.push(format!(
            ".git/hooks is not the user's: {:?}",
            snapshot_diff(hooks, &now)
        ));
    }
    found
}
