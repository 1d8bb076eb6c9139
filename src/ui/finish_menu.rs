//! The question asked when a loop ends and `--on-finish ask` is in force:
//! clean up (back to the original branch, work uncommitted), keep, leave it
//! for later (to resume, or to finish then), or abort it; its keys are said
//! in the question.

use console::Term;
use dialoguer::Select;

use crate::run::ending::{EndChoice, FinishChoice, Question};

/// Ask on the terminal; `None` when there is no terminal or the user
/// dismissed the menu (Esc or q: decided later).
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
    items.push((
        EndChoice::LeaveStopped,
        if *completed {
            "decide later: the run waits on its branch for 'git ralph finish' or 'abort'".into()
        } else {
            "leave it stopped: resume later with 'git ralph start', or finish then".into()
        },
    ));
    items.push((
        EndChoice::Abort,
        match beside {
            false => format!("abort: back to {original} exactly as before the run"),
            true => format!("abort: {branch} and its worktree go; yours stays as it is"),
        },
    ));
    let labels: Vec<&str> = items.iter().map(|(_, label)| label.as_str()).collect();
    let choice = Select::new()
        .with_prompt("The loop has ended. Finish with (↑↓ pick, Enter choose, Esc decide later)")
        .items(&labels)
        .default(0)
        .interact_on_opt(&term)
        .ok()
        .flatten()?;
    items.get(choice).map(|(choice, _)| *choice)
}
