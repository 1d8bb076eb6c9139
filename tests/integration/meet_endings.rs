//! Where features meet (issue 33), at the end of a run: a run in a worktree
//! of its own (or a parallel one) hands its branch off from either
//! worktree; a kept run out of retries resumes with more; a run moved to
//! history names its refs where they are now; `watch` follows a run across
//! a stop and a resume; and a cleanup refused for the user's own edits says
//! what works, which then does. Through the real binary, git the oracle.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::forge::{FakeForge, PR_URL};
use crate::harness::story_run::*;
use crate::harness::tmux::Tmux;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(30);

/// A bare repository beside the worktree, added as remote `origin`.
fn origin(repo: &TestRepo) -> PathBuf {
    let path = repo.dir.path().join("origin.git");
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", path.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", path.to_str().unwrap()]);
    path
}

fn remote_branch(repo: &TestRepo, remote: &Path) -> Option<String> {
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

/// `git ralph <args>` with the scripted forge on PATH, run in `dir`.
fn with_forge(
    repo: &TestRepo,
    forge: &FakeForge,
    dir: &Path,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = repo.command(ralph_path(), dir);
    cmd.args(args);
    forge.on_path(&mut cmd);
    run(&mut cmd)
}

/// Where a run of `greet` works by default, beside the user's worktree.
fn run_worktree(repo: &TestRepo) -> PathBuf {
    let parent = fs::canonicalize(repo.root.parent().expect("a parent")).expect("it exists");
    parent.join("repo.ralph").join(CHANGE)
}

/// `git worktree list --porcelain`'s worktree lines.
fn worktrees(repo: &TestRepo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter(|line| line.starts_with("worktree "))
        .map(str::to_string)
        .collect()
}

/// Only the user's worktree is left, and git is content with it all.
fn assert_only_the_users_worktree(repo: &TestRepo) {
    assert_eq!(worktrees(repo).len(), 1, "{:?}", worktrees(repo));
    let prune = repo.git_output(&["worktree", "prune", "-n", "-v"]);
    assert_eq!(format!("{}{}", stdout(&prune), stderr(&prune)), "");
    repo.assert_fsck_clean();
}

/// A run of TWO_STORIES in its own worktree whose story 2 always fails:
/// stopped at max_retries, its worktree kept.
fn stopped_worktree_run(repo: &TestRepo) -> PathBuf {
    let agent = script(
        repo,
        &format!(
            "[story=1]\nappend README.md story 1 was here\\n\n{}[story=2]\npromise FAILED: cannot do it\n",
            finish_story("1")
        ),
    );
    let output = start(repo, &agent, &["--worktree", "--max-retries", "0"]);
    assert_exit(&output, 3);
    let path = run_worktree(repo);
    assert!(path.join(".git").is_file(), "{}", describe(&output));
    path
}

// Case 2: a worktree run hands off.

#[test]
fn issue_33_a_worktree_run_pushes_when_it_finishes() {
    let repo = project(TWO_STORIES);
    let remote = origin(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--worktree", "--on-finish", "push"]);
    assert_exit(&output, 0);
    assert_eq!(
        remote_branch(&repo, &remote).as_deref(),
        Some(repo.rev_parse(BRANCH).as_str()),
        "{}",
        describe(&output)
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_33_a_kept_worktree_run_pushes_and_opens_a_pr_from_the_users_worktree() {
    let repo = project(TWO_STORIES);
    let remote = origin(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let output = start(&repo, &agent, &["--worktree", "--on-finish", "keep"]);
    assert_exit(&output, 0);
    let tip = repo.rev_parse(BRANCH);
    let output = ralph_cmd(&repo, &["finish", CHANGE, "--push"]);
    assert_success(&output);
    assert_eq!(remote_branch(&repo, &remote), Some(tip.clone()));

    let repo = project(TWO_STORIES);
    let remote = origin(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    assert_exit(
        &start(&repo, &agent, &["--worktree", "--on-finish", "keep"]),
        0,
    );
    let forge = FakeForge::new(&repo);
    let mut finish = ralph(&repo);
    finish.args(["finish", CHANGE, "--pr"]);
    forge.on_path(&mut finish);
    let output = run(&mut finish);
    assert_success(&output);
    assert_eq!(
        remote_branch(&repo, &remote),
        Some(repo.rev_parse(BRANCH)),
        "{}",
        describe(&output)
    );
    assert!(
        forge.verbs().iter().any(|v| v.contains("create")),
        "{:?}",
        forge.verbs()
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
}

#[test]
fn issue_33_a_stopped_worktree_run_opens_its_pr_from_either_worktree() {
    for from_the_runs_own in [false, true] {
        let repo = project(TWO_STORIES);
        let remote = origin(&repo);
        let path = stopped_worktree_run(&repo);
        let tip = repo.rev_parse(BRANCH);
        let forge = FakeForge::new(&repo);
        let dir = if from_the_runs_own { &path } else { &repo.root };
        let output = with_forge(&repo, &forge, dir, &["finish", "--pr"]);
        assert_success(&output);
        assert_eq!(
            stdout(&output),
            format!("{PR_URL}\n"),
            "{}",
            describe(&output)
        );
        assert_eq!(remote_branch(&repo, &remote), Some(tip.clone()));
        assert_eq!(repo.rev_parse(BRANCH), tip);
        assert_eq!(forge.verbs(), ["gh pr list", "gh pr create"]);
        let state = state(&repo);
        assert_eq!(state["status"], "finished", "{state}");
        assert_eq!(state["finished_with"], "keep", "{state}");
        assert!(!path.exists(), "the run's worktree is removed");
        assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
        assert_eq!(repo.status_porcelain(), "");
        assert_only_the_users_worktree(&repo);
    }
}

#[test]
fn issue_33_a_push_that_cannot_happen_leaves_a_worktree_run_as_it_was() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    let untouched = Untouched::take(&repo);
    let run_side = disk_snapshot(&path);
    let listed = worktrees(&repo);
    let before = state(&repo);

    for how in ["--push", "--pr"] {
        let refused = ralph_cmd(&repo, &["finish", how]);
        assert_exit(&refused, 1);
        let err = stderr(&refused);
        assert!(err.contains("there is no remote 'origin'"), "{err}");
        assert!(err.contains("git remote add origin"), "{err}");
        assert!(!err.contains("kept"), "nothing was kept: {err}");
        untouched.assert_still(&repo, &format!("a refused finish {how}"));
        assert!(
            snapshot_diff(&run_side, &disk_snapshot(&path)).is_empty(),
            "the run's worktree changed"
        );
        assert_eq!(worktrees(&repo), listed);
        assert_eq!(state(&repo), before, "the record is as it was");
    }

    // Said what to do, done, and the push goes through.
    let remote = origin(&repo);
    assert_success(&ralph_cmd(&repo, &["finish", "--push"]));
    assert_eq!(remote_branch(&repo, &remote), Some(repo.rev_parse(BRANCH)));
    assert_only_the_users_worktree(&repo);
}

#[test]
fn issue_33_on_finish_push_without_a_remote_is_refused_before_the_run_starts() {
    for mode in [&["--worktree"][..], &[][..], &["--parallel", "2"][..]] {
        let repo = project(TWO_STORIES);
        let untouched = Untouched::take(&repo);
        let agent = script(&repo, &stories_done(&["1", "2"]));
        let mut args = vec!["--on-finish", "push"];
        args.extend_from_slice(mode);
        let output = start(&repo, &agent, &args);
        assert_exit(&output, 1);
        let err = stderr(&output);
        assert!(
            err.contains("there is no remote 'origin'"),
            "{mode:?}: {err}"
        );
        assert!(err.contains("git remote add origin"), "{mode:?}: {err}");
        untouched.assert_still(&repo, &format!("a start refused in {mode:?}"));
        assert!(recorded_calls(&repo).is_empty(), "the agent never ran");
        assert!(!run_worktree(&repo).exists());
    }
}

#[test]
fn issue_33_a_parallel_run_pushes_and_opens_its_pr_when_it_finishes() {
    let repo = independent_project();
    let remote = origin(&repo);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let forge = FakeForge::new(&repo);
    let mut cmd = start_command(&repo, &agent, &["--parallel", "2", "--on-finish", "pr"]);
    forge.on_path(&mut cmd);
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    assert_eq!(
        remote_branch(&repo, &remote),
        Some(repo.rev_parse(BRANCH)),
        "{}",
        describe(&output)
    );
    assert_eq!(forge.verbs(), ["gh pr list", "gh pr create"]);
    let body = &forge.calls()[1].stdin;
    assert!(body.contains("**3 of 3 stories done**"), "{body}");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.status_porcelain(), "");
    let tree = tree_files(&repo, BRANCH);
    for id in ["1", "2", "3"] {
        assert!(tree.contains(&format!("story-{id}.txt")), "{tree:?}");
    }
    assert_only_the_users_worktree(&repo);
}

// Case 7: a kept run out of retries resumes with more.

#[test]
fn issue_33_a_kept_run_out_of_retries_resumes_with_more() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\npromise FAILED: not yet\n[story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 3);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "5"],
    );
    assert_exit(&output, 0);
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

/// Story 1 fails at its first attempt and is done at its second; story 2
/// (and 3) at once.
fn fails_once(repo: &TestRepo, stories: &[&str]) -> PathBuf {
    script(
        repo,
        &format!(
            "[story=1 attempt=1]\nwrite story-1.txt not yet\\n\npromise FAILED: not yet\n[story=1 attempt=2]\n{}{}",
            finish_story("1"),
            stories_done(&stories[1..])
        ),
    )
}

/// What the end of a kept run out of retries says: it offers the resume.
fn assert_offers_the_resume(output: &std::process::Output) {
    let err = stderr(output);
    assert!(err.contains("kept"), "{err}");
    assert!(
        err.contains(&format!("git ralph start {CHANGE} --max-retries 2")),
        "the resume is offered:\n{err}"
    );
}

#[test]
fn issue_33_a_kept_run_out_of_retries_offers_the_resume_in_the_users_worktree() {
    let repo = project(TWO_STORIES);
    let agent = fails_once(&repo, &["1", "2"]);
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 3);
    assert_offers_the_resume(&output);
    // The words offered, as they are.
    let output = start(&repo, &agent, &["--max-retries", "2"]);
    assert_exit(&output, 0);
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    assert!(
        !git_dir(&repo).join("ralph/history").exists(),
        "resumed, not begun again"
    );
    let state = state(&repo);
    assert_eq!(state["finished_with"], "keep", "{state}");
    assert_eq!(attempts_of(&state, "1").len(), 2, "{state}");
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn issue_33_a_kept_worktree_run_out_of_retries_resumes_with_more() {
    let repo = project(TWO_STORIES);
    let agent = fails_once(&repo, &["1", "2"]);
    let output = start(
        &repo,
        &agent,
        &["--worktree", "--on-finish", "keep", "--max-retries", "0"],
    );
    assert_exit(&output, 3);
    assert_offers_the_resume(&output);
    assert!(
        !run_worktree(&repo).exists(),
        "keep removed the run's worktree"
    );
    let output = start(&repo, &agent, &["--max-retries", "2"]);
    assert_exit(&output, 0);
    assert!(
        !git_dir(&repo).join("ralph/history").exists(),
        "resumed, not begun again"
    );
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"]),
        "{}",
        describe(&output)
    );
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/1/1"), "story-1.txt"),
        "not yet\n"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(state(&repo)["finished_with"], "keep");
    assert_only_the_users_worktree(&repo);
}

#[test]
fn issue_33_a_kept_parallel_run_out_of_retries_resumes_with_more() {
    let repo = independent_project();
    let agent = fails_once(&repo, &["1", "2", "3"]);
    let output = start(
        &repo,
        &agent,
        &[
            "--parallel",
            "2",
            "--on-finish",
            "keep",
            "--max-retries",
            "0",
        ],
    );
    assert_exit(&output, 3);
    assert_offers_the_resume(&output);
    let output = start(&repo, &agent, &["--max-retries", "2"]);
    assert_exit(&output, 0);
    assert!(
        !git_dir(&repo).join("ralph/history").exists(),
        "resumed, not begun again"
    );
    let tree = tree_files(&repo, BRANCH);
    for id in ["1", "2", "3"] {
        assert!(
            tree.contains(&format!("story-{id}.txt")),
            "{tree:?}\n{}",
            describe(&output)
        );
    }
    assert_eq!(show(&repo, BRANCH, "story-1.txt"), "work of story 1\n");
    let status = status_json(&repo);
    assert_eq!(status["stories_done"], 3, "{status:#}");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.status_porcelain(), "");
    assert_only_the_users_worktree(&repo);
}

// Case 6: a run moved to history names its refs where they are now.

/// Run 1 of greet (story 1 fails once, writing `first`), kept; then run 2,
/// begun again from main (story 1 fails once again, writing `second`).
/// Returns the history run's label.
fn run_twice(repo: &TestRepo) -> String {
    let once = |said: &str| {
        script(
            repo,
            &format!(
                "[story=1 attempt=1]\nwrite story-1.txt {said}\\n\npromise FAILED: {said}\n\
                 [story=1 attempt=2]\n{}{}",
                finish_story("1"),
                story_done("2")
            ),
        )
    };
    assert_exit(&start(repo, &once("first"), &["--on-finish", "keep"]), 0);
    repo.git(&["switch", "-q", "main"]);
    assert_exit(&start(repo, &once("second"), &["--on-finish", "keep"]), 0);
    let history = fs::read_dir(git_dir(repo).join("ralph/history"))
        .expect("a history")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<Vec<_>>();
    assert_eq!(history.len(), 1, "{history:?}");
    format!("history/{}", history[0])
}

/// What a history run's log and show say of story 1's failed attempt.
fn assert_names_its_own_ref(repo: &TestRepo, label: &str) {
    let id = label.strip_prefix("history/").unwrap();
    let kept_at = format!("{NS}/history/{id}/attempts/1/1");
    let trail = ralph_cmd(repo, &["log", label, "--json"]);
    assert_exit(&trail, 0);
    let trail: serde_json::Value = serde_json::from_slice(&trail.stdout).unwrap();
    assert_eq!(
        trail["stories"][0]["attempts"][0]["attempt_ref"], kept_at,
        "{trail:#}"
    );
    assert_eq!(show(repo, &kept_at, "story-1.txt"), "first\n");
    let text = stdout(&ralph_cmd(repo, &["log", label]));
    assert!(text.contains(&kept_at), "{text}");
    assert!(!text.contains(&format!("{NS}/attempts/")), "{text}");

    let shown = ralph_cmd(repo, &["show", "1/1", label, "--diff"]);
    assert_exit(&shown, 0);
    let diff = stdout(&shown);
    assert!(diff.contains("+first"), "{diff}");
    assert!(!diff.contains("second"), "{diff}");
    assert!(!diff.contains("(no change)"), "{diff}");

    let all = ralph_cmd(repo, &["status", "--all", "--json"]);
    assert_exit(&all, 0);
    let all: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(
        all["earlier"][0]["stories"][0]["attempts"][0]["preserved"], kept_at,
        "{all:#}"
    );
    // The live run keeps the name for its own attempt.
    let live = ralph_cmd(repo, &["show", "1/1", CHANGE, "--diff"]);
    assert!(stdout(&live).contains("+second"), "{}", describe(&live));
}

#[test]
fn issue_33_a_run_moved_to_history_names_its_refs_where_they_are_now() {
    let repo = project(TWO_STORIES);
    let label = run_twice(&repo);
    let id = label.strip_prefix("history/").unwrap();
    let archived = fs::read_to_string(git_dir(&repo).join(format!("ralph/{label}/state.json")))
        .expect("the archived state");
    assert!(
        archived.contains(&format!("{NS}/history/{id}/attempts/1/1")),
        "the archive records the new names:\n{archived}"
    );
    assert_names_its_own_ref(&repo, &label);
}

#[test]
fn issue_33_a_run_archived_by_an_earlier_release_is_read_with_its_refs_new_names() {
    let repo = project(TWO_STORIES);
    let label = run_twice(&repo);
    let id = label.strip_prefix("history/").unwrap();
    // As earlier releases left it: the refs moved, their old names kept.
    let path = git_dir(&repo).join(format!("ralph/{label}/state.json"));
    let old = fs::read_to_string(&path)
        .unwrap()
        .replace(&format!("{NS}/history/{id}/"), &format!("{NS}/"));
    assert!(old.contains(&format!("\"{NS}/attempts/1/1\"")), "{old}");
    fs::write(&path, old).unwrap();
    assert_names_its_own_ref(&repo, &label);
}

#[test]
fn issue_33_watch_of_a_run_in_history_names_its_refs_where_they_are_now() {
    let repo = project(TWO_STORIES);
    let label = run_twice(&repo);
    let id = label.strip_prefix("history/").unwrap();
    let Some(tmux) = Tmux::start_sized(
        &repo,
        &format!(
            "{} watch {label}; echo watch-exited-$?; sleep 30",
            shell_quote(ralph_path())
        ),
        (200, 30),
    ) else {
        return;
    };
    tmux.wait_for("2. Farewell");
    // Story 1, its first attempt: the Diff tab, then the Events tab.
    tmux.keys(&["k", "["]);
    tmux.wait_for("#1 failed");
    tmux.keys(&["Tab", "Tab"]);
    let screen = tmux.wait_for("+first");
    assert!(!screen.contains("second"), "{screen}");
    tmux.keys(&["Tab", "Tab"]);
    let screen = tmux.wait_for("work kept at");
    assert!(
        screen.contains(&format!("work kept at {NS}/history/{id}/attempts/1/1")),
        "{screen}"
    );
    tmux.keys(&["q"]);
    tmux.wait_for("watch-exited-0");
}

// Case 9: watch follows a run across a stop and a resume.

/// `git ralph watch greet` in a tmux pane of its own.
fn watch_in_tmux(repo: &TestRepo) -> Option<Tmux> {
    Tmux::start(
        repo,
        &format!(
            "{} watch {CHANGE}; echo watch-exited-$?; sleep 30",
            shell_quote(ralph_path())
        ),
    )
}

/// Stop the loop in the background as Ctrl-C does, and wait for it.
fn stop(repo: &TestRepo, run: Background) {
    run.signal(Signal::SIGINT);
    let done = run.wait(PATIENCE);
    assert_eq!(done.status.code(), Some(130), "{}", done.stderr);
    kill_agents(&repo.record_dir());
    assert_eq!(state(repo)["status"], "stopped");
}

/// The header's first line: the change, the branch, how the run stands.
fn header(screen: &str) -> &str {
    screen.lines().next().unwrap_or_default()
}

/// Waits until the header says the run is done.
fn wait_done(tmux: &Tmux) -> String {
    let screen = tmux.wait_for("done (completed)");
    assert!(header(&screen).contains("done (completed)"), "{screen}");
    screen
}

#[test]
fn issue_33_watch_follows_a_run_across_a_stop_and_a_resume() {
    let repo = project(THREE_STORIES);
    let first = script(
        &repo,
        &format!(
            "{}[story=2]\nsay Story two is thinking.\nwrite story-2.txt half\nsleep 60\n",
            story_done("1")
        ),
    );
    let run = Background::start(&repo, &first, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.root, "2", 1, "story-2.txt");
    let Some(tmux) = watch_in_tmux(&repo) else {
        return;
    };
    tmux.wait_for("Story two is thinking.");
    stop(&repo, run);
    let screen = tmux.wait_for("stopped");
    assert!(header(&screen).contains("stopped"), "{screen}");

    // Resumed: story 2 again, then story 3 at work; s in the watcher stops
    // the resumed loop, as it did the first.
    let second = script(
        &repo,
        "[story=2]\nsay Story two is back.\nwrite story-2.txt work of story 2\\n\ntick-story\npromise COMPLETE\n\
         [story=3]\nsay Story three is thinking.\nwrite story-3.txt half\nsleep 60\n",
    );
    let run = Background::start(&repo, &second, &[]);
    let screen = tmux.wait_for("Story three is thinking.");
    assert!(header(&screen).contains("running"), "{screen}");
    assert!(
        screen.contains("s stop"),
        "a live run can be stopped:\n{screen}"
    );
    tmux.keys(&["s"]);
    let done = run.wait(PATIENCE);
    assert_eq!(done.status.code(), Some(130), "{}", done.stderr);
    kill_agents(&repo.record_dir());
    let screen = tmux.wait_for("stopped");
    assert!(header(&screen).contains("stopped"), "{screen}");

    // Resumed once more, to the end.
    let third = script(
        &repo,
        "[story=3]\nsay Story three is done.\nwrite story-3.txt work of story 3\\n\ntick-story\npromise COMPLETE\n",
    );
    let done = Background::start(&repo, &third, &[]).wait(PATIENCE);
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    let screen = wait_done(&tmux);
    assert!(screen.contains("Story three is done."), "{screen}");
    assert!(
        !screen.contains("s stop"),
        "nothing runs to stop:\n{screen}"
    );
    // Story 2's resumed attempt is there to read.
    tmux.keys(&["k"]);
    tmux.wait_for("Story two is back.");
    tmux.keys(&["q"]);
    tmux.wait_for("watch-exited-0");
    assert_eq!(status_json(&repo)["stories_done"], 3);
}

#[test]
fn issue_33_watch_opened_on_a_stopped_parallel_run_follows_its_resume() {
    let repo = independent_project();
    let first = script(
        &repo,
        "[story=1]\nwrite story-1.txt half\nsleep 60\n[story=2]\nwrite story-2.txt half\nsleep 60\n",
    );
    let run = Background::start(&repo, &first, &["--parallel", "2", "--on-finish", "keep"]);
    let beside = run_worktree(&repo).parent().expect("a parent").to_owned();
    agent_at_work(&repo, &beside.join("greet.story-1"), "1", 1, "story-1.txt");
    agent_at_work(&repo, &beside.join("greet.story-2"), "2", 1, "story-2.txt");
    stop(&repo, run);
    let Some(tmux) = watch_in_tmux(&repo) else {
        return;
    };
    tmux.wait_for("stopped");

    let second = script(
        &repo,
        "[story=1]\nsay Story one is back.\nwrite story-1.txt work of story 1\\n\ntick-story\npromise COMPLETE\n\
         [story=2]\nsay Story two is back.\nwrite story-2.txt work of story 2\\n\ntick-story\npromise COMPLETE\n\
         [story=3]\nsay Story three, at last.\nwrite story-3.txt work of story 3\\n\ntick-story\npromise COMPLETE\n",
    );
    let done = Background::start(&repo, &second, &[]).wait(PATIENCE);
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);
    let screen = wait_done(&tmux);
    assert!(screen.contains("3. Docs"), "{screen}");
    // Every story's resumed attempt is there to read, the last first.
    tmux.wait_for("Story three, at last.");
    for (key, said) in [("k", "Story two is back."), ("k", "Story one is back.")] {
        tmux.keys(&[key]);
        tmux.wait_for(said);
    }
    tmux.keys(&["q"]);
    tmux.wait_for("watch-exited-0");
}

