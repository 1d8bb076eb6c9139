//! The edges a start meets before its loop, end to end through the binary:
//! a task file git does not see (ignored, or reached through a symlink out
//! of the repository), two starts at the same moment, a run directory that
//! cannot be written or a write that fails once the branch has moved, a
//! change named like one of git-ralph's own files, and `timeout = 0` in
//! `ralph.toml`. Every refusal is judged with git: nothing changed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::story_run::{CHANGE, TWO_STORIES, project};
use crate::harness::*;

/// The exit status of a failure of git-ralph or of the machine.
const INTERNAL: i32 = 70;

const TODO: &str = "\
# Chores

## 1. Greeting

- [ ] 1.1 Create hello.txt

## 2. Farewell

- [ ] 2.1 Create bye.txt
";

/// An agent that ticks its story's boxes and then says it failed.
const TICKS_AND_FAILS: &str =
    "[*]\nwrite attempt.txt tried\\n\ntick-story\npromise FAILED: could not do it\n";

/// `start <change> --tasks <tasks>` with the fake agent ticking `tasks`,
/// no retries, run to the end.
fn start_tasks(repo: &TestRepo, change: &str, tasks: &str, agent: &str) -> std::process::Output {
    let mut cmd = fake_start(repo, change, &script(repo, agent));
    cmd.args(["--tasks", tasks, "--max-retries", "0"])
        .env("FAKE_AGENT_TASKS", tasks);
    run(&mut cmd)
}

/// The repository of [`TestRepo::new`] with an ignore rule naming
/// `TODO.md`, and a `TODO.md` git therefore does not track.
fn ignored_todo() -> TestRepo {
    let repo = TestRepo::with_files(&[(".gitignore", "TODO.md\n")]);
    repo.write("TODO.md", TODO);
    repo
}

#[test]
fn a_task_file_gitignore_names_is_refused_at_start_changing_nothing() {
    let repo = ignored_todo();
    let before = Untouched::take(&repo);
    let output = start_tasks(&repo, "chores", "TODO.md", TICKS_AND_FAILS);
    // Before: the ticks of failed attempts stayed, and the run ended
    // "all 2 stories done" with exit 0 and no story checkpoint.
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("TODO.md is ignored by git"), "{err}");
    assert!(err.contains("could not be undone"), "the reason: {err}");
    assert!(err.contains("git add -f TODO.md"), "what to do: {err}");
    assert!(err.contains("nothing was changed"), "{err}");
    before.assert_still(&repo, "a refused ignored task file");
    assert_eq!(recorded_calls(&repo), Vec::<String>::new(), "no agent ran");
}

#[test]
fn a_task_file_in_an_ignored_directory_is_refused_too() {
    let repo = TestRepo::with_files(&[(".gitignore", "plans/\n")]);
    repo.write("plans/TODO.md", TODO);
    let before = Untouched::take(&repo);
    let output = start_tasks(&repo, "chores", "plans/TODO.md", TICKS_AND_FAILS);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("plans/TODO.md is ignored by git"),
        "{}",
        describe(&output)
    );
    before.assert_still(&repo, "a task file in an ignored directory");
}

