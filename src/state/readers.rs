//! The run's record as everyone outside `state/` reads it: each field of
//! [`RunState`] by a method of its name, read-only. Its changes are the
//! commands of `commands.rs`.

use super::run::{
    FallbackState, FinishChoice, HooksDue, ParallelState, PipelineState, RunState, RunStatus,
    RunWorktree, Settings, StopReason, StoryRecord, Totals,
};
use crate::git::Original;

impl RunState {
    pub fn version(&self) -> u32 {
        self.version
    }
    pub fn change(&self) -> &String {
        &self.change
    }
    pub fn branch(&self) -> &String {
        &self.branch
    }
    pub fn status(&self) -> RunStatus {
        self.status
    }
    pub fn reason(&self) -> Option<StopReason> {
        self.reason
    }
    pub fn original(&self) -> &Original {
        &self.original
    }
    pub fn initial_commit(&self) -> crate::git::ObjectId {
        self.initial_commit
    }
    pub fn checkpoint(&self) -> crate::git::ObjectId {
        self.checkpoint
    }
    pub fn stories(&self) -> &Vec<StoryRecord> {
        &self.stories
    }
    pub fn current_story(&self) -> &Option<String> {
        &self.current_story
    }
    pub fn current_attempt(&self) -> u32 {
        self.current_attempt
    }
    pub fn last_failure(&self) -> &Option<String> {
        &self.last_failure
    }
    pub fn totals(&self) -> &Totals {
        &self.totals
    }
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    pub fn started_at(&self) -> u64 {
        self.started_at
    }
    pub fn updated_at(&self) -> u64 {
        self.updated_at
    }
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
    pub fn finished_with(&self) -> Option<FinishChoice> {
        self.finished_with
    }
    pub fn no_progress_streak(&self) -> u32 {
        self.no_progress_streak
    }
    pub fn runtime_ms(&self) -> u64 {
        self.runtime_ms
    }
    pub fn paused_until(&self) -> Option<u64> {
        self.paused_until
    }
    pub fn pause_reason(&self) -> &Option<String> {
        &self.pause_reason
    }
    pub fn rate_limit_wait_secs(&self) -> u64 {
        self.rate_limit_wait_secs
    }
    pub fn rate_limit_pauses(&self) -> u32 {
        self.rate_limit_pauses
    }
    pub fn role_iterations_added(&self) -> u32 {
        self.role_iterations_added
    }
    pub fn hooks_due(&self) -> &Vec<HooksDue> {
        &self.hooks_due
    }
    pub fn pipeline(&self) -> &Option<PipelineState> {
        &self.pipeline
    }
    pub fn fallback(&self) -> &Option<FallbackState> {
        &self.fallback
    }
    pub fn worktree(&self) -> &Option<RunWorktree> {
        &self.worktree
    }
    pub fn parallel(&self) -> &Option<ParallelState> {
        &self.parallel
    }

    /// The stories' records, the state given up for them.
    pub fn into_stories(self) -> Vec<StoryRecord> {
        self.stories
    }

    /// The run's own worktree, the state given up for it.
    pub fn into_worktree(self) -> Option<RunWorktree> {
        self.worktree
    }
}
