//! The life of a run around the loop (issue 10), through the real binary
//! with git as the oracle: a refused command changes nothing, every run
//! keeps its own refs, the user's edits are the user's, keep is not a dead
//! end, a missing agent command is a set-up error, and an agent may only
//! touch its own branch.

use crate::harness::story_run::*;
use crate::harness::*;

/// Everything a command could change: every file under the repository's
/// directory (worktree and `.git`, refs, index and `.git/ralph` included).
fn fingerprint(
    repo: &crate::harness::TestRepo,
) -> std::collections::BTreeMap<String, (u32, Vec<u8>)> {
    disk_snapshot(&repo.root)
}

fn assert_unchanged(
    repo: &crate::harness::TestRepo,
    before: &std::collections::BTreeMap<String, (u32, Vec<u8>)>,
    what: &str,
) {
    let diff = snapshot_diff(before, &fingerprint(repo));
    assert!(diff.is_empty(), "{what} changed: {diff:?}");
}

/// A run of TWO_STORIES whose story 2 always fails; it stops at max_retries
/// and stays on its branch (no terminal, so nobody is asked).
fn stopped_run(repo: &crate::harness::TestRepo) {
    let agent = script(
        repo,
        &format!(
            "{}[story=2]\npromise FAILED: cannot do it\n",
            story_done("1")
        ),
    );
    let output = start(repo, &agent, &["--max-retries", "0"]);
    assert_exit(&output, 3);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
}

#[test]
fn issue_10_a_refused_start_leaves_the_finished_run_in_place() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    assert_exit(&start(&repo, &agent, &["--on-finish", "cleanup"]), 0);
    let before = fingerprint(&repo);

    // Every story is done (the ticked boxes are in the worktree now).
    let done = start(&repo, &agent, &[]);
    assert_exit(&done, 1);
    assert!(stderr(&done).contains("already done"), "{}", stderr(&done));
    assert_unchanged(&repo, &before, "a start refused for finished stories");

    // The agent is not installed.
    repo.git(&["stash", "-u", "-q"]);
    let before = fingerprint(&repo);
    let missing = ralph_cmd(&repo, &["start", CHANGE, "--agent", "amp"]);
    assert_exit(&missing, 1);
    assert_unchanged(&repo, &before, "a start refused for a missing agent");
    assert!(!git_dir(&repo).join("ralph/history").exists());
    assert_eq!(status_json(&repo)["state"], "finished");
}

#[test]
fn issue_10_a_refused_finish_or_abort_leaves_the_users_work_on_their_branch() {
    let repo = project(TWO_STORIES);
    stopped_run(&repo);
    repo.git(&["switch", "-q", "main"]);
    repo.write("README.md", "edited by hand\n");
    repo.git(&["add", "README.md"]);
    repo.write("notes.txt", "untracked\n");
    let before = fingerprint(&repo);
    for args in [
        &["finish", "--cleanup"][..],
        &["finish", "--keep"][..],
        &["abort"][..],
    ] {
        let output = ralph_cmd(&repo, args);
        assert_exit(&output, 1);
        let err = stderr(&output);
        assert!(err.contains("git switch ralph/greet"), "{args:?}: {err}");
        assert!(
            !err.contains("run 'git ralph abort'"),
            "a circular hint: {err}"
        );
        assert_unchanged(&repo, &before, &format!("a refused {args:?}"));
    }
    assert_eq!(repo.status_porcelain(), "M  README.md\n?? notes.txt\n");
    // And start's refusal names a way out that works.
    let resume = ralph_cmd(&repo, &["start", CHANGE]);
    assert_exit(&resume, 1);
    assert!(
        stderr(&resume).contains("git switch ralph/greet"),
        "{}",
        stderr(&resume)
    );
    assert_unchanged(&repo, &before, "a refused resume");
}

