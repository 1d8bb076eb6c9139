//! Keeping a planning agent to the change's folder (or the named file), as
//! a run keeps an attempt's agent to its story: before it starts, the git
//! directory, HEAD, the branches and tags, the index and the worktree are
//! noted; after it stops, what it changed in the git directory is put back
//! byte for byte, HEAD and every ref go back where they were (what the
//! agent left there kept under `refs/ralph/<change>/plan/`), and every
//! file it changed outside its paths is reverted, its whole work
//! preserved first under a ref, while the user's own uncommitted work,
//! staged or not, stays as it was. Each of those is said in words.

use crate::git::{GitDirSnapshot, HeadState, ObjectId, RefSnapshot, Repo};
use crate::run::kept_refs;

use super::error::PlanError;
use super::target::Target;

/// The repository as the agent found it.
pub(super) struct Noted {
    git_dir: GitDirSnapshot,
    read: Readings,
}

/// HEAD, the branches, tags and stash, and the index and the worktree
/// as trees: what a plan notes before its agent starts.
pub(super) struct Readings {
    pub head: HeadState,
    pub refs: RefSnapshot,
    pub index: ObjectId,
    pub worktree: ObjectId,
}

impl Readings {
    pub fn take(repo: &Repo) -> Result<Readings, PlanError> {
        Ok(Readings {
            head: repo
                .head()
                .map_err(|err| PlanError::git("read HEAD", err))?,
            refs: repo
                .snapshot_user_refs(&[])
                .map_err(|err| PlanError::git("list the branches and tags", err))?,
            index: repo
                .index_tree()
                .map_err(|err| PlanError::git("read the index", err))?,
            worktree: repo
                .fingerprint()
                .map_err(|err| PlanError::git("read the worktree", err))?,
        })
    }
}

/// HEAD put back on `head` when an agent moved it, where it was kept
/// under a ref named after `base`: where HEAD had gone, and the name of
/// the ref that keeps the user's refs as the agent left them.
pub(super) fn put_head_back(
    repo: &Repo,
    head: &HeadState,
    base: &str,
) -> Result<(Option<HeadState>, String), PlanError> {
    let keep = |suffix: &str| {
        repo.unused_ref(&format!("{base}{suffix}"))
            .map_err(|err| PlanError::git("name a ref", err))
    };
    let (head_keep, refs_keep) = (keep("-head")?, keep("-refs")?);
    let moved_to = repo
        .put_head_back(head, &head_keep)
        .map_err(|err| PlanError::git("put HEAD back", err))?;
    Ok((moved_to, refs_keep))
}

/// What containing a try found.
#[derive(Debug, Default)]
pub(super) struct Contained {
    /// What the agent did that it must not, undone, in words.
    pub undone: Vec<String>,
    /// Whether it changed any file of the worktree at all.
    pub changed: bool,
}

impl Noted {
    /// Note the repository before the agent of a try starts.
    pub fn take(repo: &Repo) -> Result<Noted, PlanError> {
        let (dirs, shown_from) = crate::run::git_dirs_of(repo);
        let dirs: Vec<&std::path::Path> = dirs.iter().map(std::path::PathBuf::as_path).collect();
        let git_dir = GitDirSnapshot::take(&dirs, &[], &shown_from)
            .map_err(|err| PlanError::io("note what the git directory holds", err))?;
        Ok(Noted {
            git_dir,
            read: Readings::take(repo)?,
        })
    }

    /// Undo what the agent of a try did outside `target`; what it left is
    /// kept under refs named after `base` (`refs/ralph/<change>/plan/<n>/<try>`).
    pub fn contain(
        self,
        repo: &mut Repo,
        target: &Target,
        base: &str,
    ) -> Result<Contained, PlanError> {
        let mut contained = Contained::default();
        let changes = self
            .git_dir
            .changes()
            .map_err(|err| PlanError::io("read the git directory", err))?;
        if !changes.is_empty() {
            self.git_dir
                .restore()
                .map_err(|err| PlanError::io("put back the git directory", err))?;
        }
        for change in &changes {
            contained.undone.push(format!(
                "changed {} in the git directory; it is put back",
                change.what()
            ));
        }
        let (moved_to, refs_keep) = put_head_back(repo, &self.read.head, base)?;
        if let Some(found) = moved_to {
            contained.undone.push(format!(
                "moved HEAD to {}; it is back on {}",
                found.describe(),
                self.read.head.describe()
            ));
        }
        let moved = repo
            .restore_user_refs(&self.read.refs, &[], &refs_keep)
            .map_err(|err| PlanError::git("put back the branches and tags", err))?;
        contained.undone.extend(moved.iter().map(kept_refs::words));
        self.put_back_files(repo, target, base, &mut contained)?;
        Ok(contained)
    }

    /// Revert every file changed outside `target`, the agent's work kept
    /// under a ref first, and the index back to the user's.
    fn put_back_files(
        &self,
        repo: &mut Repo,
        target: &Target,
        base: &str,
        contained: &mut Contained,
    ) -> Result<(), PlanError> {
        let (after, changed) = repo
            .changed_since(self.read.worktree)
            .map_err(|err| PlanError::git("read the worktree after the agent", err))?;
        contained.changed = !changed.is_empty();
        let strays: Vec<String> = changed
            .into_iter()
            .map(|file| file.path)
            .filter(|path| !target.allows(path))
            .collect();
        let index = repo
            .index_tree()
            .map_err(|err| PlanError::git("read the index", err))?;
        if strays.is_empty() && index == self.read.index {
            return Ok(());
        }
        if !strays.is_empty() {
            let kept = repo
                .unused_ref(base)
                .map_err(|err| PlanError::git("name a ref", err))?;
            let message = format!(
                "ralph({}): what a planning agent changed outside {}\n\n{}",
                target.change(),
                target.shown(),
                strays.join("\n")
            );
            repo.preserve(&kept, &message)
                .map_err(|err| PlanError::git("keep the agent's work", err))?;
            contained.undone.push(format!(
                "changed {} outside {}; reverted (its work is kept at {kept})",
                strays.join(", "),
                target.shown()
            ));
        }
        if index != self.read.index {
            contained
                .undone
                .push("staged changes in the index; it is as it was".to_owned());
        }
        repo.put_back_paths(self.read.worktree, after, &strays, self.read.index)
            .map_err(|err| PlanError::git("revert what the agent changed", err))?;
        Ok(())
    }
}
