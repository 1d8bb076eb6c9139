//! The hand-off (issue 26), through the real binary: `finish --push` sends
//! `ralph/<change>` to a bare repository standing in for the remote, at the
//! run's last checkpoint; `finish --pr` also opens a pull request with a
//! scripted `gh` (or `glab`) on PATH; a second one edits it instead of
//! opening another; a missing remote is refused before anything is done,
//! and every other refusal (a rejected push, missing credentials, no `gh`)
//! leaves the repository as `finish --keep` does, judged with git. No
//! network: remotes are paths, or a loopback server.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::harness::forge::{FakeForge, MR_URL, PR_URL};
use crate::harness::story_run::*;
use crate::harness::*;

/// A bare repository beside the worktree, added as remote `name`.
fn bare_remote(repo: &TestRepo, name: &str) -> PathBuf {
    let path = repo.dir.path().join(format!("{name}.git"));
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", path.to_str().unwrap()],
    );
    repo.git(&["remote", "add", name, path.to_str().unwrap()]);
    path
}

/// Where the bare repository's `ralph/greet` points, if anywhere.
fn remote_tip(repo: &TestRepo, remote: &Path) -> Option<String> {
    let output = run(repo.command("git", remote).args([
        "rev-parse",
        "--verify",
        "-q",
        "refs/heads/ralph/greet",
    ]));
    output
        .status
        .success()
        .then(|| stdout(&output).trim().to_string())
}

/// A run of TWO_STORIES whose story 2 fails: story 1 is checkpointed with
/// tokens and cost, and the run stops on max_retries, left on its branch.
fn stopped_run(repo: &TestRepo) {
    let agent = script(
        repo,
        &format!(
            "format claude\n[story=1]\n{}usage 1000 200 0.12\n[story=2]\npromise FAILED: cannot do it\n",
            finish_story("1")
        ),
    );
    assert_exit(&start(repo, &agent, &["--max-retries", "0"]), 3);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
}

/// `git ralph finish <args>` with the scripted forge on PATH.
fn finish(repo: &TestRepo, forge: &FakeForge, args: &[&str]) -> Output {
    let mut cmd = ralph(repo);
    cmd.arg("finish").args(args);
    forge.on_path(&mut cmd);
    run(&mut cmd)
}

/// What git says of the local repository: every ref and where it points,
/// HEAD, the worktree and index.
#[derive(Debug, PartialEq)]
struct GitView {
    refs: Vec<String>,
    head: Option<String>,
    status: String,
}

fn git_view(repo: &TestRepo) -> GitView {
    GitView {
        refs: repo
            .git(&["for-each-ref", "--format=%(refname) %(objectname)"])
            .lines()
            .map(str::to_string)
            .collect(),
        head: repo.head_symbolic(),
        status: repo.status_porcelain(),
    }
}

/// Kept, as `finish --keep` leaves a run: recorded so, HEAD on its branch,
/// nothing uncommitted, and `finish --keep` has nothing left to do.
fn assert_kept(repo: &TestRepo) {
    let state = state(repo);
    assert_eq!(state["status"], "finished", "{state}");
    assert_eq!(state["finished_with"], "keep", "{state}");
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    assert_eq!(repo.status_porcelain(), "");
    let untouched = Untouched::take(repo);
    let keep = ralph_cmd(repo, &["finish", "--keep"]);
    assert_exit(&keep, 0);
    assert!(stderr(&keep).contains("already kept"), "{}", stderr(&keep));
    untouched.assert_still(repo, "finish --keep after the hand-off");
    repo.assert_fsck_clean();
}

