//! The task list of an issue's text, as lines of the run's tracking file.
//!
//! People write an issue's tasks as a GitHub task list (`- [ ] …`) among
//! prose, headings and code. The checklist reader finds them the way it
//! finds them in any task file (code fences skipped, every shape of box
//! read), but an issue's headings are not a plan of work, so no section is
//! skipped and the tasks of all of them are the issue's, in order. A line
//! that looks like a box but cannot be read is kept as written: in the
//! tracking file it is a warning again, and keeps its story open, as it
//! would in any task file.

use crate::stories::checklist::{self, SectionRules};

/// The lines an issue's text gives its section of the tracking file: one
/// `- [ ] …` or `- [x] …` per task, and each unreadable box-like line as
/// written, in the order of the text. Empty when the text holds no task
/// list.
pub(super) fn task_lines(text: &str) -> Vec<String> {
    let parsed = checklist::parse_with(text, &SectionRules::all_work());
    let mut lines: Vec<(usize, String)> = parsed
        .stories
        .iter()
        .flat_map(|story| &story.tasks)
        .map(|task| {
            let mark = if task.done { 'x' } else { ' ' };
            (task.line, format!("- [{mark}] {}", task.text))
        })
        .collect();
    lines.extend(
        parsed
            .unreadable
            .iter()
            .map(|line| (line.line, line.text.clone())),
    );
    lines.sort_by_key(|(line, _)| *line);
    lines.into_iter().map(|(_, text)| text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_box_of_every_section_in_order() {
        let body = "Some context.\r\n\r\n## Steps\r\n\r\n- [ ] write it\r\n  - [x] nested\r\n\r\n## Notes\r\n\r\n* [X] noted\r\n\r\n```\r\n- [ ] an example\r\n```\r\n";
        assert_eq!(
            task_lines(body),
            ["- [ ] write it", "- [x] nested", "- [x] noted"]
        );
    }

    #[test]
    fn an_unreadable_box_is_kept_as_written() {
        assert_eq!(
            task_lines("- [ ] a\n- [partial] b\n"),
            ["- [ ] a", "- [partial] b"]
        );
    }

    #[test]
    fn prose_alone_gives_nothing() {
        assert!(task_lines("Just fix the typo in the README.").is_empty());
        assert!(task_lines("").is_empty());
    }
}
