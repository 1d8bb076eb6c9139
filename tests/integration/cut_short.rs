//! A run killed at its most delicate moments.
//!
//! A story's worktree whose making was cut short: a parallel run records
//! where a story will work before it makes the worktree, so a kill -9 can
//! land while git's worktree is half made: its directory empty, its `.git`
//! half written, or its checkout unfinished (git's administrative
//! directory still locked "initializing"). A resume and an abort must
//! recognise what that left as the run's own, remove it and go on; a
//! directory that is anything else is never deleted.
//!
//! A story's branch whose writing was cut short leaves git's lock file:
//! the branch is the run's alone, so the resume and the abort take it.
//!
//! A story committed onto the run's branch (a checkpoint, or a parallel
//! story's merge) by a loop killed before it was told, before its
//! `on_story_done` hook started or just after it ended: the resume tells
//! it, once: its event, its hook; or, if the record never held it, does
//! the story again. Either way the record agrees with the branch.

use std::fs;
use std::path::{Path, PathBuf};

use crate::harness::story_run::*;
use crate::harness::*;
use crate::parallel_e2e::{assert_nothing_left, killed_with_two_at_work};

/// The ways git's making of a worktree can be cut short, in the order it
/// makes one.
#[derive(Clone, Copy, Debug)]
enum CutShort {
    /// The administrative directory is reserved and the worktree's
    /// directory made, empty; git's lock file made, nothing in it yet.
    Reserved,
    /// Where the worktree is, half written into the administrative
    /// directory.
    HalfRecorded,
    /// The administrative directory leads to the worktree, whose `.git`
    /// is half written.
    HalfLinked,
    /// Linked both ways, HEAD written, the checkout half done.
    HalfCheckedOut,
}

/// Two stories at work, then kill -9, then story 2's worktree turned into
/// what a kill during its making leaves. Returns the repository, the
/// agent, and story 2's worktree and administrative directory.
fn killed_with_story_2(cut: CutShort) -> (TestRepo, PathBuf, PathBuf, PathBuf, Reaper) {
    let (repo, agent, beside, reaper) = killed_with_two_at_work();
    let place = beside.join("greet.story-2");
    let admin = repo.path(".git/worktrees/greet.story-2");
    assert!(admin.is_dir(), "story 2's worktree is recorded by git");
    cut_short(&place, &admin, cut);
    (repo, agent, place, admin, reaper)
}

/// Make story 2's worktree look as git leaves it when killed at `cut`.
fn cut_short(place: &Path, admin: &Path, cut: CutShort) {
    fs::write(admin.join("locked"), "initializing\n").expect("lock");
    match cut {
        CutShort::Reserved => {
            empty(place);
            empty(admin);
            fs::write(admin.join("locked"), "").expect("lock");
        }
        CutShort::HalfRecorded => {
            empty(place);
            let gitdir = fs::read_to_string(admin.join("gitdir")).expect("gitdir");
            fs::write(admin.join("gitdir"), &gitdir[..gitdir.len() / 2]).expect("half");
            for file in ["commondir", "HEAD", "index", "logs", "ralph-run"] {
                remove(&admin.join(file));
            }
        }
        CutShort::HalfLinked => {
            empty(place);
            fs::write(place.join(".git"), "gitdir: ").expect("a half .git");
            for file in ["HEAD", "index", "logs", "ralph-run"] {
                remove(&admin.join(file));
            }
        }
        CutShort::HalfCheckedOut => {
            // No agent has been at work in a worktree not yet made.
            remove(&place.join("two.txt"));
            remove(&place.join("README.md"));
            remove(&admin.join("index"));
            remove(&admin.join("ralph-run"));
        }
    }
}

fn empty(dir: &Path) {
    for entry in fs::read_dir(dir).expect("a directory").flatten() {
        remove(&entry.path());
    }
}

fn remove(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).expect("remove a directory"),
        Ok(_) => fs::remove_file(path).expect("remove a file"),
        Err(_) => {}
    }
}

fn resume_finishes_every_story(cut: CutShort) {
    let (repo, agent, place, admin, _reaper) = killed_with_story_2(cut);
    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["3 Docs", "2 Farewell", "1 Greeting"]),
        "{cut:?}: {}",
        describe(&output)
    );
    assert_eq!(show(&repo, BRANCH, "two.txt"), "two\n");
    assert!(!place.exists(), "{cut:?}: story 2's place is left");
    assert!(!admin.exists(), "{cut:?}: git's record of it is left");
    // A half-made worktree is not work story 2 left: only story 1's
    // killed attempt is kept.
    let kept: Vec<String> = refs_under(&repo, &format!("{NS}/stories/"))
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.ends_with("-uncommitted"))
        .collect();
    assert_eq!(kept.len(), 1, "{cut:?}: {kept:?}");
    assert!(kept[0].contains("/stories/1/"), "{cut:?}: {kept:?}");
    assert_nothing_left(&repo);
}

