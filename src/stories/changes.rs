//! What one attempt did to the task list, story by story. An attempt is
//! given one story; the list is the record of every story's truth, and the
//! agent holds the pen. So the list read after the attempt is compared with
//! the list read before it:
//!
//! - ticks in other stories are claims nobody has verified yet: they are
//!   named, and the loop puts them back ([`ListChanges::ticked_elsewhere`]);
//! - a story or task that disappeared, a task whose words changed, a done
//!   task opened again in another story: the list lost its shape, and the
//!   attempt fails ([`ListChanges::broken`]);
//! - tasks and stories that appeared are accepted, and reported.
//!
//! Tasks are matched by their words (white space folded), in order, so
//! that a task inserted in the middle does not look like every later task
//! rewritten.

use std::fmt;

use super::{Story, Task};

/// A way an attempt broke the shape of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Breakage {
    RemovedStory {
        id: String,
        title: String,
    },
    RemovedTask {
        story: String,
        task: String,
    },
    RewroteTask {
        story: String,
        was: String,
        now: String,
    },
    RewroteStory {
        id: String,
        field: &'static str,
    },
    /// A done task of another story opened again.
    Reopened {
        story: String,
        task: String,
    },
}

impl fmt::Display for Breakage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breakage::RemovedStory { id, title } => write!(f, "removed story {id} ({title})"),
            Breakage::RemovedTask { story, task } => {
                write!(f, "removed task {} of story {story}", task_name(task))
            }
            Breakage::RewroteTask { story, was, now } => write!(
                f,
                "rewrote task {} of story {story} ({was:?} became {now:?})",
                task_name(was)
            ),
            Breakage::RewroteStory { id, field } => write!(f, "rewrote the {field} of story {id}"),
            Breakage::Reopened { story, task } => {
                write!(f, "opened task {} of story {story} again", task_name(task))
            }
        }
    }
}

/// Boxes ticked in a story the attempt was not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickedElsewhere {
    pub story: String,
    /// How many boxes; a prd story's `passes` counts as one.
    pub boxes: usize,
    /// The 1-based lines of the ticked boxes in the file after the
    /// attempt (none for a prd story).
    pub lines: Vec<usize>,
}

/// A task that appeared in a story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedTask {
    pub story: String,
    pub text: String,
}

/// Everything an attempt did to the list, beyond ticking its own story.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListChanges {
    pub broken: Vec<Breakage>,
    pub ticked_elsewhere: Vec<TickedElsewhere>,
    pub added_tasks: Vec<AddedTask>,
    /// Stories that appeared: (id, title).
    pub added_stories: Vec<(String, String)>,
}

/// Compare the list before and after an attempt given story `own`.
pub fn compare(before: &[Story], after: &[Story], own: &str) -> ListChanges {
    let mut changes = ListChanges::default();
    for old in before {
        let Some(new) = after.iter().find(|story| story.id == old.id) else {
            changes.broken.push(Breakage::RemovedStory {
                id: old.id.clone(),
                title: old.title.clone(),
            });
            continue;
        };
        compare_story(old, new, old.id == own, &mut changes);
    }
    for new in after {
        if !before.iter().any(|story| story.id == new.id) {
            changes
                .added_stories
                .push((new.id.clone(), new.title.clone()));
        }
    }
    changes
}

