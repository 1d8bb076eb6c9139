//! Worktree → index → tree: the `git add -A` that gix lacks, composed from
//! gix's status (which uses the index stat cache, so unchanged files are never
//! re-hashed), its filter pipeline (clean filters, eol, symlinks) and our tree
//! writer. Checkpoint, preserve, fingerprint and begin all snapshot through
//! here, so they agree on what "the worktree's state" is.

use gix::bstr::{BStr, BString, ByteSlice};
use gix::index::entry::{Flags, Mode, Stat};
use gix::objs::tree::EntryKind;
use gix::status::index_worktree::Item;
use gix::status::plumbing::index_as_worktree::{Change, EntryStatus};
use serde::{Deserialize, Serialize};

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::lock::IndexLock;
use super::open::Repo;
use super::repo_state::Ahead;
use super::scope::{Learned, Scope};
use super::tree::write_tree;
use super::walk::Walk;

/// The result of [`Repo::checkpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    #[serde(with = "super::hex")]
    pub commit: ObjectId,
    #[serde(with = "super::hex")]
    pub tree: ObjectId,
    /// Whether the tree differs from the parent's: `false` means the agent
    /// changed nothing (the no-progress fingerprint).
    pub changed: bool,
}

/// The index updated to match the worktree, and its tree.
pub(crate) struct Snapshot {
    pub tree: ObjectId,
    pub index: gix::index::File,
    /// The paths at which the worktree differed from the index.
    pub dirty: std::collections::BTreeSet<BString>,
}

impl Snapshot {
    /// What the watch keeps of a snapshot the index is not updated with.
    fn ahead(self) -> Learned {
        Learned::Ahead(Ahead {
            index: std::sync::Arc::new(gix::fs::FileSnapshot::new(self.index)),
            tree: self.tree,
            dirty: self.dirty,
        })
    }
}

/// One change `git add -A` would make to the index.
enum Edit {
    Remove(usize),
    Update { at: usize, blob: Blob },
    Refresh { at: usize, stat: Stat },
    Add { path: BString, blob: Blob },
}

struct Blob {
    id: ObjectId,
    mode: Mode,
    stat: Stat,
}

impl Repo {
    /// `git add -A && git commit --allow-empty -m <message>`.
    pub fn checkpoint(&mut self, message: &str) -> Result<Checkpoint, OpError> {
        self.checkpoint_on(message, None)
    }

    /// [`Repo::checkpoint`] on `parent`, which HEAD's branch must still
    /// point at when the commit is made (anyone else moving it meanwhile
    /// makes this fail, and nothing is written but objects); HEAD's commit
    /// when `None`.
    pub fn checkpoint_on(
        &mut self,
        message: &str,
        parent: Option<ObjectId>,
    ) -> Result<Checkpoint, OpError> {
        let _timed = crate::timings::phase("checkpoint");
        let lock = IndexLock::acquire(self)?;
        self.scoped(|scope| {
            let Snapshot {
                tree, index, dirty, ..
            } = self.snapshot(self.shared_index()?, scope)?;
            let checkpoint = self.commit_on_head(message, tree, parent)?;
            crate::bug::halt("checkpoint:index-locked");
            self.commit_index(lock, index, Some(tree))?;
            // What it just committed is looked at once more next time: a
            // removal may have left a directory that only now, with the
            // new index, is untracked and empty.
            Ok((checkpoint, Some(Learned::Dirty(dirty))))
        })
    }

    /// Commit the worktree's state to `refname` without moving HEAD or the
    /// branch, and without touching the index or the worktree.
    pub fn preserve(&mut self, refname: &str, message: &str) -> Result<ObjectId, OpError> {
        let _timed = crate::timings::phase("preserve");
        self.scoped(|scope| {
            let snapshot = self.snapshot(self.shared_index()?, scope)?;
            let parents: Vec<ObjectId> = self.head()?.commit().into_iter().collect();
            let commit = self.write_commit(message, snapshot.tree, &parents)?;
            self.set_ref(refname, commit, message)?;
            Ok((commit, Some(snapshot.ahead())))
        })
    }

