//! The worktree watched directory by directory through inotify, on Linux.
//! Only the directories that matter are watched (see `watch.rs`); a watch is
//! added before its directory is read, so that whatever changes after the
//! read is reported. Events wait in the kernel's queue until a cut reads
//! them, up to its cookie: no thread runs while the agent works, and a
//! queue that overflowed says so, which loses the watch for that cut.
//!
//! A directory that appears is covered at the cut that reports it, and
//! counts as touched whole, so what was written in it before its watch
//! began is looked at anyway. A directory moved away has its watches
//! dropped (they would report under its old name); where it arrives, it
//! appears.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gix::bstr::{BStr, BString};
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

use super::cut::{
    COOKIE_PATIENCE, Cut, DISTRUSTED_PATIENCE, Ignored, MAX_TOUCHED, WatchLost, cookie_name,
    cookie_number,
};

/// What a directory's watch reports: every change to the names in it and
/// to what they hold, never a read.
const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::EXCL_UNLINK);

/// The worktree, watched directory by directory.
pub(crate) struct WorktreeWatch {
    inotify: Inotify,
    workdir: PathBuf,
    cookie_dir: PathBuf,
    cookie_wd: WatchDescriptor,
    /// Each watched directory, relative to the worktree (`""` is its top).
    paths: HashMap<WatchDescriptor, BString>,
    watched: HashMap<BString, WatchDescriptor>,
    next_cookie: u64,
    /// How long the next cookie is waited for.
    patience: Duration,
    buffer: Vec<u8>,
}

/// What a cut has read so far.
#[derive(Default)]
struct Gathered {
    touched: BTreeSet<BString>,
    new_dirs: BTreeSet<BString>,
    lost: Option<WatchLost>,
    /// The cookie the cut waits for came back.
    cookie: bool,
}

impl WorktreeWatch {
    /// Watch the top of `workdir`, and `cookie_dir` for the cookies; the
    /// rest is covered before the first full scan. Nothing in the git
    /// directory is watched but the cookies.
    pub(crate) fn start(
        workdir: &Path,
        _git_dir: &Path,
        cookie_dir: PathBuf,
    ) -> Result<WorktreeWatch, WatchLost> {
        let failed = |err: std::io::Error| WatchLost::Failed(err.to_string());
        std::fs::create_dir_all(&cookie_dir).map_err(failed)?;
        let inotify = Inotify::init().map_err(failed)?;
        let cookie_wd = inotify
            .watches()
            .add(&cookie_dir, WatchMask::CREATE | WatchMask::ONLYDIR)
            .map_err(failed)?;
        let mut watch = WorktreeWatch {
            inotify,
            workdir: workdir.to_owned(),
            cookie_dir,
            cookie_wd,
            paths: HashMap::new(),
            watched: HashMap::new(),
            next_cookie: 0,
            patience: COOKIE_PATIENCE,
            buffer: vec![0; 64 * 1024],
        };
        watch.add(BStr::new("")).map_err(lost)?;
        // Only events after the watch is known to be live count.
        watch.cut(&mut |_| false)?;
        Ok(watch)
    }

    /// Watch `dirs` (relative to the worktree, `""` for its top), and below
    /// them and below every directory watched already, each directory
    /// nothing tracks that is not ignored, found by reading them. Returns
    /// those of `dirs` that could not be watched or read (gone, or no
    /// longer directories): their content is unknown.
    pub(crate) fn cover(
        &mut self,
        dirs: &[BString],
        ignored: &mut Ignored<'_>,
    ) -> Result<Vec<BString>, WatchLost> {
        let mut queue: Vec<BString> = dirs.to_vec();
        queue.extend(self.watched.keys().cloned());
        self.cover_from(queue, ignored)
    }

