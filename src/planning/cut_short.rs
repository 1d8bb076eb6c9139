//! A plan whose process was killed (kill -9, a crash, the machine going
//! down) never contains its agent: the files it rewrote, the index it
//! staged and the strays it left stay in the user's worktree, and
//! `plan.json` says "planning" for ever. So before its first try a plan
//! notes how the repository stood, where a later process can read it: the
//! worktree and the index as commits under
//! `refs/ralph/<change>/plan/<n>/before` (so that the user's content is
//! reachable, not a loose blob), HEAD and its own PID in `noted.json`, the
//! branches, tags and stash in `noted-refs.json`, beside `plan.json`. A
//! plan that ends removes them. The next `plan`, or `abort`, [`find`]s a
//! plan whose process is gone and [`recover`]s it: its agent, if it still
//! runs, is ended, and the worktree, the index, HEAD and the refs go back
//! to how they stood before the plan began, what the agent left kept under
//! a ref that is named.
//!
//! Only while nothing shows that the user went on meanwhile: a plan's
//! agent keeps its hands off HEAD and the refs, the user does not (a
//! commit, a switch, a branch, a stash), and nothing dates the kill, so
//! once HEAD or a branch, tag or the stash moved since the plan began
//! (HEAD's reflog grew, if only to come back), or a run was at work since,
//! what its agent did cannot be told from what the user did since. Putting
//! it all back would take the user's commit off their branch; so the next
//! `plan` refuses, changing nothing, and `abort` [`let_go`]es the plan,
//! the repository left as it is and how it stood before the plan kept
//! under a ref that is named.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::contain::Readings;
use super::error::PlanError;
use super::record::{PlanRecord, PlanStatus, Record};
use crate::git::{ChangeName, HeadState, ObjectId, RefSnapshot, Repo};
use crate::run::kept_refs;
use crate::state::{process_alive, write_atomically};

const NOTED: &str = "noted.json";
const NOTED_REFS: &str = "noted-refs.json";
/// Where a try's agent records its process group while it runs.
pub(super) const AGENT_PID: &str = "agent.pid";

/// `noted.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Noted {
    /// The plan's process.
    pid: u32,
    head: HeadState,
    /// The worktree's fingerprint (untracked files included) and the
    /// index, as trees.
    worktree: String,
    index: String,
    /// The ref that keeps both reachable.
    kept_at: String,
    /// How long HEAD's reflog was: what is appended after moved HEAD, if
    /// only to bring it back. Absent from the notes of earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    head_log: Option<u64>,
}

/// A plan whose process is gone, with the state it noted.
#[derive(Debug, Clone)]
pub struct CutShort {
    pub change: String,
    /// The plan's record directory.
    pub dir: PathBuf,
    /// The process that made it, no longer running.
    pub pid: u32,
}

/// What putting back a plan cut short did.
#[derive(Debug, Clone)]
pub struct Recovered {
    pub change: String,
    pub dir: PathBuf,
    pub pid: u32,
    /// Where what the agent left in the worktree is kept, when it left
    /// anything.
    pub kept: Option<String>,
    /// What was put back, in words.
    pub undone: Vec<String>,
    /// Set when the plan was let go, nothing put back.
    pub left_as_is: Option<LeftAsIs>,
}

/// A plan cut short that was let go: what moved since it began, which
/// cannot be told from what its agent did.
#[derive(Debug, Clone)]
pub struct LeftAsIs {
    pub moved: Vec<String>,
    /// The ref that keeps the index before the plan, the worktree in its
    /// parent.
    pub before: String,
}

