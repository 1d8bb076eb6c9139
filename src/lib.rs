//! git-ralph drives an AI coding agent through the stories of a change until
//! each one is verifiably done, checkpointing every finished story as a
//! commit on `ralph/<change>`.

pub mod agent;
pub mod events;
pub mod git;
pub mod presets;
pub mod prompt;
pub mod state;
pub mod stories;
pub mod story_loop;