#[test]
fn issue_26_push_sends_the_branch_at_its_last_checkpoint() {
    let repo = project(TWO_STORIES);
    let remote = bare_remote(&repo, "origin");
    stopped_run(&repo);
    // Work beyond the last checkpoint, as a loop killed mid-attempt leaves.
    repo.write("half-done.txt", "not checkpointed\n");
    let checkpoint = state(&repo)["checkpoint"].as_str().unwrap().to_string();

    let forge = FakeForge::new(&repo);
    let output = finish(&repo, &forge, &["--push"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("pushing ralph/greet to origin"), "{err}");
    assert!(err.contains("set aside"), "{err}");
    assert_eq!(stdout(&output), "", "no pull request, nothing on stdout");

    assert_eq!(
        remote_tip(&repo, &remote).as_deref(),
        Some(checkpoint.as_str())
    );
    assert_eq!(repo.rev_parse(BRANCH), checkpoint);
    let pushed_files = repo.git_at(&remote, &["ls-tree", "-r", "--name-only", BRANCH]);
    assert!(pushed_files.contains("story-1.txt"), "{pushed_files}");
    assert!(!pushed_files.contains("half-done.txt"), "{pushed_files}");
    assert!(forge.calls().is_empty(), "no forge CLI for a push");
    assert_kept(&repo);
}

#[test]
fn issue_26_push_goes_to_the_upstream_of_the_starting_branch_or_where_asked() {
    let repo = project(TWO_STORIES);
    let origin = bare_remote(&repo, "origin");
    let upstream = bare_remote(&repo, "upstream");
    repo.git(&["config", "branch.main.remote", "upstream"]);
    repo.git(&["config", "branch.main.merge", "refs/heads/main"]);
    stopped_run(&repo);
    let forge = FakeForge::new(&repo);

    let output = finish(&repo, &forge, &["--push"]);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains("to upstream"),
        "{}",
        describe(&output)
    );
    let tip = repo.rev_parse(BRANCH);
    assert_eq!(remote_tip(&repo, &upstream).as_deref(), Some(tip.as_str()));
    assert_eq!(remote_tip(&repo, &origin), None);

    // A kept run can be pushed again, elsewhere.
    let output = finish(&repo, &forge, &["--push", "--remote", "origin"]);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains("already kept"),
        "{}",
        describe(&output)
    );
    assert_eq!(remote_tip(&repo, &origin).as_deref(), Some(tip.as_str()));

    // And ralph.remote names the remote when no flag does.
    let third = bare_remote(&repo, "third");
    repo.git(&["config", "ralph.remote", "third"]);
    assert_exit(&finish(&repo, &forge, &["--push"]), 0);
    assert_eq!(remote_tip(&repo, &third).as_deref(), Some(tip.as_str()));
    assert_kept(&repo);
}

/// A completed run with a failed attempt, a check, tokens and cost, and a
/// tick-only claim, left stopped on its branch (no terminal to ask).
fn completed_run(repo: &TestRepo) {
    let agent = script(
        repo,
        &format!(
            "format claude\n[story=1 attempt=1]\npromise FAILED: first try\n\
             [story=1 attempt=2]\n{}usage 1000 200 0.12\n\
             [story=2]\ntick-story\npromise COMPLETE\nusage 300 50 0.03\n",
            finish_story("1")
        ),
    );
    let output = start(
        repo,
        &agent,
        &["--max-retries", "1", "--check", "test -f README.md"],
    );
    assert_exit(&output, 0);
}