/// Note the repository as it stands before the first try of the plan
/// recorded in `dir`.
pub(super) fn note(repo: &mut Repo, dir: &Path, change: &ChangeName) -> Result<(), PlanError> {
    let Readings {
        head,
        refs,
        index,
        worktree,
    } = Readings::take(repo)?;
    let kept_at = format!("{}/before", base(change, dir));
    let parents: Vec<ObjectId> = head.commit().into_iter().collect();
    let keep = || -> Result<(), crate::git::OpError> {
        let message = format!("ralph({change}): the worktree before a plan");
        let worktree_commit = repo.write_commit(&message, worktree, &parents)?;
        let message = format!("ralph({change}): the index before a plan");
        let index_commit = repo.write_commit(&message, index, &[worktree_commit])?;
        repo.set_ref(&kept_at, index_commit, &message)?;
        Ok(())
    };
    keep().map_err(|err| PlanError::git("keep the worktree before the plan", err))?;
    write(&dir.join(NOTED_REFS), &refs.to_json())?;
    let noted = Noted {
        pid: std::process::id(),
        head,
        worktree: worktree.to_string(),
        index: index.to_string(),
        kept_at,
        head_log: Some(head_log_len(repo)),
    };
    let text = serde_json::to_vec_pretty(&noted).unwrap_or_default();
    write(&dir.join(NOTED), &text)
}

/// A plan that ended as it should: what it noted goes.
pub(super) fn forget(repo: &Repo, dir: &Path) {
    if let Some(noted) = read(dir) {
        let _ = repo.drop_ref(&noted.kept_at);
    }
    let _ = std::fs::remove_file(dir.join(NOTED_REFS));
    let _ = std::fs::remove_file(dir.join(NOTED));
}

/// Every plan of `repo` (of `change` alone when given) whose process is
/// gone before it put the repository back.
pub fn find(repo: &Repo, change: Option<&str>) -> Vec<CutShort> {
    let plans = repo.ralph_dir().join("plans");
    let Ok(changes) = std::fs::read_dir(&plans) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in changes.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if change.is_some_and(|change| change != name) {
            continue;
        }
        let Ok(sessions) = std::fs::read_dir(entry.path()) else {
            continue;
        };
        for session in sessions.flatten() {
            let dir = session.path();
            if let Some(noted) = read(&dir)
                && noted.pid != std::process::id()
                && !process_alive(noted.pid)
            {
                found.push(CutShort {
                    change: name.clone(),
                    dir,
                    pid: noted.pid,
                });
            }
        }
    }
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    found
}

/// Put the repository back as it stood before the plan `cut` began: its
/// agent ended if it still runs, HEAD, the branches, tags and stash, the
/// worktree and the index; what the agent left kept under refs named
/// after the plan (`refs/ralph/<change>/plan/<n>/cut-short`).
pub fn recover(repo: &mut Repo, cut: &CutShort) -> Result<Recovered, PlanError> {
    let noted = read(&cut.dir).ok_or_else(|| {
        PlanError::io(
            format!("read {}", cut.dir.join(NOTED).display()),
            std::io::Error::other("it is not what a plan writes"),
        )
    })?;
    let change = ChangeName::parse(&cut.change)
        .map_err(|err| PlanError::git("name the plan's refs", err))?;
    let base = format!("{}/cut-short", base(&change, &cut.dir));
    let mut recovered = Recovered::ended(cut);
    check_noted(repo, cut, &noted)?;
    put_back_refs(repo, cut, &noted, &base, &mut recovered)?;
    put_back_files(repo, &noted, &base, &mut recovered)?;
    mark_stopped(&cut.dir)?;
    forget(repo, &cut.dir);
    Ok(recovered)
}

/// Refuse to put back the plan `cut` once HEAD or a branch, tag or the
/// stash moved since it began: what its agent did cannot be told from
/// what the user did since. Reads only.
pub fn check(repo: &Repo, cut: &CutShort) -> Result<(), PlanError> {
    match read(&cut.dir) {
        Some(noted) => check_noted(repo, cut, &noted),
        None => Ok(()),
    }
}

fn check_noted(repo: &Repo, cut: &CutShort, noted: &Noted) -> Result<(), PlanError> {
    let moved = moved_since(repo, cut, noted)?;
    if moved.is_empty() {
        return Ok(());
    }
    Err(PlanError::MovedOnSinceCutShort {
        change: cut.change.clone(),
        pid: cut.pid,
        moved,
        before: noted.kept_at.clone(),
    })
}

