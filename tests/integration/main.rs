//! Every integration test, compiled into one test binary: each former test
//! file is a module here, so the crate and gix are linked once rather than
//! once per file, and the long property test of the engine overlaps with the
//! end-to-end tests instead of running alone at the end.
//!
//! - `harness`: the one locked-down environment, the binary, the fake agent;
//! - `engine`: the checkpoint engine through the library;
//! - every other module drives the real `git-ralph` binary (or the fake
//!   agent it runs) end to end.
//!
//! Adding tests: put them in `tests/integration/<topic>.rs`, declare
//! `mod <topic>;` below (keep the list sorted), and build on
//! `crate::harness` rather than on helpers of your own. A file of its own in
//! `tests/` still works (`mod common;` gives it the harness), but it links a
//! binary of its own: fold it in here once it settles. Run one module with
//! `cargo test --test integration <topic>::`.

mod harness;

mod agents_e2e;
mod agents_presets;
mod agents_story_sources;
mod agents_verify;
mod around;
mod binary;
mod ci_stories;
mod ci_workflow;
mod completion;
mod config;
mod containment;
mod contract;
mod cut_short;
mod docs_named;
mod edges_attempt;
mod edges_start;
mod edges_text;
mod engine;
mod fake_agent;
mod first_hour;
mod fuzz_agent_streams;
mod fuzz_checklist;
mod fuzz_contract;
mod fuzz_prd;
mod fuzz_state;
mod generated;
mod handoff_e2e;
mod install;
mod left_locks;
mod lifecycle_e2e;
mod loop_basics;
mod loop_control;
mod loop_failures;
mod loop_index;
mod loop_inputs;
mod loop_keys;
mod loop_output;
mod loop_strays;
mod loop_watched;
mod lost_abort;
mod lost_check_stop;
mod lost_conflicted;
mod lost_index_lock;
mod lost_killed;
mod lost_parallel_hook;
mod lost_parallel_killed;
mod lost_parallel_once;
mod lost_parallel_stash;
mod lost_parallel_stop;
mod lost_plan;
mod lost_plan_lock;
mod lost_roles_tick;
mod lost_shallow_push;
mod lost_sparse;
mod lost_staged;
mod lost_submodule;
mod machines_e2e;
mod machines_story_e2e;
mod matrix;
mod meet;
mod meet_endings;
mod no_crash;
mod output;
mod own_story;
mod parallel_e2e;
mod plan_bounds_e2e;
mod plan_e2e;
mod questions_e2e;
mod readers_e2e;
mod readers_real;
mod readers_sources_e2e;
mod real_cli_e2e;
mod real_cli_limits;
mod realworld;
mod roles;
mod scenarios;
mod serve;
mod serve_answer;
mod serve_browser;
mod serve_clicks;
mod serve_records;
mod serve_rules;
mod serve_start;
mod setup_errors;
mod spend_e2e;
mod state_v1;
mod stories_e2e;
mod trackers_e2e;
mod trackers_gitlab;
mod trackers_jira;
mod trackers_linear;
mod transcripts;
mod truthful;
mod tui_e2e;
mod walkthrough;
mod words;
mod worktree_e2e;
