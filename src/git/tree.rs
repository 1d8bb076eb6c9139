//! Index → tree, the `git write-tree` that gix lacks. Trees are built bottom-up
//! from the sorted index entries in one pass; a tree object is written only
//! when the object database does not have it yet, so an unchanged directory
//! costs a hash and a lookup, never a write.

use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::Mode;
use gix::objs::tree::{Entry, EntryKind};

use super::error::{Context, GitFailure};
use super::ids::ObjectId;

/// The id `git write-tree` would give `index`, without storing anything.
pub(crate) fn tree_id(
    repo: &gix::Repository,
    index: &gix::index::State,
) -> Result<ObjectId, GitFailure> {
    build(repo, index, false)
}

/// Build (and store) the tree of `index`, as `git write-tree` would.
pub(crate) fn write_tree(
    repo: &gix::Repository,
    index: &gix::index::State,
) -> Result<ObjectId, GitFailure> {
    build(repo, index, true)
}

/// The tree `index` describes according to its own cache-tree (the `TREE`
/// extension git keeps up to date as it writes the index), when every node
/// of it is valid, it covers every entry, and the tree is in the object
/// database: the id `git write-tree` would then return without hashing
/// anything. `None` whenever in doubt.
pub(crate) fn cached_tree(repo: &gix::Repository, index: &gix::index::State) -> Option<ObjectId> {
    let root = index.tree()?;
    let plain = index.entries().iter().all(|entry| {
        entry.stage_raw() == 0
            && !entry
                .flags
                .contains(gix::index::entry::Flags::INTENT_TO_ADD)
    });
    let covers =
        root.num_entries.and_then(|n| usize::try_from(n).ok()) == Some(index.entries().len());
    (plain && covers && fully_valid(root) && repo.has_object(root.id)).then_some(root.id)
}

fn fully_valid(tree: &gix::index::extension::Tree) -> bool {
    tree.num_entries.is_some() && tree.children.iter().all(fully_valid)
}

fn build(
    repo: &gix::Repository,
    index: &gix::index::State,
    store: bool,
) -> Result<ObjectId, GitFailure> {
    let entries: Vec<(&BStr, EntryKind, ObjectId)> = index
        .entries()
        .iter()
        .filter(|entry| {
            entry.stage_raw() == 0
                && !entry
                    .flags
                    .contains(gix::index::entry::Flags::INTENT_TO_ADD)
        })
        .filter_map(|entry| Some((entry.path(index), entry_kind(entry.mode)?, entry.id)))
        .collect();
    let mut writer = TreeWriter {
        repo,
        buf: Vec::with_capacity(4096),
        store,
    };
    writer.build(&entries, 0)
}

fn entry_kind(mode: Mode) -> Option<EntryKind> {
    Some(match mode {
        Mode::FILE => EntryKind::Blob,
        Mode::FILE_EXECUTABLE => EntryKind::BlobExecutable,
        Mode::SYMLINK => EntryKind::Link,
        Mode::COMMIT => EntryKind::Commit,
        Mode::DIR => EntryKind::Tree,
        _ => return None,
    })
}

struct TreeWriter<'a> {
    repo: &'a gix::Repository,
    buf: Vec<u8>,
    /// Write missing trees to the object database, or only hash them.
    store: bool,
}

impl TreeWriter<'_> {
    /// `entries` all share the directory prefix of length `base` (including
    /// its trailing slash), and are sorted by full path.
    fn build(
        &mut self,
        entries: &[(&BStr, EntryKind, ObjectId)],
        base: usize,
    ) -> Result<ObjectId, GitFailure> {
        let mut tree = gix::objs::Tree::empty();
        let mut i = 0;
        while i < entries.len() {
            let (path, kind, id) = entries[i];
            let rest = &path[base..];
            match rest.find_byte(b'/') {
                None => {
                    tree.entries.push(Entry {
                        mode: kind.into(),
                        filename: rest.into(),
                        oid: id,
                    });
                    i += 1;
                }
                Some(slash) => {
                    let dir = &rest[..=slash];
                    // Paths under `dir/` are contiguous in index order.
                    let end =
                        i + entries[i..].partition_point(|(p, _, _)| p[base..].starts_with(dir));
                    let sub = self.build(&entries[i..end], base + slash + 1)?;
                    tree.entries.push(Entry {
                        mode: EntryKind::Tree.into(),
                        filename: rest[..slash].into(),
                        oid: sub,
                    });
                    i = end;
                }
            }
        }
        // Git orders tree entries as if directory names ended in '/'.
        tree.entries.sort();
        self.store(&tree)
    }

    fn store(&mut self, tree: &gix::objs::Tree) -> Result<ObjectId, GitFailure> {
        use gix::objs::WriteTo;
        self.buf.clear();
        tree.write_to(&mut self.buf)
            .ctx(|| "could not encode a tree".into())?;
        let id = gix::objs::compute_hash(self.repo.object_hash(), gix::objs::Kind::Tree, &self.buf)
            .ctx(|| "could not hash a tree".into())?;
        if self.store && !self.repo.has_object(id) {
            self.repo
                .write_object(tree)
                .ctx(|| "could not write a tree object".into())?;
        }
        Ok(id)
    }
}
