//! The git directory a parallel run's stories share. Each story's loop
//! notes the git directory before its attempt and puts it back after, as
//! every loop does; but with stories at once, one story's note can be
//! taken while another's agent has changed it (planted a hook), and that
//! change is then the note's, put back after the other loop removed it.
//! So the run notes the git directory itself when the first of its
//! stories goes to work, and once none is at work any more puts back and
//! tells whatever differs: no agent's change outlives the stories at work.

use super::super::containment;
use super::super::context::Run;
use super::super::error::RunError;
use crate::git::{FileChange, GitDirSnapshot, Risk};

/// The git directory as it stands, before any story goes to work.
pub(super) async fn note(run: &Run) -> Result<GitDirSnapshot, RunError> {
    containment::snapshot_git_dir(run).await
}

/// No story is at work: what differs from `before` is put back, each
/// change told.
pub(super) async fn put_back(run: &mut Run, before: GitDirSnapshot) -> Result<(), RunError> {
    let changes = containment::put_back_git_dir(before)
        .await
        .map_err(|err| RunError::io("put back what agents changed in the git directory", err))?;
    for change in changes {
        let how = match change.change {
            FileChange::Added => "added",
            FileChange::Modified => "modified",
            FileChange::Removed => "removed",
        };
        let risk = if change.risk == Risk::RunsCode {
            "; it could run code as you"
        } else {
            ""
        };
        run.warn(format!(
            "while stories were at work, an agent changed {} ({how}{risk}); it is put back",
            change.what()
        ));
    }
    Ok(())
}
