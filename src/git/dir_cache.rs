//! Where a full scan may find untracked files, without reading every
//! directory: the idea behind git's untracked cache, kept in
//! `<git-dir>/ralph/dir-cache` rather than in the index.
//!
//! A directory's entries can only change if its mtime and ctime do. So a
//! directory that held nothing but tracked files and tracked directories
//! when it was last read, and whose stat data is unchanged, still holds
//! exactly those: it need not be read again, only its tracked
//! subdirectories visited. What "tracked" means can change without the
//! directory changing (`git rm --cached`), so each record also keeps a
//! digest of the names the index has directly in that directory, and is
//! used only while the index still has the same ones. A directory whose
//! mtime is within a second of the scan that read it is not recorded at
//! all: a change in the same clock tick would leave its stat data as it was
//! (the racy case).
//!
//! Every other directory is read, and every name in it that the index does
//! not track (untracked or ignored files, untracked or ignored directories,
//! nested repositories, empty directories) becomes a candidate: the status
//! walk then looks at those paths alone, with gix's full rules. Whenever the
//! cache cannot answer (a sparse or case-insensitive index, a `.git` below
//! the top, too many candidates, a directory that cannot be read) the answer
//! is `None`, and the caller walks everything.
//!
//! It never reads or writes the worktree, only stats and lists it. The cache
//! is written to disk only along with the index, by the operations that
//! write one: an operation that only reads leaves the repository as it was.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::Flags;

/// Above this many candidates, matching them as pathspecs costs more than
/// reading every directory.
const MAX_CANDIDATES: usize = 1024;

const HEADER: &str = "ralph-dir-cache 1";

/// What the index has directly in one directory.
struct IndexDir {
    /// Digest of the names, files and subdirectories alike.
    digest: u64,
    /// The subdirectories that hold tracked files.
    subdirs: Vec<BString>,
}

/// A directory's stat data, as far as a change to its entries shows in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStat {
    dev: u64,
    ino: u64,
    mtime: i64,
    mtime_nsec: i64,
    ctime: i64,
    ctime_nsec: i64,
    size: u64,
}

impl DirStat {
    fn of(meta: &std::fs::Metadata) -> DirStat {
        DirStat {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
            size: meta.size(),
        }
    }

    /// Changed in the second before `started`, or later: a change in the
    /// same clock tick could leave it as it is. As for git's racy entries,
    /// the mtime decides; the ctime only has to match.
    fn is_racy(&self, started: i64) -> bool {
        self.mtime + 1 >= started
    }
}

/// A directory that held only tracked names when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    stat: DirStat,
    digest: u64,
}

/// What a full scan learned: the directories that held only tracked names.
/// Each record checks itself against the directory and the index before it
/// is used, so an old or foreign cache costs reads, never a wrong answer.
#[derive(Debug, Default)]
pub(crate) struct DirCache {
    records: HashMap<BString, Record>,
    /// Learned since it was last written.
    unsaved: bool,
}

/// The paths (relative to the worktree, `/`-separated) that may hold
/// untracked files, from reading only the directories that changed since
/// `old` was learned, and the cache to keep for next time; `None` when the
/// cache cannot tell and everything must be walked.
pub(crate) fn untracked_candidates(
    workdir: &Path,
    index: &gix::index::State,
    old: DirCache,
) -> Option<(Vec<BString>, DirCache)> {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    let started = i64::try_from(started).ok()?;
    if index.is_sparse() || index.entries().is_empty() {
        return None;
    }
    let dirs = index_dirs(index)?;
    let mut scan = Scan {
        workdir,
        index,
        dirs: &dirs,
        old: old.records,
        new: HashMap::new(),
        candidates: Vec::new(),
        started,
    };
    scan.visit(BString::default())?;
    let learned = DirCache {
        records: scan.new,
        unsaved: true,
    };
    Some((scan.candidates, learned))
}

struct Scan<'a> {
    workdir: &'a Path,
    index: &'a gix::index::State,
    dirs: &'a HashMap<BString, IndexDir>,
    old: HashMap<BString, Record>,
    new: HashMap<BString, Record>,
    candidates: Vec<BString>,
    started: i64,
}

