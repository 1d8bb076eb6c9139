//! Fixture repositories for the engine tests, built and judged with the git
//! CLI in a locked-down environment (no system or global config, fixed
//! identities and dates, C locale, UTC).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    home: PathBuf,
}

/// A `git` command with the locked-down environment.
pub fn git_command(home: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    cmd.current_dir(cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
        .env("HOME", home)
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env("LC_ALL", "C")
        .env("TZ", "UTC");
    cmd
}

pub fn run_git(home: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = git_command(home, cwd)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
}

impl Fixture {
    /// A repository on `main` with one commit holding a mix of files: plain,
    /// executable, a symlink, nested directories, and a .gitignore.
    pub fn new() -> Fixture {
        let fx = Fixture::empty();
        fx.write(".gitignore", "*.log\ntarget/\n");
        fx.write("src/a.txt", "original a\n");
        fx.write("docs/keep.txt", "keep\n");
        fx.write("docs/remove-me.txt", "remove me\n");
        fx.write("run.sh", "#!/bin/sh\necho hi\n");
        fx.chmod_x("run.sh", true);
        fx.symlink("src/a.txt", "link");
        fx.git(&["add", "-A"]);
        fx.git(&["commit", "-q", "-m", "initial"]);
        fx
    }

    /// An empty repository: unborn `main`.
    pub fn empty() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(home.join("gitconfig"), "").unwrap();
        let fx = Fixture {
            _dir: dir,
            root,
            home,
        };
        fx.git(&["init", "-q", "-b", "main"]);
        // gix reads identity from config, not from the test's environment.
        fx.git(&["config", "user.name", "Test Committer"]);
        fx.git(&["config", "user.email", "committer@example.com"]);
        fx
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn git(&self, args: &[&str]) -> String {
        run_git(&self.home, &self.root, args)
    }

    pub fn git_ok(&self, args: &[&str]) -> bool {
        git_command(&self.home, &self.root)
            .args(args)
            .output()
            .expect("git runs")
            .status
            .success()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn remove(&self, rel: &str) {
        let path = self.path(rel);
        if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }

    pub fn chmod_x(&self, rel: &str, executable: bool) {
        use std::os::unix::fs::PermissionsExt;
        let mode = if executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    pub fn is_executable(&self, rel: &str) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(self.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o111
            != 0
    }

    pub fn symlink(&self, target: &str, rel: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }

    pub fn readlink(&self, rel: &str) -> String {
        std::fs::read_link(self.path(rel))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    pub fn mtime(&self, rel: &str) -> std::time::SystemTime {
        std::fs::metadata(self.path(rel))
            .unwrap()
            .modified()
            .unwrap()
    }

    /// A repository with one commit inside this worktree.
    pub fn nested_repo(&self, rel: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(&path).unwrap();
        run_git(&self.home, &path, &["init", "-q", "-b", "main"]);
        std::fs::write(path.join("inner.txt"), "inner\n").unwrap();
        run_git(&self.home, &path, &["add", "-A"]);
        run_git(&self.home, &path, &["commit", "-q", "-m", "inner"]);
    }

    /// `git status --porcelain` with every untracked file listed.
    pub fn status(&self) -> String {
        self.git(&["status", "--porcelain", "-uall"])
    }

    pub fn reflog(&self, n: usize) -> Vec<String> {
        self.git(&["reflog", "-n", &n.to_string(), "--format=%gs"])
            .lines()
            .map(ToOwned::to_owned)
            .collect()
    }

    pub fn index_bytes(&self) -> Vec<u8> {
        std::fs::read(self.root.join(".git/index")).unwrap_or_default()
    }

    pub fn assert_fsck_clean(&self) {
        let out = git_command(&self.home, &self.root)
            .args(["fsck", "--strict", "--no-progress"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "git fsck failed:\n{stderr}");
        assert!(
            !stderr.contains("error") && !stderr.contains("warning"),
            "git fsck complained:\n{stderr}"
        );
    }

    /// What git would snapshot: `git add -A && git write-tree` on a copy of
    /// the worktree and its .git, so the original stays untouched.
    pub fn oracle_tree(&self) -> String {
        let copy = tempfile::tempdir().unwrap();
        let status = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", self.root.display()))
            .arg(copy.path())
            .status()
            .unwrap();
        assert!(status.success());
        run_git(&self.home, copy.path(), &["add", "-A"]);
        run_git(&self.home, copy.path(), &["write-tree"])
    }
}

impl Fixture {
    /// Every file under the repository root, `.git` included: path, mode and
    /// content. Two equal snapshots mean the disk is byte-identical.
    pub fn disk_snapshot(&self) -> std::collections::BTreeMap<PathBuf, (u32, Vec<u8>)> {
        use std::os::unix::fs::PermissionsExt;
        let mut out = std::collections::BTreeMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                let path = entry.path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                let rel = path.strip_prefix(&self.root).unwrap().to_owned();
                if meta.is_dir() {
                    out.insert(rel, (meta.permissions().mode(), Vec::new()));
                    stack.push(path);
                } else if meta.is_symlink() {
                    let target = std::fs::read_link(&path).unwrap();
                    out.insert(
                        rel,
                        (0o120000, target.to_string_lossy().as_bytes().to_vec()),
                    );
                } else {
                    out.insert(
                        rel,
                        (meta.permissions().mode(), std::fs::read(&path).unwrap()),
                    );
                }
            }
        }
        out
    }
}
