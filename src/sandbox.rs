//! `--sandbox`: the agent runs under bubblewrap, with the git directory
//! read-only. Containment after the attempt undoes what an agent did to
//! `.git`; the sandbox stops it from doing it at all, so that not even a
//! hook that runs before the attempt ends (an agent's own `git commit`)
//! can fire.
//!
//! What it protects: the repository's git directory (and the common one
//! of a linked worktree), so no hook, config, ref or object can be written
//! by the agent, and the user's global git configuration. What it does not:
//! the rest of the file system stays as writable as it is for the user
//! (the agent needs its own config, caches and temporary files), the
//! network is untouched, and processes outside are visible. It is a seat
//! belt for the repository, not a jail.
//!
//! This module only builds the command line; `process` runs it.

use std::path::{Path, PathBuf};

/// The program that runs the sandbox.
pub const BWRAP: &str = "bwrap";

/// Why the sandbox cannot be used here.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SandboxError {
    #[error(
        "--sandbox runs the agent under bubblewrap, which is not installed ('bwrap' is not on PATH)"
    )]
    NotInstalled,
    #[error("--sandbox needs Linux (bubblewrap); this is {os}")]
    Unsupported { os: &'static str },
}

impl SandboxError {
    pub fn hint(&self) -> String {
        match self {
            SandboxError::NotInstalled => {
                "install it (Debian and Ubuntu: 'apt install bubblewrap'; Fedora: 'dnf install bubblewrap'), or run without --sandbox (ralph.sandbox = false)".into()
            }
            SandboxError::Unsupported { .. } => {
                "run without --sandbox; containment still undoes what an agent changes in .git".into()
            }
        }
    }
}

/// Whether the sandbox can run here: Linux, with `bwrap` on PATH.
pub fn check() -> Result<(), SandboxError> {
    if std::env::consts::OS != "linux" {
        return Err(SandboxError::Unsupported {
            os: std::env::consts::OS,
        });
    }
    if !crate::process::is_runnable(BWRAP) {
        return Err(SandboxError::NotInstalled);
    }
    Ok(())
}

/// What the agent may and may not write under the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Read-only to the agent: the git directories.
    pub read_only: Vec<PathBuf>,
    /// Writable again inside a read-only one: the learnings file the
    /// agent is asked to append to.
    pub writable: Vec<PathBuf>,
}

impl Sandbox {
    /// `program args…` wrapped in bubblewrap: the whole file system as it
    /// is, then each read-only path bound over itself read-only, then each
    /// writable path bound back. Paths that do not exist are left out, as
    /// bubblewrap refuses to bind them.
    pub fn wrap(&self, program: &str, args: &[String]) -> (String, Vec<String>) {
        let mut wrapped: Vec<String> = ["--die-with-parent", "--dev-bind", "/", "/"]
            .map(str::to_owned)
            .to_vec();
        let bind = |flag: &str, path: &Path, out: &mut Vec<String>| {
            if path.exists() {
                let path = path.to_string_lossy().into_owned();
                out.extend([flag.to_owned(), path.clone(), path]);
            }
        };
        for path in &self.read_only {
            bind("--ro-bind", path, &mut wrapped);
        }
        for path in &self.writable {
            bind("--bind", path, &mut wrapped);
        }
        wrapped.push("--".to_owned());
        wrapped.push(program.to_owned());
        wrapped.extend(args.iter().cloned());
        (BWRAP.to_owned(), wrapped)
    }
}

/// The user's global git configuration files that exist, to be made
/// read-only too.
pub fn global_git_config() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(path) = std::env::var_os("GIT_CONFIG_GLOBAL") {
        files.push(PathBuf::from(path));
    } else if let Some(home) = std::env::var_os("HOME") {
        files.push(Path::new(&home).join(".gitconfig"));
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")));
    if let Some(xdg) = xdg {
        files.push(xdg.join("git/config"));
    }
    files.retain(|path| path.is_file());
    files
}

/// A line of the agent's output that says the sandbox refused a write
/// into one of `dirs`.
pub fn refused_write<'a>(output: &'a str, dirs: &[PathBuf]) -> Option<&'a str> {
    output.lines().find(|line| {
        line.contains("Read-only file system")
            && (line.contains(".git")
                || dirs
                    .iter()
                    .any(|dir| line.contains(dir.to_string_lossy().as_ref())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_dir_is_bound_read_only_and_the_learnings_file_back() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("ralph")).unwrap();
        let learnings = git.join("ralph/learnings.md");
        std::fs::write(&learnings, "").unwrap();
        let sandbox = Sandbox {
            read_only: vec![git.clone(), dir.path().join("missing")],
            writable: vec![learnings.clone()],
        };
        let (program, args) = sandbox.wrap("claude", &["-p".to_owned()]);
        assert_eq!(program, "bwrap");
        let git = git.to_string_lossy().into_owned();
        let learnings = learnings.to_string_lossy().into_owned();
        assert_eq!(
            args,
            [
                "--die-with-parent",
                "--dev-bind",
                "/",
                "/",
                "--ro-bind",
                &git,
                &git,
                "--bind",
                &learnings,
                &learnings,
                "--",
                "claude",
                "-p"
            ]
        );
    }

    #[test]
    fn a_refused_write_is_found_in_the_output() {
        let out = "working\nfake-agent: cannot write .git/hooks/pre-commit: Read-only file system (os error 30)\n";
        assert_eq!(
            refused_write(out, &[]),
            Some(
                "fake-agent: cannot write .git/hooks/pre-commit: Read-only file system (os error 30)"
            )
        );
        assert_eq!(refused_write("tmp: Read-only file system", &[]), None);
    }
}