impl Scan<'_> {
    /// Look at the tracked directory `dir` ("" for the top) and below.
    fn visit(&mut self, dir: BString) -> Option<()> {
        let full = self.workdir.join(gix::path::from_bstr(dir.as_bstr()).ok()?);
        let meta = match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => meta,
            _ if dir.is_empty() => return None,
            // Gone, or no longer a directory: the walk finds out what it is.
            _ => {
                self.candidate(dir);
                return self.within_limit();
            }
        };
        let stat = DirStat::of(&meta);
        let here = self.dirs.get(&dir)?;
        if let Some(record) = self.old.get(&dir)
            && record.stat == stat
            && record.digest == here.digest
            && !record.stat.is_racy(self.started)
        {
            let record = *record;
            self.new.insert(dir.clone(), record);
            for sub in &here.subdirs {
                self.visit(join(&dir, sub.as_bstr()))?;
            }
            return Some(());
        }
        let mut only_tracked = true;
        let mut subdirs = Vec::new();
        for entry in std::fs::read_dir(&full).ok()? {
            let entry = entry.ok()?;
            let name = entry.file_name();
            let name = BStr::new(name.as_bytes());
            if name == ".git" {
                if dir.is_empty() {
                    continue;
                }
                // A repository or worktree inside a tracked directory: the
                // walk's own rules decide.
                return None;
            }
            let path = join(&dir, name);
            let is_dir = entry.file_type().ok()?.is_dir();
            if is_dir && self.dirs.contains_key(&path) {
                subdirs.push(path);
            } else if is_dir || !self.tracks(path.as_bstr()) {
                only_tracked = false;
                self.candidate(path);
            }
        }
        self.within_limit()?;
        if only_tracked && !stat.is_racy(self.started) && !dir.contains(&b'\n') {
            self.new.insert(
                dir,
                Record {
                    stat,
                    digest: here.digest,
                },
            );
        }
        for sub in subdirs {
            self.visit(sub)?;
        }
        Some(())
    }

    fn candidate(&mut self, path: BString) {
        self.candidates.push(path);
    }

    fn within_limit(&self) -> Option<()> {
        (self.candidates.len() <= MAX_CANDIDATES).then_some(())
    }

    /// Whether the index has an entry (at any stage) at `path`.
    fn tracks(&self, path: &BStr) -> bool {
        let entries = self.index.entries();
        let at = entries.partition_point(|e| e.path(self.index) < path);
        entries.get(at).is_some_and(|e| e.path(self.index) == path)
    }
}

fn join(dir: &BString, name: &BStr) -> BString {
    if dir.is_empty() {
        return name.to_owned();
    }
    let mut path = dir.clone();
    path.push(b'/');
    path.extend_from_slice(name);
    path
}

/// Every directory that holds tracked files, with what it holds directly,
/// in one pass over the sorted index. `None` when an entry is outside the
/// worktree's checkout (sparse).
fn index_dirs(index: &gix::index::State) -> Option<HashMap<BString, IndexDir>> {
    struct Open {
        path: BString,
        hasher: std::collections::hash_map::DefaultHasher,
        subdirs: Vec<BString>,
    }
    fn open(path: BString) -> Open {
        Open {
            path,
            hasher: std::collections::hash_map::DefaultHasher::new(),
            subdirs: Vec::new(),
        }
    }
    fn close(open: Open, dirs: &mut HashMap<BString, IndexDir>) {
        dirs.insert(
            open.path,
            IndexDir {
                digest: open.hasher.finish(),
                subdirs: open.subdirs,
            },
        );
    }
    let mut dirs = HashMap::new();
    let mut stack = vec![open(BString::default())];
    for entry in index.entries() {
        if entry.flags.contains(Flags::SKIP_WORKTREE) {
            return None;
        }
        let path = entry.path(index);
        // Leave the directories this path is not in.
        while stack.len() > 1 {
            let top = &stack[stack.len() - 1].path;
            if path.len() > top.len() && path.starts_with(top) && path[top.len()] == b'/' {
                break;
            }
            let done = stack.pop().expect("more than one");
            close(done, &mut dirs);
        }
        // Enter the ones it is in that are not open yet.
        loop {
            let top = stack.last_mut().expect("the top stays open");
            let start = if top.path.is_empty() {
                0
            } else {
                top.path.len() + 1
            };
            let rest = &path[start..];
            match rest.find_byte(b'/') {
                Some(slash) => {
                    let name = &rest[..slash];
                    name.hash(&mut top.hasher);
                    b"/".hash(&mut top.hasher);
                    top.subdirs.push(name.into());
                    let sub = BString::from(&path[..start + slash]);
                    stack.push(open(sub));
                }
                None => {
                    rest.hash(&mut top.hasher);
                    break;
                }
            }
        }
    }
    while let Some(done) = stack.pop() {
        close(done, &mut dirs);
    }
    Some(dirs)
}

impl DirCache {
    /// The cache kept at `path`; an empty one when there is none or it
    /// cannot be read.
    pub(crate) fn read(path: &Path) -> DirCache {
        let Ok(text) = std::fs::read(path) else {
            return DirCache::default();
        };
        let mut lines = text.split(|&b| b == b'\n');
        if lines.next() != Some(HEADER.as_bytes()) {
            return DirCache::default();
        }
        let mut records = HashMap::new();
        for line in lines.filter(|line| !line.is_empty()) {
            match parse_record(line) {
                Some((dir, record)) => records.insert(dir, record),
                None => return DirCache::default(),
            };
        }
        DirCache {
            records,
            unsaved: false,
        }
    }

