//! A run in its own worktree (issue 23), through the real binary with git
//! as the oracle: `start --worktree` works in a linked worktree on
//! `ralph/<change>` that `git worktree list`, `git worktree prune` and
//! `git fsck --strict` accept at every moment, and never touches the
//! user's worktree (HEAD, index, files, stashes). The user works and
//! commits beside the run; finish, abort, resume and the reading commands
//! work from either worktree.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;
use nix::sys::signal::Signal;

const PATIENCE: Duration = Duration::from_secs(30);

/// Where a run of `greet` works by default: beside the user's worktree,
/// in `<worktree>.ralph/greet`.
fn default_worktree(repo: &TestRepo) -> PathBuf {
    let parent = fs::canonicalize(repo.root.parent().expect("the worktree has a parent"))
        .expect("the parent exists");
    parent.join("repo.ralph").join(CHANGE)
}

/// A pre-start state with every kind of uncommitted work, and a stash.
fn busy_user(repo: &TestRepo) {
    repo.write("notes.txt", "v1\n");
    repo.commit_all("Notes");
    repo.write("notes.txt", "stashed edit\n");
    repo.git(&["stash", "-q"]);
    repo.write("README.md", "# Staged edit\n");
    repo.git(&["add", "README.md"]);
    repo.write("notes.txt", "v2, unstaged\n");
    repo.write("untracked/idea.txt", "untracked\n");
    repo.write(".git/info/exclude", "*.log\n");
    repo.write("build.log", "ignored, the user's\n");
    // git's own status refreshes the index's stat data; after this, only
    // a writer other than the user would change its bytes.
    repo.git(&["status", "--porcelain"]);
}

/// Everything of the user's worktree a run must leave alone, stashes too.
#[derive(Debug, PartialEq, Eq)]
struct UserSide {
    work: WorkState,
    stashes: String,
    /// Every byte of the worktree, ignored files included.
    files: std::collections::BTreeMap<String, (u32, Vec<u8>)>,
    /// The index file itself, byte for byte.
    index: Vec<u8>,
    head: String,
}

fn user_side(repo: &TestRepo) -> UserSide {
    let mut files = disk_snapshot(&repo.root);
    files.retain(|name, _| !name.starts_with(".git/") && name != ".git/");
    UserSide {
        work: work_state(repo),
        stashes: repo.git(&["stash", "list", "--format=%H %gs"]),
        files,
        index: fs::read(repo.path(".git/index")).expect("the user's index"),
        head: fs::read_to_string(repo.path(".git/HEAD")).expect("the user's HEAD"),
    }
}

/// `git worktree list --porcelain`, one block per worktree.
fn worktree_list(repo: &TestRepo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .split("\n\n")
        .map(str::trim)
        .filter(|block| !block.is_empty())
        .map(str::to_string)
        .collect()
}

/// Git is content with the worktrees as they stand: nothing to prune, and
/// a clean fsck.
fn assert_git_content(repo: &TestRepo) {
    let prune = repo.git_output(&["worktree", "prune", "-n", "-v"]);
    assert_success(&prune);
    assert_eq!(
        format!("{}{}", stdout(&prune), stderr(&prune)),
        "",
        "git worktree prune would remove something"
    );
    repo.assert_fsck_clean();
}

/// The run's worktree as git lists it: on ralph/greet, locked with a reason.
fn assert_listed_and_locked(repo: &TestRepo, path: &Path) {
    let list = worktree_list(repo);
    let block = list
        .iter()
        .find(|block| block.starts_with(&format!("worktree {}\n", path.display())))
        .unwrap_or_else(|| panic!("{} is not listed: {list:?}", path.display()));
    assert!(
        block.contains(&format!("\nbranch refs/heads/{BRANCH}")),
        "{block}"
    );
    assert!(block.contains("\nlocked git-ralph"), "{block}");
    assert!(!block.contains("prunable"), "{block}");
}

