//! A change across machines, through the real binary: a bare repository
//! stands in for the remote and separate clones (each in an environment
//! of its own) for the machines. A run's record travels with its branch
//! under `refs/ralph/<change>/record`; `start --from <remote>` in a fresh
//! clone takes the run up where the record left it (the same stories done,
//! the same attempts, learnings and spending); records gone apart, and a
//! record of a later layout, are refused without a ref, HEAD, the worktree
//! or the run's files moving.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::harness::story_run::*;
use crate::harness::*;
use crate::machines_story_e2e::{remote_ref, with_remote};

/// The record's ref.
const RECORD: &str = "refs/ralph/greet/record";

/// A project of three stories whose `main` is pushed to a bare remote,
/// `origin` of the project, beside it.
fn machine_a() -> (TestRepo, PathBuf) {
    with_remote(project(THREE_STORIES))
}

/// `git ralph start greet --from origin` in `repo` with the fake agent
/// following `script_text`, `extra` options last.
fn take_up(repo: &TestRepo, script_text: &str, extra: &[&str]) -> std::process::Output {
    let agent = script(repo, script_text);
    start(repo, &agent, &[&["--from", "origin"], extra].concat())
}

/// Refs, HEAD, git's status, and the files on disk.
type Picture = (String, String, String, BTreeMap<String, (u32, Vec<u8>)>);

/// Everything a refused take-up must leave as it was: refs, HEAD, git's
/// status, and every byte of the worktree and of `.git` but the object
/// store (the remote's objects are fetched to be compared).
fn picture(repo: &TestRepo) -> Picture {
    let mut files = disk_snapshot(&repo.root);
    files.retain(|name, _| !name.starts_with(".git/objects"));
    (
        repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
        repo.read(".git/HEAD"),
        repo.git(&["--no-optional-locks", "status", "--porcelain", "-uall"]),
        files,
    )
}

fn story(state: &Value, id: &str) -> Value {
    state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no story {id}"))
}

