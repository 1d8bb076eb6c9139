//! The run's events as both live views read them: the line view of
//! `start --plain` and the loop screen each look their own way, but what a
//! notice says and what an agent spent is read once, here.

use crate::agent::AgentEvent;
use crate::events::{Event, GitDirChange, Record, TickedStory};

/// A word the run says in passing, which both views list: a warning, a
/// flag on an accepted attempt, a pause for a usage limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub kind: NoticeKind,
    /// What it says, without its label.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    Warning,
    Flag,
    /// A change in the git directory, undone.
    Undone,
    /// Something the attempt did that stands and is worth knowing.
    Note,
    /// No retry is spent; the run waits until then (unix seconds).
    Paused {
        until_unix: u64,
    },
    /// A story waits for a person to answer its question.
    Question,
}

impl Notice {
    /// A story's question, or the answer a person gave it; `change` is
    /// the run's, for the command that answers.
    fn of_question(change: &str, event: &Event) -> Option<Notice> {
        let (kind, text) = match event {
            Event::Question {
                story_id,
                question,
                others_go_on,
                ..
            } => (
                NoticeKind::Question,
                format!(
                    "story {story_id} waits for an answer: {question} (git ralph answer {change} {story_id} \"...\"){}",
                    match others_go_on {
                        Some(true) => "; the stories that do not depend on it go on",
                        Some(false) => "; no other story may start until it is answered",
                        None => "",
                    }
                ),
            ),
            Event::Answered {
                story_id, answer, ..
            } => (
                NoticeKind::Note,
                format!("story {story_id} was answered: {answer}"),
            ),
            _ => return None,
        };
        Some(Notice { kind, text })
    }

    /// The notice the event of `record` is, if it is one.
    pub fn of(record: &Record) -> Option<Notice> {
        let event = &record.event;
        let (kind, text) = match event {
            Event::Warning { message } => (NoticeKind::Warning, message.clone()),
            Event::Question { .. } | Event::Answered { .. } => {
                return Notice::of_question(&record.change, event);
            }
            Event::Paused {
                until_unix,
                message,
                ..
            } => (
                NoticeKind::Paused {
                    until_unix: *until_unix,
                },
                message.clone(),
            ),
            Event::AgentFallback { message, .. } => (NoticeKind::Note, message.clone()),
            Event::Workers { .. } | Event::Merged { .. } => parallel(event)?,
            Event::GitDirChanged { .. } | Event::RoleEditsUndone { .. } => undone(event)?,
            _ => about_an_attempt(event)?,
        };
        Some(Notice { kind, text })
    }

    /// The word it is introduced with: `warning:`, `flagged:`, `paused:`.
    pub fn label(&self) -> &'static str {
        match self.kind {
            NoticeKind::Warning => "warning:",
            NoticeKind::Flag => "flagged:",
            NoticeKind::Undone => "undone:",
            NoticeKind::Note => "note:",
            NoticeKind::Paused { .. } => "paused:",
            NoticeKind::Question => "question:",
        }
    }
}

/// A parallel run's notices: the stories at work, a story merged or not.
fn parallel(event: &Event) -> Option<(NoticeKind, String)> {
    Some(match event {
        Event::Workers { stories } if !stories.is_empty() => (
            NoticeKind::Note,
            format!("at work at once: story {}", stories.join(", ")),
        ),
        Event::Merged {
            story_id,
            merged: true,
            checkpoint,
            ..
        } => (
            NoticeKind::Note,
            format!(
                "story {story_id} merged onto the run's branch, its checks passing there · checkpoint {}",
                checkpoint
                    .as_deref()
                    .map(|c| &c[..c.len().min(10)])
                    .unwrap_or("-")
            ),
        ),
        Event::Merged {
            story_id,
            merged: false,
            reason,
            preserved,
            ..
        } => (
            NoticeKind::Warning,
            format!(
                "story {story_id} is not merged: {}{}; it runs again while it has retries",
                reason.as_deref().unwrap_or("no reason given"),
                preserved
                    .as_deref()
                    .map(|kept| format!(" (its work is kept at {kept})"))
                    .unwrap_or_default()
            ),
        ),
        _ => return None,
    })
}

