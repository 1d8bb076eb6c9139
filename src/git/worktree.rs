//! Linked worktrees for runs that work beside the user: made, found again
//! and removed in-process with gix (its `add_worktree`, the worktree lock,
//! and its removal, which checks that the directory's `.git` leads back to
//! the worktree before deleting anything), so that `git worktree list`,
//! `git worktree prune` and `git fsck` find exactly what `git worktree add`
//! and `git worktree lock` would have left.
//!
//! A run's worktree also names, in a file of its administrative directory
//! (`<common-dir>/worktrees/<id>/ralph-run`), the directory where the
//! run's state lives, so that every command run inside it finds the run.
//! Git leaves files it does not know there alone, and removes them with
//! the worktree.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use gix::bstr::ByteSlice;
use serde::{Deserialize, Serialize};

use super::error::{Context, GitFailure};
use super::open::Repo;

/// A linked worktree of the repository, as a run records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkedWorktree {
    /// Its root, absolute, symbolic links resolved.
    pub path: PathBuf,
    /// Its name under `<common-dir>/worktrees/`.
    pub id: String,
}

/// Why a worktree could not be made, found or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("{} already exists and is not an empty directory", path.display())]
    Taken { path: PathBuf },
    #[error("{} is inside {}", path.display(), within.display())]
    Inside { path: PathBuf, within: PathBuf },
    #[error("{} is not a worktree of this run: its .git does not lead to {}", path.display(), admin.display())]
    NotOurs { path: PathBuf, admin: PathBuf },
    #[error(transparent)]
    Git(#[from] GitFailure),
}

impl WorktreeError {
    pub fn hint(&self) -> Option<String> {
        match self {
            WorktreeError::Taken { .. } => {
                Some("name a directory that does not exist yet, or an empty one".into())
            }
            WorktreeError::Inside { .. } => Some(
                "a run's worktree lives outside yours; leave the path out for the default place beside it"
                    .into(),
            ),
            WorktreeError::NotOurs { path, .. } => Some(format!(
                "move {} aside (git-ralph deletes only the worktrees it made), then try again",
                path.display()
            )),
            WorktreeError::Git(_) => None,
        }
    }
}

impl Repo {
    /// Whether `path` (absolute) may become a worktree: outside this
    /// worktree and the git directory, and absent or an empty directory.
    pub fn check_worktree_place(&self, path: &Path) -> Result<(), WorktreeError> {
        let resolved = resolve_existing_prefix(path);
        for within in [self.workdir(), self.common_dir()] {
            let within = std::fs::canonicalize(within).unwrap_or_else(|_| within.to_owned());
            if resolved.starts_with(&within) {
                return Err(WorktreeError::Inside {
                    path: path.to_owned(),
                    within,
                });
            }
        }
        match std::fs::symlink_metadata(path) {
            Err(_) => Ok(()),
            Ok(meta)
                if meta.is_dir()
                    && std::fs::read_dir(path)
                        .is_ok_and(|mut entries| entries.next().is_none()) =>
            {
                Ok(())
            }
            Ok(_) => Err(WorktreeError::Taken {
                path: path.to_owned(),
            }),
        }
    }

    /// Add a linked worktree at `path` (absolute) with HEAD on `branch` (the
    /// full name of an existing branch), its files checked out, locked with
    /// `reason` so that no `git worktree prune` takes it while the run
    /// lives. Commands run inside it find the run's state in this
    /// repository's [`Repo::ralph_dir`].
    pub fn add_worktree(
        &self,
        path: &Path,
        branch: &str,
        reason: &str,
    ) -> Result<LinkedWorktree, WorktreeError> {
        self.check_worktree_place(path)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .ctx(|| format!("could not create {}", parent.display()))?;
        }
        let name: gix::refs::FullName = branch
            .try_into()
            .ctx(|| format!("'{branch}' is not a valid branch name"))?;
        let (linked, outcome) = self
            .repo
            .add_worktree(
                path,
                gix::worktree::add::Head::Attached(name),
                gix::progress::Discard,
                &AtomicBool::new(false),
            )
            .ctx(|| format!("could not add a worktree at {}", path.display()))?;
        let admin = linked.git_dir().to_owned();
        let root = linked
            .workdir()
            .map(ToOwned::to_owned)
            .unwrap_or_else(|| path.to_owned());
        let worktree = LinkedWorktree {
            path: std::fs::canonicalize(&root).unwrap_or(root),
            id: admin
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        drop(linked);
        let finish = || -> Result<(), GitFailure> {
            super::reset::checked_out(&outcome)?;
            let home = self.ralph_dir();
            std::fs::write(
                admin.join(super::open::STATE_HOME),
                format!("{}\n", home.to_string_lossy()),
            )
            .ctx(|| {
                format!(
                    "could not write {}",
                    admin.join(super::open::STATE_HOME).display()
                )
            })?;
            gix::worktree::set_lock(&admin, Some(reason.as_bytes().as_bstr()))
                .ctx(|| format!("could not lock the worktree at {}", worktree.path.display()))
        };
        if let Err(err) = finish() {
            let _ = gix::worktree::remove(
                &worktree.path,
                &admin,
                gix::progress::Discard,
                Default::default(),
            );
            return Err(err.into());
        }
        Ok(worktree)
    }

