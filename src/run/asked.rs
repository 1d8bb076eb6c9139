//! What the record holds of questions: the stories waiting for an answer,
//! and every question of a story that was answered, in order. Read by the
//! prompt, the receipts and the loops; parking a story and taking answers
//! is [`super::questions`]'s.

use std::collections::BTreeSet;

use crate::prompt::Exchange;
use crate::state::answers;
use crate::state::{AttemptOutcome, RunState};

/// The stories waiting for an answer, with their questions, in file
/// order.
pub(super) fn waiting(state: &RunState) -> Vec<(String, String)> {
    state
        .stories()
        .iter()
        .filter(|story| !story.done)
        .filter_map(|story| {
            let waiting = answers::waiting(story, &[])?;
            Some((story.id.clone(), waiting.asked.clone().unwrap_or_default()))
        })
        .collect()
}

/// The ids of the stories waiting for an answer.
pub(super) fn parked(state: &RunState) -> BTreeSet<String> {
    waiting(state).into_iter().map(|(id, _)| id).collect()
}

/// Every question of `story` that was answered, in order, for its next
/// prompt.
pub(super) fn exchange(state: &RunState, story: &str) -> Vec<Exchange> {
    let Some(record) = state.stories().iter().find(|s| s.id == story) else {
        return Vec::new();
    };
    record
        .attempts
        .iter()
        .filter(|a| a.outcome == AttemptOutcome::Question)
        .filter_map(|a| {
            Some(Exchange {
                attempt: a.attempt,
                question: a.asked.clone()?,
                answer: a.answer.clone()?,
            })
        })
        .collect()
}
