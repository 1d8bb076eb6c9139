//! What a user installs: a binary that names the commit it was built from,
//! in `--version` and in an internal error's report, and (once installed by
//! `install.sh`) carries no debug information and stays a sensible size.
//!
//! The size is judged on the binary a real `install.sh` put in place:
//! `.ci/run` installs into a temporary prefix and then runs this module
//! again with `GIT_RALPH_INSTALLED_PREFIX` naming it. Without the variable
//! (a plain `cargo test`), the installed-binary test says so and checks
//! nothing; the other tests judge the binary under test.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{TestEnv, describe, git_in, ralph_path, source_path};

/// The largest binary `install.sh` may install (25 MB).
const LARGEST_INSTALLED: u64 = 25_000_000;

/// The commit the checkout under test is at.
fn checkout_commit() -> String {
    git_in(&source_path(""), &["rev-parse", "HEAD"])
        .trim()
        .to_owned()
}

fn version_of(binary: &Path) -> String {
    let env = TestEnv::new();
    let output = env
        .command(binary, env.dir.path())
        .arg("--version")
        .output()
        .unwrap_or_else(|err| panic!("{} --version: {err}", binary.display()));
    assert!(output.status.success(), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// What `binary` prints when a bug trips at the start of a command.
fn internal_error_of(binary: &Path) -> (Option<i32>, String) {
    let env = TestEnv::new();
    let repo = env.dir.path().join("repo");
    env.git_at(env.dir.path(), &["init", "-q", "repo"]);
    let mut cmd: Command = env.command(binary, &repo);
    let output = cmd
        .arg("status")
        .env("GIT_RALPH_PANIC_AT", "command")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap_or_else(|err| panic!("{} status: {err}", binary.display()));
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn expected_version() -> String {
    format!(
        "git-ralph {} (commit {})",
        env!("CARGO_PKG_VERSION"),
        checkout_commit()
    )
}

#[test]
fn issue_50_version_names_the_commit_it_was_built_from() {
    assert_eq!(version_of(Path::new(ralph_path())), expected_version());
}

#[test]
fn issue_50_an_internal_error_names_the_version_and_commit() {
    let (code, stderr) = internal_error_of(Path::new(ralph_path()));
    assert_internal_error_report(code, &stderr);
}

fn assert_internal_error_report(code: Option<i32>, stderr: &str) {
    assert_eq!(code, Some(70), "{stderr}");
    assert!(
        stderr.contains("this is a bug in git-ralph") && stderr.contains("(at src/lib.rs:"),
        "the report lost what panicked, or where:\n{stderr}"
    );
    assert!(
        stderr.contains(&expected_version()),
        "the report does not name the version and commit ({}):\n{stderr}",
        expected_version()
    );
}

/// The binary `install.sh` put under `GIT_RALPH_INSTALLED_PREFIX`, if
/// `.ci/run` names one.
fn installed_binary() -> Option<PathBuf> {
    let prefix = std::env::var_os("GIT_RALPH_INSTALLED_PREFIX")?;
    let binary = PathBuf::from(prefix).join("bin/git-ralph");
    assert!(binary.is_file(), "{} was not installed", binary.display());
    Some(binary)
}

/// The names of `binary`'s ELF sections, read from its section header
/// table (64-bit little-endian, as every Linux build here is).
fn elf_sections(binary: &Path) -> Vec<String> {
    let bytes = std::fs::read(binary).unwrap_or_else(|err| panic!("read: {err}"));
    assert_eq!(&bytes[..4], b"\x7fELF", "not an ELF file");
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
    let u32_at =
        |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default()) as usize;
    let u64_at =
        |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default()) as usize;
    let (table, entry, count, names) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let names_offset = u64_at(table + names * entry + 0x18);
    (0..count)
        .map(|index| {
            let start = names_offset + u32_at(table + index * entry);
            let end = start
                + bytes[start..]
                    .iter()
                    .position(|byte| *byte == 0)
                    .unwrap_or(0);
            String::from_utf8_lossy(&bytes[start..end]).into_owned()
        })
        .collect()
}

#[test]
fn issue_50_the_installed_binary_is_small_and_still_reports_its_commit() {
    let Some(binary) = installed_binary() else {
        eprintln!(
            "note: GIT_RALPH_INSTALLED_PREFIX is not set; .ci/run checks the installed binary"
        );
        return;
    };
    let size = std::fs::metadata(&binary)
        .unwrap_or_else(|err| panic!("{}: {err}", binary.display()))
        .len();
    assert!(
        size <= LARGEST_INSTALLED,
        "the installed binary is {size} bytes, over {LARGEST_INSTALLED}"
    );
    let debug: Vec<String> = elf_sections(&binary)
        .into_iter()
        .filter(|name| name.starts_with(".debug_"))
        .collect();
    assert!(debug.is_empty(), "the installed binary carries {debug:?}");
    assert_eq!(version_of(&binary), expected_version());
    let (code, stderr) = internal_error_of(&binary);
    assert_internal_error_report(code, &stderr);
    eprintln!("the installed binary: {size} bytes");
}