    /// Watch the directories in `queue`, read each, and go on with the
    /// directories found in them that are neither watched, nor ignored,
    /// nor nested repositories.
    fn cover_from(
        &mut self,
        mut queue: Vec<BString>,
        ignored: &mut Ignored<'_>,
    ) -> Result<Vec<BString>, WatchLost> {
        let mut known: HashSet<BString> = queue.iter().cloned().collect();
        let mut unknown = Vec::new();
        while let Some(dir) = queue.pop() {
            if !self.watched.contains_key(&dir) {
                match self.add(dir.as_ref()) {
                    Ok(()) => {}
                    Err(err) if is_limit(&err) => return Err(lost(err)),
                    Err(_) => {
                        unknown.push(dir);
                        continue;
                    }
                }
            }
            let Ok(entries) = std::fs::read_dir(self.absolute(dir.as_ref())) else {
                unknown.push(dir);
                continue;
            };
            for entry in entries.flatten() {
                if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                    continue;
                }
                let child = join(dir.as_ref(), entry.file_name().as_bytes());
                if entry.file_name() == ".git"
                    || known.contains(&child)
                    || self.watched.contains_key(&child)
                    || entry.path().join(".git").symlink_metadata().is_ok()
                    || ignored(child.as_ref())
                {
                    continue;
                }
                known.insert(child.clone());
                queue.push(child);
            }
        }
        Ok(unknown)
    }

    /// Every path touched since the last cut, up to a cookie written now;
    /// the directories that appeared are covered before this returns.
    pub(crate) fn cut(&mut self, ignored: &mut Ignored<'_>) -> Result<Cut, WatchLost> {
        self.next_cookie += 1;
        let number = self.next_cookie;
        let cookie = self.cookie_dir.join(cookie_name(number));
        std::fs::write(&cookie, b"").map_err(lost)?;
        let deadline = Instant::now() + self.patience;
        let mut gathered = Gathered::default();
        while !gathered.cookie && gathered.lost.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                gathered.lost = Some(WatchLost::Silent);
                break;
            }
            match self.read(left) {
                Ok(events) => {
                    for (wd, mask, name) in events {
                        self.take(&mut gathered, wd, mask, name, number);
                    }
                }
                Err(err) => gathered.lost = Some(lost(err)),
            }
        }
        let _ = std::fs::remove_file(&cookie);
        self.patience = match gathered.lost {
            Some(WatchLost::Silent) => DISTRUSTED_PATIENCE,
            _ => COOKIE_PATIENCE,
        };
        if let Some(lost) = gathered.lost {
            return Err(lost);
        }
        let appeared: Vec<BString> = gathered
            .new_dirs
            .iter()
            .filter(|dir| !ignored(dir.as_ref()))
            .cloned()
            .collect();
        // What could not be covered is touched already.
        self.cover_from(appeared, ignored)?;
        Ok(Cut {
            touched: gathered.touched,
            new_dirs: gathered.new_dirs,
        })
    }

    /// The events waiting, after waiting up to `patience` for one.
    fn read(
        &mut self,
        patience: Duration,
    ) -> std::io::Result<Vec<(WatchDescriptor, EventMask, Option<OsString>)>> {
        use std::os::fd::AsFd;
        let timeout =
            nix::poll::PollTimeout::try_from(patience).unwrap_or(nix::poll::PollTimeout::MAX);
        let mut fds = [nix::poll::PollFd::new(
            self.inotify.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        match nix::poll::poll(&mut fds, timeout) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(Vec::new()),
            Ok(_) => {}
            Err(err) => return Err(err.into()),
        }
        match self.inotify.read_events(&mut self.buffer) {
            Ok(events) => Ok(events
                .map(|event| (event.wd, event.mask, event.name.map(ToOwned::to_owned)))
                .collect()),
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => Ok(Vec::new()),
            Err(err) => Err(err),
        }
    }

    /// Take one event into `gathered`.
    fn take(
        &mut self,
        gathered: &mut Gathered,
        wd: WatchDescriptor,
        mask: EventMask,
        name: Option<OsString>,
        number: u64,
    ) {
        if mask.contains(EventMask::Q_OVERFLOW) {
            gathered.lost = Some(WatchLost::Overflowed);
            return;
        }
        if wd == self.cookie_wd {
            gathered.cookie |= mask.contains(EventMask::CREATE)
                && name
                    .as_deref()
                    .and_then(cookie_number)
                    .is_some_and(|seen| seen >= number);
            return;
        }
        if mask.contains(EventMask::IGNORED) {
            if let Some(dir) = self.paths.remove(&wd) {
                self.watched.remove(&dir);
            }
            return;
        }
        let Some(dir) = self.paths.get(&wd) else {
            return;
        };
        let Some(name) = name else {
            // The directory itself: its parent reports it, unless it is the
            // top.
            if dir.is_empty() && mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
                gathered.lost = Some(WatchLost::Failed("the worktree itself changed".into()));
            }
            return;
        };
        if dir.is_empty() && name == ".git" {
            return;
        }
        let path = join(dir.as_ref(), name.as_bytes());
        let is_dir = mask.contains(EventMask::ISDIR);
        if is_dir && mask.contains(EventMask::MOVED_FROM) {
            self.forget_below(path.as_ref());
        }
        if is_dir && mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
            gathered.new_dirs.insert(path.clone());
        }
        gathered.touched.insert(path);
        if gathered.touched.len() > MAX_TOUCHED {
            gathered.touched.clear();
            gathered.lost = Some(WatchLost::TooMany);
        }
    }

    /// Stop watching `dir` and what lies below it: it moved, and its
    /// watches would report under its old name.
    fn forget_below(&mut self, dir: &BStr) {
        let gone: Vec<BString> = self
            .watched
            .keys()
            .filter(|path| is_at_or_below(path.as_ref(), dir))
            .cloned()
            .collect();
        for path in gone {
            if let Some(wd) = self.watched.remove(&path) {
                self.paths.remove(&wd);
                let _ = self.inotify.watches().remove(wd);
            }
        }
    }

    fn add(&mut self, dir: &BStr) -> std::io::Result<()> {
        let wd = self.inotify.watches().add(self.absolute(dir), MASK)?;
        // The same directory under another name means the old name is
        // stale: it moved unseen.
        if let Some(old) = self.paths.insert(wd.clone(), dir.to_owned())
            && old != dir
        {
            self.watched.remove(&old);
        }
        self.watched.insert(dir.to_owned(), wd);
        Ok(())
    }

    fn absolute(&self, dir: &BStr) -> PathBuf {
        if dir.is_empty() {
            self.workdir.clone()
        } else {
            self.workdir.join(std::ffi::OsStr::from_bytes(dir))
        }
    }
}

fn join(dir: &BStr, name: &[u8]) -> BString {
    if dir.is_empty() {
        return name.into();
    }
    let mut path = BString::from(dir);
    path.push(b'/');
    path.extend_from_slice(name);
    path
}

fn is_at_or_below(path: &BStr, dir: &BStr) -> bool {
    path == dir || (path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'))
}

/// The system's limit on watches was reached: no later directory can be
/// watched either.
fn is_limit(err: &std::io::Error) -> bool {
    err.raw_os_error() == Some(nix::errno::Errno::ENOSPC as i32)
}

fn lost(err: std::io::Error) -> WatchLost {
    if is_limit(&err) {
        WatchLost::Failed(
            "the system's limit of watched directories is reached (fs.inotify.max_user_watches)"
                .into(),
        )
    } else {
        WatchLost::Failed(err.to_string())
    }
}