fn compare_story(old: &Story, new: &Story, own: bool, changes: &mut ListChanges) {
    let id = &old.id;
    let rewrote = |field| Breakage::RewroteStory {
        id: id.clone(),
        field,
    };
    if fold(&old.title) != fold(&new.title) {
        changes.broken.push(rewrote("title"));
    }
    if old.description.as_deref().map(fold) != new.description.as_deref().map(fold) {
        changes.broken.push(rewrote("description"));
    }
    let criteria = |story: &Story| {
        story
            .acceptance_criteria
            .iter()
            .map(|c| fold(c))
            .collect::<Vec<_>>()
    };
    if criteria(old) != criteria(new) {
        changes.broken.push(rewrote("acceptance criteria"));
    }
    let mut ticked = 0;
    let mut lines = Vec::new();
    match (old.passes, new.passes) {
        (Some(false), Some(true)) if !own => ticked += 1,
        (Some(true), Some(false)) if !own => changes.broken.push(Breakage::Reopened {
            story: id.clone(),
            task: "passes".into(),
        }),
        _ => {}
    }
    for step in align(&old.tasks, &new.tasks) {
        match step {
            Step::Same(was, now) => match (was.done, now.done) {
                (false, true) if !own => {
                    ticked += 1;
                    lines.push(now.line);
                }
                (true, false) if !own => changes.broken.push(Breakage::Reopened {
                    story: id.clone(),
                    task: was.text.clone(),
                }),
                _ => {}
            },
            Step::Rewritten(was, now) => changes.broken.push(Breakage::RewroteTask {
                story: id.clone(),
                was: was.text.clone(),
                now: now.text.clone(),
            }),
            Step::Removed(was) => changes.broken.push(Breakage::RemovedTask {
                story: id.clone(),
                task: was.text.clone(),
            }),
            Step::Added(now) => changes.added_tasks.push(AddedTask {
                story: id.clone(),
                text: now.text.clone(),
            }),
        }
    }
    if ticked > 0 {
        changes.ticked_elsewhere.push(TickedElsewhere {
            story: id.clone(),
            boxes: ticked,
            lines,
        });
    }
}

/// How a task of the old list maps to the new one.
#[derive(Debug)]
enum Step<'a> {
    Same(&'a Task, &'a Task),
    Rewritten(&'a Task, &'a Task),
    Removed(&'a Task),
    Added(&'a Task),
}

/// Align two task lists on their words (longest common subsequence);
/// between two matched tasks, unmatched old and new tasks pair up as
/// rewrites, and what is left is removed or added.
fn align<'a>(old: &'a [Task], new: &'a [Task]) -> Vec<Step<'a>> {
    let (a, b): (Vec<String>, Vec<String>) = (
        old.iter().map(|t| fold(&t.text)).collect(),
        new.iter().map(|t| fold(&t.text)).collect(),
    );
    // lengths[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lengths = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lengths[i][j] = if a[i] == b[j] {
                lengths[i + 1][j + 1] + 1
            } else {
                lengths[i + 1][j].max(lengths[i][j + 1])
            };
        }
    }
    let mut steps = Vec::new();
    let (mut i, mut j) = (0, 0);
    let (mut gone, mut came): (Vec<&Task>, Vec<&Task>) = (Vec::new(), Vec::new());
    let flush = |gone: &mut Vec<&'a Task>, came: &mut Vec<&'a Task>, steps: &mut Vec<Step<'a>>| {
        let paired = gone.len().min(came.len());
        for (was, now) in gone.iter().zip(came.iter()).take(paired) {
            steps.push(Step::Rewritten(was, now));
        }
        steps.extend(gone.drain(..).skip(paired).map(Step::Removed));
        steps.extend(came.drain(..).skip(paired).map(Step::Added));
    };
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            flush(&mut gone, &mut came, &mut steps);
            steps.push(Step::Same(&old[i], &new[j]));
            i += 1;
            j += 1;
        } else if j == b.len() || (i < a.len() && lengths[i + 1][j] >= lengths[i][j + 1]) {
            gone.push(&old[i]);
            i += 1;
        } else {
            came.push(&new[j]);
            j += 1;
        }
    }
    flush(&mut gone, &mut came, &mut steps);
    steps
}

/// Words as compared: white space folded.
fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A task as a reason names it: its outline number (`2.1`) when it starts
/// with one, else its words, shortened.
pub fn task_name(text: &str) -> String {
    let first = text.split_whitespace().next().unwrap_or_default();
    let label = first.trim_end_matches(['.', ':', ')']);
    let numbered = !label.is_empty()
        && label.chars().next().is_some_and(|c| c.is_ascii_digit())
        && label.chars().all(|c| c.is_ascii_digit() || c == '.');
    if numbered {
        return label.to_owned();
    }
    let short: String = text.chars().take(40).collect();
    if short.len() < text.len() {
        format!("{:?}", format!("{short}…"))
    } else {
        format!("{short:?}")
    }
}

#[cfg(test)]
mod tests;
