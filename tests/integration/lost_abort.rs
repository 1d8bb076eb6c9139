//! `abort` in place after the run stopped (a SIGTERM, or `--on-finish
//! keep`): the user, on `ralph/<change>` meanwhile, edited, staged, created,
//! deleted and committed. The pre-start state comes back exactly, and what
//! they did is kept under refs the output names, with a hint that, followed,
//! gives the files back.

use crate::harness::story_run::*;
use crate::harness::*;
use nix::sys::signal::Signal;

/// A pre-start state with every kind of uncommitted work (a staged edit, a
/// file staged then changed again, an unstaged edit, an untracked file)
/// and a stash entry.
fn messy_project() -> TestRepo {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "v1\n");
    repo.write("plan.txt", "plan v1\n");
    repo.write("old.txt", "an old file\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "More files"]);
    repo.write("stashed.txt", "stashed away\n");
    repo.git(&["add", "stashed.txt"]);
    repo.git(&["stash", "push", "-q", "-m", "kept for later"]);
    repo.write("README.md", "# Staged edit\n");
    repo.git(&["add", "README.md"]);
    repo.write("notes.txt", "v2, staged\n");
    repo.git(&["add", "notes.txt"]);
    repo.write("notes.txt", "v3, unstaged on top of the staged v2\n");
    repo.write("plan.txt", "plan v2, unstaged\n");
    repo.write("untracked/idea.txt", "untracked\n");
    repo
}

/// The stash list with what each entry holds.
fn stashes(repo: &TestRepo) -> String {
    repo.git(&["stash", "list", "--format=%gd %H %s"])
}

/// What the user does on the run's branch while the run is stopped: an
/// edit staged only, an edit staged then changed again, a new file, a
/// deleted file. Returns the files' contents as the user left them.
fn work_while_stopped(repo: &TestRepo) -> Vec<(&'static str, Option<&'static str>)> {
    repo.write("notes.txt", "the user's v4, staged only\n");
    repo.git(&["add", "notes.txt"]);
    repo.write("plan.txt", "plan v3, staged\n");
    repo.git(&["add", "plan.txt"]);
    repo.write("plan.txt", "plan v4, unstaged on top\n");
    repo.write("mine.txt", "a new file of the user's\n");
    std::fs::remove_file(repo.path("old.txt")).expect("old.txt is there");
    vec![
        ("notes.txt", Some("the user's v4, staged only\n")),
        ("plan.txt", Some("plan v4, unstaged on top\n")),
        ("mine.txt", Some("a new file of the user's\n")),
        ("old.txt", None),
    ]
}

/// The `interrupted/<ms>` ref `abort` names in `said`.
fn named_ref(said: &str) -> String {
    let at = said
        .find(&format!("{NS}/interrupted/"))
        .unwrap_or_else(|| panic!("abort names no interrupted ref:\n{said}"));
    said[at..]
        .split(|c: char| c.is_whitespace() || c == '\'' || c == ')' || c == ',' || c == ';')
        .next()
        .expect("a ref name")
        .trim_end_matches('.')
        .to_string()
}

/// The command between quotes that `said` gives to take the work back.
fn hint_to_take_back(said: &str, refname: &str) -> Vec<String> {
    let hint = said
        .split('\'')
        .find(|part| part.starts_with("git ") && part.contains(refname) && !part.contains("diff"))
        .unwrap_or_else(|| panic!("abort says no command that takes the work back:\n{said}"));
    hint.split_whitespace().map(str::to_string).collect()
}

