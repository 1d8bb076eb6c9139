//! Holding a plan to the reader that will run it. What the agent wrote is
//! read back exactly as `git ralph start` will read it, and accepted only
//! when it reads as stories with open tasks, without a line the reader
//! warns about, no story over the size bound, every story saying how to
//! verify it, every done mark of a refined plan kept, and (for an OpenSpec
//! change, when the `openspec` CLI is installed) `openspec validate
//! --strict` content. Otherwise the findings, in the reader's or the
//! validator's own words, go back to the agent.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::target::{Format, Target};
use crate::stories::openspec_cli::{self, OpenSpecCommand, Validation};
use crate::stories::{Story, StorySet};

/// The default bound on a story's tasks: more than one fresh agent
/// finishes well in one attempt.
pub const DEFAULT_MAX_TASKS: usize = 12;

/// What a plan is held to.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// The most tasks (or, in a prd.json, acceptance criteria) a story may
    /// have.
    pub max_tasks: usize,
    /// What was done before a refinement, each of which must stay done.
    pub done_before: Vec<DoneMark>,
    /// Where `openspec` is looked for.
    pub openspec: OpenSpecCommand,
    /// How long `openspec validate` may take.
    pub command_timeout: Duration,
}

/// Something marked done in a plan: a ticked task, or a passing story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneMark {
    /// The task's text without its number, or the story's id.
    pub text: String,
    /// How it is named to the agent.
    pub shown: String,
}

/// The verdict on a plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// What must change before it is accepted; none when it is.
    pub findings: Vec<String>,
    pub stories: usize,
    /// Tasks (or, in a prd.json, stories) still open.
    pub open: usize,
    /// What `open` counts.
    pub unit: OpenUnit,
}

/// What the open work of a plan is counted in: a checklist's tasks, or a
/// prd.json's stories, which have no boxes of their own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenUnit {
    #[default]
    Task,
    Story,
}

impl Review {
    pub fn accepted(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Read the plan at `target` in `workdir` and judge it by `bounds`.
pub async fn review(target: &Target, workdir: &Path, bounds: &Bounds) -> Review {
    // The reader's hints are advice to the user about the command line;
    // the agent is told what it wrote, in the reader's words alone.
    let finding = if target.exists(workdir) {
        target.source(workdir).and_then(|source| source.load_set())
    } else {
        return Review {
            findings: vec![format!(
                "nothing was written in {}: the plan must be written there",
                target.shown()
            )],
            ..Review::default()
        };
    };
    let set = match finding {
        Ok(set) => set,
        Err(err) => {
            return Review {
                findings: vec![err.to_string()],
                ..Review::default()
            };
        }
    };
    let mut review = judge(target, &set, bounds);
    if target.format == Format::OpenSpec {
        let validation = openspec_cli::validate(
            &bounds.openspec,
            workdir,
            target.change().as_str(),
            bounds.command_timeout,
        )
        .await;
        match validation {
            Validation::NotInstalled | Validation::Valid => {}
            Validation::Invalid(words) => review.findings.push(format!(
                "`openspec validate {} --strict` says:\n{words}",
                target.change()
            )),
            Validation::Failed(words) => review.findings.push(words),
        }
    }
    review
}

/// The findings on the stories as read.
fn judge(target: &Target, set: &StorySet, bounds: &Bounds) -> Review {
    let file = target.tracking_file();
    let mut findings: Vec<String> = set
        .warnings
        .iter()
        .map(|warning| format!("{file}: {warning}"))
        .collect();
    let open = set
        .stories
        .iter()
        .map(|story| match target.format {
            Format::Prd => usize::from(!story.is_complete()),
            _ => story.tasks.iter().filter(|task| !task.done).count(),
        })
        .sum();
    if set.stories.is_empty() {
        findings.push(format!("{file} holds no story"));
    } else if open == 0 || set.all_done() {
        findings.push(format!(
            "every story of {file} is done already: a plan needs open tasks for the run to work on"
        ));
    }
    for story in &set.stories {
        findings.extend(too_big(story, target.format, bounds.max_tasks));
        if !verifiable(story, target.format) {
            findings.push(format!(
                "story {} (\"{}\") does not say how to verify it: {}",
                story.id,
                story.title,
                match target.format {
                    Format::Prd =>
                        "give it acceptance criteria, one of them the check that proves it done",
                    _ =>
                        "end it with a task that starts with \"Verify:\" and names the command or check that proves it done",
                }
            ));
        }
    }
    findings.extend(lost_marks(&set.stories, target.format, &bounds.done_before));
    Review {
        findings,
        stories: set.stories.len(),
        open,
        unit: match target.format {
            Format::Prd => OpenUnit::Story,
            _ => OpenUnit::Task,
        },
    }
}

/// The finding on a story over the bound, if it is.
fn too_big(story: &Story, format: Format, max: usize) -> Option<String> {
    let (count, what) = match format {
        Format::Prd => (story.acceptance_criteria.len(), "acceptance criteria"),
        _ => (story.tasks.len(), "tasks"),
    };
    (count > max).then(|| {
        format!(
            "story {} (\"{}\") has {count} {what}, more than one agent attempt should take on (at most {max}): split it into smaller stories",
            story.id, story.title
        )
    })
}

/// Whether the story says how to tell it is done: a prd.json story by its
/// acceptance criteria, a checklist story by a line of its section (a task
/// or not) that starts with "Verify" or "Verification".
fn verifiable(story: &Story, format: Format) -> bool {
    if format == Format::Prd {
        return !story.acceptance_criteria.is_empty();
    }
    let task_lines = story.tasks.iter().map(|task| task.text.as_str());
    match &story.section {
        Some(section) => section
            .text
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .chain(task_lines)
            .any(says_how_to_verify),
        None => task_lines.into_iter().any(says_how_to_verify),
    }
}

/// `- [ ] 1.4 Verify: cargo test`, `**Verification:** …`, `Verify that …`.
fn says_how_to_verify(line: &str) -> bool {
    let text = bare(line).to_ascii_lowercase();
    ["verify", "verification"]
        .iter()
        .any(|word| text.starts_with(word))
}

/// A line without its list marker, box, task number and emphasis.
fn bare(line: &str) -> &str {
    let mut text = line.trim_start();
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = text.strip_prefix(marker) {
            text = rest.trim_start();
            break;
        }
    }
    if text.starts_with('[') && text.get(2..3) == Some("]") {
        text = text[3..].trim_start();
    }
    number_stripped(text).trim_start_matches(['*', '_', '`'])
}

/// `1.4 text`, `1.4. text`, `2) text` without the number.
fn number_stripped(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ')'))
        .unwrap_or(text.len());
    if end > 0 && text[..end].starts_with(|c: char| c.is_ascii_digit()) {
        text[end..].trim_start()
    } else {
        text
    }
}

