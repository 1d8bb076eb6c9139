//! Creating a repository, finding one, and refusing the states in which
//! touching it would be unsafe: bare repositories, operations in progress,
//! conflicted indexes.

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use serde::{Deserialize, Serialize};

use super::error::{Context, GitFailure};
use super::ids::ObjectId;

/// An open, non-bare repository with a worktree.
pub struct Repo {
    pub(crate) repo: gix::Repository,
    pub(crate) index_cache: std::cell::RefCell<Option<super::repo_state::IndexCache>>,
    /// The agent's own files, which a run's checkpoints and reverts leave
    /// alone.
    pub(crate) scratch: super::repo_state::Scratch,
    /// Set when objects live in memory: big files are then only hashed,
    /// and their sizes kept here (see `blob.rs`).
    pub(crate) hashed_only: Option<std::cell::RefCell<std::collections::HashMap<ObjectId, u64>>>,
    /// The worktree watch, when one runs (see `scope.rs`).
    pub(crate) watching: std::cell::RefCell<Option<super::repo_state::Watching>>,
    /// A watch could not be started here once; it is not tried again.
    /// Inside, why, until it is reported (see [`Repo::start_watching`]).
    pub(crate) watch_refused: std::cell::RefCell<Option<Option<super::watch::WatchLost>>>,
    /// Whether the watch is left for the next repository of this worktree
    /// in this process when this one is dropped (see `handover.rs`).
    pub(crate) hands_over: bool,
    /// What the last full scan learned of the worktree's directories, until
    /// the index write that follows it keeps it on disk (see `dir_cache.rs`).
    pub(crate) dir_cache: std::cell::RefCell<Option<super::dir_cache::DirCache>>,
    /// Where run state lives (see [`Repo::ralph_dir`]).
    pub(crate) ralph_dir: PathBuf,
    /// Where this worktree's own caches live (see [`Repo::own_ralph_dir`]).
    pub(crate) own_dir: PathBuf,
    /// Whether the index is written split, and against what (see
    /// `split_writes.rs`).
    pub(crate) split: std::cell::RefCell<super::split_index::SplitWrites>,
}

/// Where HEAD points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HeadState {
    /// On a branch (full ref name) that has a commit.
    Branch {
        name: String,
        #[serde(with = "super::hex")]
        commit: ObjectId,
    },
    /// Directly on a commit.
    Detached {
        #[serde(with = "super::hex")]
        commit: ObjectId,
    },
    /// On a branch (full ref name) that has no commit yet.
    Unborn { name: String },
}

impl HeadState {
    pub fn commit(&self) -> Option<ObjectId> {
        match self {
            HeadState::Branch { commit, .. } | HeadState::Detached { commit } => Some(*commit),
            HeadState::Unborn { .. } => None,
        }
    }

    /// The name git prints in `checkout: moving from <A> to <B>`.
    pub fn reflog_name(&self) -> String {
        match self {
            HeadState::Branch { name, .. } | HeadState::Unborn { name } => {
                name.strip_prefix("refs/heads/").unwrap_or(name).to_owned()
            }
            HeadState::Detached { commit } => commit.to_string(),
        }
    }

    /// How to show it to people.
    pub fn describe(&self) -> String {
        match self {
            HeadState::Branch { .. } => format!("branch '{}'", self.reflog_name()),
            HeadState::Unborn { .. } => format!("unborn branch '{}'", self.reflog_name()),
            HeadState::Detached { commit } => {
                format!("detached HEAD at {}", commit.to_hex_with_len(12))
            }
        }
    }
}

