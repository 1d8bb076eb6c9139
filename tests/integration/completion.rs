//! The committed completion scripts in real shells: bash with git's own
//! completion (`git ralph <TAB>` goes through git's `_git_ralph` hook) and
//! with bash-completion's on-demand loading from the directory install.sh
//! uses for the default prefix, an interactive bash on a terminal, and fish
//! when it is installed. Subcommands, options, option values and change names
//! are all checked.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::{TestRepo, required, source_path};

fn git_completion_script() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = [
        "/usr/share/bash-completion/completions/git",
        "/usr/local/share/bash-completion/completions/git",
        "/usr/share/git-core/contrib/completion/git-completion.bash",
        "/etc/bash_completion.d/git",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Ok(output) = Command::new("git").arg("--exec-path").output() {
        let exec_path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        candidates
            .push(exec_path.join("../../share/git-core/contrib/completion/git-completion.bash"));
    }
    required("git's bash completion script", &candidates)
}

fn bash_completion_framework() -> Option<PathBuf> {
    required(
        "bash-completion",
        &[
            PathBuf::from("/usr/share/bash-completion/bash_completion"),
            PathBuf::from("/usr/local/share/bash-completion/bash_completion"),
        ],
    )
}

/// A repository with changes `add-auth` and `fix-bug`, an archive, and a
/// recorded run `tidy-up`; git-ralph and its bash completion installed in
/// its HOME as install.sh does for the default prefix, `~/.local`.
fn setup() -> TestRepo {
    let repo = TestRepo::new();
    repo.openspec_change("add-auth", "## 1. Login\n\n- [ ] 1.1 Add a login form\n");
    repo.openspec_change("fix-bug", "## 1. Fix\n\n- [ ] 1.1 Fix it\n");
    repo.write(
        "openspec/changes/archive/2025-01-01-old/tasks.md",
        "- [x] done\n",
    );
    repo.write(".git/ralph/tidy-up/state.json", "{}\n");
    let local = repo.home().join(".local");
    let bin = local.join("bin");
    let completions = local.join("share/bash-completion/completions");
    for dir in [&bin, &completions] {
        std::fs::create_dir_all(dir).unwrap_or_else(|err| panic!("mkdir {}: {err}", dir.display()));
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_git-ralph"), bin.join("git-ralph"))
        .unwrap_or_else(|err| panic!("symlink: {err}"));
    std::fs::copy(
        source_path("completions/git-ralph.bash"),
        completions.join("git-ralph"),
    )
    .unwrap_or_else(|err| panic!("copy the bash completion: {err}"));
    repo
}

/// PATH with the installed git-ralph first.
fn path_with_install(repo: &TestRepo) -> std::ffi::OsString {
    let mut dirs = vec![repo.home().join(".local/bin")];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_else(|err| panic!("PATH: {err}"))
}

/// A shell in the repository with its locked environment and the install on
/// PATH.
fn shell(repo: &TestRepo, program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(&repo.root).stdin(Stdio::null());
    repo.lock(&mut cmd);
    for name in [
        "XDG_DATA_HOME",
        "XDG_DATA_DIRS",
        "BASH_COMPLETION_USER_DIR",
        "BASH_ENV",
        "ENV",
    ] {
        cmd.env_remove(name);
    }
    cmd.env("PATH", path_with_install(repo));
    cmd
}

/// Asks bash to complete each line as if TAB were pressed at its end, the
/// way readline calls the completion function registered for its command
/// (loading it on demand through bash-completion when `setup` is that).
/// Returns the sorted candidates of each line.
fn bash_complete(repo: &TestRepo, setup: &str, lines: &[&str]) -> Vec<Vec<String>> {
    let mut script = format!(
        r#"{setup}
__complete_line() {{
    local line=$1 spec func
    COMP_LINE=$line
    COMP_POINT=${{#line}}
    read -ra COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
    if ! complete -p "${{COMP_WORDS[0]}}" >/dev/null 2>&1; then
        declare -F _completion_loader >/dev/null && _completion_loader "${{COMP_WORDS[0]}}"
    fi
    spec=$(complete -p "${{COMP_WORDS[0]}}" 2>/dev/null) || {{ echo "RESULT"; return; }}
    func=${{spec#*-F }}
    func=${{func%% *}}
    COMPREPLY=()
    "$func" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
    printf 'RESULT'
    printf '\t%s' "${{COMPREPLY[@]}}"
    printf '\n'
}}
"#
    );
    for line in lines {
        script.push_str(&format!("__complete_line '{line}'\n"));
    }
    let output = shell(repo, "bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .output()
        .unwrap_or_else(|err| panic!("cannot run bash: {err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<Vec<String>> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("RESULT"))
        .map(|rest| {
            let mut words: Vec<String> = rest
                .split('\t')
                .map(|w| w.trim().to_owned())
                .filter(|w| !w.is_empty())
                .collect();
            words.sort();
            words
        })
        .collect();
    assert_eq!(
        results.len(),
        lines.len(),
        "bash did not complete every line:\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    results
}

fn words(list: &[&str]) -> Vec<String> {
    let mut words: Vec<String> = list.iter().map(|w| (*w).to_owned()).collect();
    words.sort();
    words
}

/// The subcommands and top-level flags, or the long options of subcommand
/// `sub`, as the command line defines them.
fn expected_words(sub: Option<&str>) -> Vec<String> {
    use clap::CommandFactory;
    // The completions leave out clap's `help` subcommand, as the man pages do.
    let mut cli = git_ralph::cli::Cli::command().disable_help_subcommand(true);
    cli.build();
    let mut words = Vec::new();
    match sub {
        None => {
            words.extend(
                cli.get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name().to_owned()),
            );
            words.extend(["-h", "-V", "--help", "--version"].map(str::to_owned));
        }
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                panic!("no subcommand {name}");
            };
            words.extend(
                sub.get_arguments()
                    .filter(|a| !a.is_hide_set())
                    .filter_map(|a| a.get_long())
                    .map(|long| format!("--{long}")),
            );
        }
    }
    words.sort();
    words
}

/// What every way of loading the bash completion must give.
fn assert_bash_completes(repo: &TestRepo, setup: &str) {
    let top = expected_words(None);
    let top: Vec<&str> = top.iter().map(String::as_str).collect();
    let finish = expected_words(Some("finish"));
    let finish: Vec<&str> = finish.iter().map(String::as_str).collect();
    let demo = expected_words(Some("demo"));
    let demo: Vec<&str> = demo.iter().map(String::as_str).collect();
    assert!(top.contains(&"start") && finish.contains(&"--cleanup") && demo.contains(&"--pace"));
    let cases: &[(&str, &[&str])] = &[
        ("git ralph st", &["start", "status"]),
        ("git ralph ", &top),
        ("git ralph start ", &["add-auth", "fix-bug", "tidy-up"]),
        ("git ralph status f", &["fix-bug"]),
        ("git ralph abort t", &["tidy-up"]),
        (
            "git ralph start --on-finish ",
            &["ask", "keep", "cleanup", "push", "pr"],
        ),
        ("git ralph start --agent-timeout 60 a", &["add-auth"]),
        ("git ralph finish add-auth --", &finish),
        (
            "git -C . ralph finish ",
            &["add-auth", "fix-bug", "tidy-up"],
        ),
        ("git-ralph st", &["start", "status"]),
        ("git-ralph finish ", &["add-auth", "fix-bug", "tidy-up"]),
        ("git-ralph demo --", &demo),
    ];
    let lines: Vec<&str> = cases.iter().map(|(line, _)| *line).collect();
    let results = bash_complete(repo, setup, &lines);
    for ((line, want), got) in cases.iter().zip(results) {
        assert_eq!(got, words(want), "completing {line:?} ({setup})");
    }
    // git lists the extension among its commands.
    let got = bash_complete(repo, setup, &["git ral"]);
    assert!(
        got[0].contains(&"ralph".to_owned()),
        "completing \"git ral\": {:?}",
        got[0]
    );
}

#[test]
fn bash_completion_loads_the_installed_file_for_git_ralph_and_git_ralph() {
    let Some(framework) = bash_completion_framework() else {
        return;
    };
    if git_completion_script().is_none() {
        return;
    }
    let repo = setup();
    // Nothing but bash-completion itself is sourced: git's completion and
    // git-ralph's are loaded on demand, as in an interactive shell.
    assert_bash_completes(&repo, &format!("source '{}'", framework.display()));
}

#[test]
fn bash_with_gits_completion_and_the_file_sourced() {
    let Some(git) = git_completion_script() else {
        return;
    };
    let repo = setup();
    let file = source_path("completions/git-ralph.bash");
    assert_bash_completes(
        &repo,
        &format!("source '{}'\nsource '{}'", git.display(), file.display()),
    );
}

#[test]
fn change_names_come_from_the_repository_the_shell_is_in() {
    let Some(git) = git_completion_script() else {
        return;
    };
    let repo = setup();
    let file = source_path("completions/git-ralph.bash");
    let setup = format!("source '{}'\nsource '{}'", git.display(), file.display());
    // A subdirectory of the worktree sees the same changes.
    let sub = repo.path("src/deep");
    std::fs::create_dir_all(&sub).unwrap_or_else(|err| panic!("{err}"));
    let in_sub = format!("{setup}\ncd '{}'", sub.display());
    let got = bash_complete(&repo, &in_sub, &["git ralph start "]);
    assert_eq!(got[0], words(&["add-auth", "fix-bug", "tidy-up"]));
    // Outside any repository there are none, and nothing breaks.
    let outside = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    let elsewhere = format!("{setup}\ncd '{}'", outside.path().display());
    let got = bash_complete(&repo, &elsewhere, &["git-ralph start --js"]);
    assert_eq!(got[0], words(&["--json"]));
}

/// An interactive bash on a terminal: typing `git ralph st` and TAB lists
/// `start` and `status`; `git ralph fin` and TAB completes to `finish`.
#[test]
fn interactive_bash_completes_git_ralph_on_a_terminal() {
    let Some(framework) = bash_completion_framework() else {
        return;
    };
    if git_completion_script().is_none() {
        return;
    }
    let repo = setup();
    let rc = repo.dir.path().join("bashrc");
    std::fs::write(
        &rc,
        format!(
            "PS1='READY$ '\nsource '{}'\nbind 'set show-all-if-ambiguous on'\nbind 'set bell-style none'\n",
            framework.display()
        ),
    )
    .unwrap_or_else(|err| panic!("write bashrc: {err}"));

    let pty = nix::pty::openpty(None, None).unwrap_or_else(|err| panic!("openpty: {err}"));
    let slave = || {
        pty.slave
            .try_clone()
            .unwrap_or_else(|err| panic!("dup: {err}"))
    };
    let mut cmd = shell(&repo, "bash");
    cmd.args(["--noprofile", "--rcfile"])
        .arg(&rc)
        .arg("-i")
        .env("TERM", "dumb")
        .env("INPUTRC", "/dev/null")
        .stdin(Stdio::from(slave()))
        .stdout(Stdio::from(slave()))
        .stderr(Stdio::from(slave()));
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run bash: {err}"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    drop(pty.slave);

    let master = std::fs::File::from(pty.master);
    let mut writer = master
        .try_clone()
        .unwrap_or_else(|err| panic!("dup: {err}"));
    let screen = Arc::new(Mutex::new(String::new()));
    let reader = {
        let screen = Arc::clone(&screen);
        let mut master = master;
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut screen) = screen.lock() {
                    screen.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        })
    };
    let wait_for = |what: &dyn Fn(&str) -> bool, since: usize, label: &str| -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = screen.lock().map(|s| s.clone()).unwrap_or_default();
            if text.len() > since && what(&text[since..]) {
                return text.len();
            }
            if Instant::now() > deadline {
                let _ = std::process::Command::new("kill")
                    .arg(child.id().to_string())
                    .status();
                panic!("the shell never showed {label}; the screen was:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut type_in = |keys: &str| {
        writer
            .write_all(keys.as_bytes())
            .and_then(|()| writer.flush())
            .unwrap_or_else(|err| panic!("typing {keys:?}: {err}"));
    };

    let at = wait_for(&|s| s.contains("READY$ "), 0, "its prompt");
    type_in("git ralph st\t");
    let at = wait_for(
        &|s| s.contains("start") && s.contains("status"),
        at,
        "start and status",
    );
    // Clear the line, then a unique prefix completes in place.
    type_in("\x15git ralph fin\t");
    let at = wait_for(&|s| s.contains("ish"), at, "finish completed");
    type_in("\t");
    wait_for(
        &|s| s.contains("add-auth") && s.contains("fix-bug") && s.contains("tidy-up"),
        at,
        "the change names",
    );
    type_in("\x15exit\n");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the shell did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(writer);
    let _ = reader.join();
}

/// fish, when installed: git-ralph's own completions from
/// vendor_completions.d, and `git ralph` through the vendor_conf.d hook.
#[test]
fn fish_completes_git_ralph_and_git_ralph_when_installed() {
    let has_fish = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("fish").is_file()));
    if !has_fish {
        eprintln!("note: fish is not installed; skipping this check");
        return;
    }
    let repo = setup();
    let data = repo.home().join(".local/share/fish");
    for (dir, from, to) in [
        (
            "vendor_completions.d",
            "completions/git-ralph.fish",
            "git-ralph.fish",
        ),
        (
            "vendor_conf.d",
            "completions/git-ralph.conf.fish",
            "git-ralph.fish",
        ),
    ] {
        std::fs::create_dir_all(data.join(dir)).unwrap_or_else(|err| panic!("{err}"));
        std::fs::copy(source_path(from), data.join(dir).join(to))
            .unwrap_or_else(|err| panic!("copy {from}: {err}"));
    }
    let cases: &[(&str, &[&str])] = &[
        ("git-ralph st", &["start", "status"]),
        ("git ralph st", &["start", "status"]),
        ("git ralph start ", &["add-auth", "fix-bug", "tidy-up"]),
        (
            "git ralph start --on-finish ",
            &["ask", "keep", "cleanup", "push", "pr"],
        ),
        ("git-ralph finish ", &["add-auth", "fix-bug", "tidy-up"]),
    ];
    for (line, want) in cases {
        let output = shell(&repo, "fish")
            .args(["-c", &format!("complete -C '{line}'")])
            .output()
            .unwrap_or_else(|err| panic!("cannot run fish: {err}"));
        let mut got: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_owned())
            .collect();
        got.sort();
        assert_eq!(
            got,
            words(want),
            "fish completing {line:?}; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// zsh, when installed: an interactive zsh on a terminal (driven through
/// zsh's own zpty module) with the file in $fpath, for `git-ralph` and, through
/// zsh's git completion, `git ralph`.
#[test]
fn zsh_completes_git_ralph_and_git_ralph_when_installed() {
    let has_zsh = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("zsh").is_file()));
    if !has_zsh {
        eprintln!("note: zsh is not installed; skipping this check");
        return;
    }
    let repo = setup();
    let functions = repo.home().join(".local/share/zsh/site-functions");
    std::fs::create_dir_all(&functions).unwrap_or_else(|err| panic!("{err}"));
    std::fs::copy(
        source_path("completions/_git-ralph"),
        functions.join("_git-ralph"),
    )
    .unwrap_or_else(|err| panic!("copy the zsh completion: {err}"));
    let driver = r#"
zmodload zsh/zpty || exit 3
zpty z 'zsh -f -i'
zpty -w z "PS1='READY> '; fpath=($FUNCTIONS \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "setopt autolist nolistambiguous; cd $REPO"
zpty -w -n z "$LINE"$'\t'
local screen= chunk
for i in {1..50}; do
    while zpty -r -t z chunk; do screen+=$chunk; done
    [[ $screen == *"$WANT"* ]] && break
    sleep 0.1
done
zpty -d z
print -r -- "$screen"
"#;
    let cases: &[(&str, &[&str])] = &[
        ("git-ralph st", &["start", "status"]),
        ("git ralph st", &["start", "status"]),
        ("git ralph start ", &["add-auth", "fix-bug", "tidy-up"]),
        ("git-ralph finish ", &["add-auth", "fix-bug", "tidy-up"]),
        (
            "git ralph start --on-finish ",
            &["ask", "keep", "cleanup", "push", "pr"],
        ),
    ];
    for (line, want) in cases {
        let output = shell(&repo, "zsh")
            .args(["-f", "-c", driver])
            .env("FUNCTIONS", &functions)
            .env("REPO", &repo.root)
            .env("LINE", line)
            .env("WANT", want[want.len() - 1])
            .output()
            .unwrap_or_else(|err| panic!("cannot run zsh: {err}"));
        let screen = String::from_utf8_lossy(&output.stdout);
        // What follows the typed line: the listing of the candidates.
        let listing = screen
            .split_once(line)
            .map(|(_, rest)| rest)
            .unwrap_or_default();
        for word in *want {
            assert!(
                listing.contains(word),
                "zsh completing {line:?} did not offer {word}:\n{screen}"
            );
        }
    }
}

/// The zsh script, when zsh is installed, at least parses.
#[test]
fn zsh_script_parses_when_zsh_is_installed() {
    let Ok(output) = Command::new("zsh")
        .args(["-n", "-f"])
        .arg(source_path("completions/_git-ralph"))
        .output()
    else {
        eprintln!("note: zsh is not installed; skipping this check");
        return;
    };
    assert!(
        output.status.success(),
        "zsh -n: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
