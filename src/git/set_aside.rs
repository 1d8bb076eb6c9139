//! What was left uncommitted in a worktree, kept before something throws
//! it away: the worktree as `git add -A` sees it, and, when what was staged
//! is neither that nor HEAD, the index as a commit of its own beneath it,
//! so that staged and unstaged changes both survive (as `git stash` keeps
//! them; a conflicted index keeps each of its stages, `conflicted.rs`);
//! nothing in the worktree, the index or HEAD moves. The same
//! split, committed on the branch instead, keeps a staged version when a
//! resume commits what the user changed while the run was stopped.

use super::conflicted::{Stages, conflicted, flattened_shared};
use super::error::OpError;
use super::ids::ObjectId;
use super::open::Repo;
use super::tree::write_tree;

/// Where [`Repo::set_aside`] kept the work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// The commit of the worktree, at the ref.
    pub commit: ObjectId,
    /// Whether the commit's parent is the index as it was (else HEAD).
    pub index_kept: bool,
    /// When the index was conflicted: the commit's three parents, each
    /// the index with the conflicted paths at one stage.
    pub stages: Option<Stages>,
}

impl Repo {
    /// Keep at `refname` what the worktree and index hold beyond HEAD's
    /// commit; `None`, and no ref, when they hold nothing more.
    pub fn set_aside(&mut self, refname: &str, message: &str) -> Result<Option<SetAside>, OpError> {
        let _timed = crate::timings::phase("preserve");
        let head = self.head()?.commit();
        let head_tree = match head {
            Some(commit) => self.commit_tree(commit)?,
            None => self.repo.empty_tree().id,
        };
        let index = self.shared_index()?;
        if conflicted(&index) {
            return self
                .set_aside_conflicted(refname, message, &index)
                .map(Some);
        }
        let index_tree = write_tree(&self.repo, &index)?;
        let worktree = self.snapshot(index, &super::scope::Scope::All)?.tree;
        if worktree == head_tree && index_tree == head_tree {
            return Ok(None);
        }
        let mut parents: Vec<ObjectId> = head.into_iter().collect();
        let index_kept = index_tree != head_tree && index_tree != worktree;
        if index_kept {
            let staged = self.write_commit(
                &format!("{message}\n\nThe tree is the index as it was."),
                index_tree,
                &parents,
            )?;
            parents = vec![staged];
        }
        let commit = self.write_commit(message, worktree, &parents)?;
        self.set_ref(refname, commit, message)?;
        Ok(Some(SetAside {
            commit,
            index_kept,
            stages: None,
        }))
    }

    /// [`Repo::set_aside`] of a conflicted index: the worktree, markers and
    /// all, on the index's three stages (ours, base, theirs, in that order),
    /// each on HEAD.
    fn set_aside_conflicted(
        &mut self,
        refname: &str,
        message: &str,
        index: &gix::index::File,
    ) -> Result<SetAside, OpError> {
        let head: Vec<ObjectId> = self.head()?.commit().into_iter().collect();
        let stages = self.commit_stages(index, message, &head)?;
        let worktree = self
            .snapshot(flattened_shared(index), &super::scope::Scope::All)?
            .tree;
        let parents = [stages.ours, stages.base, stages.theirs];
        let commit = self.write_commit(message, worktree, &parents)?;
        self.set_ref(refname, commit, message)?;
        Ok(SetAside {
            commit,
            index_kept: true,
            stages: Some(stages),
        })
    }

    /// Commit on HEAD (through to its branch) what is staged, when it is
    /// neither HEAD's tree nor the worktree's: a checkpoint of the worktree
    /// that follows then has the version staged beneath it, reachable.
    /// `None`, and no commit, when nothing staged stands apart.
    pub fn commit_staged_apart(&mut self, message: &str) -> Result<Option<ObjectId>, OpError> {
        let head = self.head()?.commit();
        let head_tree = match head {
            Some(commit) => self.commit_tree(commit)?,
            None => self.repo.empty_tree().id,
        };
        let index = self.shared_index()?;
        let index_tree = write_tree(&self.repo, &index)?;
        if index_tree == head_tree {
            return Ok(None);
        }
        let worktree = self.snapshot(index, &super::scope::Scope::All)?.tree;
        if index_tree == worktree {
            return Ok(None);
        }
        let staged = self.commit_on_head(message, index_tree, head)?;
        Ok(Some(staged.commit))
    }
}
