//! Issue 44, item 2: nothing the user has in a submodule is lost. A run
//! does not start while a submodule holds anything uncommitted (or has
//! another commit checked out than the superproject records), so every
//! change found in one after an attempt is the agent's: the attempt fails,
//! its work in the submodule is committed in the submodule's own
//! repository under the attempt's ref, and the submodule goes back to the
//! commit and clean state it had. The superproject's own work in the same
//! attempt is settled as usual.

use std::collections::BTreeMap;

use crate::harness::story_run::*;
use crate::harness::*;

/// The submodule's path in the superproject.
const SUB: &str = "lib";
/// Its one tracked file, and what the user committed in it.
const SUB_FILE: &str = "lib/a.txt";
const SUB_TEXT: &str = "the library's own text\n";

/// [`project`] with a submodule at `lib` holding `a.txt`, added from a
/// repository of its own beside the worktree; the worktree is clean and
/// the submodule is on its branch `main`.
fn project_with_submodule() -> TestRepo {
    let repo = project(TWO_STORIES);
    let upstream = repo.dir.path().join("upstream-lib");
    std::fs::create_dir_all(&upstream).expect("create the submodule's upstream");
    repo.git_at(&upstream, &["init", "-q", "-b", "main"]);
    std::fs::write(upstream.join("a.txt"), SUB_TEXT).expect("write a.txt");
    repo.git_at(&upstream, &["add", "a.txt"]);
    repo.git_at(&upstream, &["commit", "-q", "-m", "The library"]);
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &upstream.to_string_lossy(),
        SUB,
    ]);
    repo.git(&["commit", "-q", "-m", "Add the library as a submodule"]);
    assert_eq!(repo.status_porcelain(), "", "the project starts clean");
    repo
}

/// git in the submodule.
fn sub_git(repo: &TestRepo, args: &[&str]) -> String {
    repo.git_at(&repo.path(SUB), args)
}

/// What the submodule is, as git tells it: HEAD (symbolic and resolved),
/// its branches, its status with ignored files, and the commit the
/// superproject's index records for it.
fn submodule_picture(repo: &TestRepo) -> Vec<String> {
    vec![
        sub_git(repo, &["symbolic-ref", "-q", "HEAD"]),
        sub_git(repo, &["rev-parse", "HEAD"]),
        sub_git(repo, &["for-each-ref", "refs/heads", "refs/tags"]),
        sub_git(
            repo,
            &["status", "--porcelain=v1", "-uall", "--ignored=matching"],
        ),
        repo.git(&["ls-files", "-s", SUB]),
    ]
}

/// Every file of the worktree outside `.git` (the submodule's files
/// included), with its mode and bytes.
fn worktree_files(repo: &TestRepo) -> BTreeMap<String, (u32, Vec<u8>)> {
    disk_snapshot(&repo.root)
        .into_iter()
        .filter(|(path, _)| path != ".git" && !path.starts_with(".git/"))
        .collect()
}

/// The attempt ref of story 1's first attempt.
fn first_attempt_ref() -> String {
    format!("{NS}/attempts/1/1")
}

/// Both terminals' words of a finished command.
fn said(output: &std::process::Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn start_refuses_while_a_submodule_holds_uncommitted_work() {
    type Dirty = fn(&TestRepo);
    let cases: [(&str, Dirty); 4] = [
        ("an edited file", |repo| {
            repo.write(SUB_FILE, "the user's unfinished edit\n");
        }),
        ("an untracked file", |repo| {
            repo.write("lib/notes.txt", "the user's notes\n");
        }),
        ("a staged edit", |repo| {
            repo.write(SUB_FILE, "the user's staged edit\n");
            sub_git(repo, &["add", "a.txt"]);
        }),
        ("another commit checked out", |repo| {
            repo.write(SUB_FILE, "committed in the submodule only\n");
            sub_git(repo, &["commit", "-q", "-am", "The user's own commit"]);
        }),
    ];
    for (what, dirty) in cases {
        let repo = project_with_submodule();
        dirty(&repo);
        let before = Untouched::take(&repo);
        let agent = script(&repo, &story_done("1"));
        let output = start(&repo, &agent, &["--on-finish", "keep"]);
        assert_exit(&output, 1);
        let words = said(&output);
        assert!(
            words.contains("submodule") && words.contains(SUB),
            "{what}: the refusal names the submodule: {words}"
        );
        assert!(
            words.contains("git -C lib stash -u") || words.contains("commit"),
            "{what}: the refusal says what to do: {words}"
        );
        before.assert_still(&repo, what);
        assert_eq!(script_calls(&agent), 0, "{what}: no agent ran");
    }
}

#[test]
fn an_agent_that_writes_into_a_submodule_and_fails_is_a_failed_attempt_kept_there() {
    let repo = project_with_submodule();
    let before = submodule_picture(&repo);
    let agent = second_try(
        &repo,
        "write lib/a.txt the agent's text\\n\nwrite lib/new.txt an agent's new file\\n\nerror the agent gave up\n",
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_ne!(attempts[0].0, "complete", "{attempts:?}");
    assert_eq!(attempts[1].0, "complete", "{attempts:?}");

    let kept = first_attempt_ref();
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}:a.txt")]),
        "the agent's text\n",
        "the agent's text is kept in the submodule under {kept}"
    );
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}:new.txt")]),
        "an agent's new file\n"
    );
    assert_eq!(submodule_picture(&repo), before, "the submodule is back");
    assert_eq!(repo.read(SUB_FILE), SUB_TEXT);
    let words = said(&output);
    assert!(
        words.contains(&format!("submodule {SUB}")) && words.contains(&kept),
        "the console names the submodule and where its work is: {words}"
    );
    assert!(
        !words.contains("it changed nothing"),
        "an attempt that changed a submodule changed something: {words}"
    );
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
    repo.git_at(&repo.path(SUB), &["fsck", "--strict"]);
}