#[test]
fn issue_26_pr_opens_a_pull_request_titled_after_the_change_with_the_runs_record() {
    let repo = project(TWO_STORIES);
    let remote = bare_remote(&repo, "origin");
    completed_run(&repo);
    let forge = FakeForge::new(&repo);

    let output = finish(&repo, &forge, &["--pr"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        format!("{PR_URL}\n"),
        "{}",
        describe(&output)
    );
    assert!(
        stderr(&output).contains("opened the pull request"),
        "{}",
        describe(&output)
    );
    let tip = repo.rev_parse(BRANCH);
    assert_eq!(remote_tip(&repo, &remote).as_deref(), Some(tip.as_str()));

    let calls = forge.calls();
    assert_eq!(forge.verbs(), ["gh pr list", "gh pr create"], "{calls:?}");
    assert_eq!(
        calls[0].args[3..],
        [
            "--head=ralph/greet",
            "--state=open",
            "--json=number,url,isDraft"
        ]
    );
    assert_eq!(
        calls[1].args[3..],
        [
            "--head=ralph/greet",
            "--title=Greet",
            "--body-file=-",
            "--base=main"
        ]
    );
    let body = &calls[1].stdin;
    for expected in [
        "**2 of 2 stories done** (the run ended: completed)",
        "to be merged into `main`",
        "| 1 | Greeting | done | 2: failed, complete |",
        "| 2 | Farewell | done | 1: complete |",
        "story 1 attempt 1: failed: first try",
        "| `test -f README.md` | 2 | 0 |",
        "3 attempts, 1550 tokens (1300 in, 250 out), $0.15.",
        "story 2 attempt 1: flag: no change besides ticking boxes",
    ] {
        assert!(
            body.contains(expected),
            "the body lacks {expected:?}:\n{body}"
        );
    }
    // The description is kept beside the run.
    assert_eq!(
        &fs::read_to_string(run_dir(&repo).join("pull-request.md")).unwrap(),
        body
    );
    assert_kept(&repo);
}

#[test]
fn issue_26_a_second_pr_updates_the_branch_and_the_description_instead_of_opening_another() {
    let repo = project(TWO_STORIES);
    let remote = bare_remote(&repo, "origin");
    stopped_run(&repo);
    let forge = FakeForge::new(&repo);
    assert_exit(&finish(&repo, &forge, &["--pr"]), 0);
    let first_tip = repo.rev_parse(BRANCH);
    assert!(forge.calls()[1].stdin.contains("**1 of 2 stories done**"));

    // The change goes on from the pushed branch (as the CI workflow does),
    // and this time the loop itself ends with the pull request.
    repo.git(&["switch", "-q", "--detach", BRANCH]);
    let agent = script(&repo, &story_done("2"));
    let mut cmd = start_command(&repo, &agent, &["--on-finish", "pr"]);
    forge.on_path(&mut cmd);
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("updated the pull request"), "{err}");
    assert!(err.contains(PR_URL), "{err}");

    let tip = repo.rev_parse(BRANCH);
    assert_ne!(tip, first_tip);
    assert_eq!(remote_tip(&repo, &remote).as_deref(), Some(tip.as_str()));
    assert!(
        repo.git_ok(&["merge-base", "--is-ancestor", &first_tip, &tip]),
        "a fast-forward of what was pushed"
    );
    assert_eq!(
        forge.verbs(),
        ["gh pr list", "gh pr create", "gh pr list", "gh pr edit"]
    );
    let edit = &forge.calls()[3];
    assert_eq!(edit.args[3..], ["7", "--body-file=-"]);
    assert!(
        edit.stdin.contains("**2 of 2 stories done**"),
        "{}",
        edit.stdin
    );

    // Once more by hand: still the same pull request.
    let output = finish(&repo, &forge, &["--pr"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), format!("{PR_URL}\n"));
    let verbs = forge.verbs();
    assert_eq!(
        verbs.iter().filter(|v| *v == "gh pr create").count(),
        1,
        "{verbs:?}"
    );
    assert_eq!(verbs.last().map(String::as_str), Some("gh pr edit"));
    assert_kept(&repo);
}

/// `finish <args>` must fail with `expected` in its error, and leave the
/// repository as `finish --keep` would: the same refs, HEAD, worktree and
/// index as the stopped run had, recorded as kept. Run again on the kept
/// run, it must change nothing at all. Returns what it said.
fn assert_refused_push(repo: &TestRepo, args: &[&str], expected: &[&str]) -> String {
    let forge = FakeForge::new(repo);
    let before = git_view(repo);
    let started = Instant::now();
    let mut cmd = ralph(repo);
    cmd.arg("finish")
        .args(args)
        .env_remove("GIT_TERMINAL_PROMPT");
    forge.on_path(&mut cmd);
    let output = run(&mut cmd);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it never waits for a prompt"
    );
    assert_exit(&output, 1);
    let err = stderr(&output);
    for words in expected {
        assert!(err.contains(words), "{args:?}: no {words:?} in:\n{err}");
    }
    assert!(err.contains("kept"), "{err}");
    assert_eq!(git_view(repo), before, "{args:?} changed the repository");
    assert!(forge.calls().is_empty(), "no pull request without a push");

    let untouched = Untouched::take(repo);
    assert_exit(&run(ralph(repo).arg("finish").args(args)), 1);
    untouched.assert_still(repo, &format!("{args:?} again, on the kept run"));
    assert_kept(repo);
    err
}

