//! Fixture repositories for the engine tests, built and judged with the git
//! CLI in a locked-down environment (no system or global config, fixed
//! identities and dates, C locale, UTC).

#![allow(dead_code)]

use std::collections::BTreeMap;

/// A [`crate::harness::TestRepo`] with the engine tests' helpers on top.
pub struct Fixture {
    repo: crate::harness::TestRepo,
}

impl std::ops::Deref for Fixture {
    type Target = crate::harness::TestRepo;

    fn deref(&self) -> &crate::harness::TestRepo {
        &self.repo
    }
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
        let fx = Fixture {
            repo: crate::harness::TestRepo::empty(),
        };
        // gix reads identity from config, not from the test's environment.
        fx.git(&["config", "user.name", "Test Committer"]);
        fx.git(&["config", "user.email", "committer@example.com"]);
        fx
    }

    /// Runs git in the worktree; stdout without its trailing newline.
    pub fn git(&self, args: &[&str]) -> String {
        self.repo.git(args).trim_end().to_owned()
    }

    /// Runs git in another repository (a nested or linked one) with this
    /// environment; stdout without its trailing newline.
    pub fn git_at(&self, dir: &std::path::Path, args: &[&str]) -> String {
        self.repo.git_at(dir, args).trim_end().to_owned()
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
        self.git_at(&path, &["init", "-q", "-b", "main"]);
        std::fs::write(path.join("inner.txt"), "inner\n").unwrap();
        self.git_at(&path, &["add", "-A"]);
        self.git_at(&path, &["commit", "-q", "-m", "inner"]);
    }

    /// `git status --porcelain` with every untracked file listed.
    pub fn status(&self) -> String {
        self.status_porcelain().trim_end().to_owned()
    }

    pub fn index_bytes(&self) -> Vec<u8> {
        std::fs::read(self.root.join(".git/index")).unwrap_or_default()
    }

    /// What git would snapshot: `git add -A && git write-tree` on a copy.
    pub fn oracle_tree(&self) -> String {
        self.write_tree_of_worktree_copy()
    }
}

impl Fixture {
    /// Every file under the repository root, `.git` included: path, mode and
    /// content. Two equal snapshots mean the disk is byte-identical.
    pub fn disk_snapshot(&self) -> BTreeMap<String, (u32, Vec<u8>)> {
        crate::harness::disk_snapshot(&self.root)
    }
}

impl Fixture {
    /// Set every directory's mtime (`.git` aside) an hour back, so that the
    /// next full scan may keep what it read of them.
    pub fn age_directories(&self) {
        age_directories(&self.root);
    }

    /// Set every regular file's mtime (`.git` aside) an hour back, and let
    /// git refresh the index: entries then hold stat data older than the
    /// index, which a full scan may trust.
    pub fn age_files(&self) {
        age_files(&self.root);
        self.git(&["status", "--porcelain"]);
    }

    /// Set the mtime of directory `rel` to `mtime`.
    pub fn set_dir_mtime(&self, rel: &str, mtime: std::time::SystemTime) {
        std::fs::File::open(self.path(rel))
            .and_then(|dir| dir.set_modified(mtime))
            .unwrap_or_else(|err| panic!("could not set the mtime of {rel}: {err}"));
    }
}

/// Set the mtime of `dir` and every directory below it (`.git` aside) an
/// hour back.
pub fn age_directories(dir: &std::path::Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in std::fs::read_dir(dir).expect("could not list a directory") {
        let entry = entry.expect("could not list a directory");
        if entry.file_name() != ".git" && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            age_directories(&entry.path());
        }
    }
    std::fs::File::open(dir)
        .and_then(|handle| handle.set_modified(old))
        .unwrap_or_else(|err| panic!("could not age {}: {err}", dir.display()));
}

fn age_files(dir: &std::path::Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for entry in std::fs::read_dir(dir).expect("could not list a directory") {
        let entry = entry.expect("could not list a directory");
        let kind = entry.file_type().expect("could not stat an entry");
        if entry.file_name() == ".git" {
            continue;
        }
        if kind.is_dir() {
            age_files(&entry.path());
        } else if kind.is_file() {
            std::fs::File::options()
                .append(true)
                .open(entry.path())
                .and_then(|file| file.set_modified(old))
                .unwrap_or_else(|err| panic!("could not age {}: {err}", entry.path().display()));
        }
    }
}
