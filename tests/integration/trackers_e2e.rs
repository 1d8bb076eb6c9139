//! Issue 27, end to end through the real binary and the fake agent: the
//! stories of a run taken from an issue tracker. GitHub issues come from a
//! file `gh issue list --json` wrote, or from a scripted `gh` on PATH that
//! records how it is called; beads issues from `.beads/issues.jsonl`. The
//! run ticks its own record under `.git/ralph/<change>/`, never a file of
//! the worktree and never the tracker.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::harness::story_commits_of;
use crate::harness::story_run::{
    Background, Reaper, agent_command, agent_pid, group_alive, kill_agents,
};
use crate::harness::{
    TestRepo, assert_exit, describe, fake_agent_path, ralph, ralph_with_fake, recorded_prompt, run,
    script, stderr, stdout, wait_until,
};

const CHANGE: &str = "issues";
const PATIENCE: Duration = Duration::from_secs(30);

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).expect("fixture")
}

/// An agent that ticks its story's boxes, changes a file and says done.
const WORKER: &str =
    "format codex\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";

/// The exported issue list, outside the worktree, as a user keeps it.
fn exported_issues(repo: &TestRepo) -> PathBuf {
    let path = repo.dir.path().join("issues.json");
    std::fs::write(&path, fixture_text("trackers/github/issue-list.json"))
        .expect("write the export");
    path
}

/// `git ralph start issues` with the fake agent following `agent`, ticking
/// the run's own tracking file, and `args` after.
fn start(repo: &TestRepo, agent: &str, args: &[&str]) -> Output {
    run(&mut start_command(repo, agent, args))
}

fn start_command(repo: &TestRepo, agent: &str, args: &[&str]) -> std::process::Command {
    let script_path = script(repo, agent);
    start_running(repo, &script_path, fake_agent_path(), args)
}

/// `git ralph start issues` running `agent_command`, which follows the
/// fake agent's script at `script_path`, and `args` after.
fn start_running(
    repo: &TestRepo,
    script_path: &Path,
    agent_command: &str,
    args: &[&str],
) -> std::process::Command {
    let mut cmd = ralph_with_fake(repo, script_path);
    cmd.args(["start", CHANGE, "--agent-command", agent_command])
        .args(["--on-finish", "keep"])
        .args(args)
        .env("FAKE_AGENT_TASKS", tracking_file(repo));
    cmd
}

fn tracking_file(repo: &TestRepo) -> PathBuf {
    repo.run_dir(CHANGE).join("tasks.md")
}

/// One checkpoint per exported issue, in the order the work must go: #3
/// is blocked by #7, so oldest first among the issues that wait on
/// nothing open.
fn assert_every_issue_checkpointed_in_order(repo: &TestRepo, output: &Output) {
    assert_eq!(
        story_commits_of(repo, CHANGE),
        [
            "ralph(issues): story 5 Fix the typo in the README",
            "ralph(issues): story 7 Greet the user",
            "ralph(issues): story 3 Document the greeting",
        ],
        "{}",
        describe(output)
    );
}

/// Story 5's second prompt shows its box unticked again.
fn assert_retry_sees_story_5_unticked(repo: &TestRepo) {
    let retry = recorded_prompt(repo, "5", 2);
    assert!(
        retry.contains("- [ ] Resolve #5 as its description asks"),
        "{retry}"
    );
}

