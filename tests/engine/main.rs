//! The checkpoint engine through the library, judged by the git CLI: the
//! hand-written cases and the property tests, in one test binary.

#[path = "../harness/mod.rs"]
mod harness;

mod fixture;
mod git_engine;
mod git_props;
