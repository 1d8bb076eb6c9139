//! What `git ralph answer` says once the answer is recorded: which story
//! it answered, and when the run will take it.

use crate::git::ChangeName;
use crate::state::answers::Given;

/// The answer is recorded; `live` when a loop drives the run now.
pub fn answered(change: &ChangeName, given: &Given, live: bool) {
    let answer = &given.answer;
    let when = if live {
        "the run takes it up at its next turn".to_owned()
    } else {
        format!("'git ralph start {change}' goes on with it")
    };
    let replacing = given
        .replaced
        .as_ref()
        .map(|earlier| format!(", replacing the earlier answer \"{}\"", earlier.text))
        .unwrap_or_default();
    super::out(&format!(
        "answered story {} of {change} (the question of attempt {}){replacing}; {when}",
        answer.story, answer.attempt
    ));
}
