//! One story of a change run on a machine of its own (`start <change>
//! --story ID`): its run is named `<change>.story-<ID>` (its branch, its
//! refs, its files under `.git/ralph/`), while its stories, contract and
//! tracking file are the change's. The run records which change and story
//! it works for, so that a resume, a take-up on another machine and the
//! merge of the finished stories all read it the same way.

use serde::{Deserialize, Serialize};

/// The change and story a story's own run works for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoryJob {
    /// The change whose stories these are (`openspec/changes/<change>/`,
    /// or the run's name with --prd or --tasks).
    pub change: String,
    /// The one story the run works on.
    pub story: String,
}
