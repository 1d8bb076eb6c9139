//! `start <change> --from <remote>`: the run as a remote holds it, taken
//! up here. The remote's branch and record are fetched aside and compared
//! with what is here, and only then does anything of the run move: the
//! refs, HEAD onto the branch with the worktree made its tree, and the
//! run's files. A record here that went on apart from the remote's is
//! refused, naming both tips and what differs; so is a record a later
//! release wrote, and one another machine holds the lease of (see
//! [`lease`]). Either way the refs fetched aside are removed again.

use super::error::RemoteError;
use super::fetch;
use super::layout;
use super::lease;
use super::record::{self, Record};
use crate::git::{ChangeName, HeadState, ObjectId, Repo};
use crate::state::{RunDir, RunState, write_atomically};

/// What a take-up did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakenUp {
    /// The remote's run is here now: its record, at its branch's tip.
    Taken {
        remote: String,
        record: ObjectId,
        tip: ObjectId,
        done: usize,
        total: usize,
    },
    /// What is here is the remote's record or goes on from it: nothing
    /// moved, and the run resumes from what is here.
    AlreadyHere { remote: String, record: ObjectId },
}

/// Take `change` up from `remote`. Returns what it did, and the lease
/// this clone now holds on the remote (see [`lease::release`]).
pub fn take_up(
    repo: &mut Repo,
    change: &ChangeName,
    remote: &str,
) -> Result<(TakenUp, ObjectId), RemoteError> {
    fetch::check_remote(repo, remote, change.as_str())?;
    fetch::fetch(repo, change, remote)?;
    let taken = decide(repo, change, remote).and_then(|(plan, seen)| {
        let lease = lease::take(repo, change, remote, seen, crate::state::now())?;
        match apply(repo, change, remote, plan) {
            Ok(taken) => Ok((taken, lease)),
            Err(err) => {
                // Nothing was taken up: the lease goes back at once.
                lease::release(repo, change, remote, lease);
                Err(err)
            }
        }
    });
    let cleared = fetch::clear(repo, change);
    let taken = taken?;
    cleared?;
    Ok(taken)
}

/// What the comparison decided.
enum Plan {
    Take {
        record: Box<Record>,
        tip: ObjectId,
        /// Every run ref fetched, by its name under the run's namespace.
        refs: Vec<(String, ObjectId)>,
    },
    Keep(ObjectId),
}

/// The plan, and the remote's lease as it was fetched.
fn decide(
    repo: &Repo,
    change: &ChangeName,
    remote: &str,
) -> Result<(Plan, Option<ObjectId>), RemoteError> {
    let incoming = layout::incoming(change.as_str());
    let fetched = fetch::fetched(repo, change)?;
    let find = |name: &str| {
        fetched
            .iter()
            .find(|(n, _)| *n == format!("{incoming}/{name}"))
            .map(|(_, id)| *id)
    };
    let no_record = || RemoteError::NoRecord {
        remote: remote.to_owned(),
        change: change.to_string(),
    };
    let seen_lease = find("run/lease");
    let tip = find("branch").ok_or_else(no_record)?;
    let theirs = find("run/record").ok_or_else(no_record)?;
    let record = record::read(repo, change, theirs)?;
    if record.state.worktree().is_some() || record.state.parallel().is_some() {
        return Err(RemoteError::Beside {
            change: change.to_string(),
        });
    }
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    let local = run_dir.exists().then(|| run_dir.load()).transpose()?;
    let ours = repo.resolve_ref(&layout::record_ref(&change.ref_namespace()))?;
    let branch_here = repo.resolve_ref(&change.branch_ref())?;
    let apart = |why: String| {
        diverged(
            change,
            remote,
            ours,
            theirs,
            local.as_ref(),
            &record.state,
            why,
        )
    };
    if let Some(ours) = ours {
        if repo.descends_from(ours, theirs)? {
            return Ok((Plan::Keep(ours), seen_lease));
        }
        if !repo.descends_from(theirs, ours)? {
            return Err(apart("each went on from the last record they share".into()));
        }
        // The remote went on from our record: ours must not have gone on
        // since, on the branch.
        let recorded = record::read(repo, change, ours)?.branch_tip();
        if branch_here.is_some() && branch_here != recorded {
            return Err(apart(format!(
                "{} moved on here since the record",
                change.branch_short()
            )));
        }
    } else if local.is_some() {
        return Err(apart("the run here was never recorded".into()));
    } else if let Some(here) = branch_here
        && !repo.descends_from(tip, here)?
    {
        return Err(apart(format!(
            "{} here is not in the remote's history",
            change.branch_short()
        )));
    }
    let plan = Plan::Take {
        record: Box::new(record),
        tip,
        refs: run_refs(change, &fetched),
    };
    Ok((plan, seen_lease))
}

