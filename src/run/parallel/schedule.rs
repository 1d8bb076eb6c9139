//! Which stories of a parallel run may start now: a pure decision from
//! the stories as the run's branch has them, what each builds on, and
//! what is already at work. A prd.json says what a story depends on; any
//! story may name what it comes `after` in `ralph.toml`; a checklist's or
//! OpenSpec change's stories build on the ones before them unless the
//! change says they are independent, because their groups usually do.

use std::collections::{BTreeMap, BTreeSet};

use crate::stories::{SourceKind, Story};

/// What a parallel run would do first, as `start --dry-run` shows it: the
/// stories that start at once, those ready that wait for a free place, and
/// every other open story with the stories it waits for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Schedule {
    /// How many stories run at once.
    pub width: usize,
    pub at_once: Vec<String>,
    /// Ready, but past the width: each starts as a place frees.
    pub queued: Vec<String>,
    /// Each open story that waits, with the ones it waits for directly.
    pub waits: Vec<Waiting>,
    /// The stories wait in file order because their file is a checklist
    /// (or an OpenSpec change) that does not say they are independent.
    pub in_order: bool,
}

/// One story that cannot start before others are done.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Waiting {
    pub story: String,
    pub waits_for: Vec<String>,
}

/// What decides the order, besides the stories themselves.
#[derive(Debug, Clone, Default)]
pub struct Order {
    /// `after = [...]` of each story in `ralph.toml`.
    pub after: BTreeMap<String, Vec<String>>,
    /// `[stories] independent = true`.
    pub independent: bool,
}

impl Order {
    /// What decides which stories of `contract`'s change may run at once.
    pub(in crate::run) fn of(contract: &crate::contract::Contract) -> Order {
        Order {
            after: contract
                .story
                .iter()
                .filter(|(_, story)| !story.after.is_empty())
                .map(|(id, story)| (id.clone(), story.after.clone()))
                .collect(),
            independent: contract.stories.independent,
        }
    }
}