#[test]
fn issue_26_no_remote_is_refused_before_anything_is_done() {
    // Found before the run is kept (issue 33): the refusal changes nothing,
    // not even the record.
    let repo = project(TWO_STORIES);
    stopped_run(&repo);
    let record = state(&repo);
    for (args, expected) in [
        (
            &["--push"][..],
            &[
                "there is no remote 'origin' to push ralph/greet to",
                "git remote add origin",
            ][..],
        ),
        (
            &["--pr", "--remote", "nowhere"],
            &["there is no remote 'nowhere'"],
        ),
    ] {
        let forge = FakeForge::new(&repo);
        let untouched = Untouched::take(&repo);
        let output = finish(&repo, &forge, args);
        assert_exit(&output, 1);
        let err = stderr(&output);
        for words in expected {
            assert!(err.contains(words), "{args:?}: no {words:?} in:\n{err}");
        }
        assert!(!err.contains("pushing"), "nothing is pushed: {err}");
        assert!(!err.contains("kept"), "nothing is kept: {err}");
        untouched.assert_still(&repo, &format!("{args:?}"));
        assert_eq!(state(&repo), record, "{args:?} changed the record");
        assert!(forge.calls().is_empty(), "no pull request without a push");
    }
}

#[test]
fn issue_26_a_rejected_push_is_refused_after_keeping() {
    // The remote's branch holds a commit the run does not.
    let repo = project(TWO_STORIES);
    let remote = bare_remote(&repo, "origin");
    let empty_tree = repo
        .git_at(&remote, &["hash-object", "-t", "tree", "-w", "/dev/null"])
        .trim()
        .to_string();
    let other = repo
        .git_at(
            &remote,
            &["commit-tree", &empty_tree, "-m", "someone else's"],
        )
        .trim()
        .to_string();
    repo.git_at(&remote, &["update-ref", "refs/heads/ralph/greet", &other]);
    stopped_run(&repo);
    assert_refused_push(
        &repo,
        &["--push"],
        &[
            "the remote 'origin' rejected ralph/greet: [rejected]",
            "--force-with-lease",
        ],
    );
    assert_eq!(remote_tip(&repo, &remote).as_deref(), Some(other.as_str()));

    // A hook on the remote refuses it.
    let repo = project(TWO_STORIES);
    let remote = bare_remote(&repo, "origin");
    let hook = remote.join("hooks/pre-receive");
    fs::write(
        &hook,
        "#!/bin/sh\necho 'ralph branches are frozen' >&2\nexit 1\n",
    )
    .unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    stopped_run(&repo);
    assert_refused_push(
        &repo,
        &["--pr"],
        &["pre-receive hook declined", "ralph branches are frozen"],
    );
    assert_eq!(remote_tip(&repo, &remote), None);
}