#[test]
fn a_tracked_symlink_task_file_leading_out_of_the_repository_is_refused() {
    let repo = TestRepo::new();
    let outside = repo.dir.path().join("outside");
    fs::create_dir_all(&outside).expect("outside");
    fs::write(outside.join("TODO.md"), TODO).expect("outside TODO");
    std::os::unix::fs::symlink("../outside/TODO.md", repo.path("TODO.md")).expect("symlink");
    repo.commit_all("Track the task list, a symlink");
    let before = Untouched::take(&repo);
    let output = start_tasks(&repo, "chores", "TODO.md", TICKS_AND_FAILS);
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("leads through a symlink"), "{err}");
    assert!(err.contains("outside the repository"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    before.assert_still(&repo, "a refused symlinked task file");
    assert_eq!(fs::read_to_string(outside.join("TODO.md")).unwrap(), TODO);
}

#[test]
fn an_untracked_task_file_is_taken_into_the_run_and_a_failed_tick_undone() {
    let repo = TestRepo::new();
    repo.write("TODO.md", TODO);
    let agent = "[story=1 attempt=1]\ntick-story\npromise FAILED: not yet\n\
                 [*]\nwrite done-$RALPH_STORY.txt done\\n\ntick-story\npromise COMPLETE\n";
    let mut cmd = fake_start(&repo, "chores", &script(&repo, agent));
    cmd.args(["--tasks", "TODO.md", "--max-retries", "1"])
        .env("FAKE_AGENT_TASKS", "TODO.md");
    let output = run(&mut cmd);
    assert_exit(&output, 0);
    // The failed attempt's tick went with it: story 1 was tried again.
    let calls = recorded_calls(&repo);
    assert!(
        calls
            .iter()
            .any(|call| call.starts_with("story=1 attempt=2")),
        "{calls:?}"
    );
    let subjects = repo.git(&["log", "--format=%s", "main..ralph/chores"]);
    assert!(subjects.contains("story 1"), "{subjects}");
    assert!(subjects.contains("story 2"), "{subjects}");
}

/// The changes started at once in each round, each over its own task file.
const AT_ONCE: [&str; 3] = ["a", "b", "c"];

/// A `start` of `change` over `<change>.md` in the background, whose
/// agent waits for `release` before it does its story. The process waits
/// at a barrier first (it says it is `ready-<change>`, then spins until
/// `go` exists), so that the starts of a round reach their lock together.
fn spawn_start(repo: &TestRepo, change: &str, barrier: &Path, release: &Path) -> Child {
    let agent = format!(
        "[*]\nwait-for {}\nwrite {change}.txt done\\n\ntick-story\npromise COMPLETE\n",
        release.display()
    );
    let tasks = format!("{change}.md");
    let mut start = fake_start(repo, change, &script(repo, &agent));
    start
        .args(["--tasks", &tasks, "--max-retries", "0"])
        .env("FAKE_AGENT_TASKS", &tasks);
    let ready = shell_quote(&barrier.join(format!("ready-{change}")).to_string_lossy());
    let go = shell_quote(&barrier.join("go").to_string_lossy());
    let mut wrapper = Command::new("sh");
    wrapper
        .arg("-c")
        .arg(format!(
            "touch {ready}; while [ ! -e {go} ]; do :; done; exec \"$@\""
        ))
        .arg("barrier");
    let mut cmd = repo.wrap(wrapper, &start);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().expect("start git-ralph")
}

/// Whether a run of `change` has recorded itself.
fn recorded(repo: &TestRepo, change: &str) -> bool {
    repo.path(format!(".git/ralph/{change}/state.json"))
        .exists()
}

/// One round: the starts of [`AT_ONCE`] released at the same moment in one
/// worktree. Exactly one runs; each other one is refused and changes
/// nothing of its own.
fn starts_at_once(round: usize) {
    let files: Vec<(String, &str)> = AT_ONCE
        .iter()
        .map(|change| (format!("{change}.md"), TODO))
        .collect();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    let repo = TestRepo::with_files(&files);
    let barrier = repo.dir.path().join("barrier");
    fs::create_dir_all(&barrier).expect("barrier");
    let release = repo.dir.path().join("release");
    let mut children: Vec<(&str, Option<Child>)> = AT_ONCE
        .iter()
        .map(|change| {
            (
                *change,
                Some(spawn_start(&repo, change, &barrier, &release)),
            )
        })
        .collect();
    wait_until(
        "every start is at the barrier",
        Duration::from_secs(60),
        || {
            AT_ONCE
                .iter()
                .all(|change| barrier.join(format!("ready-{change}")).exists())
        },
    );
    fs::write(barrier.join("go"), "").expect("go");
    let mut refused = Vec::new();
    wait_until(
        "all starts but one are refused",
        Duration::from_secs(180),
        || {
            for (change, child) in &mut children {
                let ended = child
                    .as_mut()
                    .is_some_and(|c| c.try_wait().expect("wait").is_some());
                if ended {
                    refused.push((*change, child.take().expect("a child")));
                }
            }
            refused.len() == AT_ONCE.len() - 1
                || AT_ONCE.iter().filter(|c| recorded(&repo, c)).count() > 1
        },
    );
    let running: Vec<&str> = AT_ONCE
        .iter()
        .copied()
        .filter(|c| recorded(&repo, c))
        .collect();
    if running.len() > 1 {
        fs::write(&release, "").expect("release");
        for (_, child) in &mut children {
            if let Some(child) = child.as_mut() {
                let _ = child.wait();
            }
        }
        panic!("round {round}: {running:?} run at once");
    }
    let (winner, winning) = children
        .iter_mut()
        .find_map(|(change, child)| child.take().map(|child| (*change, child)))
        .expect("one start still runs");
    for (loser, child) in refused {
        let output = child.wait_with_output().expect("a refused start");
        assert_exit(&output, 1);
        let err = stderr(&output);
        assert!(
            err.contains(&format!(
                "a git-ralph loop for '{winner}' is already running"
            )) || err.contains("another git-ralph loop is starting"),
            "round {round}: {err}"
        );
        assert_refused_left_nothing(&repo, loser, round);
    }
    fs::write(&release, "").expect("release the agent");
    let won = winning.wait_with_output().expect("the running start");
    assert_exit(&won, 0);
    assert_eq!(
        repo.git(&["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/ralph/{winner}"),
        "round {round}"
    );
    let subjects = repo.git(&["log", "--format=%s", &format!("main..ralph/{winner}")]);
    assert_eq!(
        subjects.lines().filter(|s| s.contains(": story ")).count(),
        2,
        "round {round}: {subjects}"
    );
    assert_eq!(repo.status_porcelain(), "", "round {round}");
    for loser in AT_ONCE.iter().filter(|c| **c != winner) {
        let reflog = repo.git(&["reflog", "--format=%gs", "HEAD"]);
        assert!(
            !reflog.contains(&format!("ralph/{loser}")),
            "round {round}: HEAD never went to a refused run's branch: {reflog}"
        );
    }
}

/// No branch, ref or directory of the refused run `loser`.
fn assert_refused_left_nothing(repo: &TestRepo, loser: &str, round: usize) {
    let branches = repo.git(&["branch", "--format=%(refname)"]);
    assert!(
        !branches.contains(&format!("ralph/{loser}")),
        "round {round}: {branches}"
    );
    let refs = repo.git(&["for-each-ref", "--format=%(refname)", "refs/ralph/"]);
    assert!(
        !refs.contains(&format!("refs/ralph/{loser}/")),
        "round {round}: {refs}"
    );
    assert!(
        !repo.path(format!(".git/ralph/{loser}")).exists(),
        "round {round}"
    );
}

#[test]
fn of_starts_launched_at_once_exactly_one_runs() {
    for round in 1..=30 {
        starts_at_once(round);
    }
}

/// `start greet` of [`project`] with an agent that does both stories.
fn start_greet(repo: &TestRepo) -> std::process::Output {
    let agent = "[*]\nwrite done-$RALPH_STORY.txt done\\n\ntick-story\npromise COMPLETE\n";
    run(fake_start(repo, CHANGE, &script(repo, agent)).args(["--max-retries", "0"]))
}

#[test]
fn a_file_where_the_run_directory_should_be_refuses_the_start_changing_nothing() {
    let repo = project(TWO_STORIES);
    repo.write("notes.txt", "my own uncommitted notes\n");
    fs::create_dir_all(repo.path(".git/ralph")).expect("ralph dir");
    fs::write(repo.path(".git/ralph/greet"), "not a directory\n").expect("a file");
    let before = Untouched::take(&repo);
    let output = start_greet(&repo);
    // Before: HEAD moved to ralph/greet and refs/ralph/greet/original
    // was written, then status knew of no run and abort refused.
    assert_exit(&output, INTERNAL);
    let err = stderr(&output);
    assert!(err.contains("could not write the run's directory"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    before.assert_still(&repo, "a run directory that is a file");
}

/// Makes `path` immutable (`chattr +i`) until dropped: a directory not
/// even root may write. `None` where the file system or the container
/// does not allow it.
struct Immutable(PathBuf);

impl Immutable {
    fn make(path: &Path) -> Option<Immutable> {
        let done = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !done {
            eprintln!("note: chattr +i is not possible here; skipping this check");
            return None;
        }
        let guard = Immutable(path.to_owned());
        // Root writes through permissions, but not through this.
        fs::write(path.join("probe"), "").is_err().then_some(guard)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_run_directory_refuses_the_start_changing_nothing() {
    let repo = project(TWO_STORIES);
    let dir = repo.path(".git/ralph/greet");
    fs::create_dir_all(&dir).expect("run dir");
    let Some(_immutable) = Immutable::make(&dir) else {
        return;
    };
    let before = Untouched::take(&repo);
    let output = start_greet(&repo);
    assert_exit(&output, INTERNAL);
    assert!(
        stderr(&output).contains("could not write the run's directory"),
        "{}",
        describe(&output)
    );
    before.assert_still(&repo, "a read-only run directory");
}

#[test]
fn a_start_whose_write_fails_once_the_branch_moved_is_taken_back() {
    let repo = project(TWO_STORIES);
    repo.write("README.md", "# Test project, staged edit\n");
    repo.git(&["add", "README.md"]);
    repo.write("README.md", "# Test project, unstaged edit on top\n");
    repo.write("notes.txt", "my own uncommitted notes\n");
    // The run's directory can be written, but its contract snapshot
    // cannot: a directory stands where the file goes.
    fs::create_dir_all(repo.path(".git/ralph/greet/contract.json")).expect("in the way");
    let head = repo.rev_parse("HEAD");
    let refs = repo.git(&["for-each-ref"]);
    let (staged, unstaged) = (repo.git(&["diff", "--cached"]), repo.git(&["diff"]));
    let status = repo.status_porcelain();
    let output = start_greet(&repo);
    assert_exit(&output, INTERNAL);
    assert!(
        stderr(&output).contains("contract"),
        "{}",
        describe(&output)
    );
    // Before: left on ralph/greet with refs/ralph/greet/original, and a
    // state no command would take up.
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert_eq!(repo.rev_parse("HEAD"), head);
    assert_eq!(repo.git(&["for-each-ref"]), refs, "no ref left behind");
    assert_eq!(repo.git(&["diff", "--cached"]), staged);
    assert_eq!(repo.git(&["diff"]), unstaged);
    assert_eq!(repo.status_porcelain(), status);
    assert_eq!(repo.read("notes.txt"), "my own uncommitted notes\n");
    assert!(!repo.path(".git/ralph/greet/state.json").exists());
    let status = ralph_cmd(&repo, &["status"]);
    assert!(
        !stdout(&status).contains("greet"),
        "no run is recorded: {}",
        describe(&status)
    );
    repo.assert_fsck_clean();
}

#[test]
fn names_of_git_ralphs_own_files_are_refused_as_change_names() {
    let repo = TestRepo::with_files(&[("TODO.md", TODO)]);
    let before = Untouched::take(&repo);
    // Every name the layout keeps for itself, and one in another case.
    let names = git_ralph::state::layout::reserved()
        .map(str::to_owned)
        .chain(["Lock".to_owned()]);
    for name in names {
        let name = name.as_str();
        let agent = "[*]\nwrite done-$RALPH_STORY.txt done\\n\ntick-story\npromise COMPLETE\n";
        let output = start_tasks(&repo, name, "TODO.md", agent);
        assert_exit(&output, 1);
        let err = stderr(&output);
        assert!(
            err.contains(&format!(
                "the change name '{name}' is taken by git-ralph's own"
            )),
            "{name}: {err}"
        );
        assert!(err.contains("name the change otherwise"), "{name}: {err}");
        before.assert_still(&repo, &format!("start {name}"));
        let dry = dry_run(&repo, &[name, "--tasks", "TODO.md"]);
        assert_exit(&dry, 1);
    }
}

/// A repository whose committed `ralph.toml` is `toml`, with [`TODO`].
fn with_contract(toml: &str) -> TestRepo {
    TestRepo::with_files(&[("TODO.md", TODO), ("ralph.toml", toml)])
}

#[test]
fn a_check_with_timeout_zero_is_refused_naming_the_file_and_line() {
    let repo = with_contract("[[check]]\ncommand = \"true\"\ntimeout = 0\n");
    let before = Untouched::take(&repo);
    let agent = "[*]\nwrite done-$RALPH_STORY.txt done\\n\ntick-story\npromise COMPLETE\n";
    let output = start_tasks(&repo, "chores", "TODO.md", agent);
    // Before: every check "timed out after 0s".
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("ralph.toml:3:1"), "the file and line: {err}");
    assert!(err.contains("at least one second"), "{err}");
    before.assert_still(&repo, "timeout = 0 in a check");
    // The flag says the same.
    let flag = run(fake_start(&repo, "chores", &script(&repo, agent)).args([
        "--tasks",
        "TODO.md",
        "--command-timeout",
        "0",
    ]));
    assert_exit(&flag, 2);
    assert!(
        stderr(&flag).contains("at least one second"),
        "{}",
        describe(&flag)
    );
}

#[test]
fn a_hook_with_timeout_zero_is_refused_naming_the_file_and_line() {
    let repo = with_contract(
        "# hooks\n[hooks.on_run_start]\ncommand = \"touch hook-ran\"\n  timeout = 0\n",
    );
    let before = Untouched::take(&repo);
    let agent = "[*]\nwrite done-$RALPH_STORY.txt done\\n\ntick-story\npromise COMPLETE\n";
    let output = start_tasks(&repo, "chores", "TODO.md", agent);
    // Before: the run went on, and the hook never ran.
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("ralph.toml:4:3"), "the file and line: {err}");
    assert!(err.contains("timeout = 0"), "{err}");
    before.assert_still(&repo, "timeout = 0 in a hook");
}

/// [`TODO`] with every box ticked: a start of it is refused once it holds
/// the lock, when it reads the stories.
const ALL_DONE: &str = "\
# Chores

## 1. Greeting

- [x] 1.1 Create hello.txt
";

/// Found by the generated scenarios (`shape=submodule start-twice`): two
/// starts launched at the same moment, both refused once they held the
/// lock, left `.git/ralph/` behind, empty, where there was none. Each
/// round releases two such starts together; afterwards the repository is
/// as it was, the git directory included.
#[test]
fn two_starts_refused_at_once_leave_no_state_directory() {
    let repo = TestRepo::with_files(&[("done.md", ALL_DONE)]);
    let agent = script(&repo, "[*]\nwrite agent-ran.txt ran\\n\npromise COMPLETE\n");
    for round in 1..=20 {
        let untouched = Untouched::take(&repo);
        let barrier = repo.dir.path().join(format!("barrier-{round}"));
        fs::create_dir_all(&barrier).expect("barrier");
        let go = shell_quote(&barrier.join("go").to_string_lossy());
        let children: Vec<Child> = ["a", "b"]
            .into_iter()
            .map(|side| {
                let mut start = fake_start(&repo, CHANGE, &agent);
                start.args(["--tasks", "done.md"]);
                let ready = shell_quote(&barrier.join(side).to_string_lossy());
                let mut wrapper = Command::new("sh");
                wrapper
                    .arg("-c")
                    .arg(format!(
                        "touch {ready}; while [ ! -e {go} ]; do :; done; exec \"$@\""
                    ))
                    .arg("barrier");
                let mut cmd = repo.wrap(wrapper, &start);
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
                cmd.spawn().expect("start git-ralph")
            })
            .collect();
        wait_until(
            "both starts are at the barrier",
            Duration::from_secs(60),
            || barrier.join("a").exists() && barrier.join("b").exists(),
        );
        fs::write(barrier.join("go"), "").expect("go");
        for child in children {
            let output = child.wait_with_output().expect("a refused start");
            assert_exit(&output, 1);
        }
        untouched.assert_still(&repo, &format!("round {round}"));
    }
}
