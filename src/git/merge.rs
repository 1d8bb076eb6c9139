//! One story's work brought onto the run's branch after it was done in a
//! worktree of its own: a three-way merge of trees with gix (the `merge`
//! feature, modelled on git's merge-ORT), from the commit the story
//! started at, onto the branch's tip as other stories left it.
//!
//! Nothing here moves a ref, the index or a file: the caller gets a tree,
//! or the paths that conflict. The tracking file is not merged as text:
//! the caller knows each story's boxes, so it is taken as the branch has
//! it, and the story's own marks are set there afterwards.
//!
//! The same merge brings a run beside the user onto what they committed
//! meanwhile, when it is cleaned up ([`Repo::merge_onto`]).

use gix::bstr::{BStr, ByteSlice};
use gix::merge::tree::TreatAsUnresolved;

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::open::Repo;

/// What merging work gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoryMerge {
    /// The merged tree, written to the object database.
    Clean { tree: ObjectId },
    /// Nothing written that matters: these paths changed on both sides in
    /// ways that do not merge.
    Conflicted { paths: Vec<String> },
}

/// What became of work found in the worktree on top of a commit that is
/// not the checkpoint's descendant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carried {
    /// The work was done on the checkpoint or past it: nothing to carry.
    NotNeeded,
    /// The worktree now holds the checkpoint with the work on top;
    /// `work` is the work as it was found, on the commit it was done on.
    Onto { work: ObjectId },
    /// The work does not merge onto the checkpoint: the worktree is left
    /// as it was found.
    Conflicted { work: ObjectId, paths: Vec<String> },
}

impl Repo {
    /// The worktree holds work done on top of `found`, which an agent made
    /// HEAD point at: the run's branch rewound, or another branch. Carry
    /// that work onto `onto` with a three-way merge from the merge base of
    /// the two, `keep_ours` as `onto` has it, and make it the worktree and
    /// the index. HEAD is not moved.
    pub fn carry_work_onto(
        &mut self,
        found: ObjectId,
        onto: ObjectId,
        keep_ours: &str,
    ) -> Result<Carried, OpError> {
        let base = self
            .repo
            .merge_base(found, onto)
            .ctx(|| format!("could not find where {found} and {onto} meet"))?
            .map(gix::Id::detach);
        let Some(base) = base.filter(|base| *base != onto) else {
            return Ok(Carried::NotNeeded);
        };
        let tree = self.fingerprint()?;
        let work =
            self.commit_detached("ralph: an attempt's work, where it was done", tree, found)?;
        match self.merge_work(base, onto, work, keep_ours)? {
            StoryMerge::Clean { tree } => {
                let carried =
                    self.commit_detached("ralph: an attempt's work, carried", tree, onto)?;
                self.revert_to(carried)?;
                Ok(Carried::Onto { work })
            }
            StoryMerge::Conflicted { paths } => Ok(Carried::Conflicted { work, paths }),
        }
    }

    /// Merge the work from commit `base` to commit `theirs` onto commit
    /// `ours`. `keep_ours` (repository-relative, `/`-separated) is taken
    /// as `ours` has it, whatever `theirs` did to it.
    pub fn merge_work(
        &self,
        base: ObjectId,
        ours: ObjectId,
        theirs: ObjectId,
        keep_ours: &str,
    ) -> Result<StoryMerge, OpError> {
        let base_tree = self.commit_tree(base)?;
        let our_tree = self.commit_tree(ours)?;
        let their_tree = self.without_change_to(base_tree, self.commit_tree(theirs)?, keep_ours)?;
        self.merge_three(base_tree, our_tree, their_tree, ["base", "branch", "story"])
    }

    /// Merge the work from commit `base` to commit `theirs` onto commit
    /// `ours`, every path alike: a run's work onto what the user committed
    /// since it began, for a cleanup beside them. Written to this
    /// repository's object database (keep it in memory to only look).
    pub fn merge_onto(
        &self,
        base: ObjectId,
        ours: ObjectId,
        theirs: ObjectId,
    ) -> Result<StoryMerge, OpError> {
        let (base, ours, theirs) = (
            self.commit_tree(base)?,
            self.commit_tree(ours)?,
            self.commit_tree(theirs)?,
        );
        self.merge_three(base, ours, theirs, ["run start", "yours", "run"])
    }

