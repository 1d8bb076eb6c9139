//! A benchmark re-run in a locked-down environment: an empty HOME and git
//! config, a fixed author and locale, only the variables it names passed
//! through, in a temporary directory removed afterwards (or kept, with
//! `RALPH_BENCH_KEEP=1`, for `RALPH_BENCH_REUSE`). Shared by the benchmarks
//! that time git-ralph against the git CLI, so that both sides see the
//! same machine.

use std::fs;
use std::process::Command;
use std::time::Instant;

/// Set in the re-run, to the temporary directory.
pub const SEALED: &str = "RALPH_BENCH_SEALED";
pub const NAME: &str = "Ralph Bench";
pub const EMAIL: &str = "bench@example.invalid";

/// Re-execute this benchmark sealed, its directory named after `prefix`,
/// passing `passed` (with `PATH`) and `extra` variables through; returns
/// its exit code.
pub fn rerun(prefix: &str, passed: &[&str], extra: &[(&str, &str)]) -> i32 {
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .expect("could not create a temporary directory under /tmp");
    let home = dir.path().join("home");
    fs::create_dir_all(&home).expect("could not create the sealed HOME");
    let global = dir.path().join("gitconfig");
    fs::write(&global, "").expect("could not create the empty global config");
    let mut command =
        Command::new(std::env::current_exe().expect("could not find the benchmark executable"));
    command.args(std::env::args_os().skip(1)).env_clear();
    for name in ["PATH"].iter().chain(passed) {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", &global)
        .env("LC_ALL", "C")
        .env("GIT_AUTHOR_NAME", NAME)
        .env("GIT_AUTHOR_EMAIL", EMAIL)
        .env("GIT_COMMITTER_NAME", NAME)
        .env("GIT_COMMITTER_EMAIL", EMAIL)
        .envs(extra.iter().copied())
        .env(SEALED, dir.path());
    let status = command.status().expect("could not re-run the benchmark");
    if std::env::var_os("RALPH_BENCH_KEEP").is_some_and(|v| v == "1") {
        let kept = dir.keep();
        eprintln!(
            "kept the repository: RALPH_BENCH_REUSE={}",
            kept.join("repo").display()
        );
    } else {
        eprintln!("removing {}", dir.path().display());
        drop(dir);
    }
    eprintln!("bench took {:.1}s", started.elapsed().as_secs_f64());
    status.code().unwrap_or(1)
}