/// A loopback HTTP server that asks every request for a login, `limit`
/// requests at most.
fn asks_for_login(limit: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(limit) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\n\
                  Content-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[test]
fn issue_26_missing_credentials_are_refused_without_a_prompt() {
    let repo = project(TWO_STORIES);
    let port = asks_for_login(16);
    repo.git(&[
        "remote",
        "add",
        "origin",
        &format!("http://127.0.0.1:{port}/greet.git"),
    ]);
    stopped_run(&repo);
    assert_refused_push(
        &repo,
        &["--push"],
        &["asks for credentials", "never prompts", "credential helper"],
    );
}

/// A PATH that has git and nothing else.
fn path_with_git_only(repo: &TestRepo) -> String {
    let bin = repo.dir.path().join("git-only-bin");
    fs::create_dir_all(&bin).unwrap();
    let git =
        String::from_utf8(run(Command::new("sh").args(["-c", "command -v git"])).stdout).unwrap();
    std::os::unix::fs::symlink(git.trim(), bin.join("git")).unwrap();
    bin.display().to_string()
}

#[test]
fn issue_26_without_gh_the_branch_is_pushed_and_the_error_says_how_to_open_it() {
    let repo = project(TWO_STORIES);
    let remote = bare_remote(&repo, "origin");
    stopped_run(&repo);
    let before = git_view(&repo);

    let output = run(ralph(&repo)
        .args(["finish", "--pr"])
        .env("PATH", path_with_git_only(&repo)));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.contains("ralph/greet is pushed to 'origin', but the pull request was not opened: `gh` is not installed"),
        "{err}"
    );
    let body_file = run_dir(&repo).join("pull-request.md");
    let by_hand = format!(
        "gh pr create --head ralph/greet --base main --title Greet --body-file {}",
        body_file.display()
    );
    assert!(err.contains(&by_hand), "{by_hand:?} not in:\n{err}");
    assert!(
        fs::read_to_string(&body_file)
            .unwrap()
            .contains("1 of 2 stories done")
    );
    // Pushed; locally only the remote-tracking ref and the run's record,
    // which went with the branch, are new.
    let tip = repo.rev_parse(BRANCH);
    assert_eq!(remote_tip(&repo, &remote).as_deref(), Some(tip.as_str()));
    let mut after = git_view(&repo);
    after.refs.retain(|line| {
        !line.starts_with("refs/remotes/origin/ralph/greet ")
            && !line.starts_with("refs/ralph/greet/record ")
    });
    assert_eq!(after, before);

    // Not logged in: the same, and how to log in.
    let forge = FakeForge::new(&repo);
    let mut cmd = ralph(&repo);
    cmd.args(["finish", "--pr"]).env("FAKE_FORGE_MODE", "auth");
    forge.on_path(&mut cmd);
    let output = run(&mut cmd);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("`gh` is not logged in"), "{err}");
    assert!(err.contains("gh auth login"), "{err}");
    assert!(err.contains(&by_hand), "{err}");

    // Nothing is lost: once gh works, the pull request opens.
    let output = finish(&repo, &forge, &["--pr"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), format!("{PR_URL}\n"));
    assert_kept(&repo);
}

