//! `start <change> --story ID`: one story of a change on a machine of its
//! own (a CI job of a matrix), in a run named `<change>.story-<ID>`: its
//! branch `ralph/<change>.story-<ID>` begins at `ralph/<change>` as it is
//! (as the remote has it, with `--from`), its record goes under
//! `refs/ralph/<change>.story-<ID>/record`, and its lease under
//! `refs/ralph/<change>.story-<ID>/lease`, so that two machines are kept
//! off the same story and never off different ones. Everything is looked
//! at before anything moves: a story that is not the change's, one already
//! done there, one whose dependencies are not done there, a lease another
//! machine holds, a worktree with changes of its own: each is refused
//! with nothing written. A story whose run a machine already pushed is
//! taken up from its record, as `start --from` takes a run up.

use super::error::RemoteError;
use super::fetch;
use super::layout;
use super::lease;
use crate::git::{ChangeName, ObjectId, Repo, ref_key};
use crate::run::story_job::{StoryAt, story_at};
use crate::settings::Requested;
use crate::state::{RunDir, RunStatus};

/// One story's run: the change it works for, the story, and its own name.
#[derive(Debug, Clone)]
pub struct StoryJob {
    pub change: ChangeName,
    pub story: String,
    /// `<change>.story-<ID>`: its branch, refs and files are named by it.
    pub name: ChangeName,
}

impl StoryJob {
    /// The run of `change`'s story `story`.
    pub fn of(change: &ChangeName, story: &str) -> Result<StoryJob, RemoteError> {
        let unnamed = || RemoteError::StoryUnknown {
            change: change.to_string(),
            story: story.to_owned(),
            stories: Vec::new(),
        };
        if story.trim().is_empty() {
            return Err(unnamed());
        }
        let name = ChangeName::parse(&format!("{change}.story-{}", ref_key(story)))
            .map_err(|_| unnamed())?;
        Ok(StoryJob {
            change: change.clone(),
            story: story.to_owned(),
            name,
        })
    }
}

/// How the story's run was made ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// A new run of the story begins here, on top of `base`.
    Fresh { base: ObjectId },
    /// The story's run as a machine pushed it is here now, to go on with.
    TakenUp(super::TakenUp),
    /// A stopped run of the story is here already: it resumes.
    Resumes,
}

/// What the remote holds of a story's run, fetched aside.
struct Seen {
    /// `ralph/<change>` as the remote has it.
    base: Option<ObjectId>,
    /// The story's lease.
    lease: Option<ObjectId>,
    /// Whether a machine pushed the story's run already.
    record: bool,
}

/// Make `job` ready to run here: from `remote` when one is given (the
/// lease taken there, which the caller gives back with
/// [`lease::release`]). `req` is the command line, its `job` set.
pub fn prepare(
    repo: &mut Repo,
    job: &StoryJob,
    req: &Requested,
    remote: Option<&str>,
) -> Result<(Ready, Option<ObjectId>), RemoteError> {
    let Some(remote) = remote else {
        return Ok((prepare_local(repo, job, req)?, None));
    };
    super::fetch::check_remote(repo, remote, job.name.as_str())?;
    let seen = look(repo, job, remote);
    let ready = seen.and_then(|seen| {
        if seen.record {
            // A machine ran this story before: go on from its record.
            fetch::clear(repo, &job.name)?;
            let (taken, lease) = super::take_up(repo, &job.name, remote)?;
            return Ok((Ready::TakenUp(taken), Some(lease)));
        }
        let ready = prepare_here(repo, job, req, Some(&seen))?;
        let lease = lease::take(repo, &job.name, remote, seen.lease, crate::state::now())?;
        if let Ready::Fresh { base } = ready
            && let Err(err) = move_onto(repo, base)
        {
            lease::release(repo, &job.name, remote, lease);
            return Err(err);
        }
        Ok((ready, Some(lease)))
    });
    let cleared = fetch::clear(repo, &job.name);
    let ready = ready?;
    cleared?;
    Ok(ready)
}

