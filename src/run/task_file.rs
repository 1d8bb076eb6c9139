//! A run's task file must be one git sees. A failed attempt is undone by
//! putting the worktree back as git last saw it, and the boxes the agent
//! ticked go with it; a file git does not see (reached through a symlink
//! out of the repository, or named by `.gitignore` and not tracked) would
//! keep a failed attempt's ticks, and the story would count as done. Such
//! a file is refused before the run begins, with what to do. An untracked
//! file that no rule ignores is seen: the run's first commit takes it in.

use super::start_error::{StartError, TaskFileError};
use crate::git::{Repo, Unseen};
use crate::stories::{SourceKind, StorySource};

/// Refuses a task file of the worktree that git does not see. Tracking
/// kept outside the worktree (a tracker's issues) is the source's own
/// business: it keeps a copy for every revert; a prompt file is read,
/// never ticked.
pub(super) fn check(repo: &Repo, source: &dyn StorySource) -> Result<(), StartError> {
    let path = source.tracking_file();
    if source.kind() == SourceKind::Prompt || path.is_absolute() || path.as_os_str().is_empty() {
        return Ok(());
    }
    let unseen = repo
        .unseen(path)
        .map_err(|err| StartError::git("read what git tracks", err))?;
    let refused = match unseen {
        None => return Ok(()),
        Some(Unseen::Outside { target }) => TaskFileError::OutsideThroughSymlink {
            path: path.to_owned(),
            target,
        },
        Some(Unseen::Ignored) => TaskFileError::Ignored {
            path: path.to_owned(),
        },
    };
    Err(StartError::from(refused))
}