// Case 10: a cleanup refused for the user's own edits says what works.

/// A README of several lines, so that an edit at its top and one at its
/// end merge.
const README: &str = "# Test project\n\nWhat it is.\n\nHow to use it.\n";

/// The `hint:` lines of a refusal.
fn hint(output: &std::process::Output) -> String {
    stderr(output)
        .lines()
        .filter(|line| line.starts_with("hint:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn issue_33_a_cleanup_refused_for_the_users_edits_says_what_works_and_it_does() {
    let repo = project(TWO_STORIES);
    repo.write("README.md", README);
    repo.commit_all("A longer README");
    let path = stopped_worktree_run(&repo);
    // The user edits the top of the README the run added a line to.
    let mine = README.replace("# Test project", "# My project");
    repo.write("README.md", &mine);
    let untouched = Untouched::take(&repo);

    let refused = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&refused, 1);
    assert!(
        stderr(&refused).contains("README.md"),
        "{}",
        describe(&refused)
    );
    let said = hint(&refused);
    assert!(
        said.contains("commit your changes to README.md, then clean up again"),
        "{said}"
    );
    untouched.assert_still(&repo, "a refused cleanup");

    // As the hint says: commit, then clean up again.
    repo.git(&["commit", "-q", "-am", "My project"]);
    let mine_committed = repo.rev_parse("HEAD");
    let output = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_success(&output);
    assert_eq!(
        repo.rev_parse("HEAD"),
        mine_committed,
        "nothing is committed for the user"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.read("README.md"), format!("{mine}story 1 was here\n"));
    // The run's one line is all the diff holds: the user's is committed.
    let diff = repo.git(&["diff", "-U0", "--", "README.md"]);
    let changed: Vec<&str> = diff
        .lines()
        .filter(|line| {
            line.starts_with(['+', '-']) && !line.starts_with("+++") && !line.starts_with("---")
        })
        .collect();
    assert_eq!(changed, ["+story 1 was here"], "{diff}");
    let status = repo.status_porcelain();
    assert!(status.contains(" M README.md"), "{status}");
    assert!(status.contains("?? story-1.txt"), "{status}");
    assert!(!path.exists());
    assert!(!has_ref(&repo, BRANCH));
    assert_only_the_users_worktree(&repo);
}

#[test]
fn issue_33_a_cleanup_that_clashes_with_the_users_commits_says_to_keep_and_merge() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    // The user's commit changes the very line the run's work is next to.
    repo.write("README.md", "# The user's own README\n");
    repo.git(&["commit", "-q", "-am", "My README"]);
    let untouched = Untouched::take(&repo);
    let refused = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&refused, 1);
    let err = stderr(&refused);
    assert!(err.contains("README.md"), "{err}");
    let said = hint(&refused);
    assert!(
        said.contains(&format!("git ralph finish {CHANGE} --keep")),
        "{said}"
    );
    assert!(!said.contains("commit your"), "{said}");
    assert!(!said.contains("stash"), "{said}");
    untouched.assert_still(&repo, "a refused cleanup");

    // As the hint says: keep, and merge the branch.
    assert_success(&ralph_cmd(&repo, &["finish", "--keep"]));
    assert!(!path.exists());
    assert!(
        said.contains(&format!("git merge --squash {BRANCH}")),
        "{said}"
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_only_the_users_worktree(&repo);
    // The merge is git's own: the clash is named there, to be resolved.
    let merge = repo.git_output(&["merge", "--squash", BRANCH]);
    assert!(
        stdout(&merge).contains("CONFLICT (content): Merge conflict in README.md"),
        "{}",
        describe(&merge)
    );
    assert!(repo.read("README.md").contains("story 1 was here"));
}