fn files_on_branch(repo: &TestRepo) -> Vec<String> {
    repo.git(&["ls-tree", "-r", "--name-only", &format!("ralph/{CHANGE}")])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A directory holding a scripted `gh` that records each call's arguments
/// in `calls.log` (and a comment's body in `comments.log`) and prints the
/// recorded issue list for `gh issue list`, and `view-<n>.json` (or no
/// comments) for `gh issue view <n>`; the PATH that finds it first.
fn scripted_gh(repo: &TestRepo) -> (PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = repo.dir.path().join("gh-bin");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> '{dir}/calls.log'
case "$1 $2" in
"issue list") cat '{list}' ;;
"issue comment") {{ printf -- '--- #%s\n' "$3"; cat; printf '\n'; }} >> '{dir}/comments.log' ;;
"issue view") if [ -f '{dir}/view-'"$3".json ]; then cat '{dir}/view-'"$3".json; else echo '{{"comments":[]}}'; fi ;;
*) echo "unexpected: gh $*" >&2; exit 1 ;;
esac
"#,
        dir = dir.display(),
        list = fixture("trackers/github/issue-list.json").display()
    );
    let gh = dir.join("gh");
    std::fs::write(&gh, script).expect("write gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

fn gh_calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn issue_27_a_run_over_exported_github_issues_completes_story_by_issue() {
    let repo = TestRepo::new();
    let issues = exported_issues(&repo);
    let output = start(
        &repo,
        WORKER,
        &["--source", "github", "--issues", issues.to_str().unwrap()],
    );
    assert_exit(&output, 0);
    assert_every_issue_checkpointed_in_order(&repo, &output);
    // The tasks came from the issues' task lists and were ticked in the
    // run's own record, which no commit carries.
    let tracking = std::fs::read_to_string(tracking_file(&repo)).expect("tracking file");
    assert!(
        tracking.contains(
            "## 7: Greet the user\n\n- [x] Write `hello.txt` with the greeting\n- [x] Print it on start\n"
        ),
        "{tracking}"
    );
    assert!(!tracking.contains("- [ ]"), "{tracking}");
    assert_eq!(files_on_branch(&repo), ["README.md", "progress.txt"]);
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
    // The agent got the issue's text and where to tick.
    let prompt = recorded_prompt(&repo, "7", 1);
    assert!(
        prompt.contains("Whoever runs the tool should be greeted."),
        "{prompt}"
    );
    assert!(
        prompt.contains(&tracking_file(&repo).display().to_string()),
        "{prompt}"
    );
    assert_eq!(repo.status_json(CHANGE)["source"], "github");
}

#[test]
fn issue_27_a_failed_attempt_s_ticks_are_taken_back_with_its_work() {
    let repo = TestRepo::new();
    let issues = exported_issues(&repo);
    let agent = "format codex\n[story=5 attempt=1]\ntick-story\nappend progress.txt half\\n\npromise FAILED: not yet\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let output = start(
        &repo,
        agent,
        &[
            "--source",
            "github",
            "--issues",
            issues.to_str().unwrap(),
            "--max-retries",
            "1",
        ],
    );
    assert_exit(&output, 0);
    // Had the first attempt's tick stayed, story 5 would have counted as done
    // without a checkpoint of its own.
    assert_eq!(
        story_commits_of(&repo, CHANGE).len(),
        3,
        "{}",
        describe(&output)
    );
    assert_retry_sees_story_5_unticked(&repo);
}

#[test]
fn issue_27_the_ticks_of_an_attempt_a_killed_loop_left_are_taken_back_on_resume() {
    let repo = TestRepo::new();
    let issues = exported_issues(&repo);
    let _reaper = Reaper(repo.record_dir());
    let agent = script(
        &repo,
        "format codex\n[story=5 attempt=1]\ntick-story\nsleep 30\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n",
    );
    let command = |extra: &[&str]| start_running(&repo, &agent, &agent_command(&repo), extra);
    let killed = Background::spawn(
        &repo,
        command(&["--source", "github", "--issues", issues.to_str().unwrap()]),
    );
    wait_until("the agent ticked story 5", PATIENCE, || {
        std::fs::read_to_string(tracking_file(&repo))
            .is_ok_and(|text| text.contains("- [x] Resolve #5"))
    });
    killed.signal(Signal::SIGKILL);
    killed.wait(PATIENCE);
    kill_agents(&repo.record_dir());
    wait_until("the orphaned agent is gone", PATIENCE, || {
        !group_alive(agent_pid(&repo, "5", 1))
    });
    let output = run(&mut command(&[]));
    assert_exit(&output, 0);
    // Story 5 is worked again, not taken as done on the strength of a tick
    // its cut-off attempt made.
    assert_every_issue_checkpointed_in_order(&repo, &output);
    assert_retry_sees_story_5_unticked(&repo);
}

