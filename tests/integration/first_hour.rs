//! Issue 36, the first hour: what a newcomer reads on the way from the
//! README to a finished run says the right thing. Each test names one
//! message that used to mislead, and runs the real binary to the point
//! where it is said.

use std::process::Output;

use crate::harness::story_run::*;
use crate::harness::*;

/// Both streams of a command, for searching.
fn said(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

#[test]
fn issue_36_a_held_lock_points_at_watch_not_at_status() {
    let repo = project(TWO_STORIES);
    std::fs::create_dir_all(git_dir(&repo).join("ralph")).expect("ralph dir");
    // This test's own process is alive: the lock is held.
    std::fs::write(
        git_dir(&repo).join("ralph/lock"),
        format!("{}\n{CHANGE}\n", std::process::id()),
    )
    .expect("the lock is written");
    let agent = script(&repo, &story_done("1"));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("already running"), "{err}");
    assert!(
        err.contains(&format!("git ralph watch {CHANGE}")),
        "the hint offers a way to watch it:\n{err}"
    );
    assert!(
        !err.contains("watch it with 'git ralph status"),
        "status does not watch:\n{err}"
    );
}

#[test]
fn issue_36_outside_a_repository_the_error_has_no_bare_not_found() {
    let repo = TestRepo::new();
    let outside = repo.dir.path().join("plain-dir");
    std::fs::create_dir_all(&outside).expect("plain dir");
    let mut cmd = ralph(&repo);
    cmd.current_dir(&outside)
        .env("GIT_CEILING_DIRECTORIES", repo.dir.path())
        .arg("status");
    let output = run(&mut cmd);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("not a git repository"), "{err}");
    assert!(
        !err.contains("NotFound"),
        "a cause that says nothing to a person:\n{err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn issue_36_the_unknown_change_hint_lists_only_names_start_takes() {
    let repo = project(TWO_STORIES);
    repo.openspec_change("has space", "## 1. X\n- [ ] x\n");
    repo.commit_all("A change whose name start refuses");
    let agent = script(&repo, &story_done("1"));
    let output = run(ralph_with_fake(&repo, &agent).args([
        "start",
        "no-such-change",
        "--agent-command",
        fake_agent_path(),
    ]));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.contains(CHANGE),
        "the change start takes is listed:\n{err}"
    );
    assert!(
        !err.contains("has space"),
        "a name start refuses is not offered:\n{err}"
    );
}

#[test]
fn issue_36_a_tasks_md_without_boxes_hints_at_what_works() {
    let repo = project("## 1. Prose\n\nJust write it, no boxes.\n");
    let dry = dry_run(&repo, &[CHANGE]);
    assert_exit(&dry, 1);
    let agent = script(&repo, &story_done("1"));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("no checkbox"), "{err}");
    assert!(
        !err.contains("--dry-run"),
        "--dry-run refuses the file the same way, so it is no way on:\n{err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn issue_36_an_all_done_prd_counts_in_words_and_says_how_to_reopen_a_story() {
    let repo = TestRepo::with_files(&[(
        "done.json",
        r#"{"userStories":[{"id":"US-1","title":"One","passes":true}]}"#,
    )]);
    let output = run(ralph(&repo).args([
        "start",
        "p",
        "--prd",
        "done.json",
        "--agent-command",
        "true",
    ]));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("already done"), "{err}");
    assert!(!err.contains("1 stories"), "{err}");
    assert!(err.contains("1 story"), "{err}");
    assert!(
        !err.contains("untick a box"),
        "a prd.json has no boxes:\n{err}"
    );
    assert!(err.contains("\"passes\": false"), "{err}");
}

