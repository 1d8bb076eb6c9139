//! Pushing `ralph/<change>` to a remote: the one operation for which
//! git-ralph runs the git binary, because gitoxide cannot push yet. It runs
//! through the process supervisor like every child, with no standard input
//! and every prompt turned off, so a missing credential is an error and
//! never a question nobody is there to answer.

use std::time::Duration;

use super::error::HandoffError;
use crate::git::{ChangeName, HeadState, ObjectId, Repo};
use crate::process::{self, ExitStatusKind, Limits, Spec};
use crate::settings::Configured;

/// A push that has not ended in ten minutes is not going to.
const PUSH_TIMEOUT: Duration = Duration::from_secs(600);
/// How much of git's output is kept for the error.
const OUTPUT_LIMIT: usize = 16 * 1024;

/// The branch as the remote now has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub remote: String,
    pub branch: String,
    pub commit: ObjectId,
}

/// The remote to push to: the one asked for, else the upstream remote of
/// the branch the run started from (`original`), else `origin`.
pub(super) fn remote_for(repo: &Repo, original: &HeadState, asked: Option<&str>) -> String {
    if let Some(remote) = asked {
        return remote.to_owned();
    }
    let upstream = match original {
        HeadState::Branch { .. } | HeadState::Unborn { .. } => {
            Configured::of(repo).upstream_remote(&original.reflog_name())
        }
        HeadState::Detached { .. } => None,
    };
    upstream.unwrap_or_else(|| "origin".to_owned())
}

/// The URL configured for `remote`, if it is a remote at all.
pub(super) fn remote_url(repo: &Repo, remote: &str) -> Option<String> {
    Configured::of(repo).remote_url(remote)
}

/// `git push <remote> ralph/<change>`: a plain push, so a remote branch
/// that holds commits this run does not is rejected, never overwritten.
/// `run_refs` (the run's record and refs, see [`crate::remote::outgoing`])
/// go in the same atomic push: all of them or none.
/// `remote` is one the repository has (see [`remote_url`]). The branch is
/// pushed as it stands, whichever worktree `repo` is and wherever its HEAD
/// is: a run kept beside the user leaves HEAD on the user's branch.
/// `again` is the command that was run, for the hints.
pub(super) fn push(
    repo: &Repo,
    change: &ChangeName,
    remote: &str,
    run_refs: &[String],
    again: &str,
) -> Result<Pushed, HandoffError> {
    let branch = change.branch_short();
    let commit = repo
        .resolve_ref(&change.branch_ref())
        .map_err(crate::git::OpError::from)?
        .ok_or_else(|| HandoffError::NoBranch {
            branch: branch.clone(),
            change: change.to_string(),
        })?;
    let refspec = format!("{0}:{0}", change.branch_ref());
    let mut args: Vec<String> = [
        "push",
        "--porcelain",
        "--atomic",
        "--end-of-options",
        remote,
    ]
    .map(String::from)
    .to_vec();
    args.push(refspec);
    args.extend(run_refs.iter().cloned());
    let spec = Spec {
        program: "git".into(),
        args,
        env: quiet_env(repo),
        cwd: repo.workdir().to_owned(),
        ..Spec::default()
    };
    let (exit, stdout, stderr) =
        process::run_split_blocking(&spec, Limits::timeout(PUSH_TIMEOUT), OUTPUT_LIMIT).map_err(
            |source| HandoffError::Git {
                branch: branch.clone(),
                source,
            },
        )?;
    if exit.is_success() {
        return Ok(Pushed {
            remote: remote.to_owned(),
            branch,
            commit,
        });
    }
    let (stdout, stderr) = (stdout.text(), stderr.text());
    let (remote, again) = (remote.to_owned(), again.to_owned());
    Err(match failure(exit, &stdout, &stderr) {
        Failure::Rejected(detail) => HandoffError::PushRejected {
            remote,
            branch,
            again,
            detail,
        },
        Failure::Credentials(detail) => HandoffError::PushCredentials {
            remote,
            branch,
            again,
            detail,
        },
        Failure::Other(detail) => HandoffError::PushFailed {
            remote,
            branch,
            again,
            detail,
        },
    })
}

