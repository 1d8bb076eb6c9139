//! The refs that are not the run's own: the user's branches and tags, which
//! an agent must not move, and the refs an earlier run of the same change
//! left, which a new run must not overwrite.
//!
//! An agent runs with the whole repository in reach; `git checkout main &&
//! git commit` is one bad idea away. So the loop takes a [`RefSnapshot`]
//! before an attempt and [`Repo::restore_user_refs`] after it: whatever
//! moved is put back, and what the agent committed stays reachable under a
//! ref of the run. What people working in other worktrees do meanwhile
//! (commit, switch, branch where they stand) is theirs: their HEAD logs
//! say so, and it is left alone. Likewise a new run of a change first moves the earlier
//! run's refs under `refs/ralph/<change>/history/<id>/`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::refs::transaction::PreviousValue;

use super::error::{Context, GitFailure};
use super::ids::ObjectId;
use super::open::Repo;
use super::refs::{delete, update};
use super::stash::{StashLog, StashPutBack};
use serde::{Deserialize, Serialize};

/// Where each local branch and tag pointed (their direct targets, so an
/// annotated tag is its tag object), and how long the HEAD log of every
/// other worktree was: what is appended there meanwhile was done by
/// whoever works in that worktree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefSnapshot {
    refs: BTreeMap<String, ObjectId>,
    other_logs: BTreeMap<PathBuf, u64>,
    stash: StashLog,
}

/// A [`RefSnapshot`] as it is kept on disk while an attempt runs, so that
/// a loop killed mid-attempt still puts back what its agent moved.
#[derive(Serialize, Deserialize)]
struct KeptSnapshot {
    refs: BTreeMap<String, String>,
    #[serde(default)]
    other_logs: BTreeMap<PathBuf, u64>,
    #[serde(default)]
    stash: StashLog,
}

impl RefSnapshot {
    /// The snapshot as JSON, to keep beside the run.
    pub fn to_json(&self) -> Vec<u8> {
        let kept = KeptSnapshot {
            refs: self
                .refs
                .iter()
                .map(|(name, id)| (name.clone(), id.to_string()))
                .collect(),
            other_logs: self.other_logs.clone(),
            stash: self.stash.clone(),
        };
        serde_json::to_vec_pretty(&kept).unwrap_or_default()
    }

    /// A snapshot kept with [`RefSnapshot::to_json`]; `None` when it cannot
    /// be read as one.
    pub fn from_json(bytes: &[u8]) -> Option<RefSnapshot> {
        let kept: KeptSnapshot = serde_json::from_slice(bytes).ok()?;
        let refs = kept
            .refs
            .into_iter()
            .map(|(name, hex)| Some((name, ObjectId::from_hex(hex.as_bytes()).ok()?)))
            .collect::<Option<_>>()?;
        Some(RefSnapshot {
            refs,
            other_logs: kept.other_logs,
            stash: kept.stash,
        })
    }
}

impl RefSnapshot {
    /// The branches and tags created, deleted or moved since `earlier`,
    /// each with what befell it, and the stash if it changed; what the
    /// other worktrees' HEADs did aside.
    pub fn changed_since(&self, earlier: &RefSnapshot) -> Vec<String> {
        let names: std::collections::BTreeSet<&String> =
            earlier.refs.keys().chain(self.refs.keys()).collect();
        let mut changed: Vec<String> = names
            .into_iter()
            .filter_map(|name| match (earlier.refs.get(name), self.refs.get(name)) {
                (None, Some(_)) => Some(format!("{name} was created")),
                (Some(_), None) => Some(format!("{name} was deleted")),
                (Some(was), Some(now)) if was != now => Some(format!("{name} moved")),
                _ => None,
            })
            .collect();
        if self.stash != earlier.stash {
            changed.push("the stash changed".to_owned());
        }
        changed
    }

    /// This snapshot as an attempt must hold it while another attempt,
    /// begun earlier and still under way, holds `earlier` (a story of the
    /// same parallel run): what that attempt's agent did before this one
    /// began is no more the user's than what it does after. The branches,
    /// tags and stash are `earlier`'s; the other worktrees are this
    /// snapshot's, with the older length of each HEAD log both know.
    pub fn under(self, earlier: RefSnapshot) -> RefSnapshot {
        let other_logs = self
            .other_logs
            .into_iter()
            .map(|(log, len)| {
                let len = earlier.other_logs.get(&log).copied().unwrap_or(len);
                (log, len)
            })
            .collect();
        RefSnapshot {
            refs: earlier.refs,
            other_logs,
            stash: earlier.stash,
        }
    }
}

