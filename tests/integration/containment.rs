//! Issue 20, end to end: the agent cannot arm the git directory. Whatever
//! an attempt changes in `.git` that can run code or change what git does
//! as the user (hooks, config, info/, the run's own contract) is undone
//! after the attempt and reported by path; a change that could execute
//! code also fails the attempt. `--sandbox` makes the git directory
//! read-only to the agent.

use std::fs;
use std::path::Path;

use crate::harness::story_run::*;
use crate::harness::*;

/// Every file under `dir` with a digest of its content.
fn files_under(dir: &Path) -> Vec<(String, u64)> {
    use std::hash::{Hash, Hasher};
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            fs::read(&path).unwrap_or_default().hash(&mut hasher);
            files.push((path.to_string_lossy().into_owned(), hasher.finish()));
        }
    }
    files.sort();
    files
}

/// What of the git directory an attempt must not change, as it stands.
fn armour(repo: &TestRepo) -> Vec<(String, u64)> {
    let git = git_dir(repo);
    let mut files = files_under(&git.join("hooks"));
    files.extend(files_under(&git.join("info")));
    for name in ["config", "config.worktree"] {
        files.extend(
            files_under(&git)
                .into_iter()
                .filter(|(path, _)| path.ends_with(&format!("/{name}"))),
        );
    }
    files
}

/// A run whose first attempt at story 1 does its work and also `arm`s the
/// git directory; every later attempt does its story cleanly.
fn run_with(arm: &str) -> (TestRepo, std::process::Output, Vec<(String, u64)>) {
    let repo = project(TWO_STORIES);
    let before = armour(&repo);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\n{arm}\n{}[story=1]\n{}{}",
            finish_story("1"),
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    (repo, output, before)
}

/// The run undid the change, reported `path`, and (when `executes`) failed
/// the attempt with a reason naming it.
fn assert_contained(arm: &str, path: &str, executes: bool) {
    let (repo, output, before) = run_with(arm);
    assert_exit(&output, 0);
    assert_eq!(armour(&repo), before, "the change is undone: {arm}");
    let attempts = attempts_of(&state(&repo), "1");
    if executes {
        assert_eq!(attempts.len(), 2, "{attempts:?}");
        assert_eq!(attempts[0].0, "rejected", "{attempts:?}");
        assert!(
            attempts[0].1.contains(path) && attempts[0].1.contains("could run code"),
            "the reason names {path}: {attempts:?}"
        );
        assert!(has_ref(&repo, &format!("{NS}/attempts/1/1")));
    } else {
        assert_eq!(attempts.len(), 1, "{attempts:?}");
        assert_eq!(attempts[0].0, "complete", "{attempts:?}");
    }
    // Reported by path in the events, the console, status and log.
    let events = events(&repo);
    let changed = of_type(&events, "git_dir_changed");
    assert!(
        changed
            .iter()
            .any(|event| event["what"].as_str().is_some_and(|w| w.contains(path))),
        "an event names {path}: {changed:?}"
    );
    let said = format!("undone: the agent changed .git/{path}");
    assert!(
        stdout(&output).contains(&said),
        "{said}\n{}",
        stdout(&output)
    );
    assert!(
        stdout(&output).contains(&format!(
            "beyond its story: story 1 attempt 1 changed .git/{path}"
        )),
        "the final summary names it: {}",
        stdout(&output)
    );
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(status.contains(&format!(".git/{path}")), "{status}");
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(log.contains(&format!(".git/{path}")), "{log}");
    repo.assert_fsck_clean();
}

macro_rules! vector {
    ($name:ident, $arm:expr, $path:expr, $executes:expr) => {
        #[test]
        fn $name() {
            assert_contained($arm, $path, $executes);
        }
    };
}