    /// The tree [`Repo::checkpoint`] would write now, without committing or
    /// touching the index.
    pub fn fingerprint(&self) -> Result<ObjectId, OpError> {
        let _timed = crate::timings::phase("fingerprint");
        self.scoped(|scope| -> Result<_, OpError> {
            let snapshot = self.snapshot(self.shared_index()?, scope)?;
            Ok((snapshot.tree, Some(snapshot.ahead())))
        })
    }

    /// Bring `index` in line with the worktree as `git add -A` would, and
    /// write the blobs and trees that takes; only `scope` is looked at. A
    /// skip-worktree file on disk all the same is looked at (`sparse.rs`).
    pub(crate) fn snapshot(
        &self,
        shared: gix::worktree::Index,
        scope: &Scope,
    ) -> Result<Snapshot, OpError> {
        let started = gix::index::entry::stat::Time::try_from(std::time::SystemTime::now())
            .ctx(|| "the system clock is before 1970".into())?;
        // When this process wrote the index, the tree it describes is known,
        // and the new tree is that one with the edits applied: only the
        // trees along changed paths are touched. So it is when git left a
        // valid cache-tree in the index. Right after a snapshot the index
        // was not updated with, that one is the start, and only what was
        // touched since is looked at.
        let ahead = matches!(scope, Scope::Paths(_))
            .then(|| self.ahead_start())
            .flatten();
        let (shared, base, scope, mut dirty) = match ahead {
            Some((ahead, paths)) => (
                ahead.index,
                Some(ahead.tree),
                Scope::Paths(paths),
                ahead.dirty,
            ),
            None => {
                let base = self.tree_described_by(&shared);
                (shared, base, scope.clone(), Default::default())
            }
        };
        let shared = super::sparse::unskip_present(self.workdir(), shared);
        let items = self.walk_status(
            &shared,
            Walk::Snapshot,
            &scope,
            "the worktree with the index",
        )?;
        // A stat-only change leaves the content as the index has it.
        dirty.extend(
            items
                .iter()
                .filter(|item| {
                    !matches!(
                        item,
                        Item::Modification {
                            status: EntryStatus::NeedsUpdate(_),
                            ..
                        }
                    )
                })
                .map(|item| item.rela_path().to_owned()),
        );
        let edits = {
            let _timed = crate::timings::phase("hash");
            self.hash_changes(&shared, items, started)?
        };
        let edits = self.update_gitlinks(&shared, edits)?;
        let _timed = crate::timings::phase("tree");
        // gix's tree editor insists that every blob exists: one the live
        // diff only named (see `blob.rs`) sends it to the plain writer.
        let edited = match base {
            Some(base) if !self.names_unstored(&edits) => {
                Some(self.edited_tree(base, &shared, &edits)?)
            }
            _ => None,
        };
        // An index only this operation holds (`ahead_start`) is not copied.
        let mut index = gix::fs::FileSnapshot::into_owned_or_cloned(shared);
        apply(&mut index, edits);
        let tree = match edited {
            Some(tree) => {
                debug_assert_eq!(
                    Some(tree),
                    super::tree::tree_id(&self.repo, &index).ok(),
                    "the edited tree must be the index's tree"
                );
                tree
            }
            None => write_tree(&self.repo, &index)?,
        };
        Ok(Snapshot { tree, index, dirty })
    }

    /// Whether an edit puts in a blob that was hashed or named but never
    /// stored.
    fn names_unstored(&self, edits: &[Edit]) -> bool {
        let Some(sizes) = &self.hashed_only else {
            return false;
        };
        let sizes = sizes.borrow();
        edits.iter().any(|edit| match edit {
            Edit::Update { blob, .. } | Edit::Add { blob, .. } => sizes.contains_key(&blob.id),
            Edit::Remove(_) | Edit::Refresh { .. } => false,
        })
    }