#[test]
fn issue_27_ticking_the_run_s_record_alone_is_no_change() {
    let repo = TestRepo::new();
    let issues = exported_issues(&repo);
    let output = start(
        &repo,
        "format codex\n[*]\ntick-story\npromise COMPLETE\n",
        &[
            "--source",
            "github",
            "--issues",
            issues.to_str().unwrap(),
            "--require-change",
            "--max-retries",
            "0",
        ],
    );
    assert_exit(&output, 3);
    assert!(
        story_commits_of(&repo, CHANGE).is_empty(),
        "{}",
        describe(&output)
    );
    assert!(
        stderr(&output).contains("ticking boxes") || stdout(&output).contains("ticking boxes"),
        "{}",
        describe(&output)
    );
    // The refused ticks were taken back.
    let tracking = std::fs::read_to_string(tracking_file(&repo)).expect("tracking file");
    assert!(!tracking.contains("- [x]"), "{tracking}");
}

#[test]
fn issue_27_gh_lists_the_issues_and_comment_posts_one_comment_per_finished_story() {
    let repo = TestRepo::new();
    let (gh_dir, path) = scripted_gh(&repo);
    // Story 3, the last, fails: only 5 and 7 are finished.
    let agent = "format codex\n[story=3]\npromise FAILED: cannot\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let mut cmd = start_command(
        &repo,
        agent,
        &["--source", "github", "--comment", "--max-retries", "0"],
    );
    cmd.env("PATH", &path);
    let output = run(&mut cmd);
    assert_exit(&output, 3);
    assert_eq!(
        gh_calls(&gh_dir),
        [
            "issue list --label ralph --state open --limit 10000 --json number,title,body,labels,state,url",
            "issue comment 5 --body-file -",
            "issue comment 7 --body-file -",
        ],
        "{}",
        describe(&output)
    );
    let comments = std::fs::read_to_string(gh_dir.join("comments.log")).expect("comments");
    let greeted = repo.git(&["rev-parse", "--short=10", &format!("ralph/{CHANGE}")]);
    assert!(comments.contains(greeted.trim()), "{comments}");
    assert!(comments.contains(&format!("ralph/{CHANGE}")), "{comments}");
}

#[test]
fn issue_27_without_comment_gh_is_only_asked_for_the_list() {
    let repo = TestRepo::new();
    let (gh_dir, path) = scripted_gh(&repo);
    let mut cmd = start_command(&repo, WORKER, &["--source", "github"]);
    cmd.env("PATH", &path);
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    assert_eq!(gh_calls(&gh_dir).len(), 1, "{:?}", gh_calls(&gh_dir));
    assert_eq!(story_commits_of(&repo, CHANGE).len(), 3);
}

#[test]
fn issue_27_a_resumed_run_reads_its_own_record_not_the_tracker_again() {
    let repo = TestRepo::new();
    let (gh_dir, path) = scripted_gh(&repo);
    let agent = "format codex\n[story=7 attempt=1]\npromise FAILED: not yet\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let script_path = script(&repo, agent);
    let start_with = |args: &[&str]| {
        let mut cmd = ralph_with_fake(&repo, &script_path);
        cmd.args(["start", CHANGE, "--agent-command", fake_agent_path()])
            .args(args)
            .env("FAKE_AGENT_TASKS", tracking_file(&repo))
            .env("PATH", &path);
        run(&mut cmd)
    };
    // Without a terminal to ask on, the run is left stopped, to resume.
    let first = start_with(&[
        "--source",
        "github",
        "--max-retries",
        "0",
        "--on-finish",
        "ask",
    ]);
    assert_exit(&first, 3);
    assert_eq!(
        story_commits_of(&repo, CHANGE).len(),
        1,
        "{}",
        describe(&first)
    );
    let resumed = start_with(&["--max-retries", "2"]);
    assert_exit(&resumed, 0);
    assert_eq!(
        story_commits_of(&repo, CHANGE).len(),
        3,
        "{}",
        describe(&resumed)
    );
    assert_eq!(
        gh_calls(&gh_dir).len(),
        1,
        "the issues are read once: {:?}",
        gh_calls(&gh_dir)
    );
}

