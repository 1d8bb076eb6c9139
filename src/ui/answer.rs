//! What `git ralph answer` says once the answer is recorded: which story
//! it answered, and when the run will take it.

use crate::git::ChangeName;
use crate::state::answers::Answer;

/// The answer is recorded; `live` when a loop drives the run now.
pub fn answered(change: &ChangeName, answer: &Answer, live: bool) {
    let when = if live {
        "the run takes it up at its next turn".to_owned()
    } else {
        format!("'git ralph start {change}' goes on with it")
    };
    super::out(&format!(
        "answered story {} of {change} (the question of attempt {}); {when}",
        answer.story, answer.attempt
    ));
}
