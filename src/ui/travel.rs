//! The words of a run taken up from a remote (`start --from`), and of
//! one story run on a machine of its own (`start --story`).

use crate::git::ChangeName;
use crate::remote::TakenUp;
use crate::remote::story_job::{Ready, StoryJob};

/// What `start --from` tells before the loop goes on.
pub fn taken_up(change: &ChangeName, taken: &TakenUp) -> String {
    match taken {
        TakenUp::Taken {
            remote,
            record,
            tip,
            done,
            total,
        } => format!(
            "took '{change}' up from '{remote}': {} at {}, {done} of {total} stories done (record {})",
            change.branch_short(),
            tip.to_hex_with_len(12),
            record.to_hex_with_len(12)
        ),
        TakenUp::AlreadyHere { remote, record } => format!(
            "the run of '{change}' here is '{remote}''s record or goes on from it (record {}): going on from here",
            record.to_hex_with_len(12)
        ),
    }
}

/// What `start --story` tells before the story's loop begins.
pub fn story_ready(job: &StoryJob, ready: &Ready) -> String {
    let branch = job.name.branch_short();
    match ready {
        Ready::Fresh { base } => format!(
            "story {} of '{}' runs alone on {branch}, from {} at {}",
            job.story,
            job.change,
            job.change.branch_short(),
            base.to_hex_with_len(12)
        ),
        Ready::TakenUp(taken) => taken_up(&job.name, taken),
        Ready::Resumes => format!(
            "story {} of '{}' goes on from its stopped run on {branch}",
            job.story, job.change
        ),
    }
}

/// What `start --story --push` tells once the story's branch went.
pub fn story_pushed(job: &StoryJob, pushed: &crate::run::ending::handoff::Pushed) -> String {
    format!(
        "pushed {} ({}) with the record of story {} to '{}'",
        pushed.branch,
        pushed.commit.to_hex_with_len(12),
        job.story,
        pushed.remote
    )
}

/// What `merge` tells once the stories are merged or sent back.
pub fn merged(
    change: &ChangeName,
    report: &crate::run::story_merge::MergeReport,
    unfinished: &[String],
) -> String {
    let mut lines = Vec::new();
    for (story, checkpoint) in &report.merged {
        lines.push(format!(
            "story {story} merged onto {} at {}",
            change.branch_short(),
            checkpoint.to_hex_with_len(12)
        ));
    }
    for back in &report.sent_back {
        lines.push(format!(
            "story {} sent back: {}; its work is kept at {}\n  run it again:  git ralph start {change} --story {} --from <remote> --push",
            back.story, back.reason, back.kept, back.story
        ));
    }
    if !unfinished.is_empty() {
        lines.push(format!(
            "not merged, their runs did not finish them: story {}",
            unfinished.join(", ")
        ));
    }
    if lines.is_empty() {
        lines.push(format!("no story's branch of '{change}' was finished"));
    }
    lines.join("\n")
}
