//! Listing refs while other processes write them. A parallel run's workers
//! and loop create and delete branches and refs in the same repository at
//! the same time, and deleting the last loose ref in a directory removes
//! the directory: a listing that meets a file or directory gone between
//! reading its parent and opening it sees the ref store mid-change, not a
//! broken repository. The listing is taken again, so that it is one
//! consistent reading (a loose ref that went because it was packed is
//! found among the packed ones then); when the store keeps changing, what
//! vanished is left out, as git's own listing leaves out a ref deleted
//! while it reads.

use super::error::GitFailure;
use super::open::Repo;

/// How many times a listing is taken again before its error is reported.
const ATTEMPTS: usize = 8;

impl Repo {
    /// The refs under `prefix`, read whole even while other processes
    /// delete refs.
    pub(crate) fn listed_refs(&self, prefix: &str) -> Result<Vec<gix::Reference<'_>>, GitFailure> {
        for _ in 1..ATTEMPTS {
            match self.list_once(prefix, Vanished::Fail) {
                Err(err) if vanished(&*err) => std::thread::yield_now(),
                listed => return listed.map_err(|err| failure(prefix, err)),
            }
        }
        self.list_once(prefix, Vanished::Skip)
            .map_err(|err| failure(prefix, err))
    }

    fn list_once(
        &self,
        prefix: &str,
        on_vanished: Vanished,
    ) -> Result<Vec<gix::Reference<'_>>, Box<dyn std::error::Error + Send + Sync>> {
        let platform = self.repo.references()?;
        let mut refs = Vec::new();
        for reference in platform.prefixed(prefix)? {
            match reference {
                Ok(reference) => refs.push(reference),
                Err(err) if on_vanished == Vanished::Skip && vanished(&err) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(refs)
    }
}

/// What a listing does with a ref or directory that went while it read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Vanished {
    Fail,
    Skip,
}

fn failure(prefix: &str, err: Box<dyn std::error::Error + Send + Sync>) -> GitFailure {
    GitFailure::new(format!("could not list {prefix}"), err)
}

/// Whether `err` comes from a file or directory that was not there any more.
fn vanished(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::NotFound
        {
            return true;
        }
        cause = err.source();
    }
    false
}

#[cfg(test)]
mod tests;
