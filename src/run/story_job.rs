//! `start <change> --story ID`: whether that one story may run on top of
//! a commit of `ralph/<change>`, read before anything is written. The
//! stories are the change's, as the worktree has them; whether each is
//! done is what the tracking file says at that commit; what a story waits
//! for is what the parallel schedule says (a prd.json's `dependsOn`, the
//! `after` of `ralph.toml`, a checklist's order unless its stories are
//! independent). Stories run one per machine only where they could run
//! side by side.

use super::error::RunError;
use super::opening::{Found, Named, assemble_contract};
use super::sources::{Begin, source_for};
use crate::git::{ChangeName, ObjectId, Repo};
use crate::settings::Requested;
use crate::stories::{SourceKind, slash_path};

/// What the change says of one story at a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoryAt {
    /// The change has no such story; these are the ones it has.
    Unknown { stories: Vec<String> },
    /// The story is already done there.
    Done,
    /// The story waits for these, not done there (in file order).
    Waits { missing: Vec<String> },
    /// Stories of this run cannot run one per machine: why.
    Unfit { what: String },
    /// The story may run.
    Ready,
}

/// What `change`'s story `story` is at `base`, with the flags in `req`
/// (its `job` names the story).
pub fn story_at(
    repo: &Repo,
    change: &ChangeName,
    req: &Requested,
    story: &str,
    base: ObjectId,
) -> Result<StoryAt, RunError> {
    let found = Found::look(repo, change)?;
    let settings = found.settings(repo, req)?;
    let source = source_for(repo, change, &settings, Begin::Fresh)?;
    let contract = assemble_contract(repo, change, &settings, source.as_ref())?;
    // An agent that is not installed is refused before HEAD moves.
    let agent = Named::resolve(repo, &settings, None)?.agent;
    if !crate::process::is_runnable(&agent.program) {
        return Err(RunError::AgentMissing {
            name: agent.name,
            program: agent.program,
        });
    }
    let roles = super::mode::roles_of(&settings, &contract);
    let side_by_side = super::mode::Mode::of(&settings, &roles).side_by_side();
    let kind = source.kind();
    if let Err(why) = side_by_side {
        return Ok(StoryAt::Unfit { what: why.into() });
    }
    if !matches!(
        kind,
        SourceKind::OpenSpec | SourceKind::Markdown | SourceKind::Prd
    ) {
        return Ok(StoryAt::Unfit {
            what: format!(
                "the marks of {kind} stories live outside the worktree, where no merge can carry them"
            ),
        });
    }
    let tracking = slash_path(source.tracking_file());
    let text = repo
        .text_at(base, &tracking)
        .map_err(|err| RunError::git(format!("read {tracking} on the branch"), err))?
        .unwrap_or_default();
    // The stories as the commit marks them.
    let mut stories = source.load()?;
    for story in &mut stories {
        let done = source.marked_done_in(&text, story).unwrap_or(false);
        story.passes = Some(done);
        story.unreadable.clear();
    }
    let Some(wanted) = stories.iter().find(|s| s.id == story) else {
        return Ok(StoryAt::Unknown {
            stories: stories.iter().map(|s| s.id.clone()).collect(),
        });
    };
    if wanted.is_complete() {
        return Ok(StoryAt::Done);
    }
    let schedule = super::parallel::schedule(&contract, kind, &stories, 1);
    // Everything it waits for, however far down.
    let mut missing: Vec<String> = Vec::new();
    let mut next = vec![story.to_owned()];
    while let Some(id) = next.pop() {
        if let Some(waiting) = schedule.waits.iter().find(|w| w.story == id) {
            for on in &waiting.waits_for {
                if !missing.contains(on) {
                    missing.push(on.clone());
                    next.push(on.clone());
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(StoryAt::Ready);
    }
    let place = |id: &String| stories.iter().position(|s| s.id == *id);
    missing.sort_by_key(place);
    Ok(StoryAt::Waits { missing })
}
