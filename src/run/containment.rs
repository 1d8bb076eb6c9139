//! Keeping an attempt's agent inside its story: what it changed in the git
//! directory is undone and reported after every attempt, and with
//! `--sandbox` it runs where the git directory is read-only. What such a
//! change means for the verdict is the judge's (`judge::git_dir`); here the
//! snapshot is taken, compared, put back and told.

use super::attempt::Attempt;
use super::context::Run;
use std::path::PathBuf;

use super::error::RunError;
use super::runtime::blocking;
use crate::agent::{AgentRun, Invocation};
use crate::events::{Event, GitDirChange as ChangeKind};
use crate::git::{FileChange, GitDirChange, GitDirSnapshot, Risk};
use crate::sandbox::{self, Sandbox};
use crate::state::AttemptNote;

/// What of the git directory the attempt may not change, as it stands
/// before the agent starts: the repository's own files and the run's
/// rules (its contract snapshot and the prompt template).
pub(super) async fn snapshot_git_dir(run: &Run) -> Result<GitDirSnapshot, RunError> {
    let (dirs, shown_from) = git_dirs(run);
    let run_files = vec![
        run.run_dir.dir.join("contract.json"),
        run.run_dir.dir.join("contract"),
        run.run_dir.dir.parent().map_or_else(PathBuf::new, |ralph| {
            ralph.join(crate::state::layout::PROMPT_TEMPLATE)
        }),
    ];
    let beside = story_worktrees_beside(run);
    blocking(move || {
        let dirs: Vec<&std::path::Path> = dirs.iter().map(PathBuf::as_path).collect();
        let mut snapshot = GitDirSnapshot::take(&dirs, &run_files, &shown_from)?;
        for admin in &beside {
            snapshot.leave_out(admin);
        }
        Ok(snapshot)
    })
    .await
    .map_err(|err| RunError::io("note what the git directory holds", err))
}

/// The administrative directories of a parallel run's story worktrees
/// other than this loop's own: the run makes and removes them while an
/// attempt is under way, so what they hold is never the attempt's doing.
fn story_worktrees_beside(run: &Run) -> Vec<PathBuf> {
    let repo = run.repo_lock();
    let own = std::fs::canonicalize(repo.git_dir()).ok();
    let worktrees = repo.common_dir().join("worktrees");
    let prefix = format!("{}.story-", run.settings.change_shown());
    let Ok(entries) = std::fs::read_dir(&worktrees) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| worktrees.join(entry.file_name()))
        .filter(|admin| std::fs::canonicalize(admin).ok() != own)
        .collect()
}

/// Undo what the attempt changed in the git directory, and report each
/// change, in the events and the attempt's record.
/// What differs in the git directory from `before`, each change put
/// back.
pub(super) async fn put_back_git_dir(
    before: GitDirSnapshot,
) -> Result<Vec<GitDirChange>, std::io::Error> {
    blocking(move || {
        let changes = before.changes()?;
        if !changes.is_empty() {
            before.restore()?;
        }
        Ok(changes)
    })
    .await
}

pub(super) async fn contain_git_dir(
    run: &mut Run,
    attempt: &Attempt,
    before: GitDirSnapshot,
) -> Result<Vec<GitDirChange>, RunError> {
    let (story_id, attempt) = (attempt.id(), attempt.number);
    let changes = put_back_git_dir(before)
        .await
        .map_err(|err| RunError::io("undo what the agent changed in the git directory", err))?;
    for change in &changes {
        run.emit(Event::GitDirChanged {
            story_id: story_id.to_owned(),
            attempt,
            path: change.path.clone(),
            key: change.key.clone(),
            what: change.what(),
            change: match change.change {
                FileChange::Added => ChangeKind::Added,
                FileChange::Modified => ChangeKind::Modified,
                FileChange::Removed => ChangeKind::Removed,
            },
            runs_code: change.risk == Risk::RunsCode,
        });
    }
    let what = changes.iter().map(GitDirChange::what).collect();
    run.state
        .attempt_noted(story_id, attempt, AttemptNote::GitDirChanged(what));
    Ok(changes)
}

/// The agent's invocation under bubblewrap, when the run asks for the
/// sandbox: the git directories and the user's global git config
/// read-only, the learnings file writable.
pub(super) fn sandboxed(run: &Run, mut invocation: Invocation) -> Invocation {
    if !run.settings.sandbox() {
        return invocation;
    }
    let (mut read_only, _) = git_dirs(run);
    read_only.extend(sandbox::global_git_config());
    let sandbox = Sandbox {
        read_only,
        writable: vec![run.run_dir.learnings_path()],
    };
    let (program, args) = sandbox.wrap(&invocation.program, &invocation.args);
    invocation.program = program;
    invocation.args = args;
    invocation
}

/// Say so when the sandbox refused the agent a write into the git
/// directory: the agent's own words, from its stderr or its output.
/// Returns whether it did: such an attempt failed at its work, however
/// early, and is no set-up error.
pub(super) fn note_sandbox_refusal(run: &mut Run, agent_run: &AgentRun, log_tail: &str) -> bool {
    if !run.settings.sandbox() {
        return false;
    }
    let (dirs, _) = git_dirs(run);
    let refused = sandbox::refused_write(&agent_run.stderr_tail, &dirs)
        .or_else(|| sandbox::refused_write(log_tail, &dirs))
        .map(str::to_owned);
    let Some(line) = refused else {
        return false;
    };
    run.warn(format!(
        "the sandbox refused a write into the git directory: {}",
        line.trim()
    ));
    true
}

/// [`git_dirs_of`] the run's repository.
fn git_dirs(run: &Run) -> (Vec<PathBuf>, PathBuf) {
    git_dirs_of(&run.repo_lock())
}

/// The git directories of `repo`'s worktree (its own, and the common one
/// of a linked worktree), and the directory paths are shown from.
pub(crate) fn git_dirs_of(repo: &crate::git::Repo) -> (Vec<PathBuf>, PathBuf) {
    let mut dirs = vec![repo.git_dir().to_owned()];
    let common = repo.common_dir().to_owned();
    if !dirs.contains(&common) {
        dirs.push(common);
    }
    (dirs, repo.workdir().to_owned())
}
