//! For a test file of its own in `tests/` (a `*_e2e.rs` not yet folded
//! into `tests/integration/`): `mod common;` gives it the one harness.
//! Folding the file into `tests/integration/` as a module (see its
//! `main.rs`) saves it a binary of its own; once no such file is left, this
//! goes.

#[path = "../integration/harness/mod.rs"]
mod harness;

pub use harness::*;
