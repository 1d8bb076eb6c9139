//! A loop killed (kill -9) at any moment of a story's checkpoint, then
//! resumed or finished: the record (state, events, the `on_story_done`
//! hook) agrees with the branch. The checkpoint commit and the record that
//! calls the story done are written apart; whichever came last, the next
//! command makes them one again.

use std::fs;
use std::path::PathBuf;

use crate::harness::story_run::*;
use crate::harness::*;

/// Two stories, each done at once, whose `on_story_done` hook writes the
/// story into `told.log` beside the repository.
fn told_project() -> (TestRepo, PathBuf, PathBuf) {
    let repo = project(TWO_STORIES);
    let told = repo.root.parent().expect("a parent").join("told.log");
    repo.write(
        "openspec/changes/greet/ralph.toml",
        format!(
            "[hooks]\non_story_done = \"echo $RALPH_STORY >> {}\"\n",
            told.display()
        ),
    );
    repo.commit_all("Tell of each story done");
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    (repo, agent, told)
}

/// The run killed at `point` of story 1's checkpoint.
fn killed_at(point: &str) -> (TestRepo, PathBuf, PathBuf) {
    let (repo, agent, told) = told_project();
    let killed =
        run(start_command(&repo, &agent, &["--on-finish", "keep"]).env("GIT_RALPH_KILL_AT", point));
    assert_eq!(killed.status.code(), None, "{point}: {}", describe(&killed));
    kill_agents(&repo.record_dir());
    (repo, agent, told)
}

/// How many times events.jsonl calls `story` complete.
fn told_complete(repo: &TestRepo, story: &str) -> usize {
    events(repo)
        .iter()
        .filter(|e| {
            e["type"] == "attempt_finished" && e["story_id"] == story && e["outcome"] == "complete"
        })
        .count()
}

#[test]
fn a_story_recorded_done_and_killed_before_it_was_told_is_told_once_on_resume() {
    let (repo, agent, told) = killed_at("checkpoint:recorded");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet").len(),
        3,
        "{}",
        describe(&output)
    );
    for story in ["1", "2"] {
        assert_eq!(told_complete(&repo, story), 1, "story {story}: its event");
    }
    let mut hooked: Vec<String> = fs::read_to_string(&told)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    hooked.sort();
    assert_eq!(hooked, ["1", "2"], "on_story_done, once a story");
}

/// The stories whose work `rev` holds.
fn work_on(repo: &TestRepo, rev: &str) -> Vec<String> {
    ["1", "2"]
        .into_iter()
        .filter(|id| repo.git_ok(&["cat-file", "-e", &format!("{rev}:story-{id}.txt")]))
        .map(str::to_owned)
        .collect()
}

/// The stories the record calls done (`status --json`, `log --json` and
/// events.jsonl, which must say the same).
fn recorded_done(repo: &TestRepo) -> Vec<String> {
    let status = status_json(repo);
    let done: Vec<String> = status["stories"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|story| story["done"] == true)
        .filter_map(|story| story["id"].as_str().map(str::to_owned))
        .collect();
    let told: Vec<String> = ["1", "2"]
        .into_iter()
        .filter(|id| told_complete(repo, id) > 0)
        .map(str::to_owned)
        .collect();
    assert_eq!(done, told, "status --json and events.jsonl agree");
    done
}

/// Killed once story 1's checkpoint was committed, before its record
/// said so; then ended by `args`: the branch (or the ref that keeps its
/// tip) holds only the work the record calls done, and the commit is
/// kept under the ref the output names.
fn killed_then_ended(args: &[&str], tip: &str) {
    let (repo, _, _) = killed_at("checkpoint:committed");
    let committed = repo.rev_parse(&format!("refs/heads/{BRANCH}"));
    let output = ralph_cmd(&repo, args);
    assert_exit(&output, 0);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(
        work_on(&repo, tip),
        recorded_done(&repo),
        "{args:?}: the record agrees with {tip}:\n{said}"
    );
    let strays = refs_under(&repo, &format!("{NS}/strays"));
    assert_eq!(strays.len(), 1, "{args:?}: {strays:?}\n{said}");
    assert_eq!(strays[0].1, committed, "{args:?}: the commit is kept");
    assert!(said.contains(&strays[0].0), "{args:?}: named:\n{said}");
    repo.assert_fsck_clean();
}

#[test]
fn a_story_committed_and_killed_before_its_record_agrees_with_a_kept_branch() {
    killed_then_ended(
        &["finish", CHANGE, "--keep"],
        &format!("refs/heads/{BRANCH}"),
    );
}

#[test]
fn a_story_committed_and_killed_before_its_record_agrees_with_a_cleaned_up_run() {
    killed_then_ended(&["finish", CHANGE, "--cleanup"], &format!("{NS}/finished"));
}

#[test]
fn a_story_committed_and_killed_before_its_record_agrees_with_an_aborted_run() {
    killed_then_ended(&["abort", CHANGE], &format!("{NS}/aborted"));
}

/// Killed once story 1's checkpoint was committed, before its record said
/// so; the user then commits an edit of their own on the branch.
fn killed_then_user_commits() -> (TestRepo, PathBuf, PathBuf) {
    let (repo, agent, told) = killed_at("checkpoint:committed");
    repo.write("README.md", "# The user's own line, after the kill\n");
    repo.git(&[
        "commit",
        "-q",
        "-a",
        "--author",
        "Ada Lovelace <ada@example.com>",
        "-m",
        "The user's commit after the kill",
    ]);
    (repo, agent, told)
}

