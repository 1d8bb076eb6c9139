//! The first two trackers behind [`Tracker`]: GitHub, through the `gh` CLI
//! (see [`github`](crate::stories::github)), and beads, a file of the
//! repository (see [`beads`](crate::stories::beads)), which takes no
//! comments: its issues are closed with `bd` once the run is kept.

use std::path::PathBuf;
use std::time::Duration;

use super::{Reading, Tracker};
use crate::stories::issues::{IssuesError, Snapshot};
use crate::stories::{StoriesError, beads, github};

pub(super) struct Github {
    workdir: PathBuf,
    label: Option<String>,
    file: Option<PathBuf>,
    timeout: Duration,
}

impl Github {
    pub fn new(reading: &Reading) -> Github {
        Github {
            workdir: reading.workdir.to_owned(),
            label: reading.label.map(str::to_owned),
            file: reading.issues_file.map(ToOwned::to_owned),
            timeout: reading.timeout,
        }
    }
}

impl Tracker for Github {
    fn list(&self) -> Result<Snapshot, StoriesError> {
        let label = self.label.as_deref();
        match &self.file {
            Some(file) => github::read_file(file, label),
            None => github::list(
                &self.workdir,
                label.unwrap_or(github::DEFAULT_LABEL),
                self.timeout,
            ),
        }
    }

    fn comment(&self, id: &str, body: &str) -> Result<(), IssuesError> {
        github::comment_now(&self.workdir, id, body, self.timeout)
    }

    fn close(&self, id: &str) -> Result<(), IssuesError> {
        github::close(&self.workdir, id, self.timeout)
    }

    /// Read with `gh`; an exported file holds no replies.
    fn answers_since(&self, id: &str, since: u64) -> Result<Vec<String>, IssuesError> {
        match &self.file {
            Some(_) => Ok(Vec::new()),
            None => github::answers_since(&self.workdir, id, since, self.timeout),
        }
    }
}

pub(super) struct Beads {
    workdir: PathBuf,
    file: Option<PathBuf>,
}

impl Beads {
    pub fn new(reading: &Reading) -> Beads {
        Beads {
            workdir: reading.workdir.to_owned(),
            file: reading.issues_file.map(ToOwned::to_owned),
        }
    }
}

impl Tracker for Beads {
    fn list(&self) -> Result<Snapshot, StoriesError> {
        beads::read(&self.workdir, self.file.as_deref())
    }

    /// `--comment` is refused for beads before a run begins.
    fn comment(&self, _id: &str, _body: &str) -> Result<(), IssuesError> {
        Ok(())
    }

    /// Closed with `bd` once the run is kept (see the finish's offer).
    fn close(&self, _id: &str) -> Result<(), IssuesError> {
        Ok(())
    }

    /// A beads issue is answered with `git ralph answer`.
    fn answers_since(&self, _id: &str, _since: u64) -> Result<Vec<String>, IssuesError> {
        Ok(Vec::new())
    }
}