/// Why a repository could not be opened for a run.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("not a git repository (or any of the parent directories): {}", dir.display())]
    NotARepository {
        dir: PathBuf,
        #[source]
        source: Box<gix::Error>,
    },
    #[error("'{}' is a bare repository: there is no worktree for an agent to edit", git_dir.display())]
    Bare { git_dir: PathBuf },
    #[error("a {operation} is in progress")]
    InProgress { operation: &'static str },
    #[error("the index has unresolved conflicts in {}", paths.join(", "))]
    Conflicted { paths: Vec<String> },
    #[error(transparent)]
    Git(#[from] GitFailure),
}

impl OpenError {
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            OpenError::NotARepository { .. } => "run git-ralph inside a git worktree, or 'git init' one first".into(),
            OpenError::Bare { .. } => "run git-ralph in a worktree; 'git worktree add <dir>' makes one".into(),
            OpenError::InProgress { operation } => {
                format!("finish it or abort it first (e.g. 'git {} --abort'), then try again", abort_command(operation))
            }
            OpenError::Conflicted { .. } => "resolve the conflicts and 'git add' the files, or 'git reset --merge', then try again".into(),
            OpenError::Git(_) => return None,
        })
    }
}

fn abort_command(operation: &str) -> &str {
    match operation {
        "merge" => "merge",
        "rebase" => "rebase",
        "cherry-pick" => "cherry-pick",
        "revert" => "revert",
        "bisect" => "bisect reset #",
        "am" => "am",
        _ => operation,
    }
}

impl Repo {
    /// Discover the repository containing `dir`, honouring `GIT_DIR`,
    /// `GIT_WORK_TREE` and linked worktrees, and refuse the states a run
    /// cannot start from.
    pub fn open(dir: &Path) -> Result<Repo, OpenError> {
        let repo = Self::open_for_recovery(dir)?;
        repo.ensure_ready()?;
        Ok(repo)
    }

    /// Like [`Repo::open`], but without refusing operations in progress or
    /// conflicts, so that `status`, `abort` and `finish` can still clean up
    /// after an agent that left one behind.
    pub fn open_for_recovery(dir: &Path) -> Result<Repo, OpenError> {
        let _timed = crate::timings::phase("open");
        let mut repo = gix::discover_with_environment_overrides(dir).map_err(|source| {
            OpenError::NotARepository {
                dir: dir.to_owned(),
                source: Box::new(source),
            }
        })?;
        if repo.is_bare() || repo.workdir().is_none() {
            return Err(OpenError::Bare {
                git_dir: repo.git_dir().to_owned(),
            });
        }
        // Our own writes are the only ones that matter; big objects are
        // streamed, never held in memory.
        repo.object_cache_size_if_unset(4 * 1024 * 1024);
        let ralph_dir = state_home(repo.git_dir()).unwrap_or_else(|| repo.git_dir().join("ralph"));
        let own_dir = repo.git_dir().join("ralph");
        let mut repo = Repo::around(repo, ralph_dir, own_dir);
        repo.take_over();
        Ok(repo)
    }

    /// A `Repo` around an opened gix repository, its caches empty, its
    /// run state under `ralph_dir` and its own records under `own_dir`.
    pub(super) fn around(repo: gix::Repository, ralph_dir: PathBuf, own_dir: PathBuf) -> Repo {
        Repo {
            repo,
            index_cache: Default::default(),
            scratch: Default::default(),
            hashed_only: None,
            watching: Default::default(),
            watch_refused: Default::default(),
            hands_over: false,
            dir_cache: Default::default(),
            split: Default::default(),
            ralph_dir,
            own_dir,
        }
    }

    /// Refuse operations in progress and conflicted indexes.
    pub fn ensure_ready(&self) -> Result<(), OpenError> {
        if let Some(state) = self.repo.state() {
            use gix::state::InProgress::*;
            let operation = match state {
                ApplyMailbox | ApplyMailboxRebase => "am",
                Bisect => "bisect",
                CherryPick | CherryPickSequence => "cherry-pick",
                Merge => "merge",
                Rebase | RebaseInteractive => "rebase",
                Revert | RevertSequence => "revert",
            };
            return Err(OpenError::InProgress { operation });
        }
        let index = self.shared_index()?;
        let mut paths: Vec<String> = index
            .entries()
            .iter()
            .filter(|entry| entry.stage_raw() != 0)
            .map(|entry| entry.path(&index).to_str_lossy().into_owned())
            .collect();
        paths.dedup();
        if !paths.is_empty() {
            return Err(OpenError::Conflicted { paths });
        }
        Ok(())
    }

    /// The root of the worktree.
    pub fn workdir(&self) -> &Path {
        self.repo.workdir().expect("checked at open")
    }

