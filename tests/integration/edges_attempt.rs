//! An attempt at the edges of the machine, end to end.
//!
//! - A full disk, or git-ralph's own error (a revert refused by an
//!   immutable directory), cuts an attempt short: the run exits 70, the
//!   attempt is recorded as interrupted by git-ralph's error, and on
//!   resume what the agent left is kept under a ref of its own, never
//!   taken for the user's changes and never written over an attempt's ref.
//! - The user's own `git gc` and `git repack` during an attempt write
//!   `.git/info/refs`: that is git's maintenance, not the agent's doing,
//!   while a hook the agent plants in the same attempt is still undone.
//! - A child the agent moves into a session of its own ends with the
//!   attempt: its late write never lands in the next story's checkpoint.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

/// Whether a test that needs root's powers over the filesystem can run: a
/// developer's machine may lack them (the test is then skipped with a
/// note), CI runs as root and must have them.
fn can(what: &str, works: bool) -> bool {
    if !works {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is needed in CI, where the tests run as root"
        );
        eprintln!("note: {what} does not work here; skipping this test");
    }
    works
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A directory made immutable (`chattr +i`), which even root cannot change,
/// made mutable again when dropped so that the test's files can go.
struct Immutable(PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = succeeds(Command::new("chattr").arg("-i").arg(&self.0));
    }
}

/// Whether `chattr +i` works on the test's filesystem.
fn chattr_works(repo: &TestRepo) -> bool {
    let probe = repo.dir.path().join("chattr-probe");
    fs::create_dir_all(&probe).expect("probe dir");
    let works = succeeds(Command::new("chattr").arg("+i").arg(&probe));
    let _ = Immutable(probe);
    works
}

/// A small tmpfs mounted at a directory of the test's, unmounted when
/// dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        fs::create_dir_all(at).expect("mount point");
        let mounted = succeeds(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(at),
        );
        mounted.then(|| Tmpfs(at.to_owned()))
    }

    /// Gives it `size`, as a user frees space on a full disk.
    fn grow(&self, size: &str) {
        assert!(
            succeeds(
                Command::new("mount")
                    .args(["-o", &format!("remount,size={size}")])
                    .arg(&self.0)
            ),
            "remount {}",
            self.0.display()
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = succeeds(Command::new("umount").arg("-l").arg(&self.0));
    }
}

/// Is the process `pid` alive (a zombie is not)?
fn alive(pid: i32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z")
}

/// What `git ralph log greet` says.
fn log_of(repo: &TestRepo) -> String {
    let output = ralph_cmd(repo, &["log", CHANGE]);
    assert_exit(&output, 0);
    stdout(&output)
}

/// The refs of the run that hold `path` in their tree.
fn refs_holding(repo: &TestRepo, path: &str) -> Vec<String> {
    refs_under(repo, NS)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| tree_files(repo, name).iter().any(|file| file == path))
        .collect()
}

/// No commit the run's branch holds beyond `main` has `path`, and none is
/// "user changes while stopped".
fn assert_branch_never_took(repo: &TestRepo, path: &str) {
    let subjects = subjects(repo, "main..ralph/greet");
    assert!(
        !subjects.iter().any(|s| s.contains("user changes")),
        "{subjects:?}"
    );
    let touched = repo.git(&["log", "--format=%s", "main..ralph/greet", "--", path]);
    assert_eq!(touched, "", "commits of the branch took {path}");
}

#[test]
fn an_attempt_whose_revert_fails_is_kept_whole_and_recorded_as_cut_short() {
    let repo = project(TWO_STORIES);
    if !can("chattr +i", chattr_works(&repo)) {
        return;
    }
    let locked = repo.path("locked");
    let _unlock = Immutable(locked.clone());
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite locked/half.txt half of the work\\n\n\
             promise FAILED: the greeting is not decided\n{}",
            stories_done(&["1", "2"])
        ),
    );
    // The agent's last act: the directory it wrote becomes immutable, so
    // the revert after its failure cannot remove what it holds.
    let command = format!(
        "{}; status=$?; if [ \"$RALPH_STORY-$RALPH_ATTEMPT\" = 1-1 ]; then chattr +i locked; fi; exit $status",
        shell_quote(fake_agent_path())
    );
    let mut first = ralph_with_fake(&repo, &agent);
    first.args([
        "start",
        CHANGE,
        "--agent-command",
        &command,
        "--on-finish",
        "keep",
    ]);
    let output = run(&mut first);
    assert_exit(&output, 70);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].0, "interrupted", "{attempts:?}");
    assert!(
        attempts[0].1.contains("git-ralph's own error"),
        "{attempts:?}"
    );
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(!status.contains("running"), "{status}");
    assert!(status.contains("#1 interrupted"), "{status}");
    let reasoned = format!("{NS}/attempts/1/1");
    let kept = repo.rev_parse(&reasoned);
    assert!(
        repo.git(&["log", "-1", "--format=%B", &kept])
            .contains("the greeting is not decided"),
        "the attempt's ref holds the agent's reason"
    );

    drop(_unlock);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(
        repo.rev_parse(&reasoned),
        kept,
        "the attempt's ref is never written over: {}",
        describe(&output)
    );
    let holding = refs_holding(&repo, "locked/half.txt");
    assert!(holding.contains(&reasoned), "{holding:?}");
    assert_branch_never_took(&repo, "locked/half.txt");
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts[0].0, "interrupted", "{attempts:?}");
    assert!(
        attempts[0].1.contains("git-ralph's own error"),
        "{attempts:?}"
    );
    assert!(log_of(&repo).contains("git-ralph's own error"));
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    repo.assert_fsck_clean();
}

