//! Two machines kept off one run: before a machine takes a run up from a
//! remote, it pushes a lease under `refs/ralph/<change>/lease` (who holds
//! it, until when) with a compare-and-swap (`git push
//! --force-with-lease=<ref>:<what it saw>`): of two machines racing, the
//! remote takes one lease, and the other's push is refused. A lease held
//! by another machine and not yet expired refuses the take-up; an expired
//! one is taken over, by the same compare-and-swap. The lease is never
//! copied into a clone's own refs and never pushed with the run's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::RemoteError;
use crate::git::{ChangeName, ObjectId, Repo};
use crate::process::{self, Limits, Spec};

/// How long a lease holds when nobody gives it back: longer than a CI
/// job's own time limit, so that a job that dies leaves the run to the
/// next one within a few hours.
pub const LEASE_SECS: u64 = 3 * 60 * 60;

/// The file of a lease's commit.
const FILE: &str = "lease.json";

/// A lease as its commit holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The machine and clone that holds it.
    pub holder: String,
    /// Until when, in unix seconds.
    pub expires: u64,
}

/// The lease's ref.
pub fn lease_ref(change: &ChangeName) -> String {
    format!("{}/lease", change.ref_namespace())
}

/// Who this clone is, in a lease: the host and the git directory.
pub fn holder(repo: &Repo) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "a machine".to_owned());
    format!("{host}:{}", repo.common_dir().display())
}

/// The lease at `commit` (fetched from the remote).
pub fn read(repo: &Repo, commit: ObjectId) -> Option<Lease> {
    let files = repo.files_of(commit).ok()?;
    let (_, bytes) = files.iter().find(|(name, _)| name == FILE)?;
    serde_json::from_slice(bytes).ok()
}

/// Take the lease of `change` on `remote` for this clone, where the
/// remote's lease was `seen` (`None`: there was none): refused when
/// another holder's lease has not expired at `now`, or when the remote's
/// lease moved since it was seen.
pub fn take(
    repo: &Repo,
    change: &ChangeName,
    remote: &str,
    seen: Option<ObjectId>,
    now: u64,
) -> Result<ObjectId, RemoteError> {
    let me = holder(repo);
    if let Some(lease) = seen.and_then(|commit| read(repo, commit))
        && lease.holder != me
        && lease.expires > now
    {
        return Err(RemoteError::LeaseHeld {
            change: change.to_string(),
            holder: lease.holder,
            minutes: (lease.expires - now).div_ceil(60),
        });
    }
    let lease = Lease {
        holder: me,
        expires: now + LEASE_SECS,
    };
    let bytes = serde_json::to_vec_pretty(&lease).expect("a lease serializes");
    let commit = repo.commit_files(
        &[(FILE.to_owned(), bytes)],
        None,
        &format!("ralph({change}): lease until {}", lease.expires),
    )?;
    let name = lease_ref(change);
    let expected = seen.map(|id| id.to_string()).unwrap_or_default();
    let args = [
        "push".to_owned(),
        "--porcelain".to_owned(),
        format!("--force-with-lease={name}:{expected}"),
        "--end-of-options".to_owned(),
        remote.to_owned(),
        format!("{commit}:{name}"),
    ];
    if push(repo, change, &args)? {
        return Ok(commit);
    }
    // The remote's lease moved since it was seen: another machine took it.
    Err(RemoteError::LeaseTaken {
        change: change.to_string(),
        remote: remote.to_owned(),
    })
}

/// Give the lease back once the run has ended here: deleted on the
/// remote only if it is still `ours` (a compare-and-swap too). Whether it
/// went; a lease that could not be given back expires.
pub fn release(repo: &Repo, change: &ChangeName, remote: &str, ours: ObjectId) -> bool {
    let name = lease_ref(change);
    let args = [
        "push".to_owned(),
        "--porcelain".to_owned(),
        format!("--force-with-lease={name}:{ours}"),
        "--end-of-options".to_owned(),
        remote.to_owned(),
        format!(":{name}"),
    ];
    matches!(push(repo, change, &args), Ok(true))
}

/// Run `git push` with `args`; whether the remote took it. A failure to
/// run git at all is an error.
fn push(repo: &Repo, change: &ChangeName, args: &[String]) -> Result<bool, RemoteError> {
    let spec = Spec {
        program: "git".into(),
        args: args.to_vec(),
        env: crate::run::ending::handoff::quiet_git_env(repo),
        cwd: repo.workdir().to_owned(),
        ..Spec::default()
    };
    let (exit, _, stderr) =
        process::run_split_blocking(&spec, Limits::timeout(Duration::from_secs(600)), 16 * 1024)
            .map_err(|source| RemoteError::Git {
                change: change.to_string(),
                source,
            })?;
    if exit.is_success() {
        return Ok(true);
    }
    let stderr = stderr.text();
    if stderr.contains("stale info") || stderr.contains("rejected") {
        return Ok(false);
    }
    Err(RemoteError::Fetch {
        remote: args.get(4).cloned().unwrap_or_default(),
        change: change.to_string(),
        detail: stderr.lines().last().unwrap_or_default().to_owned(),
    })
}
