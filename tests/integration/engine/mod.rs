//! The checkpoint engine through the library, judged by the git CLI: the
//! hand-written cases and the property tests.

mod fixture;
mod git_caches;
mod git_engine;
mod git_merge;
mod git_props;
mod git_worktree;
