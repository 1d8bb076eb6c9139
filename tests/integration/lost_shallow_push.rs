//! `finish --push` from a shallow clone (`git clone --depth 1`): a remote
//! that holds the history the clone is cut off at takes the push; one
//! that does not would reject it ("shallow update not allowed") after the
//! run was kept. That is known before anything is written: the push is
//! refused, the run left exactly as it was (still stopped, its branch and
//! record untouched), and the hint says `git fetch --unshallow`.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(90);

/// Everything a refused command must leave as it was.
fn picture(repo: &TestRepo) -> (String, String, String) {
    (
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read_to_string(run_dir(repo).join("state.json")).unwrap(),
    )
}

fn said(output: &std::process::Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A shallow clone (depth 1) of a project with two commits, its `origin`
/// the full repository it was cloned from, and a second remote `empty`,
/// a bare repository with nothing in it; and where `origin` is.
fn shallow_clone() -> (TestRepo, std::path::PathBuf) {
    let mut repo = project(THREE_STORIES);
    repo.write("src/lib.txt", "the library\n");
    repo.commit_all("A second commit, cut off by the shallow clone");
    let clone = repo.dir.path().join("clone");
    let url = format!("file://{}", repo.root.display());
    repo.git_at(
        repo.dir.path(),
        &["clone", "-q", "--depth", "1", &url, clone.to_str().unwrap()],
    );
    let empty = repo.dir.path().join("empty.git");
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", empty.to_str().unwrap()],
    );
    let origin = std::mem::replace(&mut repo.root, clone);
    repo.git(&["remote", "add", "empty", empty.to_str().unwrap()]);
    assert_eq!(
        repo.git(&["rev-parse", "--is-shallow-repository"]).trim(),
        "true"
    );
    (repo, origin)
}

#[test]
fn a_push_from_a_shallow_clone_the_remote_cannot_take_is_refused_before_anything_is_written() {
    let (repo, origin) = shallow_clone();
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let (at_work, gate) = (marks.join("at-work"), marks.join("gate"));
    let agent = script(
        &repo,
        &format!(
            "[story=2]\nwrite {} x\nwait-for {}\n{}{}",
            at_work.display(),
            gate.display(),
            finish_story("2"),
            stories_done(&["1", "3"]),
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &[]);
    wait_until("story 2's agent is at work", PATIENCE, || at_work.exists());
    run.signal(Signal::SIGTERM);
    let stopped = run.wait(PATIENCE);
    assert_eq!(stopped.status.code(), Some(130), "{}", stopped.stdout);
    std::fs::write(&gate, "").unwrap();
    assert_eq!(state(&repo)["status"], "stopped");
    let tip = repo.git(&["rev-parse", BRANCH]);

    let before = picture(&repo);
    let refused = ralph_cmd(&repo, &["finish", CHANGE, "--push", "--remote", "empty"]);
    let told = said(&refused);
    assert_eq!(refused.status.code(), Some(1), "{told}");
    assert!(
        told.contains("cannot be pushed to 'empty' from this shallow clone")
            && told.contains("git fetch --unshallow empty"),
        "{told}"
    );
    assert_eq!(
        picture(&repo),
        before,
        "the refused push changed something:\n{told}"
    );
    assert_eq!(state(&repo)["status"], "stopped", "{told}");
    assert_eq!(
        repo.git_at(repo.dir.path(), &["--git-dir", "empty.git", "for-each-ref"]),
        "",
        "{told}"
    );

    // The remote the clone came from holds the history: it takes the push.
    let pushed = ralph_cmd(&repo, &["finish", CHANGE, "--push"]);
    let told = said(&pushed);
    assert_eq!(pushed.status.code(), Some(0), "{told}");
    assert_eq!(repo.git_at(&origin, &["rev-parse", BRANCH]), tip, "{told}");
    repo.assert_fsck_clean();
}