/// Machine A does story 1 and pushes its record with the checkpoint, then
/// dies (SIGKILL, agent and all) mid-way through story 2.
fn killed_after_story_1(repo: &TestRepo) {
    let agent = script(
        repo,
        &format!(
            "format claude\n[story=1]\nappend .git/ralph/greet/learnings.md the greeting goes in hello.txt\\n\nusage 1000 200 0.25\n{}[story=2]\nwrite half.txt half done\nsleep 30\n",
            finish_story("1")
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(repo, &agent, &["--on-finish", "keep", "--push-each"]);
    agent_at_work(repo, &repo.root, "2", 1, "half.txt");
    run.signal(Signal::SIGKILL);
    run.wait(Duration::from_secs(60));
    kill_agents(&repo.record_dir());
}

#[test]
fn a_run_killed_mid_story_is_taken_up_in_another_clone() {
    let (a, remote) = machine_a();
    killed_after_story_1(&a);
    // The remote holds the branch at story 1's checkpoint and the record.
    let tip = a.rev_parse(&format!("{BRANCH}~0"));
    assert_eq!(
        remote_ref(&remote, &format!("refs/heads/{BRANCH}")).as_deref(),
        Some(tip.as_str())
    );
    assert!(remote_ref(&remote, RECORD).is_some(), "no record pushed");

    let b = TestRepo::clone_of(&remote);
    let done = take_up(&b, &stories_done(&["2", "3"]), &["--on-finish", "keep"]);
    assert_success(&done);
    assert_on_branch(&b, &["3 Docs", "2 Farewell", "1 Greeting"]);
    let state = state(&b);
    // Story 1 was done on A, once, in one attempt: B did not do it again.
    assert_eq!(story(&state, "1")["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(
        recorded_calls(&b)
            .iter()
            .filter(|line| line.contains("story=1"))
            .count(),
        0,
        "story 1 was run again: {:?}",
        recorded_calls(&b)
    );
    // A's spending holds on B.
    let cost = state["totals"]["cost_usd"].as_f64().unwrap_or_default();
    assert!(cost >= 0.25, "the cost spent on A was lost: {cost}");
    // A's learnings reached B's agents.
    assert!(
        saved_prompt(&b, "2", 1).contains("the greeting goes in hello.txt"),
        "{}",
        saved_prompt(&b, "2", 1)
    );
    assert_eq!(b.status_porcelain(), "");
    b.assert_fsck_clean();
}

#[test]
fn finish_push_sends_the_record_and_a_fresh_clone_goes_on_from_it() {
    let (a, remote) = machine_a();
    let agent = script(
        &a,
        &format!(
            "{}[story=2]\npromise FAILED: cannot do it\n",
            story_done("1")
        ),
    );
    assert_exit(&start(&a, &agent, &["--max-retries", "0"]), 3);
    assert_success(&ralph_cmd(&a, &["finish", CHANGE, "--push"]));
    assert_eq!(
        remote_ref(&remote, RECORD),
        Some(a.rev_parse(RECORD)),
        "the record did not travel with the branch"
    );
    // The failed attempt's ref travels too.
    assert!(remote_ref(&remote, "refs/ralph/greet/attempts/2/1").is_some());

    let b = TestRepo::clone_of(&remote);
    let done = take_up(
        &b,
        &stories_done(&["2", "3"]),
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_success(&done);
    assert_on_branch(&b, &["3 Docs", "2 Farewell", "1 Greeting"]);
    let state = state(&b);
    // The attempt A spent on story 2 is counted: B's is attempt 2.
    let attempts = story(&state, "2")["attempts"].as_array().unwrap().clone();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[1]["attempt"], 2, "{attempts:?}");
}

#[test]
fn records_gone_apart_are_refused_naming_both_tips_and_changing_nothing() {
    let (a, remote) = machine_a();
    let stop_at_2 = format!("{}[story=2]\npromise FAILED: not yet\n", story_done("1"));
    assert_exit(
        &start(
            &a,
            &script(&a, &stop_at_2),
            &["--max-retries", "0", "--push-each"],
        ),
        3,
    );
    // B takes the run up and does story 2 its own way, pushing each step.
    let b = TestRepo::clone_of(&remote);
    let b_script = "[story=2]\nwrite story-2.txt B's way\\n\ntick-story\npromise COMPLETE\n[story=3]\npromise FAILED: not yet\n";
    assert_exit(
        &take_up(&b, b_script, &["--max-retries", "1", "--push-each"]),
        3,
    );
    // Meanwhile A goes on alone, its own way: its push of the record is
    // refused, the run goes on all the same.
    let a_script = "[story=2]\nwrite story-2.txt A's way\\n\ntick-story\npromise COMPLETE\n[story=3]\npromise FAILED: not yet\n";
    let alone = start(&a, &script(&a, a_script), &["--max-retries", "1"]);
    assert_exit(&alone, 3);

    let before = picture(&a);
    let refused = take_up(&a, &stories_done(&["3"]), &[]);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let said = stderr(&refused);
    let local = a.rev_parse(RECORD);
    let theirs = remote_ref(&remote, RECORD).expect("B's record");
    assert!(said.contains("gone apart"), "{said}");
    assert!(
        said.contains(&local[..12]),
        "the local tip is not named: {said}"
    );
    assert!(
        said.contains(&theirs[..12]),
        "the remote tip is not named: {said}"
    );
    assert!(said.contains("story 2"), "what differs is not said: {said}");
    assert_unchanged(&a, &before);
}

/// Asserts that `repo` is as `before` pictured it, saying what moved.
fn assert_unchanged(repo: &TestRepo, before: &Picture) {
    let after = picture(repo);
    assert_eq!(after.0, before.0, "a refused take-up moved refs");
    assert_eq!(after.1, before.1, "a refused take-up moved HEAD");
    assert_eq!(after.2, before.2, "a refused take-up changed git status");
    let diff = snapshot_diff(&before.3, &after.3);
    assert!(
        diff.is_empty(),
        "a refused take-up changed:\n{}",
        diff.join("\n")
    );
}

#[test]
fn a_record_of_a_later_layout_is_refused_clearly() {
    let (a, remote) = machine_a();
    let agent = script(
        &a,
        &format!("{}[story=2]\npromise FAILED: no\n", story_done("1")),
    );
    assert_exit(
        &start(&a, &agent, &["--max-retries", "0", "--push-each"]),
        3,
    );
    // A later release's record: the same files, a higher layout.
    let record = remote_ref(&remote, RECORD).expect("a record");
    let git = |args: &[&str]| a.git_at(&remote, args);
    let manifest = git(&["show", &format!("{record}:record.json")]);
    let later = manifest.replace("\"layout\": 1", "\"layout\": 99");
    assert_ne!(later, manifest, "{manifest}");
    let path = a.dir.path().join("later.json");
    std::fs::write(&path, &later).unwrap();
    let blob = git(&["hash-object", "-w", path.to_str().unwrap()]);
    let mut tree = git(&["ls-tree", &record]);
    tree = tree
        .lines()
        .map(|line| match line.split_once('\t') {
            Some((_, "record.json")) => format!("100644 blob {}\trecord.json\n", blob.trim()),
            _ => format!("{line}\n"),
        })
        .collect();
    let mut mktree = a.command("git", &remote);
    mktree.arg("mktree").stdin(std::process::Stdio::piped());
    mktree.stdout(std::process::Stdio::piped());
    let mut child = mktree.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(tree.as_bytes())
        .unwrap();
    let tree_id = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    let commit = git(&[
        "commit-tree",
        tree_id.trim(),
        "-p",
        &record,
        "-m",
        "a later release's record",
    ]);
    git(&["update-ref", RECORD, commit.trim()]);

    let b = TestRepo::clone_of(&remote);
    let before = picture(&b);
    let refused = take_up(&b, &stories_done(&["2", "3"]), &[]);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let said = stderr(&refused);
    assert!(said.contains("layout 99"), "{said}");
    assert!(said.contains("later release"), "{said}");
    assert_unchanged(&b, &before);
}

/// The lease's ref.
const LEASE: &str = "refs/ralph/greet/lease";

/// A lease commit in the bare `remote` held by `holder` until `expires`.
fn plant_lease(env: &TestRepo, remote: &Path, holder: &str, expires: u64) {
    let file = env.dir.path().join("lease.json");
    std::fs::write(
        &file,
        format!("{{\"holder\": \"{holder}\", \"expires\": {expires}}}"),
    )
    .unwrap();
    let git = |args: &[&str]| env.git_at(remote, args).trim().to_string();
    let blob = git(&["hash-object", "-w", file.to_str().unwrap()]);
    let tree_line = format!("100644 blob {blob}\tlease.json\n");
    let list = env.dir.path().join("lease.tree");
    std::fs::write(&list, tree_line).unwrap();
    let output = run(env
        .command("sh", remote)
        .arg("-c")
        .arg(format!("git mktree < '{}'", list.display())));
    let tree = stdout(&output).trim().to_string();
    let commit = git(&["commit-tree", &tree, "-m", "a lease"]);
    git(&["update-ref", LEASE, &commit]);
}

#[test]
fn a_second_clone_is_refused_a_run_another_holds_the_lease_of() {
    let (a, remote) = machine_a();
    let stop_at_2 = format!("{}[story=2]\npromise FAILED: not yet\n", story_done("1"));
    assert_exit(
        &start(
            &a,
            &script(&a, &stop_at_2),
            &["--max-retries", "0", "--push-each"],
        ),
        3,
    );
    // B takes the run up and is at work on story 2 until the test says.
    let b = TestRepo::clone_of(&remote);
    let gate = b.dir.path().join("go-on");
    let b_script = format!(
        "[story=2]\nwrite half.txt half\\n\nwait-for {}\n{}{}",
        gate.display(),
        finish_story("2"),
        story_done("3")
    );
    let _reaper = Reaper(b.record_dir());
    let at_work = Background::start(
        &b,
        &script(&b, &b_script),
        &[
            "--from",
            "origin",
            "--max-retries",
            "1",
            "--on-finish",
            "keep",
        ],
    );
    agent_at_work(&b, &b.root, "2", 1, "half.txt");
    assert!(remote_ref(&remote, LEASE).is_some(), "B holds no lease");

    // C, racing for the same run, is refused and changes nothing.
    let c = TestRepo::clone_of(&remote);
    let before = picture(&c);
    let refused = take_up(&c, &stories_done(&["2", "3"]), &["--max-retries", "1"]);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let said = stderr(&refused);
    assert!(said.contains("is leased to"), "{said}");
    assert!(said.contains("another machine is at work on it"), "{said}");
    assert_unchanged(&c, &before);
    assert!(recorded_calls(&c).is_empty(), "C ran an agent");

    // B ends and gives the lease back.
    std::fs::write(&gate, "").unwrap();
    let ended = at_work.wait(Duration::from_secs(120));
    assert!(ended.status.success(), "{}", ended.stderr);
    assert_eq!(
        remote_ref(&remote, LEASE),
        None,
        "the lease was not given back"
    );

    // A lease left by a machine that died expires: C takes the run over.
    plant_lease(&c, &remote, "a dead runner:/gone/.git", 1);
    let taken = take_up(&c, "", &["--on-finish", "keep"]);
    assert_success(&taken);
    assert!(
        stderr(&taken).contains("took 'greet' up"),
        "{}",
        describe(&taken)
    );
    assert_on_branch(&c, &["3 Docs", "2 Farewell", "1 Greeting"]);
}
