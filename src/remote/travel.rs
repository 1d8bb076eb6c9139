//! What is pushed with `ralph/<change>` for the run to travel: its record,
//! written now, and every ref of the run but its history. The record and
//! the branch are pushed plainly (a remote that went on apart is refused,
//! never overwritten); the other refs (attempts, kept work) are the run's
//! own and replace what the remote has under the same name. The lease
//! (see [`super::lease`]) is pushed on its own, never with them.

use super::error::RemoteError;
use super::layout;
use super::record;
use crate::git::{ChangeName, ObjectId, Repo};
use crate::state::RunDir;

/// The run's refs made ready to push: the record written, and where the
/// record's ref was before, to put back if the push fails (the record's
/// ref names the last record that went to the remote).
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub refspecs: Vec<String>,
    before: Option<ObjectId>,
}

impl Outgoing {
    /// The push failed: the record's ref goes back where it was.
    pub fn put_back(&self, repo: &Repo, change: &ChangeName) -> Result<(), RemoteError> {
        let name = layout::record_ref(&change.ref_namespace());
        match self.before {
            Some(before) => repo.keep_at(&name, before, "ralph: the record did not go")?,
            None => repo.drop_ref(&name)?,
        }
        Ok(())
    }
}

/// Write the record and return the refspecs of the run's refs, for a
/// push beside the branch's own.
pub fn outgoing(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
) -> Result<Outgoing, RemoteError> {
    let before = repo.resolve_ref(&layout::record_ref(&change.ref_namespace()))?;
    record::write(repo, change, run_dir)?;
    let namespace = change.ref_namespace();
    let record = layout::record_ref(&namespace);
    let history = format!("{namespace}/history/");
    let lease = super::lease::lease_ref(change);
    let refspecs = repo
        .refs_under(&format!("{namespace}/"))?
        .into_iter()
        .filter(|(name, _)| !name.starts_with(&history) && *name != lease)
        .map(|(name, _)| {
            if name == record {
                format!("{name}:{name}")
            } else {
                format!("+{name}:{name}")
            }
        })
        .collect();
    Ok(Outgoing { refspecs, before })
}
