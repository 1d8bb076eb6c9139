//! Whether git sees what is written to a file of the worktree. A run's
//! task file must be such a file: git-ralph undoes a failed attempt by
//! putting back what git saw, so a tick written where git does not look
//! (through a symlink out of the repository, or in a file `.gitignore`
//! names and git does not track) would outlive the attempt and count as
//! done.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

use super::error::{Context, GitFailure};
use super::open::Repo;

/// Why git does not see a file of the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unseen {
    /// It leads, through a symlink, to `target` outside the worktree (or
    /// into the git directory).
    Outside { target: PathBuf },
    /// Git does not track it and an ignore rule names it.
    Ignored,
}

impl Repo {
    /// Why git would not see the changes made to `relative`, a file of the
    /// worktree, if it would not. A file that is not there is seen (it is
    /// for whoever reads it to say that it is missing).
    pub fn unseen(&self, relative: &Path) -> Result<Option<Unseen>, GitFailure> {
        let workdir = self.workdir();
        let (Ok(real_workdir), Ok(real)) = (
            workdir.canonicalize(),
            workdir.join(relative).canonicalize(),
        ) else {
            return Ok(None);
        };
        let inside = match real.strip_prefix(&real_workdir) {
            Ok(inside) if !inside.starts_with(".git") => inside.to_owned(),
            _ => return Ok(Some(Unseen::Outside { target: real })),
        };
        let index = self.shared_index()?;
        let slashed = inside.as_os_str().as_bytes().as_bstr();
        if index.entry_by_path(slashed).is_some() {
            return Ok(None);
        }
        let mut excludes = self
            .repo
            .excludes(
                &index,
                None,
                gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
            )
            .ctx(|| "could not read the ignore rules".into())?;
        // A file in an ignored directory is ignored: each directory on
        // the way is asked, then the file.
        let mut at = PathBuf::new();
        let mut parts = inside.components().peekable();
        while let Some(part) = parts.next() {
            at.push(part);
            let mode = if parts.peek().is_some() {
                gix::index::entry::Mode::DIR
            } else {
                gix::index::entry::Mode::FILE
            };
            let platform = excludes
                .at_path(&at, Some(mode))
                .ctx(|| format!("could not read the ignore rules for {}", at.display()))?;
            if platform.is_excluded() {
                return Ok(Some(Unseen::Ignored));
            }
        }
        Ok(None)
    }
}