#[test]
fn issue_27_a_run_over_beads_honours_dependencies_and_priorities() {
    let repo = TestRepo::with_files(&[(
        ".beads/issues.jsonl",
        &fixture_text("trackers/beads/issues.jsonl"),
    )]);
    let output = start(&repo, WORKER, &["--source", "beads"]);
    assert_exit(&output, 0);
    // bd-9f3b has priority 0 but waits for bd-2e8c; bd-5d2a (priority 1)
    // goes before bd-2e8c (priority 2); bd-1c7e is closed.
    assert_eq!(
        story_commits_of(&repo, CHANGE),
        [
            "ralph(issues): story bd-5d2a Fix the typo in the README",
            "ralph(issues): story bd-2e8c Write the greeting",
            "ralph(issues): story bd-9f3b Say goodbye",
        ],
        "{}",
        describe(&output)
    );
    // The tracker's file is the user's: untouched, and nothing was closed.
    assert_eq!(
        repo.git(&["diff", "main", &format!("ralph/{CHANGE}"), "--", ".beads"]),
        ""
    );
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
    // Closing them is offered, as one command.
    let said = stderr(&output);
    let offer = said
        .lines()
        .find(|line| line.trim_start().starts_with("bd close "))
        .unwrap_or_else(|| panic!("no bd close offered:\n{said}"));
    for id in ["bd-5d2a", "bd-2e8c", "bd-9f3b"] {
        assert!(offer.contains(id), "{offer}");
    }
    assert!(!offer.contains("bd-1c7e"), "{offer}");
}

#[test]
fn issue_27_dry_run_json_shows_the_issues_as_stories_and_writes_nothing() {
    let repo = TestRepo::with_files(&[(
        ".beads/issues.jsonl",
        &fixture_text("trackers/beads/issues.jsonl"),
    )]);
    let issues = exported_issues(&repo);
    let preview = |args: &[&str]| -> Value {
        let output = run(ralph(&repo)
            .args(["start", CHANGE, "--dry-run", "--json"])
            .args(args));
        assert_exit(&output, 0);
        serde_json::from_slice(&output.stdout).expect("one JSON object")
    };
    let github = preview(&["--source", "github", "--issues", issues.to_str().unwrap()]);
    assert_eq!(github["source"], "github");
    let outline: Vec<(String, String, u64)> = github["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|story| {
            (
                story["id"].as_str().unwrap().to_owned(),
                story["status"].as_str().unwrap().to_owned(),
                story["tasks"].as_u64().unwrap(),
            )
        })
        .collect();
    // In the order the run takes them: #3 is blocked by #7.
    assert_eq!(
        outline,
        [
            ("5".to_owned(), "next".to_owned(), 1),
            ("7".to_owned(), "open".to_owned(), 2),
            ("3".to_owned(), "open".to_owned(), 1),
        ]
    );
    assert!(
        github["tracking_file"]
            .as_str()
            .unwrap()
            .ends_with(".git/ralph/issues/tasks.md"),
        "{}",
        github["tracking_file"]
    );
    let beads = preview(&["--source", "beads"]);
    assert_eq!(beads["source"], "beads");
    let ids: Vec<&str> = beads["stories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|story| story["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["bd-5d2a", "bd-2e8c", "bd-9f3b"]);
    assert_eq!(beads["stories"][0]["status"], "next");
    assert!(
        beads["prompt"]
            .as_str()
            .unwrap()
            .contains("The first paragraph says"),
        "{}",
        beads["prompt"]
    );
    assert!(
        !repo.path(".git/ralph").exists(),
        "a preview writes nothing"
    );
}

#[test]
fn issue_27_tracker_flags_need_their_source() {
    let repo = TestRepo::with_files(&[("TODO.md", "- [ ] a\n")]);
    let output = run(ralph(&repo).args([
        "start",
        CHANGE,
        "--tasks",
        "TODO.md",
        "--comment",
        "--dry-run",
    ]));
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("--comment is for --source github"),
        "{}",
        describe(&output)
    );
}

