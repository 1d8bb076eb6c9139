//! The dependencies between beads issues, read as `bd ready` reads them,
//! and the order in which a run takes the issues.
//!
//! - `blocks` makes an issue wait for the other one; so does
//!   `conditional-blocks` (the issue runs only once the other has ended);
//! - `parent-child` is stored on the child: the parent (an epic) waits for
//!   its children;
//! - `waits-for` makes the issue wait for the other's children;
//! - beads' other types (`related`, `discovered-from`, `tracks`, …) link
//!   issues without holding work back.
//!
//! A dependency on a closed issue, or on one the file does not hold, is
//! met; an issue that waits on one the run will not work on (deferred,
//! say) is left out, and so is anything waiting on it. A dependency of a
//! type beads does not define is not waited for, with a warning. The run
//! takes, one after the other, the issue with the lowest priority number
//! (then the older, then the earlier line) among those that wait on
//! nothing left to do: blockers before what they block, children before
//! their epic.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use super::Bead;
use super::instant::instant;
use crate::stories::{Warning, WarningKind};

/// Dependency types that hold work back.
const BLOCKING: &[&str] = &["blocks", "conditional-blocks"];
/// Dependency types beads defines that link issues without holding work
/// back (beads' `internal/types`, `DependencyType`).
const LINKS: &[&str] = &[
    "related",
    "discovered-from",
    "replies-to",
    "relates-to",
    "duplicates",
    "supersedes",
    "authored-by",
    "assigned-to",
    "approved-by",
    "attests",
    "tracks",
    "until",
    "caused-by",
    "validates",
    "delegated-from",
];

/// Which issues of the run wait for which, and which are left out.
pub(super) struct Graph<'a> {
    waits: HashMap<&'a str, Vec<&'a str>>,
    /// Issues that are work but wait on one the run will not work on,
    /// with why; by id.
    pub left_out: BTreeMap<&'a str, String>,
}

impl<'a> Graph<'a> {
    /// The dependencies of the issues that are work, with a warning for
    /// each one on an issue the file does not hold and each of a type
    /// beads does not define.
    pub fn of(
        beads: &'a [Bead],
        by_id: &HashMap<&'a str, &'a Bead>,
        warnings: &mut Vec<Warning>,
    ) -> Self {
        let mut graph = Graph {
            waits: HashMap::new(),
            left_out: BTreeMap::new(),
        };
        let children = children(beads, by_id);
        for bead in beads.iter().filter(|bead| bead.is_work()) {
            graph.waits.entry(&bead.id).or_default();
            for dependency in &bead.dependencies {
                let other = dependency.depends_on_id.as_str();
                match dependency.kind.as_deref().unwrap_or("blocks") {
                    kind if BLOCKING.contains(&kind) => graph.block(bead, other, by_id, warnings),
                    // The child is this issue: its parent waits for it.
                    "parent-child" => {
                        if let Some(parent) = by_id.get(other).filter(|parent| parent.is_work()) {
                            graph.waits.entry(&parent.id).or_default().push(&bead.id);
                        }
                    }
                    "waits-for" => {
                        let kids = children.get(other).into_iter().flatten();
                        graph.waits.entry(&bead.id).or_default().extend(kids);
                    }
                    kind if LINKS.contains(&kind) => {}
                    kind => warnings.push(unknown_type(&bead.id, other, kind)),
                }
            }
        }
        graph.leave_out_what_waits_on_left_out();
        graph
    }

    /// `bead` waits for `other`, as far as the run goes.
    fn block(
        &mut self,
        bead: &'a Bead,
        other: &str,
        by_id: &HashMap<&'a str, &'a Bead>,
        warnings: &mut Vec<Warning>,
    ) {
        match by_id.get(other) {
            None => warnings.push(outside(&bead.id, other)),
            Some(other) if other.is_done() => {}
            Some(other) if other.is_work() => {
                self.waits.entry(&bead.id).or_default().push(&other.id)
            }
            Some(other) => {
                self.left_out.insert(
                    &bead.id,
                    format!("it waits on {} ({})", other.id, other.status()),
                );
            }
        }
    }

