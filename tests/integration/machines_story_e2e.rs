//! One story per machine, through the real binary: a bare repository
//! stands in for the remote and separate clones for the CI jobs. `start
//! <change> --story ID --from origin --push` runs that one story on top of
//! `ralph/<change>` as the remote has it, on its own branch
//! `ralph/<change>.story-<ID>`, and pushes that branch with the story's
//! record; a story whose dependencies are not done there, one another
//! machine holds the lease of, and a record of a later layout are refused
//! without a ref, HEAD, the worktree or a file moving.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

/// `repo`'s `main` pushed to a bare remote beside it, as its `origin`.
pub(crate) fn with_remote(repo: TestRepo) -> (TestRepo, PathBuf) {
    let remote = repo.dir.path().join("remote.git");
    repo.git_at(
        repo.dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    repo.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    (repo, remote)
}

/// Where `name` points in the bare remote, if anywhere.
pub(crate) fn remote_ref(remote: &Path, name: &str) -> Option<String> {
    let output = run(std::process::Command::new("git")
        .args(["rev-parse", "--verify", "-q", name])
        .current_dir(remote));
    output
        .status
        .success()
        .then(|| stdout(&output).trim().to_string())
}

/// Every ref of the bare remote.
fn remote_refs(remote: &Path) -> String {
    stdout(&run(std::process::Command::new("git")
        .args(["for-each-ref", "--format=%(refname) %(objectname)"])
        .current_dir(remote)))
}

/// `git ralph start greet --from origin --story <id> --push` in `repo`,
/// the fake agent following `script_text`, `extra` options last.
fn story_job(repo: &TestRepo, id: &str, script_text: &str, extra: &[&str]) -> std::process::Output {
    let agent = script(repo, script_text);
    start(
        repo,
        &agent,
        &[&["--from", "origin", "--story", id, "--push"], extra].concat(),
    )
}

/// Refs, HEAD, git's status, and the files on disk.
type Picture = (String, String, String, BTreeMap<String, (u32, Vec<u8>)>);

/// Everything a refused command must leave as it was: refs, HEAD, git's
/// status, and every byte of the worktree and of `.git` but the object
/// store (what the remote holds is fetched to be looked at).
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

/// Asserts that `repo` is as `before` pictured it, saying what moved.
fn assert_unchanged(repo: &TestRepo, before: &Picture) {
    let after = picture(repo);
    assert_eq!(after.0, before.0, "a refused command moved refs");
    assert_eq!(after.1, before.1, "a refused command moved HEAD");
    assert_eq!(after.2, before.2, "a refused command changed git status");
    let diff = snapshot_diff(&before.3, &after.3);
    assert!(
        diff.is_empty(),
        "a refused command changed:\n{}",
        diff.join("\n")
    );
}

/// The tracking file as `rev` of the bare remote has it.
fn tasks_at(remote: &Path, rev: &str) -> String {
    stdout(&run(std::process::Command::new("git")
        .args(["show", &format!("{rev}:{TASKS_PATH}")])
        .current_dir(remote)))
}

/// Whether the tracking file `text` ticks every box of story `id`.
fn ticked(text: &str, id: &str) -> bool {
    let boxes: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("- [") && line[6..].starts_with(&format!("{id}.")))
        .collect();
    !boxes.is_empty() && boxes.iter().all(|line| line.starts_with("- [x]"))
}