/// The environment that keeps git from asking anything: no terminal
/// prompt, no credential manager window, ssh in batch mode (unless the
/// user chose an ssh command), and messages in English to be read.
pub fn quiet_env(repo: &Repo) -> Vec<(String, String)> {
    let mut env = vec![
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GCM_INTERACTIVE", "never"),
        ("LC_ALL", "C"),
    ];
    let own_ssh = std::env::var_os("GIT_SSH_COMMAND").is_some()
        || std::env::var_os("GIT_SSH").is_some()
        || Configured::of(repo).own_ssh_command();
    if !own_ssh {
        env.push(("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"));
    }
    env.into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

/// How a push failed, as git told it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    Rejected(String),
    Credentials(String),
    Other(String),
}

/// Messages of git, its remote helpers and ssh that mean "who are you?".
const CREDENTIAL_SIGNS: &[&str] = &[
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "authentication failed",
    "permission denied (publickey",
    "host key verification failed",
    "access denied",
    "invalid username or password",
];

fn failure(exit: ExitStatusKind, stdout: &str, stderr: &str) -> Failure {
    // `--porcelain`: a refused ref is `!<TAB>from:to<TAB>summary (reason)`.
    if let Some(summary) = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("!\t"))
        .find_map(|line| line.split('\t').nth(1))
    {
        let said: Vec<&str> = stderr
            .lines()
            .filter_map(|line| line.strip_prefix("remote: "))
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        let mut detail = summary.trim().to_owned();
        if !said.is_empty() {
            detail.push_str(&format!("; the remote said: {}", said.join(" ")));
        }
        return Failure::Rejected(process::tail_str(&detail, 600).to_owned());
    }
    let last = stderr
        .lines()
        .map(|line| line.trim().trim_start_matches("fatal: ").trim())
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>();
    let detail = match last.as_slice() {
        [] => format!("git {exit}"),
        lines => lines[lines.len().saturating_sub(2)..].join(" "),
    };
    let lower = stderr.to_ascii_lowercase();
    if CREDENTIAL_SIGNS.iter().any(|sign| lower.contains(sign)) {
        return Failure::Credentials(detail);
    }
    match exit {
        ExitStatusKind::TimedOut => Failure::Other(format!(
            "git push did not finish within {} s",
            PUSH_TIMEOUT.as_secs()
        )),
        _ => Failure::Other(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_ref_is_a_rejection_with_what_the_remote_said() {
        let stdout = "To /tmp/remote.git\n!\trefs/heads/ralph/x:refs/heads/ralph/x\t[rejected] (non-fast-forward)\nDone\n";
        assert_eq!(
            failure(
                ExitStatusKind::Exited(1),
                stdout,
                "error: failed to push some refs\n"
            ),
            Failure::Rejected("[rejected] (non-fast-forward)".into())
        );
        let stdout = "!\trefs/heads/ralph/x:refs/heads/ralph/x\t[remote rejected] (pre-receive hook declined)\n";
        let stderr = "remote: branch is frozen\nremote: \nerror: failed to push\n";
        assert_eq!(
            failure(ExitStatusKind::Exited(1), stdout, stderr),
            Failure::Rejected(
                "[remote rejected] (pre-receive hook declined); the remote said: branch is frozen"
                    .into()
            )
        );
    }

    #[test]
    fn a_prompt_that_was_not_allowed_is_missing_credentials() {
        let stderr =
            "fatal: could not read Username for 'https://example.com': terminal prompts disabled\n";
        assert!(matches!(
            failure(ExitStatusKind::Exited(128), "", stderr),
            Failure::Credentials(detail) if detail.starts_with("could not read Username")
        ));
        let stderr = "git@example.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n";
        assert!(matches!(
            failure(ExitStatusKind::Exited(128), "", stderr),
            Failure::Credentials(_)
        ));
    }

    #[test]
    fn anything_else_keeps_gits_last_words() {
        let stderr = "fatal: '/nowhere' does not appear to be a git repository\nfatal: Could not read from remote repository.\n";
        assert_eq!(
            failure(ExitStatusKind::Exited(128), "", stderr),
            Failure::Other(
                "'/nowhere' does not appear to be a git repository Could not read from remote repository."
                    .into()
            )
        );
        assert_eq!(
            failure(ExitStatusKind::Exited(1), "", ""),
            Failure::Other("git exited with code 1".into())
        );
    }
}