    /// Anything that waits on an issue left out is left out too.
    fn leave_out_what_waits_on_left_out(&mut self) {
        loop {
            let more: Vec<(&'a str, String)> = self
                .waits
                .iter()
                .filter(|(id, _)| !self.left_out.contains_key(*id))
                .filter_map(|(id, on)| {
                    on.iter()
                        .find(|other| self.left_out.contains_key(*other))
                        .map(|other| (*id, format!("it waits on {other}, which is left out")))
                })
                .collect();
            if more.is_empty() {
                return;
            }
            self.left_out.extend(more);
        }
    }

    /// The issues `id` waits for.
    pub fn waits_of(&self, id: &str) -> &[&'a str] {
        self.waits.get(id).map_or(&[], Vec::as_slice)
    }

    /// The issues that are the run's work, in the order the run takes
    /// them: Kahn's algorithm, the ready issues in a priority queue keyed
    /// by (priority, creation instant, line), so a tracker of n issues and
    /// d dependencies is ordered in O((n + d) log n). A cycle (refused
    /// later, with its members named) keeps its members in that key's
    /// order at the end.
    pub fn order_of_work(&self, beads: &'a [Bead]) -> Vec<&'a Bead> {
        let work: Vec<&Bead> = beads
            .iter()
            .filter(|bead| bead.is_work() && !self.left_out.contains_key(bead.id.as_str()))
            .collect();
        let at: HashMap<&str, usize> = work
            .iter()
            .enumerate()
            .map(|(index, bead)| (bead.id.as_str(), index))
            .collect();
        let keys: Vec<Key> = work
            .iter()
            .enumerate()
            .map(|(index, bead)| {
                let created = bead.created_at.as_deref();
                (bead.priority(), created.map(|t| instant(t).ok_or(t)), index)
            })
            .collect();
        let mut waiting = vec![0usize; work.len()];
        let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); work.len()];
        for (index, bead) in work.iter().enumerate() {
            let mut on: Vec<usize> = self
                .waits_of(&bead.id)
                .iter()
                .filter_map(|other| at.get(other).copied())
                .filter(|other| *other != index)
                .collect();
            on.sort_unstable();
            on.dedup();
            waiting[index] = on.len();
            for other in on {
                unblocks[other].push(index);
            }
        }
        let mut ready: BinaryHeap<Reverse<&Key>> = keys
            .iter()
            .filter(|key| waiting[key.2] == 0)
            .map(Reverse)
            .collect();
        let mut order: Vec<&Bead> = Vec::with_capacity(work.len());
        let mut taken = vec![false; work.len()];
        while let Some(Reverse(key)) = ready.pop() {
            let index = key.2;
            taken[index] = true;
            order.push(work[index]);
            for next in &unblocks[index] {
                waiting[*next] -= 1;
                if waiting[*next] == 0 {
                    ready.push(Reverse(&keys[*next]));
                }
            }
        }
        if order.len() < work.len() {
            let mut rest: Vec<&Key> = keys.iter().filter(|key| !taken[key.2]).collect();
            rest.sort();
            order.extend(rest.into_iter().map(|key| work[key.2]));
        }
        order
    }
}

/// What orders the ready issues: the priority, then the creation time (as
/// an instant; a time that cannot be read sorts after those that can, by
/// its text; none at all sorts first), then the line.
type Key<'t> = (i64, Option<Result<(i64, u32), &'t str>>, usize);

/// The children of each issue that are work, by the parent's id.
fn children<'a>(
    beads: &'a [Bead],
    by_id: &HashMap<&'a str, &'a Bead>,
) -> HashMap<&'a str, Vec<&'a str>> {
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for bead in beads.iter().filter(|bead| bead.is_work()) {
        for dependency in &bead.dependencies {
            if dependency.kind.as_deref() == Some("parent-child")
                && let Some((parent, _)) = by_id.get_key_value(dependency.depends_on_id.as_str())
            {
                children.entry(parent).or_default().push(&bead.id);
            }
        }
    }
    children
}

fn outside(id: &str, other: &str) -> Warning {
    Warning {
        line: None,
        kind: WarningKind::OutsideDependency,
        message: format!(
            "{id} depends on {other}, which the file does not hold; it is taken as done"
        ),
    }
}

fn unknown_type(id: &str, other: &str, kind: &str) -> Warning {
    Warning {
        line: None,
        kind: WarningKind::OutsideDependency,
        message: format!(
            "{id} depends on {other} as `{kind}`, a dependency type beads does not define; the run does not wait for it"
        ),
    }
}