/// [`killed_then_user_commits`], then ended with `args`. The record agrees
/// with what `tip` holds, and the user's edit is theirs: on `tip` or in
/// the worktree, never only in a ref.
fn killed_then_user_commits_then_ended(args: &[&str], tip: &str) -> String {
    let (repo, _, _) = killed_then_user_commits();
    let output = ralph_cmd(&repo, args);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    assert_eq!(
        work_on(&repo, tip),
        recorded_done(&repo),
        "{args:?}: the record agrees with {tip}:\n{said}"
    );
    let on_tip = repo.git_ok(&["grep", "-q", "after the kill", tip, "--", "README.md"]);
    let on_disk = repo.read("README.md").contains("after the kill");
    assert!(
        on_tip || on_disk,
        "{args:?}: the user's edit is handed back:\n{said}\n{}",
        repo.status_porcelain()
    );
    if on_tip {
        let author = repo.git(&["log", "-1", "--format=%an <%ae>", tip, "--", "README.md"]);
        assert_eq!(
            author.trim(),
            "Ada Lovelace <ada@example.com>",
            "{args:?}: the user's commit keeps its author where it is carried"
        );
    }
    assert!(
        !on_tip || tip.starts_with("refs/heads/") || said.contains(tip),
        "{args:?}: the ref that keeps the user's commit is named:\n{said}"
    );
    repo.assert_fsck_clean();
    said
}

#[test]
fn a_users_commit_after_a_kill_mid_checkpoint_stays_theirs_when_kept() {
    killed_then_user_commits_then_ended(
        &["finish", CHANGE, "--keep"],
        &format!("refs/heads/{BRANCH}"),
    );
}

#[test]
fn a_users_commit_after_a_kill_mid_checkpoint_stays_theirs_when_cleaned_up() {
    killed_then_user_commits_then_ended(
        &["finish", CHANGE, "--cleanup"],
        &format!("{NS}/finished"),
    );
}

/// Abort gives back the exact pre-start state: the user's commit is kept
/// with the branch's tip under `aborted`, which the output names.
#[test]
fn a_users_commit_after_a_kill_mid_checkpoint_is_kept_with_the_aborted_tip() {
    let aborted = format!("{NS}/aborted");
    killed_then_user_commits_then_ended(&["abort", CHANGE], &aborted);
}

/// Resumed, the loop's own checkpoint is recorded as the loop would have
/// (its event and its hook, once), and the user's commit above it stays
/// on the branch, under the next story's checkpoint.
#[test]
fn a_users_commit_after_a_kill_mid_checkpoint_stays_on_the_branch_on_resume() {
    let (repo, agent, told) = killed_then_user_commits();
    let checkpoint = repo.rev_parse(&format!("refs/heads/{BRANCH}~1"));
    let users = repo.rev_parse(&format!("refs/heads/{BRANCH}"));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let branch = format!("refs/heads/{BRANCH}");
    for (what, commit) in [
        ("the loop's checkpoint", &checkpoint),
        ("the user's commit", &users),
    ] {
        assert!(
            repo.git_ok(&["merge-base", "--is-ancestor", commit, &branch]),
            "{what} stays on the branch:\n{}",
            describe(&output)
        );
    }
    assert!(refs_under(&repo, &format!("{NS}/strays")).is_empty());
    assert_eq!(work_on(&repo, &branch), recorded_done(&repo));
    assert_eq!(recorded_done(&repo), ["1", "2"]);
    let hooked = fs::read_to_string(&told).unwrap_or_default();
    let mut hooked: Vec<&str> = hooked.lines().collect();
    hooked.sort_unstable();
    assert_eq!(hooked, ["1", "2"], "on_story_done, once a story");
    repo.assert_fsck_clean();
}

/// An agent that commits its work under a checkpoint's subject, its loop
/// killed while it is at work: its commit is never taken for the loop's
/// checkpoint. The story is not called done, and the commit is kept
/// under a ref the output names.
#[test]
fn an_agents_commit_with_a_checkpoints_subject_is_not_taken_for_one_after_a_kill() {
    let repo = project(TWO_STORIES);
    let gate = repo.root.parent().expect("a parent").join("gate");
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite story-1.txt work of story 1\\n\ntick-story\ngit add -A\ngit commit -q -m 'ralph(greet): story 1 forged'\nwait-for {}\npromise COMPLETE\n",
            gate.display()
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let running = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_until(
        "the agent committed",
        std::time::Duration::from_secs(60),
        || {
            let branch = format!("refs/heads/{BRANCH}");
            repo.git_ok(&["rev-parse", "-q", "--verify", &branch])
                && repo
                    .subjects(&format!("main..{branch}"))
                    .iter()
                    .any(|subject| subject.ends_with("forged"))
        },
    );
    let forged = repo.rev_parse(&format!("refs/heads/{BRANCH}"));
    running.signal(nix::sys::signal::Signal::SIGKILL);
    running.wait(std::time::Duration::from_secs(30));
    kill_agents(&repo.record_dir());
    let output = ralph_cmd(&repo, &["finish", CHANGE, "--keep"]);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert_exit(&output, 0);
    let branch = format!("refs/heads/{BRANCH}");
    assert_eq!(recorded_done(&repo), Vec::<String>::new(), "{said}");
    assert_eq!(work_on(&repo, &branch), Vec::<String>::new(), "{said}");
    let strays = refs_under(&repo, &format!("{NS}/strays"));
    assert_eq!(strays.len(), 1, "{strays:?}\n{said}");
    assert_eq!(strays[0].1, forged, "the agent's commit is kept");
    assert!(said.contains(&strays[0].0), "named:\n{said}");
    repo.assert_fsck_clean();
}
