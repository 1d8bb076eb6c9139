//! For a test file of its own in `tests/` (a `*_e2e.rs` not yet folded into
//! `tests/cli/`): `mod common;` gives it the one harness, `tests/harness/`.
//! Folding the file into `tests/cli/` as a module (see `tests/cli/main.rs`)
//! saves it a binary of its own; once no such file is left, this goes.

#[path = "../harness/mod.rs"]
mod harness;

pub use harness::*;
