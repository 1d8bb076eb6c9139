//! The index as this process last read or wrote it, reused while the file on
//! disk is provably the same one (device, inode, size, mtime: every index
//! write, ours or git's, renames a new file into place). Reading and
//! checksumming a large index costs as much as hashing the tree, so an
//! operation reads it once, and the one after ours not at all. When it is
//! our own write, the tree it describes is known too, which lets a revert
//! skip rebuilding the index when nothing was staged.

use std::sync::Arc;

use super::error::{Context, GitFailure};
use super::ids::ObjectId;
use super::lock::{IndexLock, drop_extensions};
use super::open::Repo;
use super::repo_state::{Identity, IndexCache, identity};
use super::split_index::Written;

fn shared(file: gix::index::File) -> gix::worktree::Index {
    Arc::new(gix::fs::FileSnapshot::new(file))
}

impl Repo {
    /// The index on disk (empty in a fresh repository), shared.
    pub(crate) fn shared_index(&self) -> Result<gix::worktree::Index, GitFailure> {
        let path = self.repo.index_path();
        let before = identity(&path);
        if let Some(cache) = self.index_cache.borrow().as_ref()
            && Some(cache.identity) == before
        {
            return Ok(cache.snapshot.clone());
        }
        let _timed = crate::timings::phase("index read");
        let file = if before.is_some() {
            self.repo
                .open_index()
                .ctx(|| format!("could not read {}", path.display()))?
        } else {
            gix::index::File::from_state(
                gix::index::State::new(self.repo.object_hash()),
                path.clone(),
            )
        };
        let snapshot = shared(file);
        let after = identity(&path);
        *self.index_cache.borrow_mut() = match (before, after) {
            (Some(before), Some(after)) if before == after => Some(IndexCache {
                snapshot: snapshot.clone(),
                identity: after,
                tree: self.recorded_tree(after),
            }),
            _ => None,
        };
        Ok(snapshot)
    }

    /// The index as this process last read or wrote it, while it is still
    /// the file on disk.
    pub(crate) fn cached_index(&self) -> Option<(Identity, gix::worktree::Index)> {
        let cache = self.index_cache.borrow();
        let cache = cache.as_ref()?;
        (Some(cache.identity) == identity(&self.repo.index_path()))
            .then(|| (cache.identity, cache.snapshot.clone()))
    }

    /// The tree the index on disk describes, if this process wrote it.
    pub(crate) fn known_index_tree(&self) -> Option<ObjectId> {
        let cache = self.index_cache.borrow();
        let cache = cache.as_ref()?;
        (Some(cache.identity) == identity(&self.repo.index_path())).then_some(cache.tree?)
    }

    /// The tree `index` describes, when that is known without hashing it:
    /// this process wrote it, or its cache-tree is valid throughout.
    pub(crate) fn tree_described_by(&self, index: &gix::index::File) -> Option<ObjectId> {
        self.known_index_tree()
            .or_else(|| super::tree::cached_tree(&self.repo, index))
    }

    /// Write `index` through `lock` and remember it (and the tree it
    /// describes, when known) for the next operation.
    pub(crate) fn commit_index(
        &self,
        lock: IndexLock,
        mut index: gix::index::File,
        tree: Option<ObjectId>,
    ) -> Result<(), GitFailure> {
        let _timed = crate::timings::phase("index write");
        drop_extensions(&mut index);
        let written = match self.split_encoding(&index)? {
            Some(split) => {
                lock.commit_bytes(&split.bytes)?;
                Written::Split(split.new_base)
            }
            None => {
                lock.commit(&mut index)?;
                Written::Whole
            }
        };
        let snapshot = shared(index);
        self.after_index_write(written, &snapshot);
        // What the scan before this write learned of the directories is
        // kept with it.
        if let Some(cache) = self.dir_cache.borrow_mut().as_mut() {
            cache.save(&self.dir_cache_path());
        }
        let identity = identity(&self.repo.index_path());
        self.record_tree(identity.zip(tree));
        *self.index_cache.borrow_mut() = identity.map(|identity| IndexCache {
            snapshot,
            identity,
            tree,
        });
        Ok(())
    }

    /// `<git-dir>/ralph/index-tree`: which tree the index file we last wrote
    /// describes, so that the next git-ralph process knows it too. It is
    /// trusted only while the index file is that very file.
    fn tree_record_path(&self) -> std::path::PathBuf {
        self.own_ralph_dir().join(super::own_files::INDEX_TREE)
    }

    fn record_tree(&self, record: Option<(Identity, ObjectId)>) {
        let path = self.tree_record_path();
        match record {
            Some((id, tree)) => {
                let line = format!(
                    "{} {} {} {} {} {tree}\n",
                    id.dev, id.ino, id.size, id.mtime, id.mtime_nsec
                );
                // A cache, not state: no fsync on this hot path. A torn or
                // stale record fails to parse or to match, and is ignored.
                let _ = std::fs::create_dir_all(self.own_ralph_dir());
                let _ = std::fs::write(&path, line);
            }
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    fn recorded_tree(&self, current: Identity) -> Option<ObjectId> {
        let text = std::fs::read_to_string(self.tree_record_path()).ok()?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let [dev, ino, size, mtime, mtime_nsec, tree] = words.as_slice() else {
            return None;
        };
        let recorded = Identity {
            dev: dev.parse().ok()?,
            ino: ino.parse().ok()?,
            size: size.parse().ok()?,
            mtime: mtime.parse().ok()?,
            mtime_nsec: mtime_nsec.parse().ok()?,
        };
        let tree = ObjectId::from_hex(tree.as_bytes()).ok()?;
        (recorded == current).then_some(tree)
    }
}
