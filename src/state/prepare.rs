//! Before a run begins, its directory must be one git-ralph may write:
//! named like none of git-ralph's own files, and writable. Both are checked
//! before the branch moves or any commit is made, since a start that
//! failed at its first state write would leave the user on a branch no
//! command knows of. A directory made for the check goes again if the
//! start goes no further.

use std::path::{Path, PathBuf};

use super::RunDir;
use super::layout::reserved_name;

/// Why a run cannot be kept where its name puts it.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error(
        "the change name '{change}' is taken by git-ralph's own {file} in .git/ralph/, where each run keeps its files in a directory named after its change"
    )]
    Reserved { change: String, file: &'static str },
    #[error("could not write the run's directory {}", dir.display())]
    NotWritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RunDirError {
    pub fn hint(&self) -> String {
        match self {
            RunDirError::Reserved { change, .. } => format!(
                "name the change otherwise, e.g. 'git ralph start {change}-run' (the names lock, history, prompt.md, plans, serve-token, dir-cache, index-tree, shared-indexes and cookies are reserved, in any case)"
            ),
            RunDirError::NotWritable { dir, .. } => format!(
                "nothing was changed; make {} a directory git-ralph may write (not a file, not read-only, on a disk that is not full), then start again",
                dir.display()
            ),
        }
    }
}

/// Refuses a change named like one of git-ralph's own files.
pub fn check_run_name(change: &str) -> Result<(), RunDirError> {
    match reserved_name(change) {
        Some(file) => Err(RunDirError::Reserved {
            change: change.to_owned(),
            file,
        }),
        None => Ok(()),
    }
}

/// The run's directory, made if it was not there and shown writable.
/// Dropped before the run is recorded (no `state.json` in it), a
/// directory it made is removed with whatever was put in it.
#[derive(Debug)]
pub struct Prepared {
    dir: PathBuf,
    made: bool,
}

impl RunDir {
    /// Make sure the run's files can be written, by writing one.
    pub fn prepare(&self) -> Result<Prepared, RunDirError> {
        let not_writable = |source| RunDirError::NotWritable {
            dir: self.dir.clone(),
            source,
        };
        let made = !self.dir.is_dir();
        std::fs::create_dir_all(&self.dir).map_err(not_writable)?;
        let prepared = Prepared {
            dir: self.dir.clone(),
            made,
        };
        probe(&self.dir).map_err(not_writable)?;
        Ok(prepared)
    }
}

/// Writes, syncs and removes a small file in `dir`.
fn probe(dir: &Path) -> std::io::Result<()> {
    let path = dir.join(format!(".probe.{}.tmp", std::process::id()));
    let written = super::write_atomically(&path, b"git-ralph checks that it may write here\n");
    let removed = std::fs::remove_file(&path);
    written.and(removed)
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.made && !self.dir.join("state.json").exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