fn assert_only_the_users_worktree(repo: &TestRepo) {
    let list = worktree_list(repo);
    assert_eq!(list.len(), 1, "{list:?}");
    assert!(
        !repo.path(".git/worktrees").exists()
            || fs::read_dir(repo.path(".git/worktrees"))
                .expect("readable")
                .next()
                .is_none(),
        "an administrative directory is left behind"
    );
}

/// A run of TWO_STORIES in its own worktree whose story 2 always fails:
/// it stops at max_retries, its worktree kept.
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
    let path = default_worktree(repo);
    assert!(path.join(".git").is_file(), "{}", describe(&output));
    path
}

#[test]
fn issue_23_a_worktree_run_never_touches_the_users_worktree() {
    let repo = project(TWO_STORIES);
    busy_user(&repo);
    let before = user_side(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));

    let output = start(&repo, &agent, &["--worktree", "--on-finish", "keep"]);
    assert_exit(&output, 0);
    let path = default_worktree(&repo);
    let err = stderr(&output);
    assert!(
        err.contains(&path.display().to_string()),
        "the worktree's place is said:\n{err}"
    );

    assert_eq!(user_side(&repo), before, "the user's worktree was touched");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    // The initial state holds the user's uncommitted work, as without
    // --worktree: staged, unstaged and untracked.
    let initial = "ralph/greet~2";
    assert_eq!(show(&repo, initial, "README.md"), "# Staged edit\n");
    assert_eq!(show(&repo, initial, "notes.txt"), "v2, unstaged\n");
    assert_eq!(show(&repo, initial, "untracked/idea.txt"), "untracked\n");
    assert_eq!(show(&repo, BRANCH, "story-2.txt"), "work of story 2\n");
    // The agents worked in the run's worktree, never in the user's.
    assert!(agent_record(&repo, "env", "1", 1).contains("RALPH_STORY=1"));
    assert!(!repo.path("story-1.txt").exists());

    // Kept: the branch stays, the worktree is gone.
    assert!(!path.exists(), "finish --keep removes the run's worktree");
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
    assert_eq!(status_json(&repo)["state"], "finished");
}

#[test]
fn issue_23_the_user_edits_and_commits_beside_a_worktree_run_and_both_survive_finish() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite story-1.txt work of story 1\\n\nsleep 3\ntick-story\npromise COMPLETE\n{}",
            story_done("2")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--worktree", "--on-finish", "cleanup"]);
    let path = default_worktree(&repo);
    agent_at_work(&repo, &path, "1", 1, "story-1.txt");

    // While the agent works: git is content with the worktrees.
    assert_listed_and_locked(&repo, &path);
    assert_git_content(&repo);
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/main"),
        "the user stays on their branch"
    );

    // The user works and commits in their own worktree meanwhile.
    repo.write("mine.txt", "the user's own work\n");
    repo.git(&["add", "mine.txt"]);
    repo.git(&["commit", "-q", "-m", "The user's commit during the run"]);
    let users_commit = repo.rev_parse("HEAD");
    repo.write("README.md", "# Edited by the user during the run\n");

    let done = run.wait(PATIENCE);
    assert_eq!(done.status.code(), Some(0), "{}", done.stderr);

    // Both survive: the user's commit and edit, and the run's work brought
    // in as uncommitted changes.
    assert_eq!(repo.rev_parse("main"), users_commit, "{}", done.stderr);
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.read("mine.txt"), "the user's own work\n");
    assert_eq!(
        repo.read("README.md"),
        "# Edited by the user during the run\n"
    );
    assert_eq!(repo.read("story-1.txt"), "work of story 1\n");
    assert_eq!(repo.read("story-2.txt"), "work of story 2\n");
    assert!(repo.read(TASKS_PATH).contains("- [x] 2.1"));
    assert_eq!(
        repo.status_porcelain(),
        " M README.md\n M openspec/changes/greet/tasks.md\n?? story-1.txt\n?? story-2.txt\n",
        "the run's work is uncommitted, the user's index untouched"
    );
    assert!(!has_ref(&repo, BRANCH), "cleanup deletes the branch");
    assert!(has_ref(&repo, &format!("{NS}/finished")));
    assert!(!path.exists());
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
}