#[test]
fn three_stories_run_in_three_clones_each_on_its_own_branch_with_its_record() {
    let (_a, remote) = with_remote(independent_project());
    for id in ["1", "2", "3"] {
        let machine = TestRepo::clone_of(&remote);
        let done = story_job(&machine, id, &story_done(id), &[]);
        assert_success(&done);
        // The job ran that story alone.
        let calls = recorded_calls(&machine);
        assert!(
            calls
                .iter()
                .all(|call| call.contains(&format!("story={id}"))),
            "story {id}'s job ran other stories: {calls:?}"
        );
        let branch = format!("refs/heads/{BRANCH}.story-{id}");
        let tip = remote_ref(&remote, &branch)
            .unwrap_or_else(|| panic!("{branch} was not pushed: {}", remote_refs(&remote)));
        assert_eq!(tip, machine.rev_parse(&branch));
        // The story's work is a checkpoint of its own branch, on main.
        let tasks = tasks_at(&remote, &tip);
        assert!(ticked(&tasks, id), "story {id} not ticked:\n{tasks}");
        for other in ["1", "2", "3"].iter().filter(|other| **other != id) {
            assert!(!ticked(&tasks, other), "story {other} ticked:\n{tasks}");
        }
        let files = tree_files(&machine, &tip);
        assert!(files.contains(&format!("story-{id}.txt")), "{files:?}");
        // Its record went with it, and says the story is done.
        let record = format!("refs/ralph/greet.story-{id}/record");
        let recorded = remote_ref(&remote, &record)
            .unwrap_or_else(|| panic!("{record} was not pushed: {}", remote_refs(&remote)));
        let state: serde_json::Value =
            serde_json::from_str(&machine.git(&["show", &format!("{recorded}:state.json")]))
                .unwrap();
        let story = state["stories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|story| story["id"] == id)
            .cloned()
            .unwrap();
        assert_eq!(story["done"], true, "{story}");
        // The lease was given back, and nothing of ralph/greet moved.
        assert_eq!(
            remote_ref(&remote, &format!("refs/ralph/greet.story-{id}/lease")),
            None
        );
        assert_eq!(remote_ref(&remote, &format!("refs/heads/{BRANCH}")), None);
        machine.assert_fsck_clean();
    }
}

#[test]
fn a_story_whose_dependency_is_not_done_is_refused_changing_nothing() {
    // A checklist's stories build on the ones before them.
    let (_a, remote) = with_remote(project(THREE_STORIES));
    let b = TestRepo::clone_of(&remote);
    let before = picture(&b);
    let refused = story_job(&b, "3", &story_done("3"), &[]);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let said = stderr(&refused);
    assert!(said.contains("story 3"), "{said}");
    assert!(
        said.contains("1") && said.contains("2") && said.contains("not done"),
        "the missing stories are not named: {said}"
    );
    assert_unchanged(&b, &before);
    assert!(recorded_calls(&b).is_empty(), "an agent ran");
    assert_eq!(remote_ref(&remote, "refs/ralph/greet.story-3/lease"), None);

    // Once story 1 and 2 are done on ralph/greet, story 3 runs.
    let c = TestRepo::clone_of(&remote);
    let agent = script(
        &c,
        &format!(
            "{}[story=3]\npromise FAILED: not here\n",
            stories_done(&["1", "2"])
        ),
    );
    assert_exit(&start(&c, &agent, &["--max-retries", "0"]), 3);
    assert_success(&ralph_cmd(&c, &["finish", CHANGE, "--push"]));
    let done = story_job(&b, "3", &story_done("3"), &[]);
    assert_success(&done);
    let tip = remote_ref(&remote, &format!("refs/heads/{BRANCH}.story-3")).expect("pushed");
    // On top of ralph/greet as the remote has it.
    assert_eq!(
        b.git(&[
            "rev-list",
            "--count",
            &format!("{}..{tip}", c.rev_parse(BRANCH))
        ])
        .trim(),
        "2",
        "not the initial state and story 3's checkpoint on top of ralph/greet"
    );
}

#[test]
fn two_clones_racing_for_the_same_story_one_is_refused() {
    let (_a, remote) = with_remote(independent_project());
    let b = TestRepo::clone_of(&remote);
    let gate = b.dir.path().join("go-on");
    let b_script = format!(
        "[story=2]\nwrite half.txt half\\n\nwait-for {}\n{}",
        gate.display(),
        finish_story("2"),
    );
    let _reaper = Reaper(b.record_dir());
    let agent = script(&b, &b_script);
    let at_work = Background::start(&b, &agent, &["--from", "origin", "--story", "2", "--push"]);
    agent_at_work(&b, &b.root, "2", 1, "half.txt");
    assert!(
        remote_ref(&remote, "refs/ralph/greet.story-2/lease").is_some(),
        "B holds no lease: {}",
        remote_refs(&remote)
    );

    // C, racing for story 2, is refused and changes nothing.
    let c = TestRepo::clone_of(&remote);
    let before = picture(&c);
    let refused = story_job(&c, "2", &story_done("2"), &[]);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let said = stderr(&refused);
    assert!(said.contains("is leased to"), "{said}");
    assert!(
        said.contains(b.root.to_str().unwrap()),
        "the holder is not named: {said}"
    );
    assert!(said.contains("minute"), "the expiry is not said: {said}");
    assert_unchanged(&c, &before);
    assert!(recorded_calls(&c).is_empty(), "C ran an agent");

    // D, on another story, runs meanwhile.
    let d = TestRepo::clone_of(&remote);
    assert_success(&story_job(&d, "3", &story_done("3"), &[]));
    assert!(remote_ref(&remote, &format!("refs/heads/{BRANCH}.story-3")).is_some());

    std::fs::write(&gate, "").unwrap();
    let ended = at_work.wait(Duration::from_secs(120));
    assert!(ended.status.success(), "{}", ended.stderr);
    assert!(remote_ref(&remote, &format!("refs/heads/{BRANCH}.story-2")).is_some());
    assert_eq!(remote_ref(&remote, "refs/ralph/greet.story-2/lease"), None);
}

#[test]
fn a_story_record_of_a_later_layout_is_refused_clearly() {
    let (_a, remote) = with_remote(independent_project());
    let b = TestRepo::clone_of(&remote);
    // Story 2 fails its one attempt: its record is pushed all the same.
    let failed = story_job(
        &b,
        "2",
        "[story=2]\npromise FAILED: no\n",
        &["--max-retries", "0"],
    );
    assert_exit(&failed, 3);
    let name = "refs/ralph/greet.story-2/record";
    let record = remote_ref(&remote, name).expect("the story's record was not pushed");
    // A later release's record: the same files, a higher layout.
    let git = |args: &[&str]| b.git_at(&remote, args);
    let manifest = git(&["show", &format!("{record}:record.json")]);
    let layout: u64 = serde_json::from_str::<serde_json::Value>(&manifest).unwrap()["layout"]
        .as_u64()
        .unwrap();
    let later = manifest.replace(&format!("\"layout\": {layout}"), "\"layout\": 99");
    assert_ne!(later, manifest, "{manifest}");
    let path = b.dir.path().join("later.json");
    std::fs::write(&path, &later).unwrap();
    let blob = git(&["hash-object", "-w", path.to_str().unwrap()]);
    let tree: String = git(&["ls-tree", &record])
        .lines()
        .map(|line| match line.split_once('\t') {
            Some((_, "record.json")) => format!("100644 blob {}\trecord.json\n", blob.trim()),
            _ => format!("{line}\n"),
        })
        .collect();
    let list = b.dir.path().join("later.tree");
    std::fs::write(&list, tree).unwrap();
    let made = run(b
        .command("sh", &remote)
        .arg("-c")
        .arg(format!("git mktree < '{}'", list.display())));
    let commit = git(&[
        "commit-tree",
        stdout(&made).trim(),
        "-p",
        &record,
        "-m",
        "a later release's record",
    ]);
    git(&["update-ref", name, commit.trim()]);

    let c = TestRepo::clone_of(&remote);
    let before = picture(&c);
    let refused = story_job(&c, "2", &story_done("2"), &[]);
    assert!(!refused.status.success(), "{}", describe(&refused));
    let said = stderr(&refused);
    assert!(said.contains("layout 99"), "{said}");
    assert!(said.contains("later release"), "{said}");
    assert_unchanged(&c, &before);
    assert!(recorded_calls(&c).is_empty(), "C ran an agent");
}

/// `start greet --dry-run --json` in `repo`, read.
fn dry_run(repo: &TestRepo, extra: &[&str]) -> serde_json::Value {
    let output = ralph_cmd(
        repo,
        &[&["start", CHANGE, "--dry-run", "--json"], extra].concat(),
    );
    assert_success(&output);
    serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|err| panic!("{err}: {}", describe(&output)))
}