    /// `base` with `edits` applied: removals first, so that a file can
    /// become a directory, then additions and updates.
    fn edited_tree(
        &self,
        base: ObjectId,
        index: &gix::index::File,
        edits: &[Edit],
    ) -> Result<ObjectId, GitFailure> {
        let context = || "could not build the checkpoint's tree".to_owned();
        let mut editor = self.repo.edit_tree(base).ctx(context)?;
        for edit in edits {
            if let Edit::Remove(at) = edit {
                editor
                    .remove(index.entries()[*at].path(index))
                    .ctx(context)?;
            }
        }
        for edit in edits {
            let (path, blob) = match edit {
                Edit::Update { at, blob } => (index.entries()[*at].path(index), blob),
                Edit::Add { path, blob } => (path.as_ref(), blob),
                Edit::Remove(_) | Edit::Refresh { .. } => continue,
            };
            editor
                .upsert(path, entry_kind_of(blob.mode), blob.id)
                .ctx(context)?;
        }
        Ok(editor.write().ctx(context)?.detach())
    }

    fn hash_changes(
        &self,
        index: &gix::index::File,
        items: Vec<Item>,
        started: gix::index::entry::stat::Time,
    ) -> Result<Vec<Edit>, GitFailure> {
        let caps = self
            .repo
            .filesystem_options()
            .ctx(|| "could not read core.fileMode and core.symlinks".into())?;
        // Built from the index at hand: `filter_pipeline()` would read the
        // index from disk once more just for .gitattributes lookups.
        let attributes = self
            .repo
            .attributes_only(
                index,
                gix::worktree::stack::state::attributes::Source::WorktreeThenIdMapping,
            )
            .ctx(|| "could not read .gitattributes".into())?;
        let mut pipeline = gix::filter::Pipeline::new(&self.repo, attributes.detach())
            .ctx(|| "could not set up the filter pipeline".into())?;
        let mut hash = |path: &BStr, old_mode: Option<Mode>| -> Result<Option<Blob>, GitFailure> {
            let found = self.worktree_file_to_blob(&mut pipeline, path, index)?;
            let Some((id, kind, metadata)) = found else {
                return Ok(None);
            };
            let mode = mode_for(kind, old_mode, caps.executable_bit, caps.symlink);
            let stat = stat_unless_racy(metadata, started);
            Ok(Some(Blob { id, mode, stat }))
        };

        // A conflict refuses the snapshot before any blob is written: a
        // refused command leaves no object behind.
        if let Some(conflicted) = items.iter().find(|item| {
            matches!(
                item,
                Item::Modification {
                    status: EntryStatus::Conflict { .. },
                    ..
                }
            )
        }) {
            return Err(conflicted_error(conflicted.rela_path()));
        }
        let mut edits = Vec::new();
        for item in items {
            edits.extend(edit_for(item, started, &mut hash)?);
        }
        Ok(edits)
    }

    /// `git add -A` records the commit a submodule has checked out; status
    /// with submodule checks off does not look, so look here.
    fn update_gitlinks(
        &self,
        index: &gix::index::File,
        mut edits: Vec<Edit>,
    ) -> Result<Vec<Edit>, GitFailure> {
        let touched: std::collections::HashSet<usize> = edits
            .iter()
            .filter_map(|edit| match edit {
                Edit::Remove(at) | Edit::Update { at, .. } => Some(*at),
                _ => None,
            })
            .collect();
        for (at, entry) in index.entries().iter().enumerate() {
            if entry.mode != Mode::COMMIT || touched.contains(&at) {
                continue;
            }
            let Ok(path) = gix::path::from_bstr(entry.path(index)) else {
                continue;
            };
            let Ok(sub) = gix::open(self.workdir().join(path)) else {
                continue;
            };
            let Ok(head) = sub.head_id() else { continue };
            if head.detach() != entry.id {
                edits.push(Edit::Update {
                    at,
                    blob: Blob {
                        id: head.detach(),
                        mode: Mode::COMMIT,
                        stat: Stat::default(),
                    },
                });
            }
        }
        Ok(edits)
    }