#[test]
fn issue_23_cleanup_refuses_to_touch_the_users_changes_and_keep_still_works() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    assert_listed_and_locked(&repo, &path);
    assert_git_content(&repo);
    // The user changed the very file the run changed.
    repo.write("README.md", "# The user's own README\n");
    let untouched = Untouched::take(&repo);
    let run_side = disk_snapshot(&path);

    let refused = ralph_cmd(&repo, &["finish", "--cleanup"]);
    assert_exit(&refused, 1);
    let err = stderr(&refused);
    assert!(err.contains("README.md"), "the path is named:\n{err}");
    assert!(err.contains("hint:"), "what to do is said:\n{err}");
    assert!(err.contains("--keep"), "{err}");
    untouched.assert_still(&repo, "a refused cleanup");
    assert!(
        snapshot_diff(&run_side, &disk_snapshot(&path)).is_empty(),
        "the run's worktree changed"
    );

    let kept = ralph_cmd(&repo, &["finish", "--keep"]);
    assert_success(&kept);
    assert_eq!(repo.read("README.md"), "# The user's own README\n");
    assert_eq!(
        show(&repo, BRANCH, "README.md"),
        "# Test project\nstory 1 was here\n"
    );
    assert!(!path.exists());
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
}

#[test]
fn issue_23_abort_removes_the_worktree_and_the_branch_and_keeps_what_was_left_in_it() {
    let repo = project(TWO_STORIES);
    busy_user(&repo);
    let before = user_side(&repo);
    let path = stopped_worktree_run(&repo);
    fs::write(
        path.join("left-behind.txt"),
        "uncommitted in the run's worktree\n",
    )
    .unwrap();

    let output = ralph_cmd(&repo, &["abort"]);
    assert_success(&output);
    let err = stderr(&output);
    let kept = err
        .split_whitespace()
        .find(|word| word.starts_with(&format!("{NS}/interrupted/")))
        .unwrap_or_else(|| panic!("the set-aside ref is named:\n{err}"))
        .trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    assert_eq!(
        show(&repo, kept, "left-behind.txt"),
        "uncommitted in the run's worktree\n"
    );
    assert_eq!(
        user_side(&repo),
        before,
        "abort touched the user's worktree"
    );
    assert!(!has_ref(&repo, BRANCH));
    assert!(has_ref(&repo, &format!("{NS}/aborted")));
    assert!(!path.exists());
    assert!(
        !path.parent().unwrap().exists(),
        "the emptied directory of run worktrees is removed"
    );
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
    assert_eq!(status_json(&repo)["state"], "aborted");
}

#[test]
fn issue_23_status_log_and_show_work_from_the_runs_worktree_too() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    for dir in [repo.root.clone(), path.clone()] {
        let status = run(repo.command(ralph_path(), &dir).args(["status", "--json"]));
        assert_success(&status);
        let report: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(report["change"], CHANGE, "from {}", dir.display());
        assert_eq!(report["worktree"], path.display().to_string());
        let people = run(repo.command(ralph_path(), &dir).arg("status"));
        assert_success(&people);
        assert!(
            stdout(&people).contains(&path.display().to_string()),
            "{}",
            stdout(&people)
        );
        let log = run(repo.command(ralph_path(), &dir).arg("log"));
        assert_success(&log);
        assert!(stdout(&log).contains("1. Greeting"), "{}", stdout(&log));
        let show = run(repo.command(ralph_path(), &dir).args(["show", "1"]));
        assert_success(&show);
    }
    // No run state is written inside the run's own git directory.
    let admin = repo.path(".git/worktrees");
    let ralph_dirs: Vec<_> = fs::read_dir(&admin)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("ralph").join(CHANGE).exists())
        .collect();
    assert!(ralph_dirs.is_empty(), "{ralph_dirs:?}");
    // And finish works from the run's worktree too, which it then removes.
    let kept = run(repo.command(ralph_path(), &path).args(["finish", "--keep"]));
    assert_success(&kept);
    assert!(!path.exists());
    assert_only_the_users_worktree(&repo);
}

