//! `install.sh` into a temporary prefix. The build step runs a stand-in for
//! cargo that records its arguments and reports the binary this test crate
//! was built with (a real release build inside `cargo test` would wait on
//! cargo's own lock; CI runs the real one from `.ci/run`). Everything after
//! the build is real: the files land where git, man and the shells look, a
//! second run changes nothing, `--uninstall` removes it all, and the script
//! says what to do when cargo is missing or the bin directory is not on PATH.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::harness::{TestEnv, describe, ralph_path, required_tool, source_path};

pub(crate) const FAKE_CARGO: &str = r#"#!/bin/sh
# Stands in for cargo: records its arguments, answers `build` as cargo's JSON
# messages do.
printf '%s\n' "$*" >> "$FAKE_CARGO_LOG"
case "$1" in
  build)
    printf '{"reason":"compiler-artifact","target":{"name":"git-ralph"},"executable":"%s","fresh":true}\n' "$FAKE_CARGO_BINARY"
    printf '{"reason":"build-finished","success":true}\n'
    ;;
  *) echo "fake cargo: unexpected command $1" >&2; exit 101 ;;
esac
"#;

/// A PATH like the test's own, without any directory holding cargo.
pub(crate) fn path_without_cargo() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| !dir.join("cargo").exists())
        .collect()
}

pub(crate) fn join_path(dirs: &[PathBuf]) -> std::ffi::OsString {
    std::env::join_paths(dirs).unwrap_or_else(|err| panic!("join PATH: {err}"))
}

/// A [`TestEnv`] with a stand-in for cargo in `fake-bin/`.
struct Setup {
    env: TestEnv,
}

impl Setup {
    fn new() -> Setup {
        let setup = Setup {
            env: TestEnv::new(),
        };
        std::fs::create_dir_all(setup.fake_bin())
            .unwrap_or_else(|err| panic!("mkdir fake-bin: {err}"));
        let cargo = setup.fake_bin().join("cargo");
        std::fs::write(&cargo, FAKE_CARGO).unwrap_or_else(|err| panic!("write cargo: {err}"));
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|err| panic!("chmod cargo: {err}"));
        setup
    }

    fn prefix(&self) -> PathBuf {
        self.dir().join("prefix")
    }

    fn dir(&self) -> &Path {
        self.env.dir.path()
    }

    fn fake_bin(&self) -> PathBuf {
        self.dir().join("fake-bin")
    }

    fn cargo_log(&self) -> PathBuf {
        self.dir().join("cargo.log")
    }

    /// `install.sh ARGS` with PREFIX set, the fake cargo first on PATH and
    /// then `extra_path`.
    fn install_sh(&self, args: &[&str], extra_path: &[PathBuf], with_cargo: bool) -> Output {
        let mut path = Vec::new();
        if with_cargo {
            path.push(self.fake_bin());
        }
        path.extend_from_slice(extra_path);
        path.extend(path_without_cargo());
        let mut cmd = self.env.command(source_path("install.sh"), self.dir());
        cmd.args(args)
            .env("PATH", join_path(&path))
            .env("PREFIX", self.prefix())
            .env("FAKE_CARGO_LOG", self.cargo_log())
            .env("FAKE_CARGO_BINARY", ralph_path());
        for name in [
            "MANPATH",
            "XDG_DATA_HOME",
            "XDG_DATA_DIRS",
            "XDG_CONFIG_HOME",
            "BASH_COMPLETION_USER_DIR",
            "CARGO_TARGET_DIR",
        ] {
            cmd.env_remove(name);
        }
        cmd.output()
            .unwrap_or_else(|err| panic!("cannot run install.sh: {err}"))
    }

    fn install(&self) -> Output {
        let output = self.install_sh(&[], &[], true);
        assert!(
            output.status.success(),
            "install.sh failed: {}",
            describe(&output)
        );
        output
    }

    /// Every file under the prefix, with its mode and content.
    fn files(&self) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
        let mut files = BTreeMap::new();
        collect(&self.prefix(), &self.prefix(), &mut files);
        files
    }

    /// A command that finds the installed git-ralph on PATH.
    fn with_installed(&self, program: &str) -> Command {
        let mut path = vec![self.prefix().join("bin")];
        path.extend(path_without_cargo());
        let mut cmd = self.env.command(program, self.dir());
        cmd.env("PATH", join_path(&path))
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .env_remove("MANPATH")
            .env_remove("GIT_PAGER");
        cmd
    }
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, (u32, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            let mode = std::fs::metadata(&path)
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0);
            let content = std::fs::read(&path).unwrap_or_default();
            let rel = path
                .strip_prefix(root)
                .map(Path::to_path_buf)
                .unwrap_or(path);
            files.insert(rel, (mode, content));
        }
    }
}