#[test]
fn issue_10_running_a_change_again_keeps_every_ref_of_the_earlier_run() {
    let repo = project(TWO_STORIES);
    // Run 1: story 2 fails once, then passes; kept on its branch.
    let agent = script(
        &repo,
        &format!(
            "{}[story=2 attempt=1]\nwrite junk.txt first try\npromise FAILED: first try\n{}",
            story_done("1"),
            story_done("2")
        ),
    );
    assert_exit(&start(&repo, &agent, &["--on-finish", "keep"]), 0);
    let first_attempt = repo.rev_parse(&format!("{NS}/attempts/2/1"));
    let kept_tip = repo.rev_parse(BRANCH);

    // Run 2 of the same change, from main with the boxes unticked again.
    repo.git(&["switch", "-q", "main"]);
    let again = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &again, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("kept in history"), "{err}");
    assert!(
        err.contains(&format!("{NS}/replaced")),
        "the reset branch is named: {err}"
    );

    // Nothing of run 1 is lost: its attempt and its tip stay reachable
    // from refs, and no commit dangles.
    let all = repo.git(&["rev-list", "--all"]);
    assert!(all.contains(&first_attempt), "run 1's attempt is reachable");
    assert!(all.contains(&kept_tip), "run 1's branch tip is reachable");
    let dangling = repo.git(&["fsck", "--no-reflogs", "--no-progress"]);
    assert!(!dangling.contains("dangling commit"), "{dangling}");
    let history = refs_under(&repo, &format!("{NS}/history/"));
    assert!(
        history
            .iter()
            .any(|(name, id)| name.ends_with("/attempts/2/1") && *id == first_attempt),
        "{history:?}"
    );
    // Run 2 has no attempt at story 2 number 1 of its own, and it did not
    // inherit run 1's.
    assert!(!has_ref(&repo, &format!("{NS}/attempts/2/1")));
    // The earlier run stays listable.
    let listing = ralph_cmd(&repo, &["status", "--all", "--json"]);
    assert_exit(&listing, 0);
    let listing: serde_json::Value = serde_json::from_slice(&listing.stdout).unwrap();
    assert_eq!(listing["runs"].as_array().map(Vec::len), Some(1));
    assert_eq!(listing["earlier"].as_array().map(Vec::len), Some(1));
    assert_eq!(listing["earlier"][0]["finished_with"], "keep");
}

#[test]
fn issue_10_changes_made_while_stopped_are_committed_not_reverted() {
    let repo = project(TWO_STORIES);
    stopped_run(&repo);
    let calls_before = recorded_calls(&repo).len();
    // Fix story 2 by hand on the run's branch, boxes ticked.
    repo.write("story-2.txt", "done by hand\n");
    let tasks = repo.read(TASKS_PATH).replace("- [ ] 2.1", "- [x] 2.1");
    repo.write(TASKS_PATH, tasks);

    let agent = script(&repo, &story_done("2"));
    let output = start(
        &repo,
        &agent,
        &["--max-retries", "2", "--on-finish", "keep"],
    );
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(!err.contains("mid-attempt"), "{err}");
    assert_eq!(
        recorded_calls(&repo).len(),
        calls_before,
        "the agent never ran again"
    );
    assert_eq!(repo.read("story-2.txt"), "done by hand\n");
    assert!(
        subjects(&repo, "main..ralph/greet")
            .iter()
            .any(|s| s.contains("user changes while stopped")),
        "{:?}",
        subjects(&repo, "main..ralph/greet")
    );
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_10_keep_is_not_a_dead_end() {
    let repo = project(TWO_STORIES);
    let original = repo.rev_parse("main");
    let agent = script(
        &repo,
        &format!("{}[story=2]\npromise FAILED: no\n", story_done("1")),
    );
    assert_exit(
        &start(
            &repo,
            &agent,
            &["--on-finish", "keep", "--max-retries", "0"],
        ),
        3,
    );
    let aborted = ralph_cmd(&repo, &["abort"]);
    assert_exit(&aborted, 0);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), original);
    assert_eq!(repo.status_porcelain(), "");

    let repo = project(TWO_STORIES);
    assert_exit(
        &start(
            &repo,
            &agent,
            &["--on-finish", "keep", "--max-retries", "0"],
        ),
        3,
    );
    let cleaned = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&cleaned, 0);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert!(repo.status_porcelain().contains("story-1.txt"));
}

#[test]
fn issue_10_a_missing_agent_command_stops_the_run_without_spending_a_retry() {
    let repo = project(TWO_STORIES);
    let output = run(crate::harness::ralph(&repo).args([
        "start",
        CHANGE,
        "--agent-command",
        "./no-such-agent.sh",
        "--on-finish",
        "keep",
    ]));
    // A set-up error has its own status since issue 20.
    assert_exit(&output, 8);
    let said = stdout(&output);
    assert!(said.contains("./no-such-agent.sh"), "{said}");
    assert!(said.contains("no retry was spent"), "{said}");
    assert!(said.contains("0 attempts"), "{said}");
    let state = state(&repo);
    assert_eq!(state["totals"]["attempts"], 0, "{state}");
    assert!(attempts_of(&state, "1").is_empty());
}

#[test]
fn issue_10_an_agent_may_only_touch_its_own_branch() {
    let repo = project(TWO_STORIES);
    let main_before = repo.rev_parse("main");
    repo.git(&["tag", "v1"]);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\ngit checkout -q main\nwrite sneaky.txt sneaky\ngit add sneaky.txt\ngit commit -q -m sneaky\ngit tag -f v1\npromise FAILED: went astray\n{}{}",
            story_done("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(repo.rev_parse("main"), main_before, "main is where it was");
    assert_eq!(repo.rev_parse("v1"), main_before, "the tag is where it was");
    let kept = repo.rev_parse(&format!("{NS}/attempts/1/1-refs/heads/main"));
    assert_ne!(kept, main_before);
    assert!(repo.git(&["rev-list", "--all"]).contains(&kept));
    let warnings: Vec<String> = of_type(&events(&repo), "warning")
        .iter()
        .map(|event| event["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("refs/heads/main") && w.contains("put back")),
        "{warnings:?}"
    );
    repo.assert_fsck_clean();
}

#[test]
fn issue_10_single_pass_events_and_state_agree() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, "[*]\nwrite x.txt x\npromise FAILED: not today\n");
    let output = start(&repo, &agent, &["--once", "--on-finish", "keep"]);
    assert_exit(&output, 3);
    let finished = of_type(&events(&repo), "attempt_finished")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(finished[0]["outcome"], "failed", "{finished:?}");
    assert_eq!(attempts_of(&state(&repo), "1")[0].0, "failed");
}

