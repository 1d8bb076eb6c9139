//! The question asked when a loop ends and `--on-finish ask` is in force:
//! clean up (back to the original branch, work uncommitted) or keep; for a
//! run that did not complete, also leave it stopped (to resume later) or
//! abort it.

use console::Term;
use dialoguer::Select;

use crate::run::ending::{EndChoice, FinishChoice, Question};

/// Ask on the terminal; `None` when there is no terminal or the user
/// dismissed the menu. Completed runs are offered keep and cleanup only.
pub fn ask_finish(question: &Question) -> Option<EndChoice> {
    let Question {
        branch,
        original,
        completed,
        beside,
    } = question;
    use std::io::IsTerminal;
    let term = Term::stderr();
    if !std::io::stdin().is_terminal() || !term.is_term() {
        return None;
    }
    let mut items = match beside {
        false => vec![
            (
                EndChoice::Finish(FinishChoice::Cleanup),
                format!("cleanup: back to {original}, with all the work as uncommitted changes"),
            ),
            (
                EndChoice::Finish(FinishChoice::Keep),
                format!("keep: stay on {branch} with one commit per story"),
            ),
        ],
        true => vec![
            (
                EndChoice::Finish(FinishChoice::Cleanup),
                "cleanup: the work into your worktree as uncommitted changes".to_owned(),
            ),
            (
                EndChoice::Finish(FinishChoice::Keep),
                format!("keep: {branch} with one commit per story; its worktree goes"),
            ),
        ],
    };
    if !*completed {
        items.push((
            EndChoice::LeaveStopped,
            "leave it stopped: resume later with 'git ralph start', or finish then".into(),
        ));
        items.push((
            EndChoice::Abort,
            match beside {
                false => format!("abort: back to {original} exactly as before the run"),
                true => format!("abort: {branch} and its worktree go; yours stays as it is"),
            },
        ));
    }
    let labels: Vec<&str> = items.iter().map(|(_, label)| label.as_str()).collect();
    let choice = Select::new()
        .with_prompt("The loop has ended. Finish with")
        .items(&labels)
        .default(0)
        .interact_on_opt(&term)
        .ok()
        .flatten()?;
    items.get(choice).map(|(choice, _)| *choice)
}