#[test]
fn issue_23_a_killed_worktree_run_resumes_in_the_same_worktree() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2 attempt=1]\nwrite half.txt half done\nsleep 30\n[story=2 attempt=2]\n{}",
            story_done("1"),
            finish_story("2")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--worktree", "--on-finish", "keep"]);
    let path = default_worktree(&repo);
    agent_at_work(&repo, &path, "2", 1, "half.txt");
    run.signal(Signal::SIGKILL);
    run.wait(PATIENCE);
    kill_agents(&repo.record_dir());
    assert_listed_and_locked(&repo, &path);
    assert_git_content(&repo);

    let output = start(&repo, &agent, &[]);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains(&path.display().to_string()),
        "the same place is said again:\n{}",
        stderr(&output)
    );
    assert_eq!(
        show(&repo, &format!("{NS}/attempts/2/1"), "half.txt"),
        "half done"
    );
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    assert_eq!(repo.status_porcelain(), "", "the user's worktree is clean");
    assert!(!path.exists());
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
}

#[test]
fn issue_23_a_deleted_run_worktree_is_made_again_from_the_branch_on_resume() {
    for pruned in [true, false] {
        deleted_run_worktree_is_made_again(pruned);
    }
}

fn deleted_run_worktree_is_made_again(pruned: bool) {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    // The user deletes the directory, and perhaps prunes what git knows of
    // it.
    fs::remove_dir_all(&path).unwrap();
    if pruned {
        repo.git(&["worktree", "unlock", &path.display().to_string()]);
        repo.git(&["worktree", "prune"]);
        assert!(!repo.path(".git/worktrees").exists() || worktree_list(&repo).len() == 1);
    }

    let agent = script(&repo, &stories_done(&["2"]));
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(err.contains("made again"), "{err}");
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    assert_eq!(repo.status_porcelain(), "");
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
}

/// The run's worktree as git leaves it when its making again is cut
/// short: linked, locked "initializing", its `.git` half written, its
/// files not yet there.
fn remaking_cut_short(repo: &TestRepo, path: &Path) {
    fs::remove_dir_all(path).unwrap();
    fs::create_dir(path).unwrap();
    fs::write(path.join(".git"), "gitdir: ").unwrap();
    let admin = repo.path(".git/worktrees/greet");
    fs::write(admin.join("locked"), "initializing\n").unwrap();
    for file in ["HEAD", "index", "ralph-run"] {
        let _ = fs::remove_file(admin.join(file));
    }
}

#[test]
fn a_run_worktree_whose_making_again_was_cut_short_is_made_again_on_resume() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    remaking_cut_short(&repo, &path);
    let agent = script(&repo, &stories_done(&["2"]));
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains("made again"),
        "{}",
        describe(&output)
    );
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
}

#[test]
fn abort_of_a_run_whose_worktree_was_cut_short_restores_and_leaves_nothing() {
    let repo = project(TWO_STORIES);
    let before = work_state(&repo);
    let path = stopped_worktree_run(&repo);
    remaking_cut_short(&repo, &path);
    let output = run(ralph(&repo).args(["abort", CHANGE]));
    assert_exit(&output, 0);
    assert!(!path.exists(), "{}", describe(&output));
    assert_eq!(work_state(&repo), before);
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
}