#[test]
fn a_worktree_cut_short_once_reserved_is_removed_and_the_story_runs_again() {
    resume_finishes_every_story(CutShort::Reserved);
}

#[test]
fn a_worktree_cut_short_half_recorded_is_removed_and_the_story_runs_again() {
    resume_finishes_every_story(CutShort::HalfRecorded);
}

#[test]
fn a_worktree_cut_short_half_linked_is_removed_and_the_story_runs_again() {
    resume_finishes_every_story(CutShort::HalfLinked);
}

#[test]
fn a_worktree_cut_short_in_its_checkout_is_removed_and_the_story_runs_again() {
    resume_finishes_every_story(CutShort::HalfCheckedOut);
}

#[test]
fn abort_removes_a_worktree_cut_short() {
    let (repo, _agent, place, admin, _reaper) = killed_with_story_2(CutShort::HalfLinked);
    let output = run(ralph(&repo).args(["abort", CHANGE]));
    assert_exit(&output, 0);
    assert!(!place.exists(), "{}", describe(&output));
    assert!(!admin.exists());
    assert!(!has_ref(&repo, "refs/heads/ralph/greet"));
    assert_nothing_left(&repo);
}

#[test]
fn a_story_worktree_locked_with_no_reason_keeps_what_its_agent_left() {
    let (repo, agent, beside, _reaper) = killed_with_two_at_work();
    // Someone locks story 2's worktree again, giving no reason: git then
    // leaves its lock file empty.
    let place = beside.join("greet.story-2").display().to_string();
    repo.git(&["worktree", "unlock", &place]);
    repo.git(&["worktree", "lock", &place]);
    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    let kept: Vec<String> = refs_under(&repo, &format!("{NS}/stories/2/"))
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.ends_with("-uncommitted"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}: {}", describe(&output));
    assert_eq!(show(&repo, &kept[0], "two.txt"), "half of two");
    assert_nothing_left(&repo);
}

#[test]
fn a_directory_that_is_not_a_worktree_cut_short_is_never_deleted() {
    let (repo, agent, place, admin, _reaper) = killed_with_story_2(CutShort::Reserved);
    // Someone's files where story 2's worktree was to be made.
    fs::write(place.join("notes.txt"), "someone's notes\n").expect("write");
    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 1);
    let said = describe(&output);
    assert!(said.contains("greet.story-2"), "{said}");
    assert_eq!(
        fs::read_to_string(place.join("notes.txt")).expect("still there"),
        "someone's notes\n"
    );
    assert!(admin.exists());
}

/// A run of three independent stories, each done at once, whose
/// `on_story_done` hook writes the story into `told.log` beside the
/// repository. Returns the repository, the agent and that file.
fn told_project(parallel: bool) -> (TestRepo, PathBuf, PathBuf) {
    let repo = independent_project();
    let told = repo.root.parent().expect("a parent").join("told.log");
    repo.write(
        "openspec/changes/greet/ralph.toml",
        format!(
            "[stories]\nindependent = {parallel}\n\n[hooks]\non_story_done = \"echo $RALPH_STORY >> {}\"\n",
            told.display()
        ),
    );
    repo.commit_all("Tell of each story done");
    let agent = script(
        &repo,
        &format!(
            "[story=1]\n{}[story=2]\n{}[story=3]\n{}",
            finish_story("1"),
            finish_story("2"),
            finish_story("3")
        ),
    );
    (repo, agent, told)
}

/// Killed at `point` of the first story's commit, then resumed: every
/// story is told done exactly once, by its event and by its hook.
fn killed_in_a_commit_then_resumed(point: &str, parallel: bool) {
    let (repo, agent, told) = told_project(parallel);
    let _reaper = Reaper(repo.record_dir());
    let mut args = vec!["--on-finish", "keep"];
    if parallel {
        args.extend(["--parallel", "2"]);
    }
    let killed = run(start_command(&repo, &agent, &args).env("GIT_RALPH_KILL_AT", point));
    assert_eq!(killed.status.code(), None, "{point}: {}", describe(&killed));
    kill_agents(&repo.record_dir());
    let on_branch = subjects(&repo, "main..ralph/greet");
    assert!(
        (2..4).contains(&on_branch.len()),
        "{point}: killed once a story was committed: {on_branch:?}"
    );

    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    assert_eq!(
        subjects(&repo, "main..ralph/greet").len(),
        4,
        "{point}: {}",
        describe(&output)
    );
    let mut hooked: Vec<String> = fs::read_to_string(&told)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    hooked.sort();
    assert_eq!(hooked, ["1", "2", "3"], "{point}: on_story_done");
    for story in ["1", "2", "3"] {
        let done = events(&repo)
            .iter()
            .filter(|e| {
                e["type"] == "attempt_finished"
                    && e["story_id"] == story
                    && e["outcome"] == "complete"
            })
            .count();
        assert_eq!(done, 1, "{point}: story {story} told done {done} times");
        let merged = events(&repo)
            .iter()
            .filter(|e| e["type"] == "merged" && e["story_id"] == story && e["merged"] == true)
            .count();
        assert_eq!(
            merged,
            usize::from(parallel),
            "{point}: story {story} told merged {merged} times"
        );
    }
    assert_nothing_left(&repo);
}