#[test]
fn issue_10_two_runs_are_listed_by_a_bare_status() {
    let repo = project(TWO_STORIES);
    stopped_run(&repo);
    repo.git(&["switch", "-q", "main"]);
    repo.openspec_change("other", "## 1. Other\n\n- [ ] 1.1 Do it\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add other"]);
    let agent = script(&repo, "[*]\nwrite o.txt o\ntick-story\npromise COMPLETE\n");
    let mut cmd = crate::harness::ralph_with_fake(&repo, &agent);
    cmd.args(["start", "other", "--agent-command", &agent_command(&repo)])
        .args(["--on-finish", "keep"]);
    assert_exit(&run(&mut cmd), 0);
    let status = ralph_cmd(&repo, &["status"]);
    assert_exit(&status, 0);
    let out = stdout(&status);
    assert!(out.contains("greet") && out.contains("other"), "{out}");
    assert!(!out.contains("1 attempts"), "{out}");
}

#[test]
fn issue_10_prompt_mode_builds_on_each_iteration() {
    let repo = project(TWO_STORIES);
    let prompt = repo.path("PROMPT.md");
    std::fs::write(&prompt, "Add a line to log.txt each time.\n").unwrap();
    let agent = script(&repo, "[*]\nappend log.txt line\\n\npromise COMPLETE\n");
    let output = start_prompt(&repo, &agent, &prompt);
    assert_exit(&output, 0);
    // Three iterations were needed, and the third saw the first two's work.
    assert_eq!(repo.read("log.txt"), "line\nline\nline\n");
}

#[test]
fn prompt_mode_with_once_keeps_its_one_iteration_and_stops() {
    let repo = project(TWO_STORIES);
    let prompt = repo.path("PROMPT.md");
    std::fs::write(&prompt, "Add a line to log.txt each time.\n").unwrap();
    // An iteration that ends without its promise.
    let agent = script(&repo, "[*]\nappend log.txt line\\n\n");
    let mut cmd = crate::harness::ralph_with_fake(&repo, &agent);
    cmd.args(["start", CHANGE, "--agent-command", &agent_command(&repo)])
        .args(["--prompt", &prompt.to_string_lossy(), "--once"])
        .args(["--on-finish", "keep"]);
    let output = run(&mut cmd);
    assert_exit(&output, 3);
    // One iteration, its work kept as the single pass's checkpoint although
    // it was not accepted; no second iteration built on it.
    assert_eq!(repo.read("log.txt"), "line\n");
    let subject = repo.git(&["log", "-1", "--format=%s", &format!("ralph/{CHANGE}")]);
    assert!(subject.trim_end().ends_with("(single pass)"), "{subject}");
    assert_eq!(attempts_of(&state(&repo), "1").len(), 1);
    repo.assert_fsck_clean();
}

/// `start --prompt` with a check that passes once log.txt has three lines.
fn start_prompt(
    repo: &crate::harness::TestRepo,
    agent: &std::path::Path,
    prompt: &std::path::Path,
) -> std::process::Output {
    let mut cmd = crate::harness::ralph_with_fake(repo, agent);
    cmd.args(["start", CHANGE, "--agent-command", &agent_command(repo)])
        .args(["--prompt", &prompt.to_string_lossy()])
        .args(["--check", "test \"$(wc -l < log.txt)\" -ge 3"])
        .args(["--on-finish", "keep", "--no-progress-limit", "0"]);
    run(&mut cmd)
}

#[test]
fn issue_10_set_aside_refs_never_overwrite_each_other() {
    let repo = project(TWO_STORIES);
    let head = repo.rev_parse("HEAD");
    repo.git(&["update-ref", &format!("{NS}/interrupted/1"), &head]);
    let git = git_ralph::git::Repo::open(&repo.root).expect("the repository opens");
    let base = format!("{NS}/interrupted/1");
    let second = git.unused_ref(&base).expect("a free name");
    assert_eq!(second, format!("{base}-2"));
    repo.git(&["update-ref", &second, &head]);
    assert_eq!(
        git.unused_ref(&base).expect("a free name"),
        format!("{base}-3")
    );
    assert_eq!(
        git.unused_ref(&format!("{NS}/interrupted/2")).unwrap(),
        format!("{NS}/interrupted/2")
    );
}
