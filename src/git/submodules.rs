//! Submodules, which the superproject's snapshots and reverts do not enter:
//! a submodule is a repository of its own, and `git add -A` records only the
//! commit it has checked out. So a run keeps them out of its work instead.
//! [`Repo::unsettled_submodules`] names every submodule holding anything
//! but the commit the superproject records (an edit, a staged change, an
//! untracked file, another commit), read only, for a start to refuse;
//! [`Repo::submodule_heads`] notes where each one's HEAD stands before an
//! attempt; and [`Repo::set_aside_submodules`] commits whatever an attempt
//! left in one to a ref of the submodule's own repository, then puts its
//! HEAD, its branch, its index and its files back.
//!
//! Nested submodules are looked at as their superproject's commit only.

use std::collections::BTreeMap;

use gix::bstr::ByteSlice;

use super::error::{Context, GitFailure, OpError};
use super::ids::ObjectId;
use super::open::{HeadState, Repo};
use super::refs::{move_head, update};
use gix::refs::transaction::PreviousValue;

/// A submodule that does not stand at the commit its superproject
/// records, clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsettled {
    /// Its path in the superproject.
    pub path: String,
    /// The commit the superproject's index records for it.
    pub recorded: ObjectId,
    /// The commit it has checked out, when that is another one.
    pub checked_out: Option<ObjectId>,
}

/// Where every checked-out submodule's HEAD stands, by path.
#[derive(Debug, Clone, Default)]
pub struct SubmoduleHeads(BTreeMap<String, HeadState>);

/// What an attempt left in a submodule, set aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmoduleSetAside {
    /// The submodule's path in the superproject.
    pub path: String,
    /// The ref of the submodule's repository that keeps the work.
    pub kept_at: String,
    /// The commit it is back at.
    pub back_at: ObjectId,
}

/// One checked-out submodule, as the superproject knows it.
struct Module {
    path: String,
    /// What the superproject's index records.
    recorded: ObjectId,
    repo: gix::Repository,
    dirty: bool,
}

impl Repo {
    /// Every checked-out submodule that is not at the commit the
    /// superproject's index records with nothing uncommitted; reads only.
    pub fn unsettled_submodules(&self) -> Result<Vec<Unsettled>, GitFailure> {
        let mut found = Vec::new();
        for module in self.modules()? {
            if !module.dirty {
                continue;
            }
            let head = module.repo.head_id().ok().map(|id| id.detach());
            found.push(Unsettled {
                path: module.path,
                recorded: module.recorded,
                checked_out: head.filter(|head| *head != module.recorded),
            });
        }
        Ok(found)
    }

    /// Where each checked-out submodule's HEAD stands now.
    pub fn submodule_heads(&self) -> Result<SubmoduleHeads, GitFailure> {
        let mut heads = BTreeMap::new();
        for module in self.modules()? {
            let nested = self.nested(&module)?;
            heads.insert(module.path, nested.head()?);
        }
        Ok(SubmoduleHeads(heads))
    }

    /// Every submodule that changed since `before` (its HEAD, its branch,
    /// its index or its files; when `before` does not name it, anything
    /// but its recorded commit, clean): its state committed under
    /// `refname` (or `refname-2`, … when that exists) of its own
    /// repository, the agent's commits under it, then its HEAD and branch
    /// put back where they stood and its index and files reset to that
    /// commit.
    pub fn set_aside_submodules(
        &self,
        before: &SubmoduleHeads,
        refname: &str,
        message: &str,
    ) -> Result<Vec<SubmoduleSetAside>, OpError> {
        let mut set_aside = Vec::new();
        for module in self.modules()? {
            let mut nested = self.nested(&module)?;
            let now = nested.head()?;
            // Unnoted (a loop killed mid-attempt), it stood where the
            // superproject records, as a start requires: on the branch it
            // is on now, or detached.
            let commit = module.recorded;
            let was = match (before.0.get(&module.path), &now) {
                (Some(was), _) => was.clone(),
                (None, HeadState::Branch { name, .. }) => HeadState::Branch {
                    name: name.clone(),
                    commit,
                },
                (None, _) => HeadState::Detached { commit },
            };
            if now == was && !module.dirty {
                continue;
            }
            let Some(back_at) = was.commit() else {
                continue;
            };
            let kept_at = nested.unused_ref(refname)?;
            let message = format!("{message} in submodule {}", module.path);
            nested.preserve(&kept_at, &message)?;
            put_head_back(&nested, &was, &now)?;
            nested.revert()?;
            set_aside.push(SubmoduleSetAside {
                path: module.path,
                kept_at,
                back_at,
            });
        }
        Ok(set_aside)
    }

    /// The submodules named in `.gitmodules` that are checked out and
    /// recorded in the superproject's index, each with whether it is
    /// anything but that commit, clean.
    fn modules(&self) -> Result<Vec<Module>, GitFailure> {
        let Some(submodules) = self
            .repo
            .submodules()
            .ctx(|| "could not read .gitmodules".into())?
        else {
            return Ok(Vec::new());
        };
        let mut modules = Vec::new();
        for submodule in submodules {
            let path = submodule
                .path()
                .ctx(|| format!("could not read the path of submodule {}", submodule.name()))?
                .to_str_lossy()
                .into_owned();
            let Some(repo) = submodule
                .open()
                .ctx(|| format!("could not open submodule {path}"))?
            else {
                continue;
            };
            let status = submodule
                .status(gix::submodule::config::Ignore::None, true)
                .ctx(|| format!("could not read the status of submodule {path}"))?;
            // One the superproject's index does not record is not the
            // run's to judge.
            let (Some(dirty), Some(recorded)) = (status.is_dirty(), status.index_id) else {
                continue;
            };
            modules.push(Module {
                path,
                recorded,
                repo,
                dirty,
            });
        }
        Ok(modules)
    }

    /// A submodule as a repository of this engine, whose caches live in
    /// the superproject's, never in the submodule's git directory.
    fn nested(&self, module: &Module) -> Result<Repo, GitFailure> {
        let mut repo = module.repo.clone();
        repo.object_cache_size_if_unset(4 * 1024 * 1024);
        if repo.workdir().is_none() {
            return Err(GitFailure::new_io(
                format!("submodule {} has no worktree", module.path),
                "not checked out",
            ));
        }
        let own_dir = self
            .own_ralph_dir()
            .join("submodules")
            .join(module.path.replace('/', "%2F"));
        Ok(Repo::around(repo, own_dir.clone(), own_dir))
    }
}

/// HEAD, and the branch it was on, back where they stood (`was`), from
/// where the attempt left them (`now`).
fn put_head_back(nested: &Repo, was: &HeadState, now: &HeadState) -> Result<(), GitFailure> {
    let message = "ralph: the submodule put back after an attempt";
    let mut edits = Vec::new();
    if let HeadState::Branch { name, commit } = was {
        let moved = nested.resolve_ref(name)? != Some(*commit);
        if moved {
            edits.push(update(name, *commit, PreviousValue::Any, message)?);
        }
    }
    let head_moved = match (was, now) {
        (HeadState::Branch { name, .. }, HeadState::Branch { name: now, .. }) => name != now,
        (HeadState::Detached { commit }, HeadState::Detached { commit: now }) => commit != now,
        _ => true,
    };
    if head_moved {
        edits.push(move_head(was, message)?);
    }
    if !edits.is_empty() {
        nested.edit_refs(edits)?;
    }
    Ok(())
}
