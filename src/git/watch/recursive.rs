//! The whole worktree watched recursively through the `notify` crate
//! (FSEvents on macOS, inotify elsewhere). The crate's own thread gathers
//! the events; a cut waits on a condition variable for the cookie. It covers
//! every directory by itself, ignored ones too.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use gix::bstr::BString;
use notify::event::{AccessKind, EventKind, Flag};
use notify::{RecursiveMode, Watcher};

use super::cut::{
    COOKIE_PATIENCE, Cut, DISTRUSTED_PATIENCE, Ignored, MAX_TOUCHED, WatchLost, cookie_name,
    cookie_number,
};

/// The worktree, watched recursively.
pub(crate) struct WorktreeWatch {
    /// Kept alive for its events; dropping it ends the watch. Read only
    /// by the tests, which take the watch away.
    #[cfg_attr(not(test), allow(dead_code))]
    watcher: notify::RecommendedWatcher,
    shared: Arc<(Mutex<Collected>, Condvar)>,
    cookie_dir: PathBuf,
    next_cookie: u64,
    /// How long the next cookie is waited for.
    patience: Duration,
}

/// What the event thread has gathered since the last cut.
#[derive(Default)]
struct Collected {
    touched: BTreeSet<BString>,
    /// Directories that appeared: the watch on them is added after their
    /// event, so what is written in them at first can go unreported.
    new_dirs: BTreeSet<BString>,
    lost: Option<WatchLost>,
    /// The highest cookie seen.
    cookie: u64,
}

impl WorktreeWatch {
    /// Watch `workdir`, and `cookie_dir` (which lies in the git dir) for the
    /// cookies. Events in the git dir other than cookies are not the
    /// worktree's and are dropped.
    pub(crate) fn start(
        workdir: &Path,
        git_dir: &Path,
        cookie_dir: PathBuf,
    ) -> Result<WorktreeWatch, WatchLost> {
        let failed = |err: &dyn std::fmt::Display| WatchLost::Failed(err.to_string());
        std::fs::create_dir_all(&cookie_dir).map_err(|err| failed(&err))?;
        let shared = Arc::new((Mutex::new(Collected::default()), Condvar::new()));
        let roots = Roots {
            workdir: workdir.to_owned(),
            git_dir: git_dir.to_owned(),
            cookie_dir: cookie_dir.clone(),
        };
        let sink = shared.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            let (lock, wake) = &*sink;
            let mut collected = lock.lock().unwrap_or_else(|p| p.into_inner());
            if roots.record(&mut collected, event) {
                wake.notify_all();
            }
        };
        // Followed links would report changes under the link's path, not
        // where the files are.
        let config = notify::Config::default().with_follow_symlinks(false);
        let mut watcher =
            notify::RecommendedWatcher::new(handler, config).map_err(|e| failed(&e))?;
        watcher
            .watch(workdir, RecursiveMode::Recursive)
            .map_err(|err| failed(&err))?;
        if !cookie_dir.starts_with(workdir) {
            watcher
                .watch(&cookie_dir, RecursiveMode::NonRecursive)
                .map_err(|err| failed(&err))?;
        }
        let mut watch = WorktreeWatch {
            watcher,
            shared,
            cookie_dir,
            next_cookie: 0,
            patience: COOKIE_PATIENCE,
        };
        // Only events after the watch is known to be live count.
        watch.cut(&mut |_| false)?;
        Ok(watch)
    }

    /// Nothing to do: every directory is watched already. Returns the
    /// directories that could not be watched: none.
    pub(crate) fn cover(
        &mut self,
        _dirs: &[BString],
        _ignored: &mut Ignored<'_>,
    ) -> Result<Vec<BString>, WatchLost> {
        Ok(Vec::new())
    }

    /// Every path touched since the last cut, up to a cookie written now.
    pub(crate) fn cut(&mut self, _ignored: &mut Ignored<'_>) -> Result<Cut, WatchLost> {
        self.next_cookie += 1;
        let number = self.next_cookie;
        let cookie = self.cookie_dir.join(cookie_name(number));
        std::fs::write(&cookie, b"").map_err(|err| WatchLost::Failed(err.to_string()))?;
        let (lock, wake) = &*self.shared;
        let deadline = Instant::now() + self.patience;
        let mut collected = lock.lock().unwrap_or_else(|p| p.into_inner());
        while collected.cookie < number && collected.lost.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                collected.lost = Some(WatchLost::Silent);
                break;
            }
            collected = wake
                .wait_timeout(collected, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let lost = collected.lost.take();
        self.patience = match lost {
            Some(WatchLost::Silent) => DISTRUSTED_PATIENCE,
            _ => COOKIE_PATIENCE,
        };
        let cut = Cut {
            touched: std::mem::take(&mut collected.touched),
            new_dirs: std::mem::take(&mut collected.new_dirs),
        };
        drop(collected);
        let _ = std::fs::remove_file(&cookie);
        match lost {
            Some(lost) => Err(lost),
            None => Ok(cut),
        }
    }
}

/// Where events come from, to sort them.
struct Roots {
    workdir: PathBuf,
    git_dir: PathBuf,
    cookie_dir: PathBuf,
}

