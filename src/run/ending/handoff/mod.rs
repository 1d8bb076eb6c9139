//! The hand-off: a kept run's branch pushed to a remote, and a pull request
//! opened for it (or the one already open updated), its description written
//! from the run's record. It comes after keep, and only adds to it: when the
//! push fails, the repository is exactly as `finish --keep` leaves it; when
//! the pull request cannot be opened, the branch is pushed and the
//! description is kept in `.git/ralph/<change>/pull-request.md` with the
//! command that opens it by hand.
//!
//! `push` runs `git push` (gitoxide cannot push), `forge` runs `gh` or
//! `glab`, both through the process supervisor; `body` writes the title and
//! description. Nothing here prints, and nothing here reads git config:
//! what the hand-off is asked to do comes from `settings`.

mod body;
mod error;
mod forge;
mod push;

pub use crate::settings::{Forge, Handoff};
pub use error::{HandoffError, NotOpened, ReviewFailure};
pub use push::Pushed;
pub use push::quiet_env as quiet_git_env;

use super::outcome::{Finished, Notice, Onlooker};
use crate::git::{ChangeName, HeadState, Repo};
use crate::settings::Configured;
use crate::state::{RunDir, RunState, write_atomically};

/// What `finish --push` or `--pr` did.
#[derive(Debug, Clone, PartialEq)]
pub struct HandedOff {
    /// Kept now, or kept before.
    pub kept: Finished,
    pub pushed: Pushed,
    /// With `--pr`.
    pub review: Option<Review>,
}

/// The pull request, opened or updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub url: String,
    /// False: one was already open for the branch; its description was
    /// rewritten instead of opening a second one.
    pub created: bool,
    pub forge: Forge,
    /// It is a draft now.
    pub draft: bool,
    /// It was open and ready, and `--draft` made it a draft.
    pub made_draft: bool,
}

/// Where a hand-off pushes: the remote's name and URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub remote: String,
    pub url: String,
}

impl Handoff {
    /// `git ralph finish <change> --pr --draft`: the hand-off as a command,
    /// to run again once what stopped it is fixed.
    pub fn command(&self, change: &ChangeName) -> String {
        let mut command = format!("git ralph finish {change}");
        match &self.review {
            None => command.push_str(" --push"),
            Some(review) => {
                command.push_str(" --pr");
                if review.draft {
                    command.push_str(" --draft");
                }
            }
        }
        if let Some(remote) = &self.remote {
            command.push_str(&format!(" --remote {remote}"));
        }
        command
    }

    /// The remote this hand-off pushes `change`'s branch to, for a run
    /// that started from `original`: refused when the repository has no
    /// such remote, before anything is kept, removed or recorded.
    pub fn destination(
        &self,
        repo: &Repo,
        change: &ChangeName,
        original: &HeadState,
    ) -> Result<Destination, HandoffError> {
        let remote = push::remote_for(repo, original, self.remote.as_deref());
        let Some(url) = push::remote_url(repo, &remote) else {
            return Err(HandoffError::NoRemote {
                remote,
                branch: change.branch_short(),
                again: self.command(change),
            });
        };
        // The branch, or the commit a run not yet begun starts from.
        let tip = repo
            .resolve_ref(&change.branch_ref())
            .map_err(crate::git::OpError::from)?
            .or_else(|| original.commit());
        if let Some(tip) = tip
            && let Some(cut) = repo
                .shallow_cuts_not_held(tip, &format!("refs/remotes/{remote}/"))
                .map_err(crate::git::OpError::from)?
                .first()
        {
            return Err(HandoffError::ShallowClone {
                remote,
                branch: change.branch_short(),
                cut: cut.to_string(),
                again: self.command(change),
            });
        }
        Ok(Destination { remote, url })
    }
}