    /// This worktree's own git dir (`.git`, or `.git/worktrees/<name>`).
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// The git dir shared by every worktree (the same as [`Repo::git_dir`]
    /// outside a linked worktree).
    pub fn common_dir(&self) -> &Path {
        self.repo.common_dir()
    }

    /// Where run state lives: `<git-dir>/ralph/`, or, in a worktree a run
    /// made for itself, the directory of the worktree the run was started
    /// from, so that every command finds the run from either worktree.
    pub fn ralph_dir(&self) -> PathBuf {
        self.ralph_dir.clone()
    }

    /// `<git-dir>/ralph/` of this very worktree, for what belongs to it
    /// alone (which tree its index describes); a submodule's are kept in
    /// its superproject's (see `submodules.rs`).
    pub(crate) fn own_ralph_dir(&self) -> PathBuf {
        self.own_dir.clone()
    }

    /// Where HEAD points now.
    pub fn head(&self) -> Result<HeadState, GitFailure> {
        let head = self.repo.head().ctx(|| "could not read HEAD".into())?;
        Ok(match head.kind {
            gix::head::Kind::Symbolic(reference) => HeadState::Branch {
                name: reference.name.as_bstr().to_str_lossy().into_owned(),
                commit: reference
                    .target
                    .try_id()
                    .map(ToOwned::to_owned)
                    .ok_or_else(|| {
                        GitFailure::new("HEAD's branch is itself symbolic", "unsupported HEAD")
                    })?,
            },
            gix::head::Kind::Unborn(name) => HeadState::Unborn {
                name: name.as_bstr().to_str_lossy().into_owned(),
            },
            gix::head::Kind::Detached { target, .. } => HeadState::Detached { commit: target },
        })
    }

    /// Read a config value as a string, `None` when unset.
    pub fn config_string(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|value| value.to_str_lossy().into_owned())
    }

    /// All values of a multi-valued key, in config order (system, global, local).
    pub fn config_strings(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|value| value.to_str_lossy().into_owned())
            .collect()
    }

    /// Read an integer config value; a malformed value is an error, never a
    /// silent default.
    pub fn config_integer(&self, key: &str) -> Result<Option<i64>, GitFailure> {
        self.repo
            .config_snapshot()
            .try_integer(key)
            .map_err(|err| GitFailure::new(format!("reading {key}"), err))
    }

    /// Does `name` (a full ref name) exist, and where does it point?
    pub fn resolve_ref(&self, name: &str) -> Result<Option<ObjectId>, GitFailure> {
        match self
            .repo
            .try_find_reference(name)
            .ctx(|| format!("could not read {name}"))?
        {
            None => Ok(None),
            Some(mut reference) => Ok(Some(
                reference
                    .peel_to_id()
                    .ctx(|| format!("could not resolve {name}"))?
                    .detach(),
            )),
        }
    }

    /// All refs under `prefix` (e.g. `refs/ralph/<change>/`), sorted by name.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>, GitFailure> {
        let mut out = Vec::new();
        for mut reference in self.listed_refs(prefix)? {
            let name = reference.name().as_bstr().to_str_lossy().into_owned();
            let id = reference
                .peel_to_id()
                .ctx(|| format!("could not resolve {name}"))?
                .detach();
            out.push((name, id));
        }
        out.sort();
        Ok(out)
    }
}

/// The file of a worktree's administrative directory that names the
/// directory where its run's state lives.
pub(super) const STATE_HOME: &str = "ralph-run";

/// The directory where the run working in the worktree of `git_dir` keeps
/// its state, if a run made that worktree.
fn state_home(git_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_dir.join(STATE_HOME)).ok()?;
    let path = PathBuf::from(text.trim_end_matches('\n'));
    path.is_absolute().then_some(path)
}

/// Create an empty repository in `dir` (as `git init` would).
pub fn init(dir: &Path) -> Result<(), GitFailure> {
    gix::init(dir).map(drop).map_err(|err| {
        GitFailure::new(
            format!("could not create a repository in {}", dir.display()),
            err,
        )
    })
}
