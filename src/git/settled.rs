//! Which index entries a full scan may take as unchanged on their stat data
//! alone, found faster than gix's status finds them. gix stats every entry
//! by its full path, so the kernel walks the worktree's path and every
//! directory above the file, once per file: on 100,000 files that walk is
//! most of a scan. Here each directory is opened once, from its parent and
//! without following symlinks, and its files are stat'ed relative to it.
//!
//! An entry is settled only when nothing about it is in doubt: a plain
//! stage-0 file or symlink with stat data, not touched in or after the
//! second the index was written (racy), whose file has the same type,
//! executable bit and every stat field the index records. Everything else
//! (and every entry below a directory that cannot be opened, or that is now
//! a symlink) is left to gix's status, with its full rules.

use std::os::fd::OwnedFd;
use std::path::Path;

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{Mode as Perms, SFlag};

/// How a directory is opened to stat what it holds: for lookups only where
/// the system has that, else for reading.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIRECTORY: OFlag = OFlag::O_PATH.union(OFlag::O_DIRECTORY);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIRECTORY: OFlag = OFlag::O_RDONLY.union(OFlag::O_DIRECTORY);

/// Positions of the entries of `index` that are not settled, in order;
/// `None` when the worktree's top cannot be opened.
pub(crate) fn unsettled(workdir: &Path, index: &gix::index::State) -> Option<Vec<usize>> {
    let root = nix::fcntl::open(workdir, DIRECTORY | OFlag::O_CLOEXEC, Perms::empty()).ok()?;
    let entries = index.entries();
    let written = index.timestamp().unix_seconds();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4);
    let chunk = entries.len().div_ceil(threads).max(1);
    let root = &root;
    let parts: Vec<Option<Vec<usize>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..entries.len())
            .step_by(chunk)
            .map(|start| {
                let end = (start + chunk).min(entries.len());
                scope.spawn(move || unsettled_in(root, index, start..end, written))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().ok())
            .collect()
    });
    let mut out = Vec::new();
    for part in parts {
        out.extend(part?);
    }
    Some(out)
}

fn unsettled_in(
    root: &OwnedFd,
    index: &gix::index::State,
    range: std::ops::Range<usize>,
    written: i64,
) -> Vec<usize> {
    let entries = index.entries();
    let mut dirs = OpenDirs {
        root,
        open: Vec::new(),
        path: Vec::new(),
        failed: false,
    };
    let mut out = Vec::new();
    for at in range {
        let entry = &entries[at];
        if !settled(&mut dirs, entry, entry.path(index), written) {
            out.push(at);
        }
    }
    out
}

fn settled(dirs: &mut OpenDirs<'_>, entry: &gix::index::Entry, path: &BStr, written: i64) -> bool {
    let doubt = Flags::INTENT_TO_ADD | Flags::SKIP_WORKTREE | Flags::ASSUME_VALID;
    let file = matches!(entry.mode, Mode::FILE | Mode::FILE_EXECUTABLE);
    if entry.stage_raw() != 0
        || entry.flags.intersects(doubt)
        || !(file || entry.mode == Mode::SYMLINK)
        || entry.stat == Stat::default()
        || i64::from(entry.stat.mtime.secs) >= written
    {
        return false;
    }
    let (parent, name) = match path.rfind_byte(b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&path[..0], path),
    };
    let Some(dir) = dirs.at(parent) else {
        return false;
    };
    let Ok(stat) = nix::sys::stat::fstatat(dir, name.as_bytes(), AtFlags::AT_SYMLINK_NOFOLLOW)
    else {
        return false;
    };
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    let executable = stat.st_mode & 0o100 != 0;
    let kind_matches = match entry.mode {
        Mode::SYMLINK => kind == SFlag::S_IFLNK,
        Mode::FILE_EXECUTABLE => kind == SFlag::S_IFREG && executable,
        _ => kind == SFlag::S_IFREG && !executable,
    };
    let s = entry.stat;
    kind_matches
        && s.mtime.secs == low32(stat.st_mtime)
        && s.mtime.nsecs == low32(stat.st_mtime_nsec)
        && s.ctime.secs == low32(stat.st_ctime)
        && s.ctime.nsecs == low32(stat.st_ctime_nsec)
        && s.dev == low32(stat.st_dev)
        && s.ino == low32(stat.st_ino)
        && s.uid == low32(stat.st_uid)
        && s.gid == low32(stat.st_gid)
        && s.size == low32(stat.st_size)
}

/// The low 32 bits, as the index keeps stat fields.
fn low32(value: impl Into<i128>) -> u32 {
    value.into() as u32
}

/// The directories leading to the entry at hand, each opened from its
/// parent without following a symlink.
struct OpenDirs<'a> {
    root: &'a OwnedFd,
    /// One per component of `path`.
    open: Vec<OwnedFd>,
    /// The directory open now, relative to the top, `/`-separated.
    path: Vec<u8>,
    /// Whether a component of `path` could not be opened.
    failed: bool,
}

impl OpenDirs<'_> {
    fn at(&mut self, dir: &BStr) -> Option<&OwnedFd> {
        if dir != self.path.as_bstr() {
            self.enter(dir);
        }
        if self.failed {
            return None;
        }
        Some(self.open.last().unwrap_or(self.root))
    }

    fn enter(&mut self, dir: &BStr) {
        let components: Vec<&[u8]> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split_str("/").collect()
        };
        let current: Vec<&[u8]> = if self.path.is_empty() {
            Vec::new()
        } else {
            self.path.split_str("/").collect()
        };
        let mut common = components
            .iter()
            .zip(&current)
            .take_while(|(a, b)| a == b)
            .count();
        // What was opened of the old path is all that can be kept.
        common = common.min(self.open.len());
        self.open.truncate(common);
        self.failed = false;
        for component in &components[common..] {
            let parent = self.open.last().unwrap_or(self.root);
            match open_dir(parent, component) {
                Some(fd) => self.open.push(fd),
                None => {
                    self.failed = true;
                    break;
                }
            }
        }
        self.path = dir.to_vec();
    }
}

fn open_dir(parent: &OwnedFd, name: &[u8]) -> Option<OwnedFd> {
    nix::fcntl::openat(
        parent,
        name,
        DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Perms::empty(),
    )
    .ok()
}