fn read_source(rel: &str) -> Vec<u8> {
    let path = source_path(rel);
    std::fs::read(&path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

fn man_pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(source_path("man/man1"))
        .unwrap_or_else(|err| panic!("cannot list man/man1/: {err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".1"))
        .collect();
    pages.sort();
    pages
}

#[test]
fn installs_the_binary_man_pages_and_completions_where_they_are_found() {
    let setup = Setup::new();
    setup.install();

    let log = std::fs::read_to_string(setup.cargo_log()).unwrap_or_default();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["build --release --locked --bin git-ralph --message-format=json-render-diagnostics"],
        "install.sh ran cargo differently"
    );

    let files = setup.files();
    let (mode, content) = &files[Path::new("bin/git-ralph")];
    assert_eq!(*mode, 0o755);
    assert_eq!(*content, std::fs::read(ralph_path()).unwrap_or_default());
    let pages = man_pages();
    assert!(pages.contains(&"git-ralph.1".to_owned()), "{pages:?}");
    assert!(pages.contains(&"git-ralph-start.1".to_owned()), "{pages:?}");
    for page in &pages {
        let installed = &files[&Path::new("share/man/man1").join(page)];
        assert_eq!(installed.0, 0o644, "{page}");
        assert_eq!(
            installed.1,
            read_source(&format!("man/man1/{page}")),
            "{page}"
        );
    }
    for (installed, source) in [
        (
            "share/bash-completion/completions/git-ralph",
            "completions/git-ralph.bash",
        ),
        (
            "share/zsh/site-functions/_git-ralph",
            "completions/_git-ralph",
        ),
        (
            "share/fish/vendor_completions.d/git-ralph.fish",
            "completions/git-ralph.fish",
        ),
        (
            "share/fish/vendor_conf.d/git-ralph.fish",
            "completions/git-ralph.conf.fish",
        ),
    ] {
        let Some((mode, content)) = files.get(Path::new(installed)) else {
            panic!("{installed} was not installed; files: {:?}", files.keys());
        };
        assert_eq!(*mode, 0o644, "{installed}");
        assert_eq!(*content, read_source(source), "{installed}");
    }

    // git finds the extension on PATH.
    let output = setup
        .with_installed("git")
        .args(["ralph", "--version"])
        .output()
        .unwrap_or_else(|err| panic!("git ralph --version: {err}"));
    assert!(output.status.success(), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        describe(&output)
    );
}

/// `man` and git's `help` find the installed page, with no MANPATH: man
/// derives `<prefix>/share/man` from `<prefix>/bin` on PATH.
#[test]
fn git_help_ralph_and_git_ralph_help_show_the_man_page() {
    if required_tool("man").is_none() {
        return;
    }
    let setup = Setup::new();
    setup.install();

    let output = setup
        .with_installed("man")
        .args(["-w", "git-ralph"])
        .output()
        .unwrap_or_else(|err| panic!("man -w: {err}"));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        setup
            .prefix()
            .join("share/man/man1/git-ralph.1")
            .to_string_lossy(),
        "{}",
        describe(&output)
    );

    for args in [vec!["help", "ralph"], vec!["ralph", "--help"]] {
        let output = setup
            .with_installed("git")
            .args(&args)
            .output()
            .unwrap_or_else(|err| panic!("git {args:?}: {err}"));
        let page = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            describe(&output)
        );
        assert!(
            page.contains("GIT-RALPH(1)") && page.contains("EXIT STATUS"),
            "git {args:?} did not show the page: {}",
            describe(&output)
        );
    }
}

#[test]
fn a_second_install_changes_nothing_and_upgrades_cleanly() {
    let setup = Setup::new();
    let first_output = setup.install();
    let first = setup.files();
    let second_output = setup.install();
    assert_eq!(setup.files(), first, "a second install changed the files");
    assert_eq!(
        String::from_utf8_lossy(&second_output.stdout),
        String::from_utf8_lossy(&first_output.stdout)
    );

    // A page an older version installed, and that is gone now, is removed.
    let old_page = setup.prefix().join("share/man/man1/git-ralph-gone.1");
    std::fs::write(&old_page, ".TH GIT-RALPH-GONE 1\n").unwrap_or_else(|err| panic!("{err}"));
    let manifest = setup.prefix().join("share/git-ralph/installed-files");
    let mut listed = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", manifest.display()));
    listed.push_str(&format!("{}\n", old_page.display()));
    std::fs::write(&manifest, listed).unwrap_or_else(|err| panic!("{err}"));
    setup.install();
    assert!(!old_page.exists(), "the stale page survived an upgrade");
    assert_eq!(setup.files(), first);
}

