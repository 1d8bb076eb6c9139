//! The index lock. Like git, we take `index.lock` before reading the index we
//! are about to rewrite and hold it until the new index is in place, so a
//! concurrent git command can neither interleave with us nor be overwritten.
//! A lock held by someone else is waited on briefly, then reported.

use std::io::Write;
use std::time::Duration;

use super::error::{Context, GitFailure, LockedError, OpError};
use super::open::Repo;

/// How long to wait for another git process to release `index.lock`.
const LOCK_PATIENCE: Duration = Duration::from_secs(2);

/// `index.lock`, held.
pub(crate) struct IndexLock {
    file: gix::lock::File,
}

impl IndexLock {
    pub(crate) fn acquire(repo: &Repo) -> Result<IndexLock, OpError> {
        let path = repo.repo.index_path();
        match gix::lock::File::acquire_to_update_resource(
            &path,
            gix::lock::acquire::Fail::AfterDurationWithBackoff(LOCK_PATIENCE),
            None,
            0,
        ) {
            Ok(file) => Ok(IndexLock { file }),
            Err(err) if err.is_retryable() => Err(LockedError {
                path: path.with_extension("lock"),
                holder: None,
            }
            .into()),
            Err(err) => {
                Err(GitFailure::new(format!("could not lock {}", path.display()), err).into())
            }
        }
    }

    /// Write `index` through the lock and move it into place. Its
    /// cache-tree and resolve-undo must be gone (see [`drop_extensions`]).
    pub(crate) fn commit(self, index: &mut gix::index::File) -> Result<(), GitFailure> {
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, self.file);
        match super::index_file::encode_plain(index) {
            Some(bytes) => out
                .write_all(&bytes)
                .ctx(|| "could not write the index".into())?,
            None => {
                index
                    .write_to(&mut out, gix::index::write::Options::default())
                    .ctx(|| "could not write the index".into())?;
            }
        }
        out.flush().ctx(|| "could not write the index".into())?;
        let file = out
            .into_inner()
            .map_err(|err| GitFailure::new("could not write the index", err.into_error()))?;
        file.commit()
            .map_err(|err| GitFailure::new("could not move the new index into place", err.error))?;
        Ok(())
    }

    /// Write an index already encoded through the lock and move it into
    /// place.
    pub(crate) fn commit_bytes(mut self, bytes: &[u8]) -> Result<(), GitFailure> {
        self.file
            .write_all(bytes)
            .ctx(|| "could not write the index".into())?;
        self.file
            .commit()
            .map_err(|err| GitFailure::new("could not move the new index into place", err.error))?;
        Ok(())
    }
}

/// What the engine drops from an index before writing it. A stale
/// cache-tree would make the next `git commit` write the wrong tree; git
/// rebuilds it on its next write.
pub(crate) fn drop_extensions(index: &mut gix::index::File) {
    index.remove_tree();
    index.remove_resolve_undo();
}