/// Story 1 fails once without changing anything, then both stories are
/// done; the agent reports no usage at all.
fn quiet_agent_run(repo: &TestRepo, extra: &[&str]) -> Output {
    let agent = script(
        repo,
        &format!(
            "[story=1 attempt=1]\npromise FAILED: nothing to do here\n[story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let mut args = vec!["--on-finish", "keep", "--plain"];
    args.extend_from_slice(extra);
    start(repo, &agent, &args)
}

#[test]
fn issue_36_an_attempt_that_changed_nothing_is_not_said_to_keep_work() {
    let repo = project(TWO_STORIES);
    let output = quiet_agent_run(&repo, &[]);
    assert_exit(&output, 0);
    let out = said(&output);
    let failed = out
        .lines()
        .skip_while(|line| !line.contains("attempt 1 failed"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!failed.is_empty(), "{out}");
    assert!(
        !failed.contains("work kept at"),
        "the attempt changed nothing; nothing is kept:\n{out}"
    );
    assert!(failed.contains("changed nothing"), "{out}");
    // The git oracle: the attempt's ref holds the checkpoint's tree.
    let kept = format!("{NS}/attempts/1/1");
    assert_eq!(
        repo.rev_parse(&format!("{kept}^{{tree}}")),
        repo.rev_parse(&format!("{kept}~1^{{tree}}")),
        "the attempt did change something"
    );
}

#[test]
fn issue_36_an_agent_that_reports_no_usage_is_not_free() {
    let repo = project(TWO_STORIES);
    let output = quiet_agent_run(&repo, &[]);
    assert_exit(&output, 0);
    let out = said(&output);
    assert!(!out.contains("0 tokens · $0.00"), "{out}");
    assert!(out.contains("usage unknown"), "{out}");
    for args in [
        vec!["status", CHANGE],
        vec!["log", CHANGE],
        vec!["show", "2"],
    ] {
        let output = ralph_cmd(&repo, &args);
        assert_exit(&output, 0);
        let text = stdout(&output);
        assert!(
            !text.contains("0 tokens") && !text.contains("$0.00"),
            "{args:?}:\n{text}"
        );
        assert!(text.contains("unknown"), "{args:?}:\n{text}");
    }
}

#[test]
fn issue_36_a_custom_command_is_not_said_to_run_a_default_model() {
    let repo = project(TWO_STORIES);
    let output = quiet_agent_run(&repo, &[]);
    assert_exit(&output, 0);
    let trailers = repo.git(&["log", "-1", "--format=%(trailers)", BRANCH]);
    let agent = trailers
        .lines()
        .find(|line| line.starts_with("Ralph-Agent:"))
        .unwrap_or_else(|| panic!("no Ralph-Agent trailer:\n{trailers}"));
    assert!(agent.starts_with("Ralph-Agent: command "), "{agent}");
    assert!(!agent.contains("default model"), "{agent}");
    assert!(
        !trailers.contains("Ralph-Tokens: 0"),
        "no tokens were reported, so none are counted:\n{trailers}"
    );
}

#[test]
fn issue_36_a_stopped_run_says_stopped_once() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        "[story=1]\nwrite story-1.txt x\\n\npromise FAILED: not yet\n",
    );
    let output = start(&repo, &agent, &["--max-retries", "0", "--plain"]);
    assert_exit(&output, 3);
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(status.contains("max_retries"), "{status}");
    // Stop it by hand: the reason is "stopped".
    let state_path = run_dir(&repo).join("state.json");
    let mut recorded = state(&repo);
    recorded["reason"] = "stopped".into();
    std::fs::write(&state_path, recorded.to_string()).expect("state.json");
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(!status.contains("stopped (stopped)"), "{status}");
    assert!(status.contains("state:  stopped"), "{status}");
}

#[test]
fn issue_36_a_worktree_cleanup_does_not_say_yours_was_untouched() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(
        &repo,
        &agent,
        &["--worktree", "--on-finish", "cleanup", "--plain"],
    );
    assert_exit(&output, 0);
    // The run's work is in the user's worktree now.
    assert!(repo.path("story-1.txt").exists());
    let err = stderr(&output);
    assert!(err.contains("cleaned up"), "{err}");
    assert!(!err.contains("not touched"), "{err}");
    assert!(!err.contains("0 tokens, $0.00"), "{err}");
}

/// A prd.json with four stories: US-3 depends on US-1.
const FOUR_PRD: &str = r#"{"userStories":[
 {"id":"US-1","title":"One","passes":false},
 {"id":"US-2","title":"Two","passes":false},
 {"id":"US-3","title":"Three","passes":false,"dependsOn":["US-1"]},
 {"id":"US-4","title":"Four","passes":false}
]}
"#;

#[test]
fn issue_36_a_parallel_dry_run_shows_what_starts_at_once_and_what_waits() {
    let repo = TestRepo::with_files(&[("prd.json", FOUR_PRD)]);
    let before = Untouched::take(&repo);
    let output = dry_run(&repo, &["p", "--prd", "prd.json", "--parallel", "2"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains("at once: US-1, US-2"),
        "the first two start together:\n{out}"
    );
    assert!(out.contains("US-3 waits for US-1"), "{out}");
    assert!(
        out.contains("US-4 waits for a free place"),
        "the width holds it back:\n{out}"
    );
    before.assert_still(&repo, "a dry run");
    // In JSON, for programs.
    let output = run(ralph(&repo).args([
        "start",
        "p",
        "--prd",
        "prd.json",
        "--parallel",
        "2",
        "--dry-run",
        "--json",
        "--agent-command",
        "true",
    ]));
    assert_exit(&output, 0);
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        plan["schedule"]["at_once"],
        serde_json::json!(["US-1", "US-2"])
    );
    // One at a time, a checklist says that its stories wait in order.
    let repo = project(TWO_STORIES);
    let out = stdout(&dry_run(&repo, &[CHANGE, "--parallel", "3"]));
    assert!(out.contains("at once: 1"), "{out}");
    assert!(out.contains("2 waits for 1"), "{out}");
    assert!(
        out.contains("independent = true"),
        "how to free them:\n{out}"
    );
}