    /// Keep the cache at `path` if it learned something since it was last
    /// kept. It is a cache: a write that fails leaves none, and the next
    /// scan reads every directory.
    pub(crate) fn save(&mut self, path: &Path) {
        if self.unsaved {
            write_cache(path, &self.records);
            self.unsaved = false;
        }
    }
}

fn parse_record(line: &[u8]) -> Option<(BString, Record)> {
    let tab = line.find_byte(b'\t')?;
    let numbers = std::str::from_utf8(&line[..tab]).ok()?;
    let numbers: Vec<&str> = numbers.split(' ').collect();
    let [dev, ino, mtime, mtime_nsec, ctime, ctime_nsec, size, digest] = numbers.as_slice() else {
        return None;
    };
    let record = Record {
        stat: DirStat {
            dev: dev.parse().ok()?,
            ino: ino.parse().ok()?,
            mtime: mtime.parse().ok()?,
            mtime_nsec: mtime_nsec.parse().ok()?,
            ctime: ctime.parse().ok()?,
            ctime_nsec: ctime_nsec.parse().ok()?,
            size: size.parse().ok()?,
        },
        digest: u64::from_str_radix(digest, 16).ok()?,
    };
    Some((line[tab + 1..].into(), record))
}

fn write_cache(path: &Path, records: &HashMap<BString, Record>) {
    let mut text = Vec::with_capacity(64 * (records.len() + 1));
    text.extend_from_slice(HEADER.as_bytes());
    text.push(b'\n');
    for (dir, record) in records {
        let s = record.stat;
        text.extend_from_slice(
            format!(
                "{} {} {} {} {} {} {} {:x}\t",
                s.dev, s.ino, s.mtime, s.mtime_nsec, s.ctime, s.ctime_nsec, s.size, record.digest
            )
            .as_bytes(),
        );
        text.extend_from_slice(dir);
        text.push(b'\n');
    }
    let written = path.parent().and_then(|parent| {
        std::fs::create_dir_all(parent).ok()?;
        let mut file = tempfile::NamedTempFile::new_in(parent).ok()?;
        std::io::Write::write_all(&mut file, &text).ok()?;
        file.persist(path).ok()
    });
    if written.is_none() {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(paths: &[&str]) -> gix::index::State {
        let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
        for path in paths {
            state.dangerously_push_entry(
                gix::index::entry::Stat::default(),
                gix::hash::Kind::Sha1.null(),
                Flags::empty(),
                gix::index::entry::Mode::FILE,
                path.as_bytes().into(),
            );
        }
        state.sort_entries();
        state
    }

    fn subdirs(dirs: &HashMap<BString, IndexDir>, dir: &str) -> Vec<String> {
        dirs[&BString::from(dir)]
            .subdirs
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn every_directory_is_listed_with_its_tracked_subdirectories() {
        let dirs = index_dirs(&index_of(&["a", "d/b", "d/e/f", "d-x", "g/h/i"])).unwrap();
        assert_eq!(dirs.len(), 5);
        assert_eq!(subdirs(&dirs, ""), ["d", "g"]);
        assert_eq!(subdirs(&dirs, "d"), ["e"]);
        assert_eq!(subdirs(&dirs, "d/e"), Vec::<String>::new());
        assert_eq!(subdirs(&dirs, "g"), ["h"]);
    }

    #[test]
    fn a_digest_changes_with_the_names_tracked_directly_below() {
        let digest = |paths: &[&str], dir: &str| {
            index_dirs(&index_of(paths)).unwrap()[&BString::from(dir)].digest
        };
        let all = ["a", "d/b", "d/c", "d/e/f"];
        assert_ne!(digest(&all, "d"), digest(&["a", "d/b", "d/e/f"], "d"));
        assert_ne!(digest(&all, ""), digest(&["a"], ""));
        assert_eq!(digest(&all, "d"), digest(&["d/b", "d/c", "d/e/g"], "d"));
        // A file and a directory of the same name are told apart.
        assert_ne!(digest(&["d/b"], "d"), digest(&["d/b/x"], "d"));
    }

    #[test]
    fn the_cache_reads_back_what_it_wrote_and_nothing_from_a_torn_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dir-cache");
        let stat = DirStat {
            dev: 1,
            ino: 2,
            mtime: 3,
            mtime_nsec: 4,
            ctime: 5,
            ctime_nsec: 6,
            size: 7,
        };
        let mut cache = DirCache {
            records: [
                (BString::from(""), Record { stat, digest: 8 }),
                (
                    BString::from("a b/ü"),
                    Record {
                        stat,
                        digest: u64::MAX,
                    },
                ),
            ]
            .into(),
            unsaved: true,
        };
        cache.save(&path);
        assert_eq!(DirCache::read(&path).records, cache.records);

        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 9]).unwrap();
        assert!(DirCache::read(&path).records.is_empty());
    }
}