impl Order {
    /// The stories `story` (at `index` in file order) must wait for.
    fn waits_for<'s>(
        &'s self,
        kind: SourceKind,
        stories: &'s [Story],
        index: usize,
    ) -> Vec<&'s str> {
        let story = &stories[index];
        let declared: Vec<&str> = story
            .depends_on
            .iter()
            .chain(self.after.get(&story.id).into_iter().flatten())
            .map(String::as_str)
            .collect();
        let in_order = matches!(kind, SourceKind::OpenSpec | SourceKind::Markdown)
            && !self.independent
            && declared.is_empty();
        if in_order {
            stories[..index].iter().map(|s| s.id.as_str()).collect()
        } else {
            declared
        }
    }

    /// The open stories that may start now, in file order: none of them
    /// `busy` (at work, or waiting to be merged) or `given_up`, and every
    /// story each waits for done. A story waited for that the file does
    /// not hold is taken as done.
    pub fn ready<'s>(
        &self,
        kind: SourceKind,
        stories: &'s [Story],
        busy: &BTreeSet<String>,
        given_up: &BTreeSet<String>,
    ) -> Vec<&'s Story> {
        let done = |id: &str| {
            stories
                .iter()
                .find(|story| story.id == id)
                .is_none_or(Story::is_complete)
        };
        stories
            .iter()
            .enumerate()
            .filter(|(_, story)| {
                !story.is_complete() && !busy.contains(&story.id) && !given_up.contains(&story.id)
            })
            .filter(|(index, _)| self.waits_for(kind, stories, *index).into_iter().all(done))
            .map(|(_, story)| story)
            .collect()
    }

    /// What a run `width` stories wide starts with, and what waits for
    /// what: the open stories each wait for the open ones they name (or
    /// that come before them, in file order), shown without what those
    /// already wait for.
    pub fn schedule(&self, kind: SourceKind, stories: &[Story], width: usize) -> Schedule {
        let none = BTreeSet::new();
        let ready: Vec<String> = self
            .ready(kind, stories, &none, &none)
            .into_iter()
            .map(|story| story.id.clone())
            .collect();
        let width = width.max(1);
        let open_waits = |index: usize| -> BTreeSet<String> {
            self.waits_for(kind, stories, index)
                .into_iter()
                .filter(|id| stories.iter().any(|s| s.id == *id && !s.is_complete()))
                .map(str::to_owned)
                .collect()
        };
        let direct: Vec<(usize, BTreeSet<String>)> = (0..stories.len())
            .filter(|at| !stories[*at].is_complete() && !ready.contains(&stories[*at].id))
            .map(|at| (at, open_waits(at)))
            .collect();
        // Everything a story waits for, however far down.
        let below = |id: &str| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut next = vec![id.to_owned()];
            while let Some(id) = next.pop() {
                if let Some(at) = stories.iter().position(|s| s.id == id) {
                    for on in open_waits(at) {
                        if seen.insert(on.clone()) {
                            next.push(on);
                        }
                    }
                }
            }
            seen
        };
        let waits = direct
            .into_iter()
            .map(|(at, on)| Waiting {
                story: stories[at].id.clone(),
                waits_for: on
                    .iter()
                    .filter(|id| !on.iter().any(|other| below(other).contains(*id)))
                    .cloned()
                    .collect(),
            })
            .collect();
        Schedule {
            width,
            at_once: ready.iter().take(width).cloned().collect(),
            queued: ready.iter().skip(width).cloned().collect(),
            waits,
            in_order: matches!(kind, SourceKind::OpenSpec | SourceKind::Markdown)
                && !self.independent,
        }
    }

    /// What is wrong with the order before anything runs: a story named in
    /// `after` that the file does not hold, or stories that wait for each
    /// other (a cycle), which would never start.
    pub fn check(&self, kind: SourceKind, stories: &[Story]) -> Result<(), OrderError> {
        for (story, after) in &self.after {
            if let Some(unknown) = after
                .iter()
                .find(|id| !stories.iter().any(|s| s.id == **id))
            {
                return Err(OrderError::UnknownAfter {
                    story: story.clone(),
                    unknown: unknown.clone(),
                });
            }
        }
        // Kahn's walk: what never becomes free waits in a cycle.
        let waits: Vec<Vec<usize>> = (0..stories.len())
            .map(|index| {
                self.waits_for(kind, stories, index)
                    .iter()
                    .filter_map(|id| stories.iter().position(|s| s.id == *id))
                    .collect()
            })
            .collect();
        let mut free = vec![false; stories.len()];
        loop {
            let freed: Vec<usize> = (0..stories.len())
                .filter(|at| !free[*at] && waits[*at].iter().all(|on| free[*on]))
                .collect();
            if freed.is_empty() {
                break;
            }
            freed.into_iter().for_each(|at| free[at] = true);
        }
        let stuck: Vec<&str> = (0..stories.len())
            .filter(|at| !free[*at])
            .map(|at| stories[at].id.as_str())
            .collect();
        match stuck.as_slice() {
            [] => Ok(()),
            stuck => Err(OrderError::Cycle {
                stories: stuck.iter().map(|id| id.to_string()).collect(),
            }),
        }
    }

    /// The open stories that can never start, because a story they wait
    /// for (directly or not) was given up.
    pub fn blocked(
        &self,
        kind: SourceKind,
        stories: &[Story],
        given_up: &BTreeSet<String>,
    ) -> Vec<String> {
        let mut blocked: BTreeSet<String> = given_up.clone();
        loop {
            let before = blocked.len();
            for (index, story) in stories.iter().enumerate() {
                if !story.is_complete()
                    && self
                        .waits_for(kind, stories, index)
                        .iter()
                        .any(|id| blocked.contains(*id))
                {
                    blocked.insert(story.id.clone());
                }
            }
            if blocked.len() == before {
                break;
            }
        }
        stories
            .iter()
            .filter(|story| blocked.contains(&story.id) && !given_up.contains(&story.id))
            .map(|story| story.id.clone())
            .collect()
    }
}