#[test]
fn the_dry_run_gives_a_ci_matrix_each_open_story_whether_it_may_run_and_the_waves() {
    // A checklist's stories wait for the ones before them: one per wave.
    let in_order = project(THREE_STORIES);
    let plan = dry_run(&in_order, &[]);
    let matrix = &plan["matrix"];
    assert_eq!(
        matrix["waves"],
        serde_json::json!([["1"], ["2"], ["3"]]),
        "{plan}"
    );
    let stories = matrix["stories"].as_array().expect("the matrix's stories");
    let ids: Vec<&str> = stories
        .iter()
        .map(|s| s["story"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "3"]);
    assert_eq!(stories[0]["ready"], true);
    assert_eq!(stories[1]["ready"], false);
    assert_eq!(stories[1]["waits_for"], serde_json::json!(["1"]));
    assert_eq!(stories[2]["wave"], 3);
    // The parallel schedule is still there with --parallel, as it was.
    let parallel = dry_run(&in_order, &["--parallel", "2"]);
    assert_eq!(parallel["schedule"]["at_once"], serde_json::json!(["1"]));
    assert_eq!(parallel["matrix"], plan["matrix"]);

    // Independent stories all run at once; a story done is in no wave.
    let independent = independent_project();
    let tasks = independent
        .read(TASKS_PATH)
        .replace("- [ ] 2.1", "- [x] 2.1");
    independent.write(TASKS_PATH, &tasks);
    let matrix = dry_run(&independent, &[])["matrix"].clone();
    assert_eq!(matrix["waves"], serde_json::json!([["1", "3"]]), "{matrix}");
    assert!(
        matrix["stories"]
            .as_array()
            .unwrap()
            .iter()
            .all(|story| story["ready"] == true && story["wave"] == 1),
        "{matrix}"
    );
}

