//! A conflicted index (a `git stash pop` or a `git checkout -m` that
//! conflicted) is the user's too, yet `git stash` refuses to keep one and
//! `git add -A` would flatten it. Before `abort` or `finish` replace it, each stage of
//! the conflicted paths becomes a tree of its own (the other paths as they
//! were staged), so that the worktree with its markers and the three
//! versions git was merging all stay reachable from one ref.

use std::collections::BTreeMap;

use gix::bstr::BString;
use gix::index::entry::{Flags, Stat};

use super::error::OpError;
use super::ids::ObjectId;
use super::open::Repo;
use super::tree::write_tree;

/// The stages of a conflicted index, each a commit on HEAD whose tree is
/// the index with the conflicted paths at that stage (absent where the
/// stage is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stages {
    pub ours: ObjectId,
    pub base: ObjectId,
    pub theirs: ObjectId,
}

/// Whether `index` holds a conflict.
pub(crate) fn conflicted(index: &gix::index::State) -> bool {
    index.entries().iter().any(|entry| entry.stage_raw() != 0)
}

/// `index` with the conflicted paths at `stage` (1 base, 2 ours, 3 theirs)
/// as if staged so, and absent where they have no such stage.
fn at_stage(index: &gix::index::File, stage: u32) -> gix::index::File {
    let mut index = index.clone();
    index.remove_tree();
    index.remove_entries(|_, _, entry| match entry.stage_raw() {
        0 => false,
        raw if raw == stage => {
            entry.flags.remove(Flags::STAGE_MASK);
            false
        }
        _ => true,
    });
    index
}

/// `index` with each conflicted path at one stage (ours, else theirs, else
/// base) and its stat forgotten, so that what is on disk is read: an index
/// `git add -A` and a reset can start from.
pub(crate) fn flattened(index: &gix::index::File) -> gix::index::File {
    let rank = |stage: u32| match stage {
        2 => 0,
        3 => 1,
        _ => 2,
    };
    let mut chosen: BTreeMap<BString, u32> = BTreeMap::new();
    for entry in index.entries().iter().filter(|e| e.stage_raw() != 0) {
        let stage = entry.stage_raw();
        chosen
            .entry(entry.path(index).to_owned())
            .and_modify(|kept| {
                if rank(stage) < rank(*kept) {
                    *kept = stage;
                }
            })
            .or_insert(stage);
    }
    let mut index = index.clone();
    index.remove_tree();
    index.remove_entries(|_, path, entry| {
        let stage = entry.stage_raw();
        if stage == 0 {
            return false;
        }
        if chosen.get(path) != Some(&stage) {
            return true;
        }
        entry.flags.remove(Flags::STAGE_MASK);
        entry.stat = Stat::default();
        false
    });
    index
}

/// `index` as [`flattened`] leaves it, shared as the index reader's are.
pub(crate) fn flattened_shared(index: &gix::index::File) -> gix::worktree::Index {
    std::sync::Arc::new(gix::fs::FileSnapshot::new(flattened(index)))
}

impl Repo {
    /// A commit of each stage of conflicted `index`, on `parents`, with
    /// `message` and the stage it keeps.
    pub(crate) fn commit_stages(
        &self,
        index: &gix::index::File,
        message: &str,
        parents: &[ObjectId],
    ) -> Result<Stages, OpError> {
        let commit = |stage: u32, name: &str| -> Result<ObjectId, OpError> {
            let tree = write_tree(&self.repo, &at_stage(index, stage))?;
            self.write_commit(
                &format!(
                    "{message}\n\nThe tree is the index as it was, its conflicted paths at stage {stage} ({name})."
                ),
                tree,
                parents,
            )
        };
        Ok(Stages {
            ours: commit(2, "ours")?,
            base: commit(1, "base")?,
            theirs: commit(3, "theirs")?,
        })
    }
}