    /// Write a commit with the configured identity; no ref moves.
    pub(crate) fn write_commit(
        &self,
        message: &str,
        tree: ObjectId,
        parents: &[ObjectId],
    ) -> Result<ObjectId, OpError> {
        let _timed = crate::timings::phase("commit");
        // gix knows the empty tree without storing it; git's fsck does not.
        if tree == self.repo.empty_tree().id {
            self.repo
                .write_object(gix::objs::Tree::empty())
                .ctx(|| "could not write the empty tree".into())?;
        }
        let commit = gix::objs::Commit {
            message: message.into(),
            tree,
            author: self.signature(true)?,
            committer: self.signature(false)?,
            encoding: None,
            parents: parents.iter().copied().collect(),
            extra_headers: Vec::new(),
        };
        self.write_commit_object(&commit)
    }

    /// Write `commit` as it is; no ref moves.
    pub(crate) fn write_commit_object(
        &self,
        commit: &gix::objs::Commit,
    ) -> Result<ObjectId, OpError> {
        Ok(self
            .repo
            .write_object(commit)
            .ctx(|| "could not write a commit".into())?
            .detach())
    }

    /// Commit `tree` on HEAD (through to its branch), with git's reflog lines.
    pub(crate) fn commit_on_head(
        &self,
        message: &str,
        tree: ObjectId,
        parent: Option<ObjectId>,
    ) -> Result<Checkpoint, OpError> {
        let parent = match parent {
            Some(parent) => Some(parent),
            None => self.head()?.commit(),
        };
        let parent_tree = match parent {
            Some(parent) => self.commit_tree(parent)?,
            None => self.repo.empty_tree().id,
        };
        let commit = self.write_commit(message, tree, &parent.into_iter().collect::<Vec<_>>())?;
        let previous = match parent {
            Some(parent) => gix::refs::transaction::PreviousValue::MustExistAndMatch(parent.into()),
            None => gix::refs::transaction::PreviousValue::MustNotExist,
        };
        let log_message =
            gix::reference::log::message("commit", message.into(), usize::from(parent.is_some()));
        self.edit_refs(vec![gix::refs::transaction::RefEdit {
            change: gix::refs::transaction::Change::Update {
                log: gix::refs::transaction::LogChange {
                    mode: gix::refs::transaction::RefLog::AndReference,
                    force_create_reflog: false,
                    message: log_message,
                },
                expected: previous,
                new: gix::refs::Target::Object(commit),
            },
            name: "HEAD"
                .try_into()
                .ctx(|| "HEAD is not a valid ref name".into())?,
            deref: true,
        }])?;
        Ok(Checkpoint {
            commit,
            tree,
            changed: tree != parent_tree,
        })
    }

    pub(crate) fn commit_tree(&self, commit: ObjectId) -> Result<ObjectId, GitFailure> {
        Ok(self
            .repo
            .find_commit(commit)
            .ctx(|| format!("could not read commit {commit}"))?
            .tree_id()
            .ctx(|| format!("could not read the tree of {commit}"))?
            .detach())
    }

    pub(crate) fn signature(&self, author: bool) -> Result<gix::actor::Signature, OpError> {
        let found = if author {
            self.repo.author()
        } else {
            self.repo.committer()
        };
        let signature = found
            .ok_or(OpError::NoIdentity)?
            .ctx(|| "could not read the configured identity".into())?;
        signature
            .to_owned()
            .ctx(|| "could not read the configured identity".into())
            .map_err(Into::into)
    }
}