#[test]
fn uninstall_removes_everything_it_installed_and_nothing_else() {
    let setup = Setup::new();
    let mine = setup.prefix().join("share/man/man1/other-tool.1");
    std::fs::create_dir_all(mine.parent().unwrap_or(Path::new("/")))
        .unwrap_or_else(|err| panic!("{err}"));
    std::fs::write(&mine, "not git-ralph's\n").unwrap_or_else(|err| panic!("{err}"));
    setup.install();
    assert!(setup.files().len() > 5);

    // Uninstalling needs no cargo.
    let output = setup.install_sh(&["--uninstall"], &[], false);
    assert!(output.status.success(), "{}", describe(&output));
    let left: Vec<PathBuf> = setup.files().into_keys().collect();
    assert_eq!(left, [PathBuf::from("share/man/man1/other-tool.1")]);

    let again = setup.install_sh(&["--uninstall"], &[], false);
    assert!(again.status.success(), "{}", describe(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("not installed"),
        "{}",
        describe(&again)
    );
}

fn hint_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.contains("is not on your PATH"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_one_line_hint_when_the_bin_directory_is_not_on_path() {
    let setup = Setup::new();
    let output = setup.install();
    let bin = setup.prefix().join("bin");
    let hints = hint_lines(&output);
    assert_eq!(hints.len(), 1, "{}", describe(&output));
    assert!(
        hints[0].contains(&format!("{}:$PATH", bin.display())),
        "the hint does not say what to add: {}",
        hints[0]
    );

    let output = setup.install_sh(&[], &[bin], true);
    assert!(output.status.success(), "{}", describe(&output));
    assert!(hint_lines(&output).is_empty(), "{}", describe(&output));
}

#[test]
fn without_cargo_it_fails_with_a_clear_message_and_installs_nothing() {
    let setup = Setup::new();
    let output = setup.install_sh(&[], &[], false);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: cargo was not found on PATH"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|line| line.starts_with("hint: ") && line.contains("rustup")),
        "{stderr}"
    );
    assert!(
        setup.files().is_empty(),
        "files were installed without cargo"
    );
}

#[test]
fn a_bad_argument_is_a_usage_error() {
    let setup = Setup::new();
    let output = setup.install_sh(&["--frobnicate"], &[], true);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .starts_with("error: unknown argument '--frobnicate'"),
        "{}",
        describe(&output)
    );
    assert!(
        !setup.cargo_log().exists(),
        "cargo ran on a bad command line"
    );

    let output = setup.install_sh(&["--help"], &[], true);
    assert!(output.status.success(), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("--uninstall"));
}

/// The checkout's own man pages work without installing: `man/` is laid
/// out as man expects (`man/man1/`), so `MANPATH=<checkout>/man` finds
/// them, and `git ralph --help` (git's own, which opens the page) shows
/// one while `git ralph -h` needs no page at all.
#[test]
fn issue_36_manpath_finds_the_pages_of_the_checkout() {
    if required_tool("man").is_none() {
        return;
    }
    let env = TestEnv::new();
    let bin = Path::new(ralph_path())
        .parent()
        .unwrap_or_else(|| panic!("{} has no directory", ralph_path()))
        .to_path_buf();
    let mut path = vec![bin];
    path.extend(path_without_cargo());
    let command = |program: &str, manpath: Option<PathBuf>| {
        let mut cmd = env.command(program, env.dir.path());
        cmd.env("PATH", join_path(&path))
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .env_remove("GIT_PAGER");
        match manpath {
            Some(dir) => cmd.env("MANPATH", dir),
            None => cmd.env("MANPATH", env.dir.path()),
        };
        cmd
    };
    let man = source_path("man");
    let output = command("man", Some(man.clone()))
        .args(["-w", "git-ralph-start"])
        .output()
        .unwrap_or_else(|err| panic!("man -w: {err}"));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        man.join("man1/git-ralph-start.1").to_string_lossy(),
        "{}",
        describe(&output)
    );
    let output = command("git", Some(man))
        .args(["ralph", "--help"])
        .output()
        .unwrap_or_else(|err| panic!("git ralph --help: {err}"));
    let page = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && page.contains("GIT-RALPH(1)"),
        "git ralph --help did not show the page: {}",
        describe(&output)
    );
    // Without any page, -h still answers.
    let output = command("git", None)
        .args(["ralph", "-h"])
        .output()
        .unwrap_or_else(|err| panic!("git ralph -h: {err}"));
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("Usage:"),
        "git ralph -h: {}",
        describe(&output)
    );
}
