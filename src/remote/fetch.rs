//! `git fetch` of one change: its branch and every ref of its run, into a
//! namespace of their own ([`super::layout::incoming`]) where they are
//! compared with what is here before anything of the run moves. gitoxide
//! is built here without a network client, so this runs the git binary as
//! the push does, through the process supervisor, never prompting.

use std::time::Duration;

use super::error::RemoteError;
use super::layout;
use crate::git::{ChangeName, Repo};
use crate::process::{self, Limits, Spec};

/// A fetch that has not ended in ten minutes is not going to.
const FETCH_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of git's output is kept for the error.
const OUTPUT_LIMIT: usize = 16 * 1024;

/// A remote given by name must be one this clone has; `change` is what
/// the refusal names.
pub fn check_remote(repo: &Repo, remote: &str, change: &str) -> Result<(), RemoteError> {
    if crate::settings::Configured::of(repo).can_fetch_from(remote) {
        return Ok(());
    }
    Err(RemoteError::NoRemote {
        remote: remote.to_owned(),
        change: change.to_owned(),
    })
}

/// Fetch `change`'s branch to `<incoming>/branch` and its run's refs
/// (history aside) to `<incoming>/run/…`, replacing whatever an earlier
/// fetch left there. Neither FETCH_HEAD nor a remote-tracking ref is
/// written.
pub fn fetch(repo: &Repo, change: &ChangeName, remote: &str) -> Result<(), RemoteError> {
    let incoming = layout::incoming(change.as_str());
    let namespace = change.ref_namespace();
    let refspecs = [
        format!("+{}:{incoming}/branch", change.branch_ref()),
        format!("+{namespace}/*:{incoming}/run/*"),
        format!("^{namespace}/history/*"),
    ];
    fetch_refspecs(repo, change, remote, &refspecs)
}

/// `git fetch` of `refspecs` from `remote`, on behalf of `change`, with
/// neither FETCH_HEAD nor a remote-tracking ref written.
pub(super) fn fetch_refspecs(
    repo: &Repo,
    change: &ChangeName,
    remote: &str,
    refspecs: &[String],
) -> Result<(), RemoteError> {
    let mut args: Vec<String> = [
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        // No remote-tracking ref is updated on the side.
        "--refmap=",
        "--no-auto-gc",
        "--end-of-options",
        remote,
    ]
    .map(String::from)
    .to_vec();
    args.extend(refspecs.iter().cloned());
    let (exit, _stdout, stderr) = run_git(repo, change, args)?;
    if exit.is_success() {
        return Ok(());
    }
    let stderr = stderr.text();
    // A remote without the branch: nothing of the run is there.
    if stderr.contains("couldn't find remote ref") {
        return Err(RemoteError::NoRecord {
            remote: remote.to_owned(),
            change: change.to_string(),
        });
    }
    Err(failed(change, remote, &stderr, exit))
}

/// `git <args>` in `repo`, through the one supervisor, quiet and never
/// prompting: its exit, standard output and standard error.
fn run_git(
    repo: &Repo,
    change: &ChangeName,
    args: Vec<String>,
) -> Result<(process::ExitStatusKind, process::Tail, process::Tail), RemoteError> {
    let spec = Spec {
        program: "git".into(),
        args,
        env: crate::run::ending::handoff::quiet_git_env(repo),
        cwd: repo.workdir().to_owned(),
        ..Spec::default()
    };
    process::run_split_blocking(&spec, Limits::timeout(FETCH_TIMEOUT), OUTPUT_LIMIT).map_err(
        |source| RemoteError::Git {
            change: change.to_string(),
            source,
        },
    )
}

/// A git that talked to `remote` and failed, with its last words.
fn failed(
    change: &ChangeName,
    remote: &str,
    stderr: &str,
    exit: impl std::fmt::Display,
) -> RemoteError {
    let detail = stderr
        .lines()
        .map(|line| line.trim().trim_start_matches("fatal: ").trim())
        .rfind(|line| !line.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("git {exit}"));
    RemoteError::Fetch {
        remote: remote.to_owned(),
        change: change.to_string(),
        detail,
    }
}

/// The refs among `names` that `remote` holds, with where they point:
/// `git ls-remote`, which writes nothing here.
pub(super) fn remote_holds(
    repo: &Repo,
    change: &ChangeName,
    remote: &str,
    names: &[String],
) -> Result<Vec<(String, String)>, RemoteError> {
    let mut args: Vec<String> = ["ls-remote", "--end-of-options", remote]
        .map(String::from)
        .to_vec();
    args.extend(names.iter().cloned());
    let (exit, stdout, stderr) = run_git(repo, change, args)?;
    if !exit.is_success() {
        return Err(failed(change, remote, &stderr.text(), exit));
    }
    Ok(stdout
        .text()
        .lines()
        .filter_map(|line| {
            let (id, name) = line.split_once('\t')?;
            names
                .contains(&name.to_owned())
                .then(|| (name.to_owned(), id.to_owned()))
        })
        .collect())
}

/// What the fetch brought, by name under the incoming namespace.
pub fn fetched(
    repo: &Repo,
    change: &ChangeName,
) -> Result<Vec<(String, crate::git::ObjectId)>, RemoteError> {
    Ok(repo.refs_under(&format!("{}/", layout::incoming(change.as_str())))?)
}

/// Remove what the fetch brought.
pub fn clear(repo: &Repo, change: &ChangeName) -> Result<(), RemoteError> {
    for (name, _) in fetched(repo, change)? {
        repo.drop_ref(&name)?;
    }
    Ok(())
}
