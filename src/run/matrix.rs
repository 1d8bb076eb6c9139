//! What a CI matrix needs of a change, in `start --dry-run --json`: each
//! open story with whether it may run now (every story it waits for done
//! on the branch) and what it waits for, and the stories in waves: the
//! first wave may run at once, each later one once the waves before it
//! are merged. Read from the same order the parallel schedule keeps (a
//! prd.json's `dependsOn`, `after` in `ralph.toml`, a checklist's order
//! unless its stories are independent), so that a job of a matrix (`start
//! --story ID`) refuses exactly the stories this says must wait.

use serde::Serialize;

use crate::contract::Contract;
use crate::stories::{SourceKind, Story};

/// The open stories of a change, for one CI job each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Matrix {
    /// Each open story, in file order.
    pub stories: Vec<MatrixStory>,
    /// The open stories in waves: the first may run at once; each later
    /// wave once those before it are done. A story that waits in a cycle
    /// is in none.
    pub waves: Vec<Vec<String>>,
}

/// One open story of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatrixStory {
    pub story: String,
    pub title: String,
    /// Every story it waits for is done: `start --story` runs it now.
    pub ready: bool,
    /// The open stories it waits for directly.
    pub waits_for: Vec<String>,
    /// Its wave, from 1; 0 when it waits in a cycle.
    pub wave: usize,
}

/// The matrix of `stories`, ordered as `contract` says.
pub fn matrix(contract: &Contract, kind: SourceKind, stories: &[Story]) -> Matrix {
    let mut waves: Vec<Vec<String>> = Vec::new();
    let mut marked = stories.to_vec();
    loop {
        let schedule = super::parallel::schedule(contract, kind, &marked, 1);
        let wave: Vec<String> = schedule
            .at_once
            .into_iter()
            .chain(schedule.queued)
            .collect();
        if wave.is_empty() {
            break;
        }
        // Taken as done for the waves after it.
        for story in marked.iter_mut().filter(|story| wave.contains(&story.id)) {
            story.passes = Some(true);
            story.unreadable.clear();
        }
        waves.push(wave);
    }
    let now = super::parallel::schedule(contract, kind, stories, 1);
    let stories = stories
        .iter()
        .filter(|story| !story.is_complete())
        .map(|story| {
            let waits_for = now
                .waits
                .iter()
                .find(|waiting| waiting.story == story.id)
                .map(|waiting| waiting.waits_for.clone())
                .unwrap_or_default();
            MatrixStory {
                story: story.id.clone(),
                title: story.title.clone(),
                ready: waves.first().is_some_and(|first| first.contains(&story.id)),
                waits_for,
                wave: waves
                    .iter()
                    .position(|wave| wave.contains(&story.id))
                    .map_or(0, |at| at + 1),
            }
        })
        .collect();
    Matrix { stories, waves }
}
