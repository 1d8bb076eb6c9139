//! A run's work brought into the user's worktree as uncommitted changes:
//! the cleanup of a run that worked in a worktree of its own, beside the
//! user, who may have changed anything meanwhile.
//!
//! Only the paths the run changed are written, and only where the user's
//! worktree still holds what the run started from (or already holds what
//! it ended with). A path the user changed meanwhile, a file of theirs in
//! the way of a new one (ignored ones too), stops it all before a single
//! byte is written, and is named. Their index is never touched: files the
//! run added show as untracked, as after a cleanup in place.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

use gix::bstr::{BString, ByteSlice};
use gix::index::entry::Mode;

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::open::Repo;

/// What [`Repo::bring_in`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Brought {
    /// Files written (added or changed).
    pub written: usize,
    /// Files the run deleted, deleted here too.
    pub removed: usize,
}

/// Why the run's work was not brought in.
#[derive(Debug, thiserror::Error)]
pub enum BringError {
    /// Nothing was written.
    #[error("bringing the run's work in would touch your own changes in {}", paths.join(", "))]
    WouldTouch { paths: Vec<String> },
    #[error(transparent)]
    Op(#[from] OpError),
}

impl From<GitFailure> for BringError {
    fn from(err: GitFailure) -> Self {
        BringError::Op(err.into())
    }
}

/// A path's entry: its mode and object, or absent.
type Entry = Option<(Mode, ObjectId)>;

/// What bringing the work in does, path by path.
struct Plan {
    write: Vec<BString>,
    remove: Vec<BString>,
    conflicts: Vec<String>,
}

impl Repo {
    /// Bring the change from tree `base` (what the run started from) to
    /// tree `tip` (what it ended with) into this worktree, as uncommitted
    /// changes, unless that would touch something the user changed: then
    /// nothing is written and the paths are named.
    pub fn bring_in(&self, base: ObjectId, tip: ObjectId) -> Result<Brought, BringError> {
        let plan = self.plan_bring_in(base, tip)?;
        if !plan.conflicts.is_empty() {
            return Err(BringError::WouldTouch {
                paths: plan.conflicts,
            });
        }
        let workdir = self.workdir().to_owned();
        let mut emptied = Vec::new();
        for path in &plan.remove {
            let full = workdir.join(
                gix::path::from_bstr(path.as_bstr())
                    .ctx(|| format!("'{path}' is not a valid path here"))?,
            );
            std::fs::remove_file(&full).ctx(|| format!("could not remove {}", full.display()))?;
            if let Some(parent) = full.parent() {
                emptied.push(parent.to_owned());
            }
        }
        super::reset::remove_empty_dirs(&workdir, emptied);
        if !plan.write.is_empty() {
            let mut target = self.index_for_tree(
                tip,
                &gix::index::File::from_state(
                    gix::index::State::new(self.repo.object_hash()),
                    self.repo.index_path(),
                ),
            )?;
            let wanted: HashSet<&BString> = plan.write.iter().collect();
            let positions = target
                .entries()
                .iter()
                .enumerate()
                .filter(|(_, entry)| wanted.contains(&entry.path(&target).to_owned()))
                .map(|(at, _)| at)
                .collect();
            self.checkout_only(&mut target, &positions)?;
        }
        Ok(Brought {
            written: plan.write.len(),
            removed: plan.remove.len(),
        })
    }

    /// The paths where bringing `base → tip` in would touch something the
    /// user changed; none when [`Repo::bring_in`] may go ahead. Reads only.
    pub fn bring_in_conflicts(
        &self,
        base: ObjectId,
        tip: ObjectId,
    ) -> Result<Vec<String>, OpError> {
        Ok(self.plan_bring_in(base, tip)?.conflicts)
    }

    /// Path by path: what to write, what to remove, and where the user's
    /// worktree is in the way. Reads only: what the worktree holds is
    /// hashed in memory, never written to the object database.
    fn plan_bring_in(&self, base: ObjectId, tip: ObjectId) -> Result<Plan, OpError> {
        let from = self.tree_entries(&self.repo, base)?;
        let to = self.tree_entries(&self.repo, tip)?;
        let changed: BTreeSet<&BString> = from
            .keys()
            .chain(to.keys())
            .filter(|path| from.get(*path) != to.get(*path))
            .collect();
        let memory = self.in_memory();
        let now = memory.fingerprint()?;
        let here = self.tree_entries(&memory.repo, now)?;

        let mut plan = Plan {
            write: Vec::new(),
            remove: Vec::new(),
            conflicts: Vec::new(),
        };
        let entry = |map: &BTreeMap<BString, (Mode, ObjectId)>, path: &BString| -> Entry {
            map.get(path).copied()
        };
        for path in &changed {
            let (start, end, current) = (entry(&from, path), entry(&to, path), entry(&here, path));
            if current == end {
                continue;
            }
            // Something on disk that the user's worktree state leaves out
            // (an ignored file, a directory) would be overwritten.
            let on_disk = current.is_none() && self.on_disk(path).is_some();
            if current != start || on_disk {
                plan.conflicts.push(path.to_str_lossy().into_owned());
                continue;
            }
            match end {
                Some(_) => plan.write.push((*path).clone()),
                None => plan.remove.push((*path).clone()),
            }
        }
        // A file of the user's where a new file needs a directory.
        let removed: HashSet<&BString> = plan.remove.iter().collect();
        for path in &plan.write {
            let mut prefix = path.as_bstr();
            while let Some(slash) = prefix.rfind_byte(b'/') {
                prefix = &prefix[..slash];
                let owned = BString::from(prefix);
                if removed.contains(&owned) {
                    continue;
                }
                if self.on_disk(&owned).is_some_and(|meta| !meta.is_dir()) {
                    plan.conflicts.push(owned.to_str_lossy().into_owned());
                }
            }
        }
        plan.conflicts.sort();
        plan.conflicts.dedup();
        Ok(plan)
    }

    /// What is at `path` (relative) in the worktree, not following links.
    fn on_disk(&self, path: &BString) -> Option<std::fs::Metadata> {
        let rel: PathBuf = gix::path::from_bstr(path.as_bstr()).ok()?.into_owned();
        std::fs::symlink_metadata(self.workdir().join(rel)).ok()
    }

    /// Every file of `tree`, by path.
    fn tree_entries(
        &self,
        repo: &gix::Repository,
        tree: ObjectId,
    ) -> Result<BTreeMap<BString, (Mode, ObjectId)>, GitFailure> {
        let index = repo
            .index_from_tree(&tree)
            .ctx(|| format!("could not read tree {tree}"))?;
        Ok(index
            .entries()
            .iter()
            .map(|entry| (entry.path(&index).to_owned(), (entry.mode, entry.id)))
            .collect())
    }

    /// This repository with every object it writes kept in memory.
    pub(crate) fn in_memory(&self) -> Repo {
        let mut memory = Repo::around(
            self.repo.clone().with_object_memory(),
            self.ralph_dir.clone(),
            self.own_dir.clone(),
        );
        memory.scratch = self.scratch.clone();
        memory
    }
}