#[test]
fn issue_26_a_gitlab_remote_opens_a_merge_request_with_glab() {
    let repo = project(TWO_STORIES);
    let bare = repo.dir.path().join("gitlab.git");
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let url = "https://gitlab.example.com/group/greet.git";
    repo.git(&["remote", "add", "origin", url]);
    // git itself pushes to the path: no network.
    repo.git(&["config", &format!("url.{}.insteadOf", bare.display()), url]);
    repo.git(&["config", "ralph.prDraft", "true"]);
    stopped_run(&repo);
    let forge = FakeForge::new(&repo);

    let output = finish(&repo, &forge, &["--pr", "--base", "trunk"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        format!("{MR_URL}\n"),
        "{}",
        describe(&output)
    );
    assert!(
        stderr(&output).contains("opened the merge request"),
        "{}",
        describe(&output)
    );
    assert_eq!(forge.verbs(), ["glab mr list", "glab mr create"]);
    let repo_arg = "--repo=https://gitlab.example.com/group/greet";
    let calls = forge.calls();
    assert_eq!(
        calls[0].args[3..],
        ["--source-branch=ralph/greet", "--output=json", repo_arg]
    );
    let create = &calls[1].args[3..];
    assert_eq!(
        create[..2],
        ["--source-branch=ralph/greet", "--title=Greet"]
    );
    assert!(
        create[2].starts_with("--description=git-ralph worked through"),
        "{create:?}"
    );
    assert!(
        create[2].contains("to be merged into `trunk`"),
        "{create:?}"
    );
    assert_eq!(
        create[3..],
        ["--yes", "--target-branch=trunk", "--draft", repo_arg]
    );
    let tip = repo.rev_parse(BRANCH);
    assert_eq!(remote_tip(&repo, &bare).as_deref(), Some(tip.as_str()));

    // Again: the merge request is updated.
    let output = finish(&repo, &forge, &["--pr"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), format!("{MR_URL}\n"));
    assert_eq!(
        forge.verbs(),
        [
            "glab mr list",
            "glab mr create",
            "glab mr list",
            "glab mr update"
        ]
    );
    assert_eq!(forge.calls()[3].args[3], "3");
}

#[test]
fn issue_26_a_malformed_hand_off_setting_refuses_the_start() {
    for (key, value) in [("ralph.prDraft", "maybe"), ("ralph.forge", "bitbucket")] {
        let repo = project(TWO_STORIES);
        repo.git(&["config", key, value]);
        let before = Untouched::take(&repo);
        let agent = script(&repo, &story_done("1"));
        let output = start(&repo, &agent, &["--on-finish", "pr"]);
        assert_exit(&output, 1);
        assert!(stderr(&output).contains(key), "{}", describe(&output));
        before.assert_still(&repo, &format!("a start refused for {key}"));
        assert!(recorded_calls(&repo).is_empty(), "the agent never ran");
    }
}

#[test]
fn issue_36_no_remote_for_a_pull_request_says_to_run_the_pull_request_again() {
    let repo = project(TWO_STORIES);
    stopped_run(&repo);
    let forge = FakeForge::new(&repo);
    let untouched = Untouched::take(&repo);
    let output = finish(&repo, &forge, &["--pr", "--draft"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("git remote add origin"), "{err}");
    assert!(
        err.contains("'git ralph finish greet --pr --draft' again"),
        "the hint repeats what was asked:\n{err}"
    );
    assert!(!err.contains("--push' again"), "{err}");
    untouched.assert_still(&repo, "a refused hand-off");
}

#[test]
fn issue_36_pr_draft_on_an_open_pull_request_makes_it_a_draft_and_says_so() {
    let repo = project(TWO_STORIES);
    bare_remote(&repo, "origin");
    completed_run(&repo);
    let forge = FakeForge::new(&repo);
    assert_exit(&finish(&repo, &forge, &["--pr"]), 0);
    let output = finish(&repo, &forge, &["--pr", "--draft"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("updated the pull request"), "{err}");
    assert!(
        err.contains("draft"),
        "the draft is not passed over in silence:\n{err}"
    );
    let verbs = forge.verbs();
    assert_eq!(
        verbs,
        [
            "gh pr list",
            "gh pr create",
            "gh pr list",
            "gh pr edit",
            "gh pr ready"
        ]
    );
    assert_eq!(forge.calls()[4].args[3..], ["7", "--undo"]);
    // Already a draft: nothing more to do, and nothing more is called.
    assert_exit(&finish(&repo, &forge, &["--pr", "--draft"]), 0);
    assert_eq!(forge.verbs().len(), 7, "{:?}", forge.verbs());
}

#[test]
fn issue_36_the_descriptions_flags_hold_no_agent_path_or_scan_json() {
    let repo = project(TWO_STORIES);
    bare_remote(&repo, "origin");
    completed_run(&repo);
    let forge = FakeForge::new(&repo);
    assert_exit(&finish(&repo, &forge, &["--pr"]), 0);
    let body = &forge.calls()[1].stdin;
    let flags = body
        .split("## Flags")
        .nth(1)
        .unwrap_or_else(|| panic!("no Flags section:\n{body}"));
    assert!(!flags.contains("scan"), "{flags}");
    assert!(!flags.contains("{\""), "no raw JSON:\n{flags}");
    assert!(!flags.contains("agent:"), "{flags}");
    assert!(
        flags.contains("story 2 attempt 1: flag: no change besides ticking boxes"),
        "{flags}"
    );
}