vector!(
    issue_20_a_hook_is_undone_and_fails_the_attempt,
    "write .git/hooks/pre-commit #!/bin/sh\\ntouch pwned\\n\nchmod +x .git/hooks/pre-commit",
    "hooks/pre-commit",
    true
);
vector!(
    issue_20_core_hooks_path_is_undone_and_fails_the_attempt,
    "git config core.hooksPath /tmp/evil-hooks",
    "config (core.hooksPath)",
    true
);
vector!(
    issue_20_core_fsmonitor_is_undone_and_fails_the_attempt,
    "git config core.fsmonitor 'touch pwned'",
    "config (core.fsmonitor)",
    true
);
vector!(
    issue_20_core_ssh_command_is_undone_and_fails_the_attempt,
    "git config core.sshCommand 'sh -c \"touch pwned\"'",
    "config (core.sshCommand)",
    true
);
vector!(
    issue_20_a_shell_alias_is_undone_and_fails_the_attempt,
    "git config alias.st '!touch pwned; git status'",
    "config (alias.st)",
    true
);
vector!(
    issue_20_a_filter_driver_is_undone_and_fails_the_attempt,
    "git config filter.evil.clean 'sh -c \"touch pwned; cat\"'",
    "config (filter.evil.clean)",
    true
);
vector!(
    issue_20_a_diff_driver_is_undone_and_fails_the_attempt,
    "git config diff.evil.textconv 'touch pwned; cat'",
    "config (diff.evil.textconv)",
    true
);
vector!(
    issue_20_a_merge_driver_is_undone_and_fails_the_attempt,
    "git config merge.evil.driver 'touch pwned'",
    "config (merge.evil.driver)",
    true
);
vector!(
    issue_20_a_credential_helper_is_undone_and_fails_the_attempt,
    "git config credential.helper '!touch pwned'",
    "config (credential.helper)",
    true
);
vector!(
    issue_20_an_include_is_undone_and_fails_the_attempt,
    "write ../evil.gitconfig [core]\\n\\thooksPath = /tmp/evil\\n\ngit config include.path ../../evil.gitconfig",
    "config (include.path)",
    true
);
vector!(
    issue_20_an_include_if_is_undone_and_fails_the_attempt,
    "git config includeIf.gitdir:/.path /tmp/evil.gitconfig",
    "config (includeIf.gitdir:/.path)",
    true
);
vector!(
    issue_20_config_worktree_is_undone_and_fails_the_attempt,
    "write .git/config.worktree [core]\\n\\thooksPath = /tmp/evil\\n",
    "config.worktree",
    true
);
vector!(
    issue_20_info_exclude_is_undone_and_reported,
    "append .git/info/exclude secret-output/\\n",
    "info/exclude",
    false
);
vector!(
    issue_20_info_attributes_is_undone_and_reported,
    "write .git/info/attributes *.txt -diff\\n",
    "info/attributes",
    false
);
vector!(
    issue_20_a_harmless_config_key_is_undone_and_reported,
    "git config user.name 'The Agent'",
    "config (user.name)",
    false
);

#[test]
fn issue_20_the_runs_own_contract_cannot_be_rewritten_by_the_agent() {
    let repo = project(TWO_STORIES);
    let contract = run_dir(&repo).join("contract.json");
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite .git/ralph/{CHANGE}/contract.json {{}}\n{}[story=1]\n{}{}",
            finish_story("1"),
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep", "--check", "true"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts[0].0, "rejected", "{attempts:?}");
    assert!(attempts[0].1.contains("contract.json"), "{attempts:?}");
    let snapshot = fs::read_to_string(&contract).expect("the contract snapshot");
    assert!(snapshot.contains("true"), "restored: {snapshot}");
}

#[test]
fn issue_20_under_sandbox_the_git_directory_is_read_only_to_the_agent() {
    if !std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        // CI installs bubblewrap; a machine without it tests the refusal.
        eprintln!("bwrap is not installed: the sandbox itself is not tested here");
        return;
    }
    let repo = project(TWO_STORIES);
    let before = armour(&repo);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nformat claude\nsay I will add a hook.\nwrite story-1.txt one\\n\nwrite .git/hooks/pre-commit #!/bin/sh\\n\n[story=1]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep", "--sandbox"]);
    assert_exit(&output, 0);
    assert_eq!(armour(&repo), before);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_ne!(attempts[0].0, "complete");
    assert!(
        stdout(&output).contains("the sandbox refused a write into the git directory"),
        "{}",
        stdout(&output)
    );
    // The agent's own work in the worktree went through.
    assert!(tree_files(&repo, BRANCH).contains(&"story-2.txt".to_owned()));
    repo.assert_fsck_clean();
}

#[test]
fn issue_20_sandbox_without_bubblewrap_is_refused_before_anything_starts() {
    let repo = project(TWO_STORIES);
    let untouched = Untouched::take(&repo);
    let agent = script(&repo, &story_done("1"));
    // A PATH with a shell but no bwrap on it.
    let bin = repo.dir.path().join("bin-without-bwrap");
    fs::create_dir_all(&bin).expect("a bin directory");
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).expect("sh in it");
    let output = run(start_command(&repo, &agent, &["--sandbox"]).env("PATH", &bin));
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("bubblewrap"),
        "{}",
        describe(&output)
    );
    untouched.assert_still(&repo, "a refused --sandbox start");
}