/// Why stories cannot run in the order given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("story {story} comes after story {unknown}, which the tracking file does not hold")]
    UnknownAfter { story: String, unknown: String },
    #[error("stories {} wait for each other, so none of them could start", stories.join(", "))]
    Cycle { stories: Vec<String> },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stories::Task;

    fn story(id: &str, done: bool, depends_on: &[&str]) -> Story {
        let mut story = Story::from_tasks(
            id,
            format!("story {id}"),
            vec![Task {
                text: format!("task of {id}"),
                done,
                line: 1,
            }],
        );
        story.depends_on = depends_on.iter().map(|s| s.to_string()).collect();
        story
    }

    fn ids(stories: Vec<&Story>) -> Vec<&str> {
        stories.into_iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn checklist_stories_wait_for_the_ones_before_them() {
        let stories = [story("1", false, &[]), story("2", false, &[])];
        let order = Order::default();
        let none = BTreeSet::new();
        assert_eq!(
            ids(order.ready(SourceKind::Markdown, &stories, &none, &none)),
            ["1"]
        );
        assert_eq!(
            ids(order.ready(SourceKind::OpenSpec, &stories, &none, &none)),
            ["1"]
        );
        let independent = Order {
            independent: true,
            ..Order::default()
        };
        assert_eq!(
            ids(independent.ready(SourceKind::Markdown, &stories, &none, &none)),
            ["1", "2"]
        );
    }

    #[test]
    fn declared_dependencies_decide() {
        let stories = [
            story("A", false, &[]),
            story("B", false, &["A"]),
            story("C", false, &[]),
            story("D", true, &[]),
            story("E", false, &["D", "gone"]),
        ];
        let none = BTreeSet::new();
        let order = Order::default();
        assert_eq!(
            ids(order.ready(SourceKind::Prd, &stories, &none, &none)),
            ["A", "C", "E"]
        );
        let busy: BTreeSet<String> = ["A".to_string()].into();
        assert_eq!(
            ids(order.ready(SourceKind::Prd, &stories, &busy, &none)),
            ["C", "E"]
        );
        let after = Order {
            after: [("C".to_string(), vec!["A".to_string()])].into(),
            ..Order::default()
        };
        assert_eq!(
            ids(after.ready(SourceKind::Prd, &stories, &none, &none)),
            ["A", "E"]
        );
        // A checklist story that names what it comes after waits only for that.
        let list = [
            story("1", false, &[]),
            story("2", false, &[]),
            story("3", false, &[]),
        ];
        let third_after_first = Order {
            after: [("3".to_string(), vec!["1".to_string()])].into(),
            ..Order::default()
        };
        assert_eq!(
            ids(third_after_first.ready(SourceKind::Markdown, &list, &none, &none)),
            ["1"]
        );
    }

    #[test]
    fn the_schedule_says_what_starts_at_once_and_what_waits_for_what() {
        let stories = [
            story("A", false, &[]),
            story("B", false, &["A"]),
            story("C", false, &["A", "B"]),
            story("D", true, &[]),
            story("E", false, &["D"]),
            story("F", false, &[]),
        ];
        let schedule = Order::default().schedule(SourceKind::Prd, &stories, 2);
        assert_eq!(schedule.at_once, ["A", "E"]);
        assert_eq!(schedule.queued, ["F"]);
        let waits: Vec<(&str, Vec<&str>)> = schedule
            .waits
            .iter()
            .map(|w| {
                (
                    w.story.as_str(),
                    w.waits_for.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        // C waits for A through B: only B is named.
        assert_eq!(waits, [("B", vec!["A"]), ("C", vec!["B"])]);
        assert!(!schedule.in_order);
        let list = [
            story("1", false, &[]),
            story("2", false, &[]),
            story("3", false, &[]),
        ];
        let schedule = Order::default().schedule(SourceKind::Markdown, &list, 3);
        assert_eq!(schedule.at_once, ["1"]);
        assert_eq!(schedule.waits[1].waits_for, ["2"]);
        assert!(schedule.in_order);
    }

    #[test]
    fn unknown_and_circular_orders_are_refused() {
        let stories = [
            story("1", false, &[]),
            story("2", false, &[]),
            story("3", false, &[]),
        ];
        let after = |pairs: &[(&str, &str)]| Order {
            after: pairs.iter().fold(BTreeMap::new(), |mut map, (story, on)| {
                map.entry(story.to_string())
                    .or_insert_with(Vec::new)
                    .push(on.to_string());
                map
            }),
            independent: true,
        };
        assert_eq!(
            after(&[("3", "1")]).check(SourceKind::Markdown, &stories),
            Ok(())
        );
        let unknown = after(&[("3", "9")]).check(SourceKind::Markdown, &stories);
        assert!(unknown.is_err_and(|e| e.to_string().contains("story 9")));
        let cycle =
            after(&[("1", "2"), ("2", "3"), ("3", "1")]).check(SourceKind::Markdown, &stories);
        assert_eq!(
            cycle.map_err(|e| e.to_string()),
            Err("stories 1, 2, 3 wait for each other, so none of them could start".into())
        );
        // In file order (no independence), a later story named before an
        // earlier one makes a cycle too.
        let backwards = Order {
            after: [("1".to_string(), vec!["2".to_string()])].into(),
            independent: false,
        };
        assert!(backwards.check(SourceKind::Markdown, &stories).is_err());
    }

    #[test]
    fn a_story_given_up_blocks_what_waits_for_it() {
        let stories = [
            story("A", false, &[]),
            story("B", false, &["A"]),
            story("C", false, &["B"]),
            story("D", false, &[]),
        ];
        let given_up: BTreeSet<String> = ["A".to_string()].into();
        let order = Order::default();
        assert_eq!(
            ids(order.ready(SourceKind::Prd, &stories, &BTreeSet::new(), &given_up)),
            ["D"]
        );
        assert_eq!(
            order.blocked(SourceKind::Prd, &stories, &given_up),
            ["B", "C"]
        );
    }
}