    /// A new branch `branch` (full name) at `at`, checked out in a linked
    /// worktree at `path`: one story's place in a parallel run. Nothing is
    /// left behind when it cannot be made.
    pub fn add_worktree_at(
        &self,
        path: &Path,
        branch: &str,
        at: super::ids::ObjectId,
        reason: &str,
    ) -> Result<LinkedWorktree, WorktreeError> {
        self.check_worktree_place(path)?;
        self.set_ref(branch, at, "branch: a story of a parallel run")?;
        self.add_worktree(path, branch, reason).inspect_err(|_| {
            let _ = self.drop_ref(branch);
        })
    }

    /// The administrative directory of `worktree`.
    fn admin_dir(&self, worktree: &LinkedWorktree) -> PathBuf {
        self.worktree_admin_dir(&worktree.id)
    }

    /// The administrative directory of the worktree named `id`, under the
    /// common directory with its `..` resolved.
    pub(super) fn worktree_admin_dir(&self, id: &str) -> PathBuf {
        let common = self.common_dir();
        std::fs::canonicalize(common)
            .unwrap_or_else(|_| common.to_owned())
            .join("worktrees")
            .join(id)
    }

    /// Whether `worktree`'s directory is there and its `.git` leads to its
    /// administrative directory, which leads back to it.
    fn is_ours(&self, worktree: &LinkedWorktree) -> bool {
        let admin = self.admin_dir(worktree);
        let leads_to = |file: PathBuf, prefix: &str| {
            std::fs::read_to_string(file).ok().and_then(|text| {
                let target = text.strip_prefix(prefix)?.trim_end_matches('\n').to_owned();
                std::fs::canonicalize(target).ok()
            })
        };
        let admin_real = std::fs::canonicalize(&admin).ok();
        let dot_git = worktree.path.join(".git");
        admin_real.is_some()
            && leads_to(dot_git.clone(), "gitdir: ") == admin_real
            && leads_to(admin.join("gitdir"), "") == std::fs::canonicalize(&dot_git).ok()
    }

    /// `worktree`, opened, when its directory is there; `None` when it is
    /// gone. A directory there that is not this worktree is an error: it is
    /// someone else's.
    pub fn open_worktree(&self, worktree: &LinkedWorktree) -> Result<Option<Repo>, WorktreeError> {
        if std::fs::symlink_metadata(&worktree.path).is_err() {
            return Ok(None);
        }
        if !self.is_ours(worktree) {
            return Err(WorktreeError::NotOurs {
                path: worktree.path.clone(),
                admin: self.admin_dir(worktree),
            });
        }
        match Repo::open_for_recovery(&worktree.path) {
            Ok(repo) => Ok(Some(repo)),
            Err(err) => Err(GitFailure::new(
                format!("could not open the worktree at {}", worktree.path.display()),
                err,
            )
            .into()),
        }
    }

    /// `worktree` made again on `branch` after its directory was deleted:
    /// what git still records of it is removed first, then it is added at
    /// the same place.
    pub fn recreate_worktree(
        &self,
        worktree: &LinkedWorktree,
        branch: &str,
        reason: &str,
    ) -> Result<LinkedWorktree, WorktreeError> {
        if std::fs::symlink_metadata(&worktree.path).is_ok() {
            return Err(WorktreeError::Taken {
                path: worktree.path.clone(),
            });
        }
        self.forget_worktree(worktree)?;
        self.add_worktree(&worktree.path, branch, reason)
    }

    /// Remove `worktree`: its directory (which must be this worktree, or
    /// gone) and its administrative directory. Whatever it holds must have
    /// been kept by the caller first.
    pub fn remove_worktree(&self, worktree: &LinkedWorktree) -> Result<(), WorktreeError> {
        let admin = self.admin_dir(worktree);
        if std::fs::symlink_metadata(&worktree.path).is_err()
            && std::fs::symlink_metadata(&admin).is_err()
        {
            // Never made, or already gone.
            return Ok(());
        }
        if std::fs::symlink_metadata(&worktree.path).is_ok() && !self.is_ours(worktree) {
            return Err(WorktreeError::NotOurs {
                path: worktree.path.clone(),
                admin: self.admin_dir(worktree),
            });
        }
        gix::worktree::remove(
            &worktree.path,
            self.admin_dir(worktree),
            gix::progress::Discard,
            Default::default(),
        )
        .ctx(|| {
            format!(
                "could not remove the worktree at {}",
                worktree.path.display()
            )
        })?;
        Ok(())
    }

    /// What git records of `worktree`, whose directory is gone: its
    /// administrative directory, when it still leads to that place.
    fn forget_worktree(&self, worktree: &LinkedWorktree) -> Result<(), WorktreeError> {
        let admin = self.admin_dir(worktree);
        let recorded = std::fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
        let ours = Path::new(recorded.trim_end_matches('\n')) == worktree.path.join(".git");
        if ours {
            let gone = worktree.path.clone();
            gix::worktree::remove(&gone, &admin, gix::progress::Discard, Default::default())
                .ctx(|| format!("could not forget the worktree at {}", gone.display()))?;
        }
        Ok(())
    }
}

/// `path` with its longest existing prefix resolved (symbolic links and
/// all), the rest appended as given.
fn resolve_existing_prefix(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut prefix = path.to_owned();
    loop {
        if let Ok(real) = std::fs::canonicalize(&prefix) {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (prefix.file_name().map(ToOwned::to_owned), prefix.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                prefix = parent.to_owned();
            }
            _ => return path.to_owned(),
        }
    }
}