    /// Three trees merged, labelled `[ancestor, current, other]`.
    fn merge_three(
        &self,
        base_tree: ObjectId,
        our_tree: ObjectId,
        their_tree: ObjectId,
        [ancestor, current, other]: [&str; 3],
    ) -> Result<StoryMerge, OpError> {
        let options = self
            .repo
            .tree_merge_options()
            .ctx(|| "could not read the merge settings".into())?;
        let labels = gix::merge::blob::builtin_driver::text::Labels {
            ancestor: Some(ancestor.into()),
            current: Some(current.into()),
            other: Some(other.into()),
        };
        let mut outcome = self
            .repo
            .merge_trees(base_tree, our_tree, their_tree, labels, options)
            .ctx(|| "could not merge the work".into())?;
        if outcome.has_unresolved_conflicts(TreatAsUnresolved::git()) {
            let mut paths: Vec<String> = outcome
                .conflicts
                .iter()
                .filter(|conflict| conflict.is_unresolved(TreatAsUnresolved::git()))
                .flat_map(|conflict| [conflict.ours.location(), conflict.theirs.location()])
                .map(|path| path.to_str_lossy().into_owned())
                .collect();
            paths.sort();
            paths.dedup();
            return Ok(StoryMerge::Conflicted { paths });
        }
        let tree = outcome
            .tree
            .write()
            .ctx(|| "could not write the merged tree".into())?
            .detach();
        Ok(StoryMerge::Clean { tree })
    }

    /// `tree` with `path` as `base` has it (absent when `base` lacks it).
    fn without_change_to(
        &self,
        base: ObjectId,
        tree: ObjectId,
        path: &str,
    ) -> Result<ObjectId, GitFailure> {
        let in_base = self.entry_at(base, path.into())?;
        if self.entry_at(tree, path.into())? == in_base {
            return Ok(tree);
        }
        let mut editor = self
            .repo
            .edit_tree(tree)
            .ctx(|| format!("could not read tree {tree}"))?;
        match in_base {
            Some((kind, id)) => editor.upsert(path, kind, id),
            None => editor.remove(path),
        }
        .ctx(|| format!("could not set {path} aside for the merge"))?;
        Ok(editor
            .write()
            .ctx(|| "could not write a tree".into())?
            .detach())
    }

    /// The kind and object of `path` in `tree`.
    fn entry_at(
        &self,
        tree: ObjectId,
        path: &BStr,
    ) -> Result<Option<(gix::objs::tree::EntryKind, ObjectId)>, GitFailure> {
        let tree = self
            .repo
            .find_tree(tree)
            .ctx(|| format!("could not read tree {tree}"))?;
        let relative = gix::path::from_bstr(path)
            .ctx(|| format!("{path} is not a path this system can name"))?;
        let entry = tree
            .lookup_entry_by_path(relative.as_ref())
            .ctx(|| format!("could not look up {path} in tree {}", tree.id))?;
        Ok(entry.map(|entry| (entry.mode().kind(), entry.object_id())))
    }

    /// The text of `path` in `commit`, when it is there and is text.
    pub fn text_at(&self, commit: ObjectId, path: &str) -> Result<Option<String>, GitFailure> {
        let tree = self.commit_tree(commit)?;
        let Some((_, id)) = self.entry_at(tree, path.into())? else {
            return Ok(None);
        };
        let blob = self
            .repo
            .find_object(id)
            .ctx(|| format!("could not read {path} in {commit}"))?;
        Ok(String::from_utf8(blob.data.clone()).ok())
    }

    /// The message of `commit`.
    pub fn commit_message(&self, commit: ObjectId) -> Result<String, GitFailure> {
        let commit = self
            .repo
            .find_commit(commit)
            .ctx(|| format!("could not read commit {commit}"))?;
        let message = commit
            .message_raw()
            .ctx(|| format!("could not read the message of {}", commit.id))?;
        Ok(message.to_str_lossy().into_owned())
    }

    /// Point `name` at `commit`, whatever it held: a run's own ref.
    pub fn keep_at(&self, name: &str, commit: ObjectId, message: &str) -> Result<(), GitFailure> {
        self.set_ref(name, commit, message)
    }

    /// Delete `name` if it is there.
    pub fn drop_ref(&self, name: &str) -> Result<(), GitFailure> {
        match self.resolve_ref(name)? {
            Some(at) => self.edit_refs(vec![super::refs::delete(name, at)?]),
            None => Ok(()),
        }
    }

    /// A commit of `tree` on `parent`, on no ref.
    pub fn commit_detached(
        &self,
        message: &str,
        tree: ObjectId,
        parent: ObjectId,
    ) -> Result<ObjectId, OpError> {
        self.write_commit(message, tree, &[parent])
    }

    /// `original` carried onto `parent` with `tree`, as a rebase carries
    /// a commit: its message and author kept, the committer now.
    pub fn carry_commit(
        &self,
        original: ObjectId,
        tree: ObjectId,
        parent: ObjectId,
    ) -> Result<ObjectId, OpError> {
        let found = self
            .repo
            .find_commit(original)
            .ctx(|| format!("could not read commit {original}"))?;
        let decoded = found
            .decode()
            .ctx(|| format!("could not read commit {original}"))?;
        let author = decoded
            .author()
            .and_then(|author| author.to_owned())
            .ctx(|| format!("could not read the author of {original}"))?;
        let commit = gix::objs::Commit {
            message: decoded.message.to_owned(),
            tree,
            author,
            committer: self.signature(false)?,
            encoding: decoded.encoding.map(ToOwned::to_owned),
            parents: [parent].into_iter().collect(),
            extra_headers: Vec::new(),
        };
        self.write_commit_object(&commit)
    }
}