/// A ref an agent changed, and what was done about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredRef {
    pub name: String,
    /// Where it pointed before the attempt; `None` if the agent created it.
    pub was: Option<ObjectId>,
    /// Where the agent left it; `None` if the agent deleted it.
    pub found: Option<ObjectId>,
    /// The ref that now keeps what the agent left there.
    pub kept_at: Option<String>,
    /// For `refs/stash`: the entries put back, and those left on top.
    pub stash: Option<StashPutBack>,
}

/// Whether `name` is one of `except`: a full name, or a prefix ending in
/// `*`.
fn excepted(name: &str, except: &[String]) -> bool {
    except
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        })
}

impl Repo {
    /// Direct targets of the refs under `prefix`; symbolic refs are skipped.
    fn direct_refs(&self, prefix: &str) -> Result<BTreeMap<String, ObjectId>, GitFailure> {
        let mut out = BTreeMap::new();
        for reference in self.listed_refs(prefix)? {
            if let Some(id) = reference.target().try_id() {
                let name = reference.name().as_bstr().to_str_lossy().into_owned();
                out.insert(name, id.to_owned());
            }
        }
        Ok(out)
    }

    /// The local branches and tags, all but `except` (the run's branches:
    /// full names, or prefixes ending in `*`).
    pub fn snapshot_user_refs(&self, except: &[String]) -> Result<RefSnapshot, GitFailure> {
        let _timed = crate::timings::phase("user refs");
        let mut refs = self.direct_refs("refs/heads/")?;
        refs.extend(self.direct_refs("refs/tags/")?);
        refs.retain(|name, _| !excepted(name, except));
        let stash = self.stash_log()?;
        let other_logs = self
            .other_git_dirs()?
            .into_iter()
            .map(|git_dir| {
                let log = git_dir.join("logs").join("HEAD");
                let len = std::fs::metadata(&log).map_or(0, |meta| meta.len());
                (log, len)
            })
            .collect();
        Ok(RefSnapshot {
            refs,
            other_logs,
            stash,
        })
    }

    /// The git directories of every worktree but this one.
    fn other_git_dirs(&self) -> Result<Vec<PathBuf>, GitFailure> {
        let real = |path: &Path| gix::path::realpath(path).unwrap_or_else(|_| path.to_owned());
        let own = real(self.git_dir());
        let mut dirs = vec![self.common_dir().to_owned()];
        for proxy in self
            .repo
            .worktrees()
            .ctx(|| "could not list worktrees".into())?
        {
            dirs.push(proxy.git_dir().to_owned());
        }
        Ok(dirs.into_iter().filter(|dir| real(dir) != own).collect())
    }

    /// What happened in the other worktrees since `before`: the commits
    /// their HEADs moved to (their HEAD logs' new lines), and the commits
    /// their HEADs are at now.
    fn moves_elsewhere(&self, before: &RefSnapshot) -> (HashSet<ObjectId>, HashSet<ObjectId>) {
        let mut moved_to = HashSet::new();
        for (log, len) in &before.other_logs {
            let Ok(bytes) = std::fs::read(log) else {
                continue;
            };
            let appended = bytes.get(*len as usize..).unwrap_or_default();
            for line in appended.split(|b| *b == b'\n') {
                if let Some(new) = line
                    .split(|b| *b == b' ')
                    .nth(1)
                    .and_then(|hex| ObjectId::from_hex(hex).ok())
                {
                    moved_to.insert(new);
                }
            }
        }
        let mut heads = HashSet::new();
        for log in before.other_logs.keys() {
            let Some(git_dir) = log.parent().and_then(Path::parent) else {
                continue;
            };
            let Ok(head) = std::fs::read_to_string(git_dir.join("HEAD")) else {
                continue;
            };
            let head = head.trim();
            let id = match head.strip_prefix("ref: ") {
                Some(name) => self.resolve_ref(name).ok().flatten(),
                None => ObjectId::from_hex(head.as_bytes()).ok(),
            };
            heads.extend(id);
        }
        (moved_to, heads)
    }