#[test]
fn the_next_job_of_a_story_goes_on_from_the_record_the_last_one_pushed() {
    let (_a, remote) = with_remote(independent_project());
    // The first job of story 2 fails its attempt and pushes what it has.
    let b = TestRepo::clone_of(&remote);
    let failed = story_job(
        &b,
        "2",
        "[story=2]\nappend .git/ralph/greet.story-2/learnings.md bye.txt wants a newline\\n\npromise FAILED: out of time\n",
        &["--max-retries", "0"],
    );
    assert_exit(&failed, 3);
    // The next job, in a fresh clone, takes the story's run up.
    let c = TestRepo::clone_of(&remote);
    let done = story_job(&c, "2", &story_done("2"), &["--max-retries", "1"]);
    assert_success(&done);
    assert!(
        stderr(&done).contains("took 'greet.story-2' up"),
        "{}",
        describe(&done)
    );
    let state = c.run_state("greet.story-2");
    let attempts = attempt_records(&state, "2");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[1]["attempt"], 2, "{attempts:?}");
    assert_eq!(attempts[1]["outcome"], "complete", "{attempts:?}");
    let tip = remote_ref(&remote, &format!("refs/heads/{BRANCH}.story-2")).expect("pushed");
    assert_eq!(tip, c.rev_parse(&format!("{BRANCH}.story-2")));
    assert!(ticked(&tasks_at(&remote, &tip), "2"));
    assert_eq!(remote_ref(&remote, "refs/ralph/greet.story-2/lease"), None);
}

#[test]
fn three_stories_done_in_three_clones_are_merged_in_a_fourth_and_the_conflicting_one_sent_back() {
    let (_a, remote) = with_remote(independent_project());
    // Story 3 writes story 1's file its own way: its work conflicts.
    let scripts = [
        ("1", story_done("1")),
        ("2", story_done("2")),
        (
            "3",
            format!(
                "[story=3]\nwrite story-1.txt story 3's own idea\\n\n{}",
                finish_story("3")
            ),
        ),
    ];
    for (id, text) in &scripts {
        let machine = TestRepo::clone_of(&remote);
        assert_success(&story_job(&machine, id, text, &[]));
    }
    let story_3_tip = remote_ref(&remote, &format!("refs/heads/{BRANCH}.story-3")).unwrap();

    let d = TestRepo::clone_of(&remote);
    let merged = ralph_cmd(
        &d,
        &[
            "merge",
            CHANGE,
            "--from",
            "origin",
            "--push",
            "--agent-command",
            "true",
        ],
    );
    assert_exit(&merged, 3);
    let said = stderr(&merged);
    assert!(said.contains("story 1 merged"), "{said}");
    assert!(said.contains("story 2 merged"), "{said}");
    assert!(said.contains("story 3 sent back"), "{said}");
    assert!(
        said.contains("the work of story 1"),
        "the clash is not named: {said}"
    );
    assert!(
        said.contains("story-1.txt"),
        "the path is not named: {said}"
    );
    assert!(
        said.contains("--story 3"),
        "nothing says to run it again: {said}"
    );

    // ralph/greet holds stories 1 and 2, as the remote now has it.
    let tip = remote_ref(&remote, &format!("refs/heads/{BRANCH}")).expect("ralph/greet pushed");
    assert_eq!(tip, d.rev_parse(BRANCH));
    let tasks = tasks_at(&remote, &tip);
    assert!(ticked(&tasks, "1") && ticked(&tasks, "2"), "{tasks}");
    assert!(!ticked(&tasks, "3"), "{tasks}");
    assert_eq!(show(&d, &tip, "story-1.txt"), "work of story 1\n");
    let files = tree_files(&d, &tip);
    assert!(files.contains(&"story-2.txt".to_string()), "{files:?}");
    assert!(!files.contains(&"story-3.txt".to_string()), "{files:?}");

    // The record agrees with the branch: 1 and 2 done, 3 sent back with
    // its work kept under a ref.
    let state = state(&d);
    let done = |id: &str| {
        state["stories"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["done"] == true)
            .unwrap_or(false)
    };
    assert!(done("1") && done("2") && !done("3"), "{state}");
    let attempts = attempt_records(&state, "3");
    let last = attempts.last().expect("story 3's attempts");
    assert!(
        last["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("story 1"),
        "{last}"
    );
    let kept = last["preserved"].as_str().expect("story 3's work is kept");
    assert_eq!(d.rev_parse(kept), story_3_tip, "story 3's work is lost");
    assert_eq!(
        remote_ref(&remote, "refs/ralph/greet/record"),
        Some(d.rev_parse("refs/ralph/greet/record"))
    );
    d.assert_fsck_clean();
}