/// Every done mark of `stories`.
pub fn done_marks(stories: &[Story], format: Format) -> Vec<DoneMark> {
    match format {
        Format::Prd => stories
            .iter()
            .filter(|story| story.is_complete())
            .map(|story| DoneMark {
                text: story.id.clone(),
                shown: format!("story {} (\"{}\")", story.id, story.title),
            })
            .collect(),
        _ => stories
            .iter()
            .flat_map(|story| &story.tasks)
            .filter(|task| task.done)
            .map(|task| DoneMark {
                text: number_stripped(task.text.trim()).to_owned(),
                shown: format!("task \"{}\"", task.text.trim()),
            })
            .collect(),
    }
}

/// The findings on done marks a refinement lost.
fn lost_marks(stories: &[Story], format: Format, before: &[DoneMark]) -> Vec<String> {
    let now = done_marks(stories, format);
    before
        .iter()
        .filter(|mark| !now.iter().any(|kept| kept.text == mark.text))
        .map(|mark| {
            format!(
                "{} was done before and is not now: keep every done mark as it was, word for word",
                mark.shown
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verification_lines_are_told_apart() {
        for line in [
            "- [ ] 1.4 Verify: cargo test passes",
            "- [ ] 2.3. verify that the page loads",
            "**Verification:** run the suite",
            "Verify: `make check`",
            "* [x] Verify it by hand",
        ] {
            assert!(says_how_to_verify(line), "{line}");
        }
        for line in [
            "- [ ] 1.1 Add the parser",
            "- [ ] 1.2 Make sure it works",
            "",
            "We verify later",
        ] {
            assert!(!says_how_to_verify(line), "{line}");
        }
    }

    #[test]
    fn numbers_come_off_task_texts() {
        assert_eq!(number_stripped("1.2 Add it"), "Add it");
        assert_eq!(number_stripped("3) Add it"), "Add it");
        assert_eq!(number_stripped("Add 2 things"), "Add 2 things");
    }
}