/// The run's refs fetched aside, named where they go: under the run's
/// namespace, the lease aside (it stays on the remote).
fn run_refs(change: &ChangeName, fetched: &[(String, ObjectId)]) -> Vec<(String, ObjectId)> {
    let from = format!("{}/run/", layout::incoming(change.as_str()));
    let namespace = change.ref_namespace();
    fetched
        .iter()
        .filter_map(|(name, id)| {
            let rest = name.strip_prefix(&from)?;
            (rest != "lease").then(|| (format!("{namespace}/{rest}"), *id))
        })
        .collect()
}

fn apply(
    repo: &mut Repo,
    change: &ChangeName,
    remote: &str,
    plan: Plan,
) -> Result<TakenUp, RemoteError> {
    let (record, tip, mut refs) = match plan {
        Plan::Keep(record) => {
            return Ok(TakenUp::AlreadyHere {
                remote: remote.to_owned(),
                record,
            });
        }
        Plan::Take { record, tip, refs } => (record, tip, refs),
    };
    let branch = change.branch_ref();
    let head = repo.head()?;
    let on_branch = matches!(&head, HeadState::Branch { name, .. } if *name == branch);
    let clean = (on_branch && head.commit() == Some(tip)) || repo.is_clean()?;
    if !clean {
        return Err(RemoteError::Dirty {
            change: change.to_string(),
            branch: change.branch_short(),
        });
    }
    refs.push((branch.clone(), tip));
    repo.set_refs(&refs, &format!("ralph: take the run up from {remote}"))?;
    if on_branch {
        repo.revert_to(tip)?;
    } else {
        repo.switch_to(&branch, tip)?;
    }
    write_files(repo, change, &record)?;
    let state = &record.state;
    Ok(TakenUp::Taken {
        remote: remote.to_owned(),
        record: record.commit,
        tip,
        done: state.stories().iter().filter(|s| s.done).count(),
        total: state.stories().len(),
    })
}

/// The record's files into `<git-dir>/ralph/<change>/`, its state as no
/// loop of this machine's drives it.
fn write_files(repo: &Repo, change: &ChangeName, record: &Record) -> Result<(), RemoteError> {
    let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
    std::fs::create_dir_all(&run_dir.dir).map_err(|source| RemoteError::Io {
        what: run_dir.dir.display().to_string(),
        source,
    })?;
    for (name, bytes) in &record.files {
        if name == "state.json" || !layout::FILES.contains(&name.as_str()) {
            continue;
        }
        let path = run_dir.dir.join(name);
        write_atomically(&path, bytes).map_err(|source| RemoteError::Io {
            what: path.display().to_string(),
            source,
        })?;
    }
    let mut state = record.state.clone();
    state.taken_up();
    run_dir.save(&state)?;
    Ok(())
}

/// The refusal of records gone apart: both tips, and what differs.
fn diverged(
    change: &ChangeName,
    remote: &str,
    ours: Option<ObjectId>,
    theirs: ObjectId,
    local: Option<&RunState>,
    remote_state: &RunState,
    why: String,
) -> RemoteError {
    let short = |id: ObjectId| id.to_hex_with_len(12).to_string();
    let mut differs = vec![why];
    if let Some(local) = local {
        differs.extend(story_differences(local, remote_state));
    }
    RemoteError::Diverged {
        change: change.to_string(),
        remote: remote.to_owned(),
        local: ours.map_or_else(|| "no record".to_owned(), short),
        theirs: short(theirs),
        differs: differs.join("; "),
    }
}

/// Each story the two records tell apart: done on one side only, or with
/// a different number of attempts.
fn story_differences(here: &RunState, there: &RunState) -> Vec<String> {
    let mut out = Vec::new();
    for story in here.stories() {
        let other = there.stories().iter().find(|s| s.id == story.id);
        let (done, attempts) = other.map_or((false, 0), |s| (s.done, s.attempts.len()));
        if story.done != done || story.attempts.len() != attempts {
            let said = |done: bool, n: usize| {
                format!(
                    "{} in {n} attempt(s)",
                    if done { "done" } else { "not done" }
                )
            };
            out.push(format!(
                "story {}: {} here, {} there",
                story.id,
                said(story.done, story.attempts.len()),
                said(done, attempts)
            ));
        }
    }
    out
}