/// Abort, then check: the pre-start state is back exactly, the user's
/// work is in the named ref, and following the hint puts their files back.
fn abort_keeps_what_the_user_did(
    repo: &TestRepo,
    before: &WorkState,
    stash_list: &str,
    theirs: &[(&str, Option<&str>)],
) -> String {
    let output = ralph_cmd(repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    let said = stderr(&output);
    assert_eq!(
        work_state(repo),
        *before,
        "the exact pre-start state is back:\n{said}"
    );
    assert_eq!(stashes(repo), stash_list, "the stash list is untouched");
    assert!(!has_ref(repo, &format!("refs/heads/{BRANCH}")));
    let kept = named_ref(&said);
    for (path, content) in theirs {
        match content {
            Some(content) => assert_eq!(&show(repo, &kept, path), content, "{path} in {kept}"),
            None => assert!(
                !repo.git_ok(&["cat-file", "-e", &format!("{kept}:{path}")]),
                "{path} was deleted by the user, and is not in {kept}"
            ),
        }
    }

    assert_eq!(
        show(repo, &format!("{kept}^"), "plan.txt"),
        "plan v3, staged\n",
        "what was staged apart from the worktree is kept beneath it"
    );
    let hint = hint_to_take_back(&said, &kept);
    let args: Vec<&str> = hint[1..].iter().map(String::as_str).collect();
    repo.git(&args);
    for (path, content) in theirs {
        match content {
            Some(content) => assert_eq!(&repo.read(path), content, "{path} after '{hint:?}'"),
            None => assert!(!repo.path(path).exists(), "{path} after '{hint:?}'"),
        }
    }
    assert_eq!(repo.read("untracked/idea.txt"), "untracked\n");
    repo.assert_fsck_clean();
    said
}

#[test]
fn abort_after_a_sigterm_sets_aside_what_the_user_did_while_stopped() {
    let repo = messy_project();
    let before = work_state(&repo);
    let stash_list = stashes(&repo);
    let _reaper = stopped_at_story_2(&repo, Signal::SIGTERM);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );

    let theirs = work_while_stopped(&repo);
    let said = abort_keeps_what_the_user_did(&repo, &before, &stash_list, &theirs);
    assert!(
        !said.contains("exactly as before the run;"),
        "abort does not claim nothing else happened:\n{said}"
    );
}

#[test]
fn abort_of_a_kept_run_sets_aside_the_users_edits_and_names_their_commits() {
    let repo = messy_project();
    let before = work_state(&repo);
    let stash_list = stashes(&repo);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let last_checkpoint = repo.rev_parse("HEAD");

    repo.write("committed.txt", "committed on the run's branch\n");
    repo.git(&["add", "committed.txt"]);
    repo.git(&["commit", "-q", "-m", "The user's own commit"]);
    let theirs = work_while_stopped(&repo);
    let said = abort_keeps_what_the_user_did(&repo, &before, &stash_list, &theirs);

    assert_eq!(
        subjects(&repo, &format!("{last_checkpoint}..{NS}/aborted")),
        ["The user's own commit"]
    );
    assert!(
        said.contains(&format!("{NS}/aborted")) && said.contains("commit"),
        "abort says the user's commit is kept at the aborted tip:\n{said}"
    );
    let log_hint = said
        .split('\'')
        .find(|part| part.starts_with("git log"))
        .unwrap_or_else(|| panic!("abort says how to see the user's commits:\n{said}"));
    let args: Vec<&str> = log_hint.split_whitespace().skip(1).collect();
    let mut args = args;
    args.insert(1, "--format=%s");
    assert_eq!(
        repo.git(&args).trim(),
        "The user's own commit",
        "{log_hint}"
    );
}

#[test]
fn abort_with_nothing_done_while_stopped_sets_nothing_aside() {
    let repo = messy_project();
    let before = work_state(&repo);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let output = ralph_cmd(&repo, &["abort", CHANGE]);
    assert_exit(&output, 0);
    let said = stderr(&output);
    assert_eq!(work_state(&repo), before);
    assert!(!said.contains("interrupted"), "{said}");
    assert!(refs_under(&repo, &format!("{NS}/interrupted")).is_empty());
    assert!(said.contains("exactly as before the run"), "{said}");
}
