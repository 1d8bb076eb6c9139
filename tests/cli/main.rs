//! Everything that drives the real `git-ralph` binary (and the fake agent it
//! runs), compiled into one test binary: each former test file is a module
//! here, so the crate and gix are linked once rather than once per file.
//!
//! Adding tests: put them in `tests/cli/<topic>.rs`, declare `mod <topic>;`
//! below (keep the list sorted), and build on `crate::harness` (the
//! locked-down environment, the binary, the fake agent) rather than on
//! helpers of your own. A file of its own in `tests/` still works, but it
//! links a binary of its own too: fold it in here once it settles. Run one
//! module with `cargo test --test cli <topic>::`.

#[path = "../harness/mod.rs"]
mod harness;

mod agents_presets;
mod agents_story_sources;
mod completion;
mod config;
mod contract;
mod fake_agent;
mod generated;
mod install;
mod loop_basics;
mod loop_control;
mod loop_failures;
mod loop_inputs;
mod loop_keys;
mod loop_output;
mod loop_strays;
mod output;