#[test]
fn issue_27_gh_that_cannot_answer_stops_the_start_with_what_to_do() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestRepo::new();
    let preview = |path: &str| {
        let output = run(ralph(&repo)
            .args(["start", CHANGE, "--source", "github", "--dry-run"])
            .env("PATH", path));
        assert_exit(&output, 1);
        stderr(&output)
    };
    let empty = repo.dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let missing = preview(empty.to_str().unwrap());
    assert!(
        missing.contains("error: the GitHub CLI `gh` is not on PATH"),
        "{missing}"
    );
    assert!(missing.contains("--issues issues.json"), "{missing}");

    let gh = empty.join("gh");
    std::fs::write(
        &gh,
        "#!/bin/sh\necho 'To get started with GitHub CLI, please run:  gh auth login' >&2\nexit 4\n",
    )
    .expect("write gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let logged_out = preview(empty.to_str().unwrap());
    assert!(
        logged_out.contains("exited with code 4: To get started with GitHub CLI"),
        "{logged_out}"
    );
    assert!(
        logged_out.contains("hint: log in first: `gh auth login`"),
        "{logged_out}"
    );
    assert!(
        !repo.path(".git/ralph").exists(),
        "a refused start writes nothing"
    );
}

#[test]
fn issue_38_comment_asks_the_question_on_the_issue_and_the_others_go_on() {
    let repo = TestRepo::new();
    let (gh_dir, path) = scripted_gh(&repo);
    let agent = "format codex\n[story=5]\nfinal Should the greeting be in English or in French?\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let mut cmd = start_command(&repo, agent, &["--source", "github", "--comment"]);
    cmd.env("PATH", &path);
    let output = run(&mut cmd);
    assert_exit(&output, 9);
    // Each turn looks for an /answer reply on the waiting issue.
    let (views, calls): (Vec<String>, Vec<String>) = gh_calls(&gh_dir)
        .into_iter()
        .partition(|call| call.starts_with("issue view"));
    assert!(
        views
            .iter()
            .all(|view| view == "issue view 5 --json comments")
            && !views.is_empty(),
        "{views:?}"
    );
    assert_eq!(
        calls,
        [
            "issue list --label ralph --state open --limit 10000 --json number,title,body,labels,state,url",
            "issue comment 5 --body-file -",
            "issue comment 7 --body-file -",
            "issue comment 3 --body-file -",
        ],
        "{}",
        describe(&output)
    );
    let comments = std::fs::read_to_string(gh_dir.join("comments.log")).expect("comments");
    let asked = comments
        .split("--- #")
        .find(|comment| comment.starts_with("5\n"))
        .expect("a comment on #5");
    assert!(
        asked.contains("> Should the greeting be in English or in French?\n"),
        "{asked}"
    );
    assert!(
        asked.contains(&format!("git ralph answer {CHANGE} 5")),
        "{asked}"
    );
}

#[test]
fn issue_38_an_answer_reply_on_the_issue_answers_the_question() {
    let repo = TestRepo::new();
    let (gh_dir, path) = scripted_gh(&repo);
    std::fs::write(
        gh_dir.join("view-5.json"),
        r#"{"comments":[
            {"body":"/answer an old reply","createdAt":"2020-01-01T00:00:00Z"},
            {"body":"Looking into it","createdAt":"2099-01-01T00:00:00Z"},
            {"body":"/answer English, please.","createdAt":"2099-01-01T00:00:00Z"}]}"#,
    )
    .expect("write the replies");
    let agent = "format codex\n[story=5 attempt=1]\nfinal Should the typo fix keep British spelling?\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let mut cmd = start_command(&repo, agent, &["--source", "github"]);
    cmd.env("PATH", &path);
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    let calls = gh_calls(&gh_dir);
    assert!(
        calls.contains(&"issue view 5 --json comments".to_owned()),
        "{calls:?}"
    );
    let retry = recorded_prompt(&repo, "5", 2);
    assert!(retry.contains("> English, please.\n"), "{retry}");
    assert!(!retry.contains("an old reply"), "{retry}");
    let state = repo.run_state(CHANGE);
    let story5 = state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|story| story["id"] == "5")
        .expect("story 5")
        .clone();
    assert_eq!(story5["attempts"][0]["outcome"], "question");
    assert_eq!(story5["attempts"][0]["answer"], "English, please.");
    assert_eq!(story5["attempts"][1]["outcome"], "complete");
}
