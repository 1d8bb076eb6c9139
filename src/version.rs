//! What git-ralph says of itself: its version and the commit it was built
//! from (named by `build.rs`), so that `git ralph --version` and an internal
//! error's report point at exact code, whether or not the installed binary
//! still carries its debug information.

/// The release, then the commit: `0.1.0 (commit 6590fc1…)`, as
/// `--version` prints it after the program's name.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("GIT_RALPH_COMMIT"),
    ")"
);

/// The commit git-ralph was built from, 40 hexadecimal digits, or
/// `unknown` for a build outside a git checkout.
pub const COMMIT: &str = env!("GIT_RALPH_COMMIT");