impl Repo {
    /// A copy of `index` for status to compare with the worktree. An
    /// executable entry whose path is now a symlink or a directory is handed
    /// over as a plain file, so that status reports the type change instead
    /// of following the link to compare content (gix treats it as a mere
    /// executable-bit change and fails on a dangling link or a directory).
    pub(crate) fn status_input(
        &self,
        index: &gix::worktree::Index,
    ) -> gix::worktree::IndexPersistedOrInMemory {
        let workdir = self.workdir();
        let no_longer_files: Vec<usize> = index
            .entries()
            .iter()
            .enumerate()
            .filter(|(_, e)| e.mode == Mode::FILE_EXECUTABLE)
            .filter(|(_, e)| {
                gix::path::from_bstr(e.path(index)).is_ok_and(|rel| {
                    std::fs::symlink_metadata(workdir.join(rel))
                        .is_ok_and(|meta| meta.file_type().is_symlink() || meta.is_dir())
                })
            })
            .map(|(at, _)| at)
            .collect();
        if no_longer_files.is_empty() {
            return gix::worktree::IndexPersistedOrInMemory::Persisted(index.clone());
        }
        let mut copy = (***index).clone();
        for at in no_longer_files {
            copy.entries_mut()[at].mode = Mode::FILE;
        }
        gix::worktree::IndexPersistedOrInMemory::InMemory(copy)
    }
}

/// The mode git would record, honouring `core.fileMode=false` (keep the
/// index's executable bit) and `core.symlinks=false` (a symlink checked out
/// as a plain file stays a symlink).
fn mode_for(kind: EntryKind, old: Option<Mode>, executable_bit: bool, symlinks: bool) -> Mode {
    let new = match kind {
        EntryKind::Blob => Mode::FILE,
        EntryKind::BlobExecutable => Mode::FILE_EXECUTABLE,
        EntryKind::Link => Mode::SYMLINK,
        EntryKind::Commit => Mode::COMMIT,
        EntryKind::Tree => Mode::DIR,
    };
    match (old, new) {
        (Some(old @ (Mode::FILE | Mode::FILE_EXECUTABLE)), Mode::FILE | Mode::FILE_EXECUTABLE)
            if !executable_bit =>
        {
            old
        }
        (None, Mode::FILE_EXECUTABLE) if !executable_bit => Mode::FILE,
        (Some(Mode::SYMLINK), Mode::FILE | Mode::FILE_EXECUTABLE) if !symlinks => Mode::SYMLINK,
        _ => new,
    }
}

fn conflicted_error(path: &BStr) -> GitFailure {
    GitFailure::new(
        format!("'{}' is conflicted", path.to_str_lossy()),
        "resolve the conflict first",
    )
}

/// The change `git add -A` makes to the index for one status item, if
/// any; `hash` stores a worktree file as a blob (`None` when it is gone).
fn edit_for(
    item: Item,
    started: gix::index::entry::stat::Time,
    hash: &mut impl FnMut(&BStr, Option<Mode>) -> Result<Option<Blob>, GitFailure>,
) -> Result<Option<Edit>, GitFailure> {
    Ok(match item {
        Item::Modification {
            entry,
            entry_index: at,
            rela_path,
            status,
        } => match status {
            EntryStatus::Change(Change::Removed) => Some(Edit::Remove(at)),
            EntryStatus::Change(_) | EntryStatus::IntentToAdd => {
                match hash(rela_path.as_ref(), Some(entry.mode))? {
                    Some(blob) => Some(Edit::Update { at, blob }),
                    None => Some(Edit::Remove(at)),
                }
            }
            EntryStatus::NeedsUpdate(stat) => {
                (!is_racy(&stat, started)).then_some(Edit::Refresh { at, stat })
            }
            EntryStatus::Conflict { .. } => return Err(conflicted_error(rela_path.as_ref())),
        },
        Item::DirectoryContents { entry, .. } => {
            use gix::dir::entry::{Kind, Status};
            let addable = entry.status == Status::Untracked
                && matches!(
                    entry.disk_kind,
                    Some(Kind::File | Kind::Symlink | Kind::Repository)
                );
            if !addable {
                return Ok(None);
            }
            hash(entry.rela_path.as_ref(), None)?.map(|blob| Edit::Add {
                path: entry.rela_path,
                blob,
            })
        }
        Item::Rewrite { .. } => {
            return Err(GitFailure::new(
                "status reported a rename",
                "rename tracking is off, so this cannot happen",
            ));
        }
    })
}