/// A status read while three stories of a parallel run are at work.
#[test]
fn issue_36_status_of_a_parallel_run_counts_the_attempts_at_work() {
    let repo = TestRepo::with_files(&[("prd.json", FOUR_PRD)]);
    let hold = repo.dir.path().join("hold");
    std::fs::write(&hold, "").expect("hold");
    let gate = format!("while [ -e {} ]; do sleep 0.05; done", hold.display());
    let agent = script(&repo, "[*]\npromise COMPLETE\n");
    let command = format!("{gate}; exec {}", shell_quote(fake_agent_path()));
    let mut cmd = ralph_with_fake(&repo, &agent);
    cmd.args([
        "start",
        "p",
        "--prd",
        "prd.json",
        "--parallel",
        "3",
        "--agent-command",
        &command,
        "--on-finish",
        "keep",
        "--plain",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("start runs");
    let mut status = String::new();
    wait_until(
        "three stories at work",
        std::time::Duration::from_secs(60),
        || {
            status = stdout(&ralph_cmd(&repo, &["status", "p"]));
            status.matches("at work:").count() == 3
        },
    );
    std::fs::remove_file(&hold).expect("release");
    let _ = child.wait();
    assert!(
        !status.contains("[0/0 tasks]"),
        "prd stories have no tasks:\n{status}"
    );
    assert!(
        !status.contains("totals: 0 attempts ·"),
        "three attempts run:\n{status}"
    );
    assert!(status.contains("3 at work"), "{status}");
}

/// Story 1's first attempt adds, changes, removes, makes executable and
/// leaves without a final newline, then fails; its second finishes it.
fn patched_run() -> TestRepo {
    let repo = TestRepo::with_files(&[
        ("old.txt", "going away\n"),
        ("run.sh", "#!/bin/sh\necho hi\n"),
        (
            "notes.txt",
            "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n",
        ),
    ]);
    repo.openspec_change(CHANGE, TWO_STORIES);
    repo.commit_all("Add the change");
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\n\
             write hello.txt hello\\n\n\
             write notes.txt one\\ntwo\\n3\\nfour\\nfive\\nsix\\nseven\\neight\\nnine\n\
             rm old.txt\n\
             chmod +x run.sh\n\
             mkdir deep/er\n\
             write deep/er/empty.txt \n\
             promise FAILED: not yet\n\
             [story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep", "--plain"]),
        0,
    );
    repo
}

/// Applies `patch` with `git apply` in a worktree at `base`, and returns the
/// tree git writes of the result.
fn applied_tree(repo: &TestRepo, base: &str, patch: &str) -> String {
    let dir = repo.dir.path().join("apply-here");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        dir.to_str().unwrap(),
        base,
    ]);
    let patch_file = repo.dir.path().join("attempt.patch");
    std::fs::write(&patch_file, patch).expect("patch");
    let output = run(repo
        .command("git", &dir)
        .args(["apply", "--whitespace=nowarn"])
        .arg(&patch_file));
    assert!(
        output.status.success(),
        "git apply refused the patch: {}\n{patch}",
        describe(&output)
    );
    repo.git_at(&dir, &["add", "-A"]);
    let tree = repo.git_at(&dir, &["write-tree"]).trim().to_owned();
    repo.git(&["worktree", "remove", "--force", dir.to_str().unwrap()]);
    tree
}