/// What `remote` holds of the story's run and of `ralph/<change>`,
/// fetched aside under the story's incoming namespace.
fn look(repo: &Repo, job: &StoryJob, remote: &str) -> Result<Seen, RemoteError> {
    let base_ref = job.change.branch_ref();
    let lease_ref = lease::lease_ref(&job.name);
    let record_ref = layout::record_ref(&job.name.ref_namespace());
    let names = [base_ref.clone(), lease_ref.clone(), record_ref.clone()];
    let held = fetch::remote_holds(repo, &job.name, remote, &names)?;
    let holds = |name: &str| held.iter().any(|(n, _)| n == name);
    let incoming = layout::incoming(job.name.as_str());
    let mut refspecs = Vec::new();
    if holds(&base_ref) {
        refspecs.push(format!("+{base_ref}:{incoming}/base"));
    }
    if holds(&lease_ref) {
        refspecs.push(format!("+{lease_ref}:{incoming}/run/lease"));
    }
    if !refspecs.is_empty() {
        fetch::fetch_refspecs(repo, &job.name, remote, &refspecs)?;
    }
    let fetched = fetch::fetched(repo, &job.name)?;
    let find = |name: &str| {
        fetched
            .iter()
            .find(|(n, _)| *n == format!("{incoming}/{name}"))
            .map(|(_, id)| *id)
    };
    Ok(Seen {
        base: find("base"),
        lease: find("run/lease"),
        record: holds(&record_ref),
    })
}

/// Whether the story may begin here on top of `ralph/<change>` (the
/// remote's as `seen`, else this clone's, else HEAD), or a stopped run of
/// it resumes. Nothing is written.
fn prepare_here(
    repo: &Repo,
    job: &StoryJob,
    req: &Requested,
    seen: Option<&Seen>,
) -> Result<Ready, RemoteError> {
    let run_dir = RunDir::new(&repo.ralph_dir(), job.name.as_str());
    if run_dir.exists()
        && matches!(
            run_dir.load()?.status(),
            RunStatus::Running | RunStatus::Stopped
        )
    {
        return Ok(Ready::Resumes);
    }
    let head = repo.head()?.commit();
    let base = match seen.and_then(|seen| seen.base) {
        Some(base) => Some(base),
        None => repo.resolve_ref(&job.change.branch_ref())?,
    };
    let base = base.or(head).ok_or_else(|| RemoteError::StoryUnknown {
        change: job.change.to_string(),
        story: job.story.clone(),
        stories: Vec::new(),
    })?;
    let branch = job.change.branch_short();
    let at = story_at(repo, &job.name, req, &job.story, base)
        .map_err(|err| RemoteError::Run(Box::new(err)))?;
    match at {
        StoryAt::Ready => {}
        StoryAt::Unknown { stories } => {
            return Err(RemoteError::StoryUnknown {
                change: job.change.to_string(),
                story: job.story.clone(),
                stories,
            });
        }
        StoryAt::Done => {
            return Err(RemoteError::StoryDone {
                story: job.story.clone(),
                branch,
            });
        }
        StoryAt::Waits { missing } => {
            return Err(RemoteError::StoryWaits {
                change: job.change.to_string(),
                story: job.story.clone(),
                missing,
                branch,
            });
        }
        StoryAt::Unfit { what } => {
            return Err(RemoteError::StoryUnfit {
                story: job.story.clone(),
                what,
            });
        }
    }
    if head != Some(base) && !repo.is_clean()? {
        return Err(RemoteError::Dirty {
            change: job.name.to_string(),
            branch,
        });
    }
    Ok(Ready::Fresh { base })
}

/// HEAD onto `base`, detached, for the story's branch to begin there.
fn move_onto(repo: &mut Repo, base: ObjectId) -> Result<(), RemoteError> {
    if repo.head()?.commit() == Some(base) {
        return Ok(());
    }
    repo.detach_onto(base)?;
    Ok(())
}

/// Make `job` ready without a remote: on top of this clone's
/// `ralph/<change>`, else HEAD.
fn prepare_local(repo: &mut Repo, job: &StoryJob, req: &Requested) -> Result<Ready, RemoteError> {
    let ready = prepare_here(repo, job, req, None)?;
    if let Ready::Fresh { base } = ready {
        move_onto(repo, base)?;
    }
    Ok(ready)
}