#[test]
fn issue_23_worktree_takes_a_path_and_ralph_worktree_config_turns_it_on() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &stories_done(&["1", "2"]));
    let chosen = repo.dir.path().join("elsewhere").join("greet-run");
    let output = start(
        &repo,
        &agent,
        &[
            "--worktree",
            &chosen.display().to_string(),
            "--max-iterations",
            "1",
        ],
    );
    assert_exit(&output, 4);
    let chosen = fs::canonicalize(&chosen).expect("the worktree is where it was asked to be");
    assert_listed_and_locked(&repo, &chosen);
    assert_eq!(
        state(&repo)["worktree"]["path"],
        chosen.display().to_string()
    );
    assert_git_content(&repo);
    assert_success(&ralph_cmd(&repo, &["abort"]));
    assert!(!chosen.exists());

    // A worktree inside the user's own is refused before anything is done.
    let untouched = Untouched::take(&repo);
    let inside = start(&repo, &agent, &["--worktree", "sub/dir"]);
    assert_exit(&inside, 1);
    assert!(stderr(&inside).contains("inside"), "{}", stderr(&inside));
    untouched.assert_still(&repo, "a refused start");

    // ralph.worktree = true: the default place.
    repo.git(&["config", "ralph.worktree", "true"]);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains(&default_worktree(&repo).display().to_string()),
        "{}",
        stderr(&output)
    );
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_only_the_users_worktree(&repo);
}

#[test]
fn issue_23_a_worktree_run_resumes_and_cleans_up_from_inside_its_own_worktree() {
    let repo = project(TWO_STORIES);
    let path = stopped_worktree_run(&repo);
    repo.write("mine.txt", "the user's, untracked\n");
    let agent = script(&repo, &stories_done(&["2"]));

    let mut resume = start_command(
        &repo,
        &agent,
        &["--on-finish", "cleanup", "--max-retries", "1"],
    );
    resume.current_dir(&path);
    let output = run(&mut resume);
    assert_exit(&output, 0);

    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.read("mine.txt"), "the user's, untracked\n");
    assert_eq!(repo.read("README.md"), "# Test project\nstory 1 was here\n");
    assert_eq!(repo.read("story-2.txt"), "work of story 2\n");
    assert_eq!(
        repo.status_porcelain(),
        " M README.md\n M openspec/changes/greet/tasks.md\n?? mine.txt\n?? story-1.txt\n?? story-2.txt\n",
        "{}",
        describe(&output)
    );
    assert!(!has_ref(&repo, BRANCH));
    assert!(!path.exists());
    assert_only_the_users_worktree(&repo);
    assert_git_content(&repo);
    assert_eq!(status_json(&repo)["state"], "finished");
}

#[test]
fn issue_23_a_kept_worktree_run_can_still_be_cleaned_up_or_aborted() {
    for then in ["cleanup", "abort"] {
        let repo = project(TWO_STORIES);
        let path = stopped_worktree_run(&repo);
        assert_success(&ralph_cmd(&repo, &["finish", "--keep"]));
        assert!(!path.exists());
        let before = user_side(&repo);

        let output = match then {
            "cleanup" => ralph_cmd(&repo, &["finish", "--cleanup"]),
            _ => ralph_cmd(&repo, &["abort"]),
        };
        assert_success(&output);
        assert!(!has_ref(&repo, BRANCH), "{then}");
        match then {
            "cleanup" => {
                assert_eq!(repo.read("README.md"), "# Test project\nstory 1 was here\n");
                assert!(has_ref(&repo, &format!("{NS}/finished")));
            }
            _ => {
                assert_eq!(
                    user_side(&repo),
                    before,
                    "abort touched the user's worktree"
                );
                assert!(has_ref(&repo, &format!("{NS}/aborted")));
            }
        }
        assert_only_the_users_worktree(&repo);
        assert_git_content(&repo);
    }
}

#[test]
fn issue_23_a_branch_checked_out_in_another_worktree_is_refused_before_anything_moves() {
    let repo = project(TWO_STORIES);
    let other = repo.dir.path().join("other");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        BRANCH,
        &other.display().to_string(),
    ]);
    let untouched = Untouched::take(&repo);
    let agent = script(&repo, &stories_done(&["1", "2"]));

    let output = start(&repo, &agent, &["--worktree"]);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.contains(&other.display().to_string()) || err.contains("other"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
    untouched.assert_still(&repo, "a refused start");
    assert!(!default_worktree(&repo).exists());
    assert_eq!(
        repo.git(&["-C", &other.display().to_string(), "status", "--porcelain"]),
        ""
    );
    assert_eq!(worktree_list(&repo).len(), 2);
    assert_git_content(&repo);
}
