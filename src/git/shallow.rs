//! A shallow clone holds its history only down to where the clone cut it
//! off. A remote accepts a push from it only when it already holds the
//! commits at those cuts (otherwise it is told "shallow update not
//! allowed"): whether a remote's tracking refs reach them is known here,
//! before anything is kept or pushed.

use std::collections::{BTreeSet, HashSet};

use super::error::{Context, GitFailure};
use super::ids::ObjectId;
use super::open::Repo;

impl Repo {
    /// The commits where the clone's history is cut off that `tip` reaches
    /// and no ref under `held` (a remote's tracking refs,
    /// `refs/remotes/<remote>/`) reaches: what a push of `tip` would have
    /// to send that the remote cannot take. Empty in a complete clone.
    pub fn shallow_cuts_not_held(
        &self,
        tip: ObjectId,
        held: &str,
    ) -> Result<Vec<ObjectId>, GitFailure> {
        let cuts: HashSet<ObjectId> = match self
            .repo
            .shallow_commits()
            .ctx(|| "could not read the shallow clone's cut-off commits".to_owned())?
        {
            Some(cuts) => cuts.iter().copied().collect(),
            None => return Ok(Vec::new()),
        };
        let tips: Vec<ObjectId> = self
            .refs_under(held)?
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        let held_cuts = self.cuts_met(tips, &cuts);
        let reached = self.cuts_met(vec![tip], &cuts);
        Ok(reached.difference(&held_cuts).copied().collect())
    }

    /// The cuts that the history of `tips` meets.
    fn cuts_met(&self, tips: Vec<ObjectId>, cuts: &HashSet<ObjectId>) -> BTreeSet<ObjectId> {
        let mut seen = HashSet::new();
        let mut met = BTreeSet::new();
        let mut next = tips;
        while let Some(id) = next.pop() {
            if !seen.insert(id) {
                continue;
            }
            if cuts.contains(&id) {
                met.insert(id);
                continue;
            }
            // A tracking ref may name a tag or a tree: only commits lead on.
            let Ok(object) = self.repo.find_object(id) else {
                continue;
            };
            let Ok(commit) = object.peel_to_commit() else {
                continue;
            };
            if commit.id != id {
                next.push(commit.id);
                continue;
            }
            next.extend(commit.parent_ids().map(|parent| parent.detach()));
        }
        met
    }
}
