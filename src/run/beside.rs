//! A run beside the user: its loop works in a linked worktree of its own on
//! `ralph/<change>`, and the user's worktree (HEAD, index, files, stashes)
//! is never touched. Here: where that worktree goes (`--worktree [PATH]`,
//! `ralph.worktree`, or the default place beside the user's worktree), and
//! on resume, the worktree found again, or made again from the branch if
//! it was deleted. Finishing and aborting such a run is
//! [`super::ending`]'s.

use std::path::{Path, PathBuf};

use super::start_error::StartError;
use crate::git::{ChangeName, Repo};
use crate::settings::{Configured, Requested, Settings, WorktreeChoice};
use crate::state::RunWorktree;

/// Where a new run works: the path of its own worktree, or `None` for the
/// user's worktree. The flag wins over `ralph.worktree`; a parallel run
/// always has a worktree of its own.
pub(super) fn place(
    repo: &Repo,
    change: &ChangeName,
    req: &Requested,
    parallel: bool,
) -> Result<Option<PathBuf>, StartError> {
    let path = match &req.worktree {
        Some(Some(path)) => Some(req.cwd.join(path)),
        Some(None) => Some(default_place(repo.workdir(), change)),
        None => match Configured::of(repo).worktree()? {
            None | Some(WorktreeChoice::Off) => None,
            Some(WorktreeChoice::Beside) => Some(default_place(repo.workdir(), change)),
            Some(WorktreeChoice::Under(dir)) => Some(dir.join(change.as_str())),
        },
    };
    let path = match path {
        Some(path) => path,
        None if parallel => default_place(repo.workdir(), change),
        None => return Ok(None),
    };
    let path = normalize(&path);
    repo.check_worktree_place(&path)?;
    Ok(Some(path))
}

/// `<parent>/<name>.ralph/<change>` for a worktree at `<parent>/<name>`:
/// beside it, outside it, the same on every resume.
pub fn default_place(workdir: &Path, change: &ChangeName) -> PathBuf {
    let workdir = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_owned());
    let name = workdir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repository".to_owned());
    let parent = workdir.parent().unwrap_or(&workdir);
    parent.join(format!("{name}.ralph")).join(change.as_str())
}

/// `path` without `.` and `..` components.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What the run's worktree is locked with while the run lives, as
/// `git worktree list` shows it.
pub(super) fn lock_reason(change: &ChangeName) -> String {
    format!(
        "git-ralph run '{change}' works here; 'git ralph finish {change}' or 'git ralph abort {change}' removes it"
    )
}

/// A tracking file named by an absolute path inside the user's worktree
/// names the same file in the run's worktree.
pub(super) fn relative_tracking(settings: &mut Settings, owner: &Path) {
    let owner = std::fs::canonicalize(owner).unwrap_or_else(|_| owner.to_owned());
    for file in [&mut settings.prd_file, &mut settings.tasks_file]
        .into_iter()
        .flatten()
    {
        let path = Path::new(file.as_str());
        if path.is_absolute() {
            let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
            if let Ok(rest) = real.strip_prefix(&owner) {
                *file = rest.to_string_lossy().into_owned();
            }
        }
    }
}

/// On resume: the run's worktree, opened where it was; made again from
/// the branch if it was deleted (the record then names its new
/// administrative directory). Returns it, and what to tell the user.
pub(super) fn enter(
    repo: &Repo,
    change: &ChangeName,
    record: &mut RunWorktree,
) -> Result<(Repo, String), StartError> {
    repo.undo_unfinished_worktree(&record.linked)?;
    if let Some(inside) = repo.open_worktree(&record.linked)? {
        let notice = format!(
            "the run works in its own worktree at {}, on {}",
            record.linked.path.display(),
            change.branch_short()
        );
        return Ok((inside, notice));
    }
    let linked =
        repo.recreate_worktree(&record.linked, &change.branch_ref(), &lock_reason(change))?;
    record.linked = linked;
    let inside = repo
        .open_worktree(&record.linked)?
        .ok_or_else(|| gone(&record.linked.path))?;
    let notice = format!(
        "the run's worktree at {} was gone; it is made again from {}",
        record.linked.path.display(),
        change.branch_short()
    );
    Ok((inside, notice))
}

/// The worktree just made is not there.
pub(super) fn gone(path: &Path) -> StartError {
    StartError::io(
        format!("open the run's worktree at {}", path.display()),
        std::io::Error::from(std::io::ErrorKind::NotFound),
    )
}