#[test]
fn a_story_merged_and_killed_before_its_worktree_went_is_told_done_on_resume() {
    killed_in_a_commit_then_resumed("merged:committed", true);
}

#[test]
fn a_story_merged_and_killed_before_it_was_told_is_told_done_on_resume() {
    killed_in_a_commit_then_resumed("merged:retired", true);
}

#[test]
fn a_story_checkpointed_and_killed_before_it_was_told_agrees_with_the_branch_on_resume() {
    killed_in_a_commit_then_resumed("checkpoint:committed", false);
}

#[test]
fn a_hook_off_the_record_and_killed_before_it_started_runs_on_resume() {
    killed_in_a_commit_then_resumed("hook:recorded", false);
}

#[test]
fn a_parallel_story_s_hook_killed_before_it_started_runs_on_resume() {
    killed_in_a_commit_then_resumed("hook:recorded", true);
}

#[test]
fn a_hook_that_ended_before_the_loop_was_killed_is_not_run_again() {
    for point in ["hook:returned", "hook:ended"] {
        killed_in_a_commit_then_resumed(point, false);
        killed_in_a_commit_then_resumed(point, true);
    }
}

#[test]
fn a_hook_that_ends_as_ctrl_c_comes_is_not_run_again() {
    let (repo, agent, told) = told_project(false);
    // Story 1's hook does its work, then ends cleanly on the stop.
    repo.write(
        "openspec/changes/greet/ralph.toml",
        format!(
            "[hooks]\non_story_done = \"echo $RALPH_STORY >> {}; if [ $RALPH_STORY = 1 ]; then trap 'exit 0' TERM; sleep 30 & wait; fi\"\n",
            told.display()
        ),
    );
    repo.commit_all("A hook that takes its time");
    let _reaper = Reaper(repo.record_dir());
    let running = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    wait_until(
        "story 1's hook ran",
        std::time::Duration::from_secs(30),
        || fs::read_to_string(&told).is_ok_and(|text| text == "1\n"),
    );
    running.signal(nix::sys::signal::Signal::SIGINT);
    let ended = running.wait(std::time::Duration::from_secs(30));
    assert_eq!(
        ended.status.code(),
        Some(130),
        "{}{}",
        ended.stdout,
        ended.stderr
    );
    assert_eq!(fs::read_to_string(&told).unwrap_or_default(), "1\n");
    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    assert_eq!(
        fs::read_to_string(&told).unwrap_or_default(),
        "1\n2\n3\n",
        "{}",
        describe(&output)
    );
}

#[test]
fn a_story_branch_whose_writing_was_cut_short_is_written_again() {
    for branch_there in [true, false] {
        let (repo, agent, place, _admin, _reaper) = killed_with_story_2(CutShort::HalfCheckedOut);
        let branch = repo.path(".git/refs/heads/ralph/greet.story-2");
        if !branch_there {
            // Killed as the branch was made: only its lock is there.
            let _ = repo.git_output(&["update-ref", "-d", "refs/heads/ralph/greet.story-2"]);
        }
        fs::write(branch.with_extension("story-2.lock"), "").expect("a lock");
        let output = start(&repo, &agent, &[]);
        assert_exit(&output, 0);
        assert_eq!(
            show(&repo, BRANCH, "two.txt"),
            "two\n",
            "{}",
            describe(&output)
        );
        assert!(!place.exists());
        assert!(
            !repo
                .path(".git/refs/heads/ralph/greet.story-2.lock")
                .exists(),
            "branch there: {branch_there}"
        );
        assert_nothing_left(&repo);
    }
}

#[test]
fn abort_takes_the_lock_of_a_story_branch_cut_short() {
    let (repo, _agent, _place, _admin, _reaper) = killed_with_story_2(CutShort::HalfCheckedOut);
    let lock = repo.path(".git/refs/heads/ralph/greet.story-2.lock");
    fs::write(&lock, "").expect("a lock");
    let output = run(ralph(&repo).args(["abort", CHANGE]));
    assert_exit(&output, 0);
    assert!(!lock.exists(), "{}", describe(&output));
    assert_nothing_left(&repo);
}
