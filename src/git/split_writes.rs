//! When the index is written split (see `split_index.rs`), and handing it
//! back whole. A loop writes the index split once it is large, from its
//! first write to its end; then [`Repo::settle_index`] writes it whole
//! again and removes the shared indexes it made, so that the repository a
//! run hands back has the index git would have written. What this process
//! made is listed in `<git-dir>/ralph/shared-indexes` before it is made:
//! a loop killed mid-run leaves an index git reads as usual, and the next
//! whole write by any git-ralph process (a resumed loop's end, finish,
//! abort) removes what the list names.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use gix::bstr::ByteSlice;

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::index_file::encode_plain;
use super::lock::IndexLock;
use super::open::Repo;
use super::split_index::{SharedBase, Split, Written, encode_split, encode_unchanged, file_name};

/// From how many entries a loop writes the index split: below it, the
/// whole index is written in about the time the split one would take.
pub const SPLIT_INDEX_FROM: usize = 10_000;

impl Repo {
    /// Write the index split from now on, once it holds `from` entries,
    /// until [`Repo::settle_index`]. Not when the user chose otherwise:
    /// `core.splitIndex` set either way, or a shared index of their own
    /// beside the index.
    pub fn write_index_split(&mut self, from: usize) {
        if self
            .repo
            .config_snapshot()
            .boolean("core.splitIndex")
            .is_some()
        {
            return;
        }
        let ours = self.shared_indexes_made();
        let theirs = std::fs::read_dir(self.index_dir())
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.starts_with("sharedindex.") && !ours.contains(&name)
            });
        if !theirs {
            self.split.get_mut().from = Some(from);
        }
    }

    /// Write the index whole again if git-ralph wrote it split, and remove
    /// the shared indexes it made; later writes are whole.
    pub fn settle_index(&mut self) -> Result<(), OpError> {
        let _timed = crate::timings::phase("index settle");
        self.split.get_mut().from = None;
        if !self.shared_list_path().exists() {
            return Ok(());
        }
        if !self.index_names_ours() {
            // Written whole since, or put back as it was (an abort): only
            // the shared indexes are left to remove.
            self.forget_shared_indexes();
            return Ok(());
        }
        let lock = IndexLock::acquire(self)?;
        let index = (**self.shared_index()?).clone();
        let tree = self.known_index_tree();
        self.commit_index(lock, index, tree)?;
        Ok(())
    }

    /// Whether the index file links to a shared index git-ralph made: its
    /// link extension holds the shared index's checksum.
    fn index_names_ours(&self) -> bool {
        // This process's last write was split, and is still the file on
        // disk: nothing to read.
        if self.split.borrow().base.is_some() && self.cached_index().is_some() {
            return true;
        }
        let Ok(bytes) = std::fs::read(self.repo.index_path()) else {
            return false;
        };
        self.shared_indexes_made().iter().any(|name| {
            let hex = name.trim_start_matches("sharedindex.");
            ObjectId::from_hex(hex.as_bytes()).is_ok_and(|id| bytes.find(id.as_bytes()).is_some())
        })
    }

    /// `index` encoded split, when it is to be: against the shared index
    /// in use while little changed, otherwise against a new one written now.
    pub(crate) fn split_encoding(
        &self,
        index: &gix::index::File,
    ) -> Result<Option<Split>, GitFailure> {
        let mut split = self.split.borrow_mut();
        let Some(from) = split.from else {
            return Ok(None);
        };
        if index.entries().len() < from {
            return Ok(None);
        }
        if let Some(bytes) = split
            .base
            .as_ref()
            .and_then(|base| encode_split(index, base))
        {
            return Ok(Some(Split {
                bytes,
                new_base: None,
            }));
        }
        let Some(whole) = encode_plain(index) else {
            return Ok(None);
        };
        let hash_len = index.object_hash().len_in_bytes();
        let checksum = ObjectId::from_bytes_or_panic(&whole[whole.len() - hash_len..]);
        let Some(bytes) = encode_unchanged(&checksum) else {
            return Ok(None);
        };
        let name = file_name(&checksum);
        // Once the index names the new one, no index names those made
        // before it: this process's last one, or a killed loop's.
        split.base = None;
        split.retired = self
            .shared_indexes_made()
            .into_iter()
            .filter(|made| *made != name)
            .collect();
        self.note_shared_index(&name)?;
        write_shared(&self.index_dir().join(&name), &whole)?;
        Ok(Some(Split {
            bytes,
            new_base: Some(checksum),
        }))
    }

    /// After the index is in place: the shared index just made is the one
    /// to write against; those no index names any more are removed.
    pub(crate) fn after_index_write(&self, written: Written, index: &gix::worktree::Index) {
        let mut split = self.split.borrow_mut();
        let gone: Vec<String> = match written {
            Written::Split(None) => return,
            Written::Split(Some(checksum)) => {
                split.base = Some(SharedBase {
                    checksum,
                    index: Arc::clone(index),
                });
                std::mem::take(&mut split.retired)
            }
            Written::Whole => {
                drop(split);
                self.forget_shared_indexes();
                return;
            }
        };
        drop(split);
        self.remove_shared_indexes(&gone);
    }

    /// No index names a shared index git-ralph made any more: remove them.
    fn forget_shared_indexes(&self) {
        let mut split = self.split.borrow_mut();
        split.base = None;
        split.retired.clear();
        drop(split);
        if self.shared_list_path().exists() {
            self.remove_shared_indexes(&self.shared_indexes_made());
        }
    }

    fn remove_shared_indexes(&self, gone: &[String]) {
        for name in gone {
            // Already gone is as good.
            let _ = std::fs::remove_file(self.index_dir().join(name));
        }
        let left: Vec<String> = self
            .shared_indexes_made()
            .into_iter()
            .filter(|name| !gone.contains(name))
            .collect();
        self.write_shared_list(&left);
    }

    /// Where the index, and its shared indexes, live.
    fn index_dir(&self) -> PathBuf {
        let index = self.repo.index_path();
        index
            .parent()
            .map_or_else(|| self.git_dir().to_owned(), ToOwned::to_owned)
    }

    fn shared_list_path(&self) -> PathBuf {
        self.own_ralph_dir().join(super::own_files::SHARED_INDEXES)
    }

    /// The shared indexes git-ralph made here and has not removed.
    fn shared_indexes_made(&self) -> Vec<String> {
        std::fs::read_to_string(self.shared_list_path())
            .unwrap_or_default()
            .lines()
            .filter(|line| line.starts_with("sharedindex.") && !line.contains('/'))
            .map(str::to_owned)
            .collect()
    }

    /// Listed before it is made, so that nothing made is ever unlisted.
    fn note_shared_index(&self, name: &str) -> Result<(), GitFailure> {
        let mut all = self.shared_indexes_made();
        if !all.iter().any(|made| made == name) {
            all.push(name.to_owned());
        }
        std::fs::create_dir_all(self.own_ralph_dir())
            .ctx(|| format!("could not create {}", self.own_ralph_dir().display()))?;
        let path = self.shared_list_path();
        std::fs::write(&path, lines(&all)).ctx(|| format!("could not write {}", path.display()))
    }

    fn write_shared_list(&self, names: &[String]) {
        let path = self.shared_list_path();
        // A list naming a file already gone is harmless: removing it again
        // finds nothing.
        let _ = if names.is_empty() {
            std::fs::remove_file(&path)
        } else {
            std::fs::write(&path, lines(names))
        };
    }
}

fn lines(names: &[String]) -> String {
    names.iter().map(|name| format!("{name}\n")).collect()
}

/// Write a shared index under its name, whole or not at all.
fn write_shared(path: &std::path::Path, bytes: &[u8]) -> Result<(), GitFailure> {
    let context = || format!("could not write {}", path.display());
    let mut file = gix::lock::File::acquire_to_update_resource(
        path,
        gix::lock::acquire::Fail::Immediately,
        None,
        0,
    )
    .ctx(context)?;
    file.write_all(bytes).ctx(context)?;
    file.commit()
        .map_err(|err| GitFailure::new(context(), err.error))?;
    Ok(())
}