/// What moved since the plan `cut` noted the repository: HEAD (to another
/// branch or commit), the branches, tags and stash.
fn moved_since(repo: &Repo, cut: &CutShort, noted: &Noted) -> Result<Vec<String>, PlanError> {
    let head = repo
        .head()
        .map_err(|err| PlanError::git("read HEAD", err))?;
    let branch = |head: &HeadState| match head {
        HeadState::Branch { name, .. } | HeadState::Unborn { name } => Some(name.clone()),
        HeadState::Detached { .. } => None,
    };
    let mut moved = Vec::new();
    // A branch that moved with HEAD on it is told among the refs.
    if head != noted.head && (branch(&head).is_none() || branch(&head) != branch(&noted.head)) {
        moved.push(format!(
            "HEAD moved from {} to {}",
            noted.head.describe(),
            head.describe()
        ));
    }
    let refs = std::fs::read(cut.dir.join(NOTED_REFS))
        .ok()
        .and_then(|bytes| RefSnapshot::from_json(&bytes));
    if let Some(refs) = refs {
        let now = repo
            .snapshot_user_refs(&[])
            .map_err(|err| PlanError::git("list the branches and tags", err))?;
        moved.extend(now.changed_since(&refs));
    }
    if moved.is_empty() && noted.head_log.is_some_and(|len| head_log_len(repo) != len) {
        moved.push("HEAD was moved and brought back (git reflog shows it)".to_owned());
    }
    moved.extend(runs_since(repo, cut));
    Ok(moved)
}

/// The length of HEAD's reflog, 0 when there is none.
fn head_log_len(repo: &Repo) -> u64 {
    let log = repo.git_dir().join("logs").join("HEAD");
    std::fs::metadata(log).map_or(0, |meta| meta.len())
}

/// The runs whose state was written since the plan `cut` noted the
/// repository: a run at work since, whose work (a cleanup's, say) is in
/// the worktree.
fn runs_since(repo: &Repo, cut: &CutShort) -> Vec<String> {
    let modified = |path: &Path| {
        std::fs::metadata(path)
            .and_then(|meta| meta.modified())
            .ok()
    };
    let Some(noted_at) = modified(&cut.dir.join(NOTED)) else {
        return Vec::new();
    };
    let ralph_dir = repo.ralph_dir();
    crate::state::list_runs(&ralph_dir)
        .into_iter()
        .filter(|run| {
            modified(&ralph_dir.join(run).join("state.json")).is_some_and(|at| at > noted_at)
        })
        .map(|run| format!("a run of '{run}' was at work"))
        .collect()
}

/// Let the plan `cut` go, the repository left as it is: its agent ended if
/// it still runs, its record marked stopped, and how things stood before
/// it kept under the ref that holds them. For `abort` when [`check`]
/// refuses to put the plan back.
pub fn let_go(repo: &Repo, cut: &CutShort) -> Result<Recovered, PlanError> {
    let mut recovered = Recovered::ended(cut);
    if let Some(noted) = read(&cut.dir) {
        let moved = moved_since(repo, cut, &noted)?;
        recovered.left_as_is = Some(LeftAsIs {
            moved,
            before: noted.kept_at,
        });
    }
    mark_stopped(&cut.dir)?;
    let _ = std::fs::remove_file(cut.dir.join(NOTED_REFS));
    let _ = std::fs::remove_file(cut.dir.join(NOTED));
    Ok(recovered)
}

impl Recovered {
    /// Nothing put back yet; the plan's agent ended if it still ran.
    fn ended(cut: &CutShort) -> Recovered {
        let mut recovered = Recovered {
            change: cut.change.clone(),
            dir: cut.dir.clone(),
            pid: cut.pid,
            kept: None,
            undone: Vec::new(),
            left_as_is: None,
        };
        if crate::process::end_orphaned_group(&cut.dir.join(AGENT_PID)) {
            recovered
                .undone
                .push("its agent was still running; it is stopped".to_owned());
        }
        recovered
    }
}