/// The two-story project, cloned onto a tmpfs of `size` (the fake
/// agent's records stay on the large disk); `None`, said, where no tmpfs
/// can be mounted.
fn cloned_onto_a_small_disk(size: &str) -> Option<(TestRepo, Tmpfs, std::path::PathBuf)> {
    let outer = project(TWO_STORIES);
    let disk = outer.dir.path().join("disk");
    let Some(tmpfs) = Tmpfs::mount(&disk, size) else {
        can("mount -t tmpfs", false);
        return None;
    };
    let root = disk.join("repo");
    outer.git(&[
        "clone",
        "-q",
        &outer.root.display().to_string(),
        &root.display().to_string(),
    ]);
    Some((outer, tmpfs, root))
}

#[test]
fn an_attempt_a_full_disk_cut_short_is_never_taken_for_the_users_changes() {
    let Some((outer, tmpfs, root)) = cloned_onto_a_small_disk("2m") else {
        return;
    };
    let agent = script(
        &outer,
        &format!(
            "[story=1 attempt=1]\nwrite work.txt half of the work\\n\nflood 8000000\n\
             promise FAILED: not yet\n{}",
            stories_done(&["1", "2"])
        ),
    );
    let ralph_on_disk = || {
        let mut cmd = start_command(&outer, &agent, &["--on-finish", "keep"]);
        cmd.current_dir(&root);
        cmd
    };
    let output = run(&mut ralph_on_disk());
    assert_exit(&output, 70);
    tmpfs.grow("64m");
    let state_path = root.join(".git/ralph/greet/state.json");
    let state: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state_path).expect("state")).expect("JSON");
    let attempts = attempts_of(&state, "1");
    assert_eq!(attempts.len(), 1, "the attempt is on record: {attempts:?}");
    assert_eq!(attempts[0].0, "interrupted", "{attempts:?}");
    assert!(
        attempts[0].1.contains("git-ralph's own error"),
        "{attempts:?}"
    );

    let output = run(&mut ralph_on_disk());
    assert_exit(&output, 0);
    let git = |args: &[&str]| outer.git_at(&root, args);
    let subjects = git(&["log", "--format=%s", "main..ralph/greet"]);
    assert!(!subjects.contains("user changes"), "{subjects}");
    assert_eq!(
        git(&["log", "--format=%s", "main..ralph/greet", "--", "work.txt"]),
        "",
        "no commit of the branch took the agent's leftovers: {}",
        describe(&output)
    );
    let kept = git(&["for-each-ref", "--format=%(refname)", NS]);
    let holding: Vec<&str> = kept
        .lines()
        .filter(|name| {
            git(&["ls-tree", "-r", "--name-only", name])
                .lines()
                .any(|file| file == "work.txt")
        })
        .collect();
    assert_eq!(holding.len(), 1, "the leftovers are kept: {kept}");
    let log = stdout(&run(ralph(&outer).current_dir(&root).args(["log", CHANGE])));
    assert!(log.contains("#1 interrupted"), "{log}");
    assert!(log.contains("git-ralph's own error"), "{log}");
}

#[test]
fn the_users_gc_and_repack_during_an_attempt_are_not_blamed_on_the_agent() {
    let repo = project(TWO_STORIES);
    let gate = repo.dir.path().join("gate");
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite story-1.txt work of story 1\\n\nwait-for {}\n\
             write .git/hooks/pre-commit #!/bin/sh\\nexit 0\\n\nchmod +x .git/hooks/pre-commit\n\
             tick-story\npromise COMPLETE\n{}",
            gate.display(),
            stories_done(&["1", "2"])
        ),
    );
    let running = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    agent_at_work(&repo, &repo.root, "1", 1, "story-1.txt");
    repo.git(&["gc", "--quiet"]);
    repo.git(&["repack", "-a", "-d", "-q"]);
    let info_refs = fs::read(repo.path(".git/info/refs")).expect("git wrote info/refs");
    fs::write(&gate, "").expect("gate");
    let finished = running.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(
        !finished.stdout.contains("info/refs"),
        "{}",
        finished.stdout
    );
    assert_eq!(
        fs::read(repo.path(".git/info/refs")).expect("info/refs is left"),
        info_refs,
        "git's info/refs is not rewound"
    );
    // The hook planted in the same attempt is still caught and undone.
    assert!(
        finished
            .stdout
            .contains("undone: the agent changed .git/hooks/pre-commit"),
        "{}",
        finished.stdout
    );
    assert!(!repo.path(".git/hooks/pre-commit").exists());
    let events = events(&repo);
    let changed = of_type(&events, "git_dir_changed");
    assert!(
        changed
            .iter()
            .all(|event| !event.to_string().contains("info/refs")),
        "{changed:?}"
    );
    for (what, said) in [
        ("status", ralph_cmd(&repo, &["status", CHANGE])),
        ("log", ralph_cmd(&repo, &["log", CHANGE])),
    ] {
        assert!(
            !stdout(&said).contains("info/refs"),
            "{what}: {}",
            stdout(&said)
        );
    }
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    repo.assert_fsck_clean();
}