#[test]
fn issue_36_show_patch_is_a_patch_git_applies_as_git_diff_writes_it() {
    let repo = patched_run();
    let kept = format!("{NS}/attempts/1/1");
    let output = ralph_cmd(&repo, &["show", "1/1", "--patch"]);
    assert_exit(&output, 0);
    let patch = stdout(&output);
    assert!(patch.starts_with("diff --git "), "only the patch:\n{patch}");
    assert!(patch.contains("new file mode 100644"), "{patch}");
    assert!(patch.contains("deleted file mode 100644"), "{patch}");
    assert!(
        patch.contains("old mode 100644\nnew mode 100755"),
        "{patch}"
    );
    assert!(patch.contains("\\ No newline at end of file"), "{patch}");
    assert!(!patch.contains("@@ -1,0"), "{patch}");
    assert_eq!(
        patch,
        repo.git(&[
            "diff",
            "--no-color",
            "--no-ext-diff",
            &format!("{kept}~1"),
            &kept
        ]),
        "as git diff writes it"
    );
    assert_eq!(
        applied_tree(&repo, &format!("{kept}~1"), &patch),
        repo.rev_parse(&format!("{kept}^{{tree}}")),
        "git apply gives the attempt's tree"
    );
    // --diff alone is the same patch.
    let diff = ralph_cmd(&repo, &["show", "1/1", "--diff"]);
    assert_exit(&diff, 0);
    assert_eq!(stdout(&diff), patch);
    // A completed attempt: its checkpoint against the one before.
    let done = stdout(&ralph_cmd(&repo, &["show", "1/2", "--patch"]));
    assert_eq!(
        done,
        repo.git(&[
            "diff",
            "--no-color",
            "--no-ext-diff",
            &format!("{BRANCH}~2"),
            &format!("{BRANCH}~1")
        ])
    );
}

#[test]
fn issue_36_show_patch_takes_no_other_part() {
    let repo = patched_run();
    let output = ralph_cmd(&repo, &["show", "1/1", "--patch", "--prompt"]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("cannot be used with"),
        "{}",
        describe(&output)
    );
}

/// The demo in a real terminal of 80x24, as a newcomer's first run: the
/// loop screen fits, its help fits, and the end-of-loop menu says its keys
/// and offers abort.
#[test]
fn issue_36_the_demo_fits_80x24_and_the_end_menu_says_its_keys_and_offers_abort() {
    let repo = TestRepo::new();
    let tmp = repo.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let Some(tmux) = crate::harness::tmux::Tmux::start_sized(
        &repo,
        &format!(
            "TMPDIR={} {} demo --pace 20; echo demo-exited-$?; sleep 30",
            shell_quote(&tmp.to_string_lossy()),
            shell_quote(ralph_path())
        ),
        (80, 24),
    ) else {
        return;
    };
    // The header says the run is done as soon as its last event is read;
    // the footer offers to leave once the loop has handed everything back.
    let screen = tmux.wait_for("q leave");
    assert!(screen.contains("done (completed)"), "{screen}");
    let rows: Vec<&str> = screen.lines().collect();
    let footer = rows.last().copied().unwrap_or_default();
    assert!(
        footer.contains("? help") && footer.contains("q leave"),
        "{screen}"
    );
    assert!(!screen.contains('…'), "something was cut:\n{screen}");
    tmux.keys(&["?"]);
    let help = tmux.wait_for("Keys");
    assert!(help.contains("this help"), "the help fits:\n{help}");
    tmux.keys(&["x"]);
    tmux.keys(&["q"]);
    // The menu is drawn item by item: the last one says it is all there.
    let menu = tmux.wait_for("abort: ");
    assert!(menu.contains("Enter"), "the menu says its keys:\n{menu}");
    assert!(menu.contains("abort"), "the menu offers abort:\n{menu}");
    // Abort it: the last item.
    tmux.keys(&["Down", "Down", "Down", "Enter"]);
    let done = tmux.wait_for("demo-exited-");
    assert!(done.contains("aborted:"), "{done}");
}

/// A run stopped after story 1's first attempt, resumed on a terminal:
/// that attempt happened before this loop screen began, and it still
/// shows what its agent said, read from its transcript, not "no output
/// yet".
#[test]
fn issue_36_a_resumed_runs_earlier_attempt_shows_its_transcript() {
    let repo = project(TWO_STORIES);
    let first = script(
        &repo,
        "[story=1]\nsay The first attempt looked at the greeting.\npromise FAILED: not yet\n",
    );
    let output = start(&repo, &first, &["--max-retries", "0", "--plain"]);
    assert_exit(&output, 3);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let Some(tmux) = crate::harness::tmux::Tmux::start_sized(
        &repo,
        &format!(
            "FAKE_AGENT_SCRIPT={} FAKE_AGENT_RECORD_DIR={} {} start {CHANGE} --agent-command {} --max-retries 2 --on-finish keep; echo start-exited-$?; sleep 30",
            shell_quote(&agent.to_string_lossy()),
            shell_quote(&repo.record_dir().to_string_lossy()),
            shell_quote(ralph_path()),
            shell_quote(&agent_command(&repo)),
        ),
        (80, 24),
    ) else {
        return;
    };
    tmux.wait_for("done (completed)");
    // Story 1, its first attempt.
    tmux.keys(&["k", "k", "["]);
    let screen = tmux.wait_for("The first attempt looked at the greeting.");
    assert!(!screen.contains("no output yet"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("start-exited-0");
}