/// HEAD, then the branches, tags and stash, as noted.
fn put_back_refs(
    repo: &mut Repo,
    cut: &CutShort,
    noted: &Noted,
    base: &str,
    recovered: &mut Recovered,
) -> Result<(), PlanError> {
    let (moved_to, refs_keep) = super::contain::put_head_back(repo, &noted.head, base)?;
    if let Some(found) = moved_to {
        recovered.undone.push(format!(
            "HEAD was on {}; it is back on {}",
            found.describe(),
            noted.head.describe()
        ));
    }
    let refs = std::fs::read(cut.dir.join(NOTED_REFS))
        .ok()
        .and_then(|bytes| RefSnapshot::from_json(&bytes));
    if let Some(refs) = refs {
        let moved = repo
            .restore_user_refs(&refs, &[], &refs_keep)
            .map_err(|err| PlanError::git("put back the branches and tags", err))?;
        recovered.undone.extend(moved.iter().map(kept_refs::words));
    }
    Ok(())
}

/// Every file back as noted and the index as it was, the worktree as the
/// agent left it kept first.
fn put_back_files(
    repo: &mut Repo,
    noted: &Noted,
    base: &str,
    recovered: &mut Recovered,
) -> Result<(), PlanError> {
    let tree = |hex: &str| {
        ObjectId::from_hex(hex.as_bytes()).map_err(|err| {
            PlanError::io(
                "read what the plan noted",
                std::io::Error::other(err.to_string()),
            )
        })
    };
    let (worktree, index) = (tree(&noted.worktree)?, tree(&noted.index)?);
    let (after, changed) = repo
        .changed_since(worktree)
        .map_err(|err| PlanError::git("read the worktree", err))?;
    let index_now = repo
        .index_tree()
        .map_err(|err| PlanError::git("read the index", err))?;
    if changed.is_empty() && index_now == index {
        return Ok(());
    }
    let paths: Vec<String> = changed.into_iter().map(|file| file.path).collect();
    if !paths.is_empty() {
        let kept = repo
            .unused_ref(base)
            .map_err(|err| PlanError::git("name a ref", err))?;
        let message = format!(
            "ralph({}): what a plan cut short left in the worktree\n\n{}",
            recovered.change,
            paths.join("\n")
        );
        repo.preserve(&kept, &message)
            .map_err(|err| PlanError::git("keep what the agent left", err))?;
        recovered.undone.push(format!(
            "{} changed; put back as before the plan (what was there is kept at {kept})",
            paths.join(", ")
        ));
        recovered.kept = Some(kept);
    }
    if index_now != index {
        recovered
            .undone
            .push("the index was changed; it is as it was before the plan".to_owned());
    }
    repo.put_back_paths(worktree, after, &paths, index)
        .map_err(|err| PlanError::git("put back the worktree and the index", err))?;
    Ok(())
}

/// `plan.json` says the plan stopped.
fn mark_stopped(dir: &Path) -> Result<(), PlanError> {
    let path = dir.join("plan.json");
    let plan = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<PlanRecord>(&bytes).ok());
    if let Some(mut plan) = plan {
        plan.status = PlanStatus::Stopped;
        Record {
            dir: dir.to_owned(),
            plan,
        }
        .save()?;
    }
    Ok(())
}

/// `refs/ralph/<change>/plan/<n>`: the plan's refs, `<n>` its record's.
fn base(change: &ChangeName, dir: &Path) -> String {
    let session = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{}/plan/{session}", change.ref_namespace())
}

fn read(dir: &Path) -> Option<Noted> {
    let bytes = std::fs::read(dir.join(NOTED)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), PlanError> {
    write_atomically(path, bytes)
        .map_err(|err| PlanError::io(format!("write {}", path.display()), err))
}