/// What an attempt changed that it must not, and was undone.
fn undone(event: &Event) -> Option<(NoticeKind, String)> {
    Some(match event {
        Event::GitDirChanged {
            what,
            change,
            runs_code,
            ..
        } => {
            let how = match change {
                GitDirChange::Added => "added",
                GitDirChange::Modified => "modified",
                GitDirChange::Removed => "removed",
            };
            let danger = if *runs_code {
                "; it could run code as you"
            } else {
                ""
            };
            (
                NoticeKind::Undone,
                format!("the agent changed {what} ({how}{danger})"),
            )
        }
        Event::RoleEditsUndone {
            role,
            paths,
            kept_at,
            ..
        } => (
            NoticeKind::Warning,
            format!(
                "the {role} changed {}; undone, as a {role} only looks (what it wrote is kept at {kept_at})",
                paths.join(", ")
            ),
        ),
        _ => return None,
    })
}

/// What an attempt did worth a word: a flag on its claim, ticks in other
/// stories, tasks it added, a story sent back to the coder.
fn about_an_attempt(event: &Event) -> Option<(NoticeKind, String)> {
    Some(match event {
        Event::Flag {
            story_id,
            attempt,
            flag,
        } => (
            NoticeKind::Flag,
            format!("story {story_id}, attempt {attempt}: {flag}"),
        ),
        Event::TicksOutsideStory {
            story_id,
            attempt,
            stories,
        } => (
            NoticeKind::Warning,
            format!(
                "story {story_id}, attempt {attempt} ticked boxes of other stories ({}); they are unticked again, and each gets attempts of its own",
                TickedStory::ids(stories)
            ),
        ),
        Event::SentBack {
            story_id,
            role,
            findings,
            ..
        } => (
            NoticeKind::Note,
            format!(
                "the {role} sent story {story_id} back to the coder: {}",
                findings.lines().next().unwrap_or_default()
            ),
        ),
        Event::TasksAdded {
            story_id,
            attempt,
            tasks,
        } => {
            let said: Vec<String> = tasks
                .iter()
                .map(|task| format!("added a task to story {}: {}", task.story, task.text))
                .collect();
            (
                NoticeKind::Note,
                format!("story {story_id}, attempt {attempt} {}", said.join("; ")),
            )
        }
        _ => return None,
    })
}

/// Tokens and cost in a few words, `unknown` where nothing was reported.
pub use crate::state::usage_words as usage;

/// What an attempt's agent reported spending, once it was done: tokens and
/// US dollars (none reported counts as nothing).
pub fn spent(event: &AgentEvent) -> Option<(u64, f64)> {
    match event {
        AgentEvent::Done(done) => Some((done.usage.total(), done.cost_usd.unwrap_or(0.0))),
        _ => None,
    }
}

/// Minutes and seconds, as the live lines show time spent or left.
pub(super) fn clock(secs: u64) -> String {
    format!("{:02}:{:02}", secs / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_not_reported_is_unknown_never_free() {
        assert_eq!(usage(0, 0.0), "usage unknown");
        assert_eq!(usage(1234, 0.0), "1234 tokens · cost unknown");
        assert_eq!(usage(0, 0.5), "tokens unknown · $0.50");
        assert_eq!(usage(1234, 0.05), "1234 tokens · $0.05");
    }

    fn of(event: Event) -> Option<Notice> {
        Notice::of(&Record {
            ts_ms: 0,
            change: "greet".into(),
            event,
        })
    }

    #[test]
    fn notices_say_what_the_event_says() {
        let flag = of(Event::Flag {
            story_id: "2".into(),
            attempt: 3,
            flag: crate::state::Flag::TickOnly,
        })
        .expect("a flag is a notice");
        assert_eq!(flag.label(), "flagged:");
        assert_eq!(
            flag.text,
            "story 2, attempt 3: no change besides ticking boxes"
        );
        let paused = of(Event::Paused {
            story_id: "1".into(),
            until_unix: 42,
            message: "usage limit".into(),
        })
        .expect("a pause is a notice");
        assert_eq!(paused.kind, NoticeKind::Paused { until_unix: 42 });
        assert_eq!(paused.label(), "paused:");
        assert!(
            of(Event::Warning {
                message: "w".into()
            })
            .is_some()
        );
    }
}
