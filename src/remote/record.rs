//! The run's record as a commit: its files (see [`super::layout::FILES`])
//! and a manifest, under `refs/ralph/<change>/record`, each record a child
//! of the one before. So it is pushed and fetched as any ref is, a remote
//! that holds a later record of the same run is a fast-forward, and two
//! machines that went on from the same record have gone apart, which git's
//! own push refuses. A run begun again after its change's earlier run was
//! kept in history goes on from that run's last record.

use super::error::RemoteError;
use super::layout::{self, LAYOUT, MANIFEST, Manifest};
use crate::git::{ChangeName, ObjectId, Repo};
use crate::state::{RunDir, RunState};

/// A record read back from a commit.
#[derive(Debug, Clone)]
pub struct Record {
    pub commit: ObjectId,
    pub manifest: Manifest,
    pub state: RunState,
    /// Every file of the run it holds, the state included, by name.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Record {
    /// The tip of `ralph/<change>` the record describes.
    pub fn branch_tip(&self) -> Option<ObjectId> {
        ObjectId::from_hex(self.manifest.branch.as_bytes()).ok()
    }
}

/// Write the run's files as it stands into a record on top of the last
/// one, and point the record's ref at it; a record that would hold what
/// the last one holds is not written again. Returns the record's commit.
pub fn write(repo: &Repo, change: &ChangeName, run_dir: &RunDir) -> Result<ObjectId, RemoteError> {
    let name = layout::record_ref(&change.ref_namespace());
    let tip = repo
        .resolve_ref(&change.branch_ref())?
        .map(|id| id.to_string())
        .unwrap_or_default();
    let job = run_dir
        .load()
        .ok()
        .and_then(|state| state.settings().job.clone());
    let manifest = Manifest {
        layout: if job.is_some() {
            layout::STORY_LAYOUT
        } else {
            layout::RUN_LAYOUT
        },
        change: change.to_string(),
        branch: tip,
    };
    let mut files = vec![(
        MANIFEST.to_owned(),
        serde_json::to_vec_pretty(&manifest).expect("a manifest serializes"),
    )];
    for file in layout::FILES {
        let path = run_dir.dir.join(file);
        match std::fs::read(&path) {
            Ok(bytes) => files.push((file.to_owned(), bytes)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(RemoteError::Io {
                    what: format!("the record from {}", path.display()),
                    source,
                });
            }
        }
    }
    let parent = match repo.resolve_ref(&name)? {
        Some(parent) => Some(parent),
        None => last_archived(repo, change)?,
    };
    if let Some(parent) = parent {
        let mut had = repo.files_of(parent)?;
        had.sort();
        let mut now = files.clone();
        now.sort();
        if had == now {
            return Ok(parent);
        }
    }
    let short = manifest.branch.get(..12).unwrap_or("(no branch)");
    let message = format!("ralph({change}): the run's record at {short}");
    let commit = repo.commit_files(&files, parent, &message)?;
    repo.keep_at(&name, commit, "ralph: record the run")?;
    Ok(commit)
}

/// The record of the change's last run kept in history, if it had one:
/// the first record of a run begun again goes on from it, so that the
/// records of one change on a remote stay one line of history and a push
/// of the new run's is a fast-forward.
fn last_archived(repo: &Repo, change: &ChangeName) -> Result<Option<ObjectId>, RemoteError> {
    let history = format!("{}/history/", change.ref_namespace());
    Ok(repo
        .refs_under(&history)?
        .into_iter()
        .filter(|(name, _)| name.ends_with("/record"))
        .map(|(_, id)| id)
        .next_back())
}

/// The record at `commit`, refused when a later release wrote it or it is
/// not a record of `change`.
pub fn read(repo: &Repo, change: &ChangeName, commit: ObjectId) -> Result<Record, RemoteError> {
    let damaged = |detail: String| RemoteError::Damaged {
        change: change.to_string(),
        commit: commit.to_string(),
        detail,
    };
    let files = repo.files_of(commit)?;
    let find = |name: &str| files.iter().find(|(n, _)| n == name).map(|(_, b)| b);
    let manifest_bytes = find(MANIFEST).ok_or_else(|| damaged(format!("it has no {MANIFEST}")))?;
    // The layout is read first, alone: a later layout may change the rest.
    #[derive(serde::Deserialize)]
    struct LayoutOnly {
        layout: u32,
    }
    let only: LayoutOnly = serde_json::from_slice(manifest_bytes)
        .map_err(|err| damaged(format!("{MANIFEST}: {err}")))?;
    readable(change, commit, only.layout, LAYOUT)?;
    let manifest: Manifest = serde_json::from_slice(manifest_bytes)
        .map_err(|err| damaged(format!("{MANIFEST}: {err}")))?;
    if manifest.change != change.as_str() {
        return Err(damaged(format!(
            "it is the record of '{}'",
            manifest.change
        )));
    }
    let state_bytes = find("state.json").ok_or_else(|| damaged("it has no state.json".into()))?;
    let state: RunState =
        serde_json::from_slice(state_bytes).map_err(|err| damaged(format!("state.json: {err}")))?;
    let files = files.into_iter().filter(|(n, _)| n != MANIFEST).collect();
    Ok(Record {
        commit,
        manifest,
        state,
        files,
    })
}

/// A record of `layout` is read by a release that reads `known` at most;
/// one of a later layout is refused, never half read.
fn readable(
    change: &ChangeName,
    commit: ObjectId,
    layout: u32,
    known: u32,
) -> Result<(), RemoteError> {
    if layout > known {
        return Err(RemoteError::LaterLayout {
            change: change.to_string(),
            commit: commit.to_string(),
            layout,
            known,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_story_record_is_refused_by_a_release_that_reads_run_records_alone() {
        let change = ChangeName::parse("greet.story-2").unwrap();
        let commit = ObjectId::null(gix::hash::Kind::Sha1);
        // This release reads both.
        readable(&change, commit, layout::RUN_LAYOUT, LAYOUT).unwrap();
        readable(&change, commit, layout::STORY_LAYOUT, LAYOUT).unwrap();
        // The release before it read layout 1 alone.
        let refused = readable(&change, commit, layout::STORY_LAYOUT, layout::RUN_LAYOUT)
            .expect_err("a reader of layout 1 took a story's record");
        let said = refused.to_string();
        assert!(said.contains("later release (layout 2)"), "{said}");
        assert!(said.contains("reads layout 1 at most"), "{said}");
    }
}