fn entry_kind_of(mode: Mode) -> EntryKind {
    match mode {
        Mode::FILE_EXECUTABLE => EntryKind::BlobExecutable,
        Mode::SYMLINK => EntryKind::Link,
        Mode::COMMIT => EntryKind::Commit,
        Mode::DIR => EntryKind::Tree,
        _ => EntryKind::Blob,
    }
}

/// Stat data taken before hashing; a file modified since the snapshot began
/// gets none, so the next status hashes it again.
fn stat_unless_racy(metadata: std::fs::Metadata, started: gix::index::entry::stat::Time) -> Stat {
    let stat = stat_of(&metadata);
    if is_racy(&stat, started) {
        Stat::default()
    } else {
        stat
    }
}

/// Index stat data from `lstat` results, truncated to 32 bits as git does.
fn stat_of(metadata: &std::fs::Metadata) -> Stat {
    use gix::index::entry::stat::Time;
    use std::os::unix::fs::MetadataExt;
    let time = |secs: i64, nsecs: i64| Time {
        secs: secs as u32,
        nsecs: nsecs as u32,
    };
    Stat {
        mtime: time(metadata.mtime(), metadata.mtime_nsec()),
        ctime: time(metadata.ctime(), metadata.ctime_nsec()),
        dev: metadata.dev() as u32,
        ino: metadata.ino() as u32,
        uid: metadata.uid(),
        gid: metadata.gid(),
        size: metadata.size() as u32,
    }
}

///
/// Whole seconds, as git compares them when `core.checkStat` leaves out
/// nanoseconds: a file touched again within the same second, with the same
/// size, would otherwise look unchanged forever.
fn is_racy(stat: &Stat, started: gix::index::entry::stat::Time) -> bool {
    stat.mtime.secs >= started.secs
}

fn apply(index: &mut gix::index::File, edits: Vec<Edit>) {
    let mut removed = std::collections::HashSet::new();
    let mut added = Vec::new();
    {
        let entries = index.entries_mut();
        for edit in edits {
            match edit {
                Edit::Remove(at) => {
                    removed.insert(at);
                }
                Edit::Update { at, blob } => {
                    let entry = &mut entries[at];
                    entry.id = blob.id;
                    entry.mode = blob.mode;
                    entry.stat = blob.stat;
                    entry.flags.remove(Flags::INTENT_TO_ADD);
                }
                Edit::Refresh { at, stat } => entries[at].stat = stat,
                Edit::Add { path, blob } => added.push((path, blob)),
            }
        }
    }
    if !removed.is_empty() {
        index.remove_entries(|at, _, _| removed.contains(&at));
    }
    if !added.is_empty() {
        for (path, blob) in added {
            index.dangerously_push_entry(
                blob.stat,
                blob.id,
                Flags::empty(),
                blob.mode,
                path.as_ref(),
            );
        }
        index.sort_entries();
    }
}

impl Repo {
    /// The tree of `commit` and the worktree's fingerprint: equal when the
    /// worktree holds nothing beyond that commit.
    pub fn checkpoint_tree_and_fingerprint(
        &self,
        commit: ObjectId,
    ) -> Result<(ObjectId, ObjectId), OpError> {
        Ok((self.commit_tree(commit)?, self.fingerprint()?))
    }
}