    /// Put every local branch and tag (but `except`) back where `before`
    /// had it. What the agent left in a moved or created ref is kept at
    /// `<keep_prefix>/<name without refs/>`.
    pub fn restore_user_refs(
        &self,
        before: &RefSnapshot,
        except: &[String],
        keep_prefix: &str,
    ) -> Result<Vec<RestoredRef>, GitFailure> {
        let now = self.snapshot_user_refs(except)?;
        let (moved_elsewhere, heads_elsewhere) = self.moves_elsewhere(before);
        let mut restored = Vec::new();
        let names: std::collections::BTreeSet<&String> =
            before.refs.keys().chain(now.refs.keys()).collect();
        for name in names {
            let (was, found) = (before.refs.get(name).copied(), now.refs.get(name).copied());
            if was == found {
                continue;
            }
            // Someone working in another worktree meanwhile (the user beside
            // a run in its own worktree) moved it there, or made it where
            // they stand: theirs, not the agent's.
            let theirs = found.is_some_and(|found| {
                moved_elsewhere.contains(&found)
                    || (was.is_none() && heads_elsewhere.contains(&found))
            });
            if theirs {
                continue;
            }
            let mut edits = Vec::new();
            let mut kept_at = None;
            if let Some(found) = found {
                let keep = format!(
                    "{keep_prefix}/{}",
                    name.strip_prefix("refs/").unwrap_or(name)
                );
                edits.push(update(
                    &keep,
                    found,
                    PreviousValue::Any,
                    "ralph: keep what an agent left on a ref it must not move",
                )?);
                kept_at = Some(keep);
            }
            edits.push(match (was, found) {
                (Some(was), _) => update(
                    name,
                    was,
                    PreviousValue::Any,
                    "ralph: put back a ref an agent moved",
                )?,
                (None, Some(found)) => delete(name, found)?,
                (None, None) => continue,
            });
            self.edit_refs(edits)?;
            restored.push(RestoredRef {
                name: name.clone(),
                was,
                found,
                kept_at,
                stash: None,
            });
        }
        if let Some(put_back) = self.put_back_stash(&before.stash)? {
            restored.push(RestoredRef {
                name: "refs/stash".into(),
                was: None,
                found: None,
                kept_at: None,
                stash: Some(put_back),
            });
        }
        Ok(restored)
    }

    /// Move every ref under `namespace/` (but the `history/` below it) to
    /// `namespace/history/<id>/`, so a new run of the change starts clean
    /// and nothing of the earlier one is lost. Returns how many moved.
    pub fn archive_refs(&self, namespace: &str, id: &str) -> Result<usize, GitFailure> {
        let history = format!("{namespace}/history/");
        let refs = self.direct_refs(&format!("{namespace}/"))?;
        let mut moved = 0;
        for (name, target) in refs {
            if name.starts_with(&history) {
                continue;
            }
            let rest = name.strip_prefix(&format!("{namespace}/")).unwrap_or(&name);
            let new = format!("{history}{id}/{rest}");
            self.edit_refs(vec![
                update(
                    &new,
                    target,
                    PreviousValue::Any,
                    "ralph: keep an earlier run's ref",
                )?,
                delete(&name, target)?,
            ])?;
            moved += 1;
        }
        Ok(moved)
    }

    /// `base`, or `base-2`, `base-3`, … whichever does not exist yet.
    pub fn unused_ref(&self, base: &str) -> Result<String, GitFailure> {
        let mut candidate = base.to_owned();
        let mut n = 1;
        while self.resolve_ref(&candidate)?.is_some() {
            n += 1;
            candidate = format!("{base}-{n}");
        }
        Ok(candidate)
    }
}

impl Repo {
    /// The tip of `ralph/<change>` when HEAD is on it and it has moved past
    /// `checkpoint` by commits on top of it (the user's, made while the run
    /// was stopped); `None` otherwise.
    pub fn descendant_tip(
        &self,
        change: &super::name::ChangeName,
        checkpoint: ObjectId,
    ) -> Result<Option<ObjectId>, GitFailure> {
        let tip = match self.head()? {
            super::open::HeadState::Branch { name, commit }
                if name == change.branch_ref() && commit != checkpoint =>
            {
                commit
            }
            _ => return Ok(None),
        };
        let walk = self
            .repo
            .rev_walk([tip])
            .all()
            .ctx(|| format!("could not walk the history of {}", change.branch_short()))?;
        for info in walk {
            let info = info.map_err(|err| {
                GitFailure::new(
                    format!("could not walk the history of {}", change.branch_short()),
                    err,
                )
            })?;
            if info.id == checkpoint {
                return Ok(Some(tip));
            }
        }
        Ok(None)
    }
}