impl Roots {
    /// Record `event`; `true` when a cookie arrived or the watch was lost.
    fn record(&self, collected: &mut Collected, event: notify::Result<notify::Event>) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                collected.lost = Some(WatchLost::Failed(err.to_string()));
                return true;
            }
        };
        if event.need_rescan() || event.flag() == Some(Flag::Rescan) {
            collected.lost = Some(WatchLost::Overflowed);
            return true;
        }
        // Reading a file changes nothing.
        if matches!(
            event.kind,
            EventKind::Access(AccessKind::Open(_) | AccessKind::Read | AccessKind::Any)
        ) {
            return false;
        }
        let mut woke = false;
        for path in &event.paths {
            if let Ok(name) = path.strip_prefix(&self.cookie_dir) {
                woke |= self.cookie(collected, name, &event.kind);
                continue;
            }
            if path.starts_with(&self.git_dir) {
                continue;
            }
            let Ok(relative) = path.strip_prefix(&self.workdir) else {
                continue;
            };
            if relative.as_os_str().is_empty() {
                // The worktree itself was moved or deleted.
                collected.lost = Some(WatchLost::Failed("the worktree itself changed".into()));
                return true;
            }
            let Ok(relative) = gix::path::into_bstr(relative) else {
                continue;
            };
            let relative = gix::path::to_unix_separators_on_windows(relative).into_owned();
            if matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
            ) && path.symlink_metadata().is_ok_and(|meta| meta.is_dir())
            {
                collected.new_dirs.insert(relative.clone());
            }
            collected.touched.insert(relative);
            if collected.touched.len() > MAX_TOUCHED {
                collected.touched.clear();
                collected.lost = Some(WatchLost::TooMany);
                return true;
            }
        }
        woke
    }

    /// A cookie's creation: `<pid>-<number>`.
    fn cookie(&self, collected: &mut Collected, name: &Path, kind: &EventKind) -> bool {
        if !matches!(kind, EventKind::Create(_)) {
            return false;
        }
        match cookie_number(name.as_os_str()) {
            Some(number) if number > collected.cookie => {
                collected.cookie = number;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::CreateKind;

    fn roots() -> Roots {
        Roots {
            workdir: "/w".into(),
            git_dir: "/w/.git".into(),
            cookie_dir: "/w/.git/ralph/cookies".into(),
        }
    }

    /// The kernel's queue overflowed (inotify's `IN_Q_OVERFLOW`, FSEvents'
    /// "must scan subdirectories"): what was dropped is unknown, so the
    /// watch is lost, and a waiting cut wakes up to say so.
    #[test]
    fn an_overflow_loses_the_watch() {
        let mut collected = Collected::default();
        let event = notify::Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert!(roots().record(&mut collected, Ok(event)));
        assert_eq!(collected.lost, Some(WatchLost::Overflowed));
    }

    #[test]
    fn an_error_from_the_watch_loses_it() {
        let mut collected = Collected::default();
        let error = notify::Error::generic("inotify died");
        assert!(roots().record(&mut collected, Err(error)));
        assert!(matches!(collected.lost, Some(WatchLost::Failed(_))));
    }

    #[test]
    fn worktree_paths_are_kept_and_the_git_dir_is_not() {
        let mut collected = Collected::default();
        let create = |path: &str| {
            Ok(notify::Event::new(EventKind::Create(CreateKind::File)).add_path(path.into()))
        };
        assert!(!roots().record(&mut collected, create("/w/src/a.txt")));
        assert!(!roots().record(&mut collected, create("/w/.git/index.lock")));
        let cookie = format!("/w/.git/ralph/cookies/{}-1", std::process::id());
        assert!(roots().record(&mut collected, create(&cookie)));
        assert_eq!(collected.cookie, 1);
        assert_eq!(
            collected.touched.into_iter().collect::<Vec<_>>(),
            [BString::from("src/a.txt")]
        );
        assert_eq!(collected.lost, None);
    }

    /// A watch that stops answering costs the full wait once; later cuts
    /// give up at once, until a cookie comes back again.
    #[test]
    fn a_silent_watch_is_waited_for_in_full_once() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let workdir = std::fs::canonicalize(dir.path()).expect("its real path");
        let git_dir = workdir.join(".git");
        let cookies = git_dir.join("ralph/cookies");
        let mut watch = WorktreeWatch::start(&workdir, &git_dir, cookies).expect("a watch");
        assert!(watch.cut(&mut |_| false).is_ok());

        watch
            .watcher
            .unwatch(&workdir)
            .expect("the watch is taken away");
        let started = Instant::now();
        assert_eq!(watch.cut(&mut |_| false).unwrap_err(), WatchLost::Silent);
        assert!(started.elapsed() >= COOKIE_PATIENCE);
        assert_eq!(watch.patience, DISTRUSTED_PATIENCE);
        assert_eq!(watch.cut(&mut |_| false).unwrap_err(), WatchLost::Silent);
        assert_eq!(watch.patience, DISTRUSTED_PATIENCE);

        watch
            .watcher
            .watch(&workdir, RecursiveMode::Recursive)
            .expect("the watch is back");
        assert!(watch.cut(&mut |_| false).is_ok());
        assert_eq!(watch.patience, COOKIE_PATIENCE);
    }
}