#[test]
fn a_child_the_agent_moves_to_a_session_of_its_own_ends_with_the_attempt() {
    let repo = project(TWO_STORIES);
    let records = repo.record_dir();
    let escapee = records.join("escapee.pid");
    let gate = repo.dir.path().join("gate");
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\nwait-for {}\n{}",
            story_done("1"),
            gate.display(),
            finish_story("2")
        ),
    );
    // Story 1's agent leaves a child in a session of its own, its output
    // away from the agent's pipes, that writes into the worktree later.
    fs::create_dir_all(&records).expect("records");
    let child = records.join("escapee.sh");
    fs::write(
        &child,
        format!(
            "echo $$ > {}\nsleep 3\necho late > late.txt\n",
            shell_quote(&escapee.display().to_string())
        ),
    )
    .expect("the child's script");
    let command = format!(
        "if [ \"$RALPH_STORY\" = 1 ]; then \
           setsid sh {} </dev/null >/dev/null 2>&1 & \
           while [ ! -s {} ]; do sleep 0.05; done; \
         fi; {}",
        shell_quote(&child.display().to_string()),
        shell_quote(&escapee.display().to_string()),
        agent_command(&repo)
    );
    let mut cmd = ralph_with_fake(&repo, &agent);
    cmd.args([
        "start",
        CHANGE,
        "--agent-command",
        &command,
        "--on-finish",
        "keep",
    ]);
    let running = Background::spawn(&repo, cmd);
    wait_until(
        "story 2's agent has started",
        Duration::from_secs(60),
        || records.join("pid-2-1").exists(),
    );
    let pid: i32 = fs::read_to_string(&escapee)
        .expect("the child's pid")
        .trim()
        .parse()
        .expect("a pid");
    let outlived = alive(pid);
    // Whatever it does, the test goes on once it is gone.
    wait_until("the child is gone", Duration::from_secs(30), || !alive(pid));
    fs::write(&gate, "").expect("gate");
    let finished = running.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(!outlived, "the child outlived story 1's attempt");
    assert!(
        !tree_files(&repo, BRANCH).contains(&"late.txt".to_string()),
        "the late write landed in a checkpoint"
    );
    assert!(!repo.path("late.txt").exists());
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
}

/// Fills the disk at `at` but for `left` bytes.
fn fill_but(at: &Path, left: u64) {
    use std::io::Write;
    let ballast = at.join("ballast");
    let mut file = fs::File::create(&ballast).expect("ballast");
    let chunk = vec![0u8; 64 << 10];
    while file.write_all(&chunk).is_ok() {}
    let size = file.metadata().expect("ballast").len();
    file.set_len(size.saturating_sub(left)).expect("room");
}

#[test]
fn a_start_the_full_disk_stops_before_the_branch_moves_leaves_no_ref_of_the_run() {
    let Some((outer, _tmpfs, root)) = cloned_onto_a_small_disk("4m") else {
        return;
    };
    let git = |args: &[&str]| outer.git_at(&root, args);
    git(&["remote", "remove", "origin"]);
    std::fs::write(root.join("notes.txt"), "the user's notes\n").expect("notes");
    let (refs, head, status) = (
        git(&["for-each-ref"]),
        git(&["symbolic-ref", "HEAD"]),
        git(&["status", "--porcelain"]),
    );
    // Room for the objects and the first ref a start writes, not for the
    // reflog of the branch it moves to.
    fill_but(root.parent().expect("the disk"), 24 << 10);
    let agent = script(&outer, &stories_done(&["1", "2"]));
    let mut cmd = start_command(&outer, &agent, &["--on-finish", "keep"]);
    let output = run(cmd.current_dir(&root));
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(
        stderr(&output).contains("No space left on device"),
        "{}",
        describe(&output)
    );
    // Before: refs/ralph/greet/original was left behind.
    assert_eq!(
        git(&["for-each-ref"]),
        refs,
        "no ref of the run is left: {}",
        describe(&output)
    );
    assert_eq!(git(&["symbolic-ref", "HEAD"]), head);
    assert_eq!(git(&["status", "--porcelain"]), status);
    assert_eq!(
        fs::read_to_string(root.join("notes.txt")).expect("notes"),
        "the user's notes\n"
    );
}
