//! A run that travels with its branch: its record (state, events,
//! learnings, answers, receipts) written as a commit under
//! `refs/ralph/<change>/record` and pushed with `ralph/<change>` and the
//! run's other refs, so that another machine (a CI job after the one that
//! hit its time limit, a laptop after a runner) fetches it and goes on
//! with the same stories done, the same attempts counted and the same
//! budget spent; a lease on the remote keeps a second machine off a run
//! another is at work on. Nothing here prints or knows clap.

mod error;
mod fetch;
pub mod layout;
pub mod lease;
pub mod record;
pub mod story_job;
pub mod story_merge;
mod take_up;
mod travel;

pub use error::RemoteError;
pub use take_up::{TakenUp, take_up};
pub use travel::outgoing;