#[test]
fn an_agent_that_writes_into_a_submodule_and_claims_complete_is_not_done() {
    let repo = project_with_submodule();
    let before = submodule_picture(&repo);
    let agent = second_try(
        &repo,
        &format!("write lib/a.txt the agent's text\\n\n{}", finish_story("1")),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0].0, "rejected", "{attempts:?}");
    assert!(
        attempts[0].1.contains(&format!("submodule {SUB}")),
        "the reason names the submodule: {attempts:?}"
    );
    let kept = first_attempt_ref();
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}:a.txt")]),
        "the agent's text\n"
    );
    // The superproject's own work of that attempt is preserved as usual.
    assert_eq!(show(&repo, &kept, "story-1.txt"), "work of story 1\n");
    assert_eq!(submodule_picture(&repo), before, "the submodule is back");
    // No checkpoint records another commit for the submodule.
    let recorded = repo.git(&["rev-parse", "main:lib"]);
    assert_eq!(repo.git(&["rev-parse", &format!("{BRANCH}:lib")]), recorded);
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn an_agent_that_commits_inside_a_submodule_is_put_back_and_its_commit_kept() {
    let repo = project_with_submodule();
    let before = submodule_picture(&repo);
    let agent = second_try(
        &repo,
        &format!(
            "write lib/a.txt the agent's committed text\\n\ngit -C lib commit -q -am 'The agent commits in the library'\nwrite lib/a.txt then more\\n\n{}",
            finish_story("1")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts[0].0, "rejected", "{attempts:?}");
    assert!(
        attempts[0].1.contains(&format!("submodule {SUB}")),
        "{attempts:?}"
    );
    assert_eq!(submodule_picture(&repo), before, "HEAD and main are back");
    let kept = first_attempt_ref();
    assert_eq!(
        sub_git(&repo, &["log", "--format=%s", &kept]),
        format!(
            "ralph(greet): attempt 1 at story 1 (Greeting) in submodule {SUB}\nThe agent commits in the library\nThe library\n"
        ),
        "the agent's commit is kept under the attempt's work"
    );
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}:a.txt")]),
        "then more\n"
    );
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}~1:a.txt")]),
        "the agent's committed text\n"
    );
    let recorded = repo.git(&["rev-parse", "main:lib"]);
    assert_eq!(repo.git(&["rev-parse", &format!("{BRANCH}:lib")]), recorded);
    repo.assert_fsck_clean();
}

#[test]
fn abort_after_an_attempt_in_a_submodule_gives_everything_back() {
    let repo = project_with_submodule();
    let files = worktree_files(&repo);
    let picture = submodule_picture(&repo);
    let head = repo.rev_parse("HEAD");
    let agent = script(
        &repo,
        "[story=1]\nwrite lib/a.txt the agent's text\\n\ngit -C lib commit -q -am 'The agent commits'\nwrite lib/b.txt more\\n\nwrite story-1.txt work\\n\nerror it gave up\n",
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 3);

    // Stopped, the user leaves something in the submodule: the run does
    // not go on over it, and the refusal changes nothing.
    repo.write("lib/mine.txt", "the user's own\n");
    let stopped = Untouched::take(&repo);
    let resumed = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&resumed, 1);
    assert!(said(&resumed).contains("submodule"), "{}", said(&resumed));
    stopped.assert_still(&repo, "a resume refused for a dirty submodule");
    std::fs::remove_file(repo.path("lib/mine.txt")).expect("remove the user's file");

    let aborted = run(ralph(&repo).args(["abort", CHANGE]));
    assert_success(&aborted);
    assert_eq!(repo.rev_parse("HEAD"), head);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(submodule_picture(&repo), picture, "the submodule as it was");
    assert_eq!(worktree_files(&repo), files, "every file as it was");
    // The agent's work is still reachable in the submodule.
    let kept = first_attempt_ref();
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}:b.txt")]),
        "more\n"
    );
    repo.assert_fsck_clean();
}
#[test]
fn a_loop_killed_while_its_agent_wrote_into_a_submodule_sets_that_work_aside_on_resume() {
    let repo = project_with_submodule();
    let before = submodule_picture(&repo);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite lib/a.txt the agent's text\\n\nwrite half.txt half done\nsleep 60\n\
             [story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let loop_run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.root, "1", 1, "half.txt");
    loop_run.signal(nix::sys::signal::Signal::SIGKILL);
    let killed = loop_run.wait(std::time::Duration::from_secs(30));
    assert_eq!(killed.status.code(), None, "killed by a signal");
    kill_agents(&repo.record_dir());
    wait_until(
        "the orphaned agent is gone",
        std::time::Duration::from_secs(30),
        || !group_alive(agent_pid(&repo, "1", 1)),
    );

    let resumed = run(ralph_with_fake(&repo, &agent).args(["start", CHANGE]));
    assert_exit(&resumed, 0);
    let kept = first_attempt_ref();
    assert_eq!(
        sub_git(&repo, &["cat-file", "blob", &format!("{kept}:a.txt")]),
        "the agent's text\n",
        "the killed attempt's work in the submodule is kept there"
    );
    assert_eq!(show(&repo, &kept, "half.txt"), "half done");
    assert!(
        said(&resumed).contains(&format!("submodule {SUB}")),
        "{}",
        said(&resumed)
    );
    assert_eq!(submodule_picture(&repo), before, "the submodule is back");
    let recorded = repo.git(&["rev-parse", "main:lib"]);
    assert_eq!(repo.git(&["rev-parse", &format!("{BRANCH}:lib")]), recorded);
    repo.assert_fsck_clean();
}
