//! The user's stash: `refs/stash` and its reflog, which holds every entry
//! below the newest. An agent that runs `git stash clear` or `git stash
//! drop` destroys work of the user's that lives nowhere else, so the stash
//! is noted with the branches before an attempt ([`super::guard`]) and put
//! back after it: every entry the user had is there again, byte for byte
//! in the reflog, and what the agent stashed stays on top of them.

use serde::{Deserialize, Serialize};

use super::error::{Context, GitFailure};
use super::ids::ObjectId;
use super::open::Repo;
use super::refs::{delete, update};

const STASH: &str = "refs/stash";

/// The stash as it stood: where `refs/stash` pointed and its reflog.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StashLog {
    /// Where `refs/stash` pointed, in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tip: Option<String>,
    /// Its reflog, byte for byte; an entry a line, the newest last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<Vec<u8>>,
}

/// What putting the stash back did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StashPutBack {
    /// Entries the user had that were gone, now back.
    pub lost: usize,
    /// Entries stashed meanwhile, left on top of the user's.
    pub added: usize,
}

impl StashLog {
    /// The reflog's lines, with the commit each entry names.
    fn entries(&self) -> Vec<(&[u8], Option<ObjectId>)> {
        let Some(log) = &self.log else {
            return Vec::new();
        };
        log.split_inclusive(|b| *b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .map(|line| (line, entry_commit(line)))
            .collect()
    }
}

/// The commit a reflog line moved the ref to: its second field.
fn entry_commit(line: &[u8]) -> Option<ObjectId> {
    let new = line.split(|b| *b == b' ').nth(1)?;
    ObjectId::from_hex(new).ok()
}

impl Repo {
    /// The stash's reflog. A linked worktree names the common directory
    /// through its own (`.git/worktrees/<name>/../..`): the path is made
    /// without it, so that it stays good once that worktree is removed.
    fn stash_log_path(&self) -> std::path::PathBuf {
        let mut common = std::path::PathBuf::new();
        for part in self.common_dir().components() {
            match part {
                std::path::Component::ParentDir => {
                    common.pop();
                }
                std::path::Component::CurDir => {}
                part => common.push(part),
            }
        }
        common.join("logs").join(STASH)
    }

    /// The stash as it stands now.
    pub(crate) fn stash_log(&self) -> Result<StashLog, GitFailure> {
        let tip = self.resolve_ref(STASH)?.map(|id| id.to_string());
        let path = self.stash_log_path();
        let log = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => {
                return Err(GitFailure::new(
                    format!("could not read {}", path.display()),
                    err,
                ));
            }
        };
        Ok(StashLog { tip, log })
    }

    /// Make every entry of `before` the stash's again, in its place and
    /// byte for byte; entries stashed since stay on top. `None` when no
    /// entry of `before` was lost and nothing was added.
    pub(crate) fn put_back_stash(
        &self,
        before: &StashLog,
    ) -> Result<Option<StashPutBack>, GitFailure> {
        // The stories of a parallel run share the stash: one reads and
        // writes it back at a time, or one would write over the other's.
        static PUTTING_BACK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = PUTTING_BACK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = self.stash_log()?;
        if now == *before {
            return Ok(None);
        }
        let had: Vec<Option<ObjectId>> = before.entries().iter().map(|(_, id)| *id).collect();
        let has: Vec<Option<ObjectId>> = now.entries().iter().map(|(_, id)| *id).collect();
        let lost = had.iter().filter(|id| !has.contains(id)).count();
        let added: Vec<&[u8]> = now
            .entries()
            .into_iter()
            .filter(|(_, id)| !had.contains(id))
            .map(|(line, _)| line)
            .collect();
        let changed = StashPutBack {
            lost,
            added: added.len(),
        };
        if lost == 0 {
            // Nothing of the user's is gone: what was stashed on top stays
            // as it is.
            return Ok((changed.added > 0).then_some(changed));
        }
        let mut log = before.log.clone().unwrap_or_default();
        if !log.is_empty() && !log.ends_with(b"\n") {
            log.push(b'\n');
        }
        for line in &added {
            log.extend_from_slice(line);
        }
        let tip = match added.last() {
            Some(line) => entry_commit(line),
            None => before
                .tip
                .as_deref()
                .and_then(|hex| ObjectId::from_hex(hex.as_bytes()).ok()),
        };
        self.write_stash(tip, &log)?;
        Ok(Some(changed))
    }

    /// Point `refs/stash` at `tip` and make `log` its reflog.
    fn write_stash(&self, tip: Option<ObjectId>, log: &[u8]) -> Result<(), GitFailure> {
        let current = self.resolve_ref(STASH)?;
        match (tip, current) {
            (Some(tip), _) => self.edit_refs(vec![update(
                STASH,
                tip,
                gix::refs::transaction::PreviousValue::Any,
                "ralph: put back the stash",
            )?])?,
            (None, Some(current)) => self.edit_refs(vec![delete(STASH, current)?])?,
            (None, None) => {}
        }
        let path = self.stash_log_path();
        write_log(&path, log).ctx(|| format!("could not write {}", path.display()))
    }
}

/// How often writing the stash's reflog is tried while its directory
/// keeps vanishing.
const WRITE_TRIES: usize = 5;

/// Make `log` the reflog at `path`, or remove it when `log` is empty. A
/// reader sees the old log or the new one, never half of it. An agent's
/// `git stash clear` in another worktree removes the reflog and the
/// directories it leaves empty, at any moment: a write whose directory
/// went meanwhile is made again.
fn write_log(path: &std::path::Path, log: &[u8]) -> std::io::Result<()> {
    if log.is_empty() {
        return match std::fs::remove_file(path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        };
    }
    // A file of this process and this write alone: the stories of a
    // parallel run put the stash back each from its own thread.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("ralph-{}-{n}.lock", std::process::id()));
    let mut tries = 0;
    loop {
        tries += 1;
        let written = (|| {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&tmp, log)?;
            std::fs::rename(&tmp, path)
        })();
        match written {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && tries < WRITE_TRIES => {
                let _ = std::fs::remove_file(&tmp);
            }
            Err(err) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(err);
            }
            Ok(()) => return Ok(()),
        }
    }
}