/// Push the run's branch with its record and refs to the remote the
/// hand-off names (`ralph.remote`, else the upstream remote of the branch
/// the run started from, else `origin`): what `--push-each` does after
/// each checkpoint, so that another machine can take the run up.
pub fn push_run(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    original: &HeadState,
) -> Result<Pushed, HandoffError> {
    let handoff = Configured::of(repo)
        .handoff(false)
        .map_err(|err| HandoffError::Config(Box::new(err)))?;
    let Destination { remote, .. } = handoff.destination(repo, change, original)?;
    let again = format!("git ralph start {change} --push-each");
    push_with_record(repo, change, run_dir, &remote, &again)
}

/// A remote named on the command line, and the command to run again
/// after a failed push to it.
pub struct PushTo<'a> {
    pub remote: &'a str,
    pub again: &'a str,
}

/// Push the run's branch with its record and refs where `to` says: what
/// `start --story ID --push` and `merge --push` do once their run ends.
pub fn push_run_to(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    to: PushTo<'_>,
) -> Result<Pushed, HandoffError> {
    let PushTo { remote, again } = to;
    if push::remote_url(repo, remote).is_none() && !remote.contains(['/', ':']) {
        return Err(HandoffError::NoRemote {
            remote: remote.to_owned(),
            branch: change.branch_short(),
            again: again.to_owned(),
        });
    }
    push_with_record(repo, change, run_dir, remote, again)
}

/// Push the branch with the run's record and refs, in one atomic push; a
/// push that fails leaves the record's ref where it was.
fn push_with_record(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    remote: &str,
    again: &str,
) -> Result<Pushed, HandoffError> {
    let outgoing = crate::remote::outgoing(repo, change, run_dir)
        .map_err(|err| HandoffError::Record(Box::new(err)))?;
    let pushed = push::push(repo, change, remote, &outgoing.refspecs, again);
    if pushed.is_err() {
        outgoing
            .put_back(repo, change)
            .map_err(|err| HandoffError::Record(Box::new(err)))?;
    }
    pushed
}

/// Push the kept run's branch to `to`, then open or update its pull
/// request. `repo` is any worktree of the repository: the branch is pushed
/// as it stands.
pub(super) fn hand_off(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    state: &RunState,
    handoff: &Handoff,
    to: Destination,
    onlooker: &mut dyn Onlooker,
) -> Result<(Pushed, Option<Review>), HandoffError> {
    let Destination { remote, url } = to;
    onlooker.notice(Notice::Pushing {
        branch: change.branch_short(),
        remote: remote.clone(),
    });
    let again = handoff.command(change);
    let pushed = push_with_record(repo, change, run_dir, &remote, &again)?;
    let Some(review) = &handoff.review else {
        return Ok((pushed, None));
    };
    let base = review
        .base
        .clone()
        .or_else(|| starting_branch(change, state));
    let title = body::title(change.as_str());
    let text = body::body(state, base.as_deref());
    let body_file = run_dir.dir.join("pull-request.md");
    write_atomically(&body_file, text.as_bytes()).map_err(|source| HandoffError::Write {
        what: "pull request's description",
        path: body_file.clone(),
        source,
    })?;
    let forge = handoff.forge.unwrap_or_else(|| Forge::of(Some(&url)));
    let request = forge::Request {
        forge,
        url: Some(&url),
        branch: &pushed.branch,
        base: base.as_deref(),
        title: &title,
        body: &text,
        draft: review.draft,
        cwd: repo.workdir(),
    };
    match forge::open_or_update(&request) {
        Ok(opened) => Ok((
            pushed,
            Some(Review {
                url: opened.url,
                created: opened.created,
                forge,
                draft: opened.draft,
                made_draft: opened.made_draft,
            }),
        )),
        Err(why) => Err(HandoffError::Review(Box::new(NotOpened {
            branch: pushed.branch.clone(),
            remote: pushed.remote.clone(),
            again,
            review: forge.review_name(),
            by_hand: forge::by_hand(&request, &body_file),
            why,
        }))),
    }
}

/// The branch the run started from, when it was one other than the run's.
fn starting_branch(change: &ChangeName, state: &RunState) -> Option<String> {
    match &state.original().head {
        HeadState::Branch { name, .. } | HeadState::Unborn { name }
            if *name != change.branch_ref() =>
        {
            Some(state.original().head.reflog_name())
        }
        _ => None,
    }
}
