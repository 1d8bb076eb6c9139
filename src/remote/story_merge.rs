//! What `git ralph merge <change> --from <remote>` brings from the remote
//! before anything is merged: the change's run, taken up as `start --from`
//! takes it up (when a machine pushed one), and every story's branch
//! `ralph/<change>.story-<ID>` with its record, fetched aside and read.
//! Only a story its own run recorded done is merged; the others are named.

use super::error::RemoteError;
use super::fetch;
use super::layout;
use super::record;
use crate::git::{ChangeName, ObjectId, Repo, ref_key};
use crate::run::story_merge::StoryBranch;

/// What the remote holds of a change's stories run one per machine.
pub struct Gathered {
    /// The change's run as the remote had it, taken up here, and the lease
    /// this clone now holds on it.
    pub taken: Option<(super::TakenUp, ObjectId)>,
    /// The stories done on their own branches.
    pub done: Vec<StoryBranch>,
    /// The stories whose branch is there but whose run did not finish
    /// them.
    pub unfinished: Vec<String>,
}

/// Take the change's run up from `remote` (if it holds one) and fetch its
/// stories' branches and records.
pub fn gather(repo: &mut Repo, change: &ChangeName, remote: &str) -> Result<Gathered, RemoteError> {
    let taken = match super::take_up(repo, change, remote) {
        Ok(taken) => Some(taken),
        Err(RemoteError::NoRecord { .. }) => None,
        Err(err) => return Err(err),
    };
    let stories = fetch_stories(repo, change, remote);
    let cleared = fetch::clear(repo, change);
    let stories = match (stories, &taken) {
        (Ok(stories), _) => stories,
        (Err(err), Some((_, lease))) => {
            super::lease::release(repo, change, remote, *lease);
            return Err(err);
        }
        (Err(err), None) => return Err(err),
    };
    cleared?;
    let (done, unfinished) = stories;
    Ok(Gathered {
        taken,
        done,
        unfinished,
    })
}

/// The stories' branches and records, fetched aside and read.
fn fetch_stories(
    repo: &Repo,
    change: &ChangeName,
    remote: &str,
) -> Result<(Vec<StoryBranch>, Vec<String>), RemoteError> {
    let incoming = layout::incoming(change.as_str());
    let branches = format!("{}.story-", change.branch_ref());
    let records = format!("{}.story-", change.ref_namespace());
    let refspecs = [
        format!("+{branches}*:{incoming}/story-branches/*"),
        format!("+{records}*/record:{incoming}/story-records/*"),
    ];
    fetch::fetch_refspecs(repo, change, remote, &refspecs)?;
    let fetched = fetch::fetched(repo, change)?;
    let (mut done, mut unfinished) = (Vec::new(), Vec::new());
    let tips = fetched.iter().filter_map(|(name, id)| {
        let key = name.strip_prefix(&format!("{incoming}/story-branches/"))?;
        Some((key.to_owned(), *id))
    });
    for (key, tip) in tips {
        let Some(record_at) = fetched
            .iter()
            .find(|(name, _)| *name == format!("{incoming}/story-records/{key}"))
            .map(|(_, id)| *id)
        else {
            unfinished.push(key);
            continue;
        };
        let name = ChangeName::parse(&format!("{change}.story-{key}"))
            .map_err(|err| damaged(change, record_at, err.to_string()))?;
        let record = record::read(repo, &name, record_at)?;
        let Some(job) = record.state.settings().job.clone() else {
            return Err(damaged(change, record_at, "it is no story's record".into()));
        };
        if job.change != change.as_str() || ref_key(&job.story) != key {
            return Err(damaged(
                change,
                record_at,
                format!(
                    "it is the record of story {} of '{}'",
                    job.story, job.change
                ),
            ));
        }
        let story = record
            .state
            .stories()
            .iter()
            .find(|story| story.id == job.story)
            .cloned();
        if !story.as_ref().is_some_and(|story| story.done) {
            unfinished.push(job.story);
            continue;
        }
        done.push(StoryBranch {
            story: job.story,
            branch: name.branch_ref(),
            tip,
            base: record.state.initial_commit(),
            record: story,
            totals: record.state.totals().clone(),
        });
    }
    Ok((done, unfinished))
}

fn damaged(change: &ChangeName, commit: ObjectId, detail: String) -> RemoteError {
    RemoteError::Damaged {
        change: change.to_string(),
        commit: commit.to_string(),
        detail,
    }
}
