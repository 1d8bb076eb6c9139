//! The question asked when a loop ends and `--on-finish ask` is in force:
//! clean up (back to the original branch, work uncommitted) or keep.

use console::Term;
use dialoguer::Select;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishChoice {
    Cleanup,
    Keep,
}

/// Ask on the terminal; `None` when there is no terminal or the user
/// dismissed the menu.
pub fn ask_finish(branch: &str, original: &str) -> Option<FinishChoice> {
    use std::io::IsTerminal;
    let term = Term::stderr();
    if !std::io::stdin().is_terminal() || !term.is_term() {
        return None;
    }
    let items = [
        format!("cleanup: back to {original}, with all the work as uncommitted changes"),
        format!("keep: stay on {branch} with one commit per story"),
    ];
    let choice = Select::new()
        .with_prompt("The loop has ended. Finish with")
        .items(&items)
        .default(0)
        .interact_on_opt(&term)
        .ok()
        .flatten()?;
    Some(if choice == 0 {
        FinishChoice::Cleanup
    } else {
        FinishChoice::Keep
    })
}
