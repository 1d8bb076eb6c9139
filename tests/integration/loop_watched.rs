//! A run with the worktree watched, through the real binary: what it
//! commits, preserves and reverts is exactly what the same run commits,
//! preserves and reverts with `--full-scan`, which looks at every file as
//! git does.

use crate::harness::story_run::*;
use crate::harness::*;

/// Story 1 fails once (its work preserved and reverted), then passes;
/// stories 2 and 3 write, delete, empty and fill directories, and change a
/// nested `.gitignore`.
const SCRIPT: &str = "\
[story=1 attempt=1]
write src/draft.txt first try
mkdir empty/dir
rm README.md
write notes/x.log ignored
promise FAILED: not yet
[story=1 attempt=2]
write story-1.txt work of story 1
write nested/.gitignore y\\n
write nested/y kept out
tick-story
promise COMPLETE
[story=2]
write nested/.gitignore \\n
symlink story-1.txt link
chmod +x story-1.txt
write story-2.txt work of story 2
tick-story
promise COMPLETE
[story=3]
rm nested/y
rm nested/.gitignore
write story-3.txt work of story 3
tick-story
promise COMPLETE
";

/// What a run left, in terms that do not depend on when it ran.
fn outcome(repo: &TestRepo) -> Vec<String> {
    let mut trees: Vec<String> = [
        "ralph/greet",
        "ralph/greet~1",
        "ralph/greet~2",
        "ralph/greet~3",
    ]
    .iter()
    .map(|rev| {
        repo.git(&["rev-parse", &format!("{rev}^{{tree}}")])
            .trim()
            .to_owned()
    })
    .collect();
    trees.push(
        repo.git(&["rev-parse", &format!("{NS}/attempts/1/1^{{tree}}")])
            .trim()
            .to_owned(),
    );
    trees.push(repo.status_porcelain());
    trees
}

/// The script of a three-story run whose story 2's agent first does
/// `lines` (script lines); every story is done at its first attempt.
fn story_two_does(repo: &TestRepo, lines: &str) -> std::path::PathBuf {
    script(
        repo,
        &format!(
            "{}[story=2]\n{lines}{}{}",
            story_done("1"),
            finish_story("2"),
            story_done("3")
        ),
    )
}

/// How the worktree is read after each attempt of a run whose story 1
/// succeeds at its second try: every time watched, the first attempt too
/// (the watch began before the initial state was read).
fn all_watched() -> [(&'static str, u32, String); 4] {
    [
        ("1", 1, "watched".to_owned()),
        ("1", 2, "watched".to_owned()),
        ("2", 1, "watched".to_owned()),
        ("3", 1, "watched".to_owned()),
    ]
}
#[test]
fn issue_24_a_watched_run_leaves_what_a_full_scan_run_leaves() {
    let watched = project(THREE_STORIES);
    let agent = script(&watched, SCRIPT);
    let output = start(&watched, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(
        watched.path(".git/ralph/cookies").is_dir(),
        "the run did not watch the worktree"
    );

    let full = project(THREE_STORIES);
    let agent = script(&full, SCRIPT);
    let output = start(&full, &agent, &["--on-finish", "keep", "--full-scan"]);
    assert_exit(&output, 0);
    assert!(
        !full.path(".git/ralph/cookies").exists(),
        "--full-scan must not watch the worktree"
    );

    let listing = |repo: &TestRepo, rev: &str| repo.git(&["ls-tree", "-r", rev]);
    assert_eq!(
        outcome(&watched),
        outcome(&full),
        "watched:\n{}\nfull:\n{}",
        listing(&watched, "ralph/greet~2"),
        listing(&full, "ralph/greet~2")
    );
    // Story 1 ignored nested/y; story 2 emptied the rule without touching
    // the file, which its checkpoint must then hold.
    let y = "nested/y".to_owned();
    assert!(!tree_files(&watched, "ralph/greet~2").contains(&y));
    assert!(tree_files(&watched, "ralph/greet~1").contains(&y));
    assert!(!watched.path("src/draft.txt").exists());
    assert!(!watched.path("empty").exists(), "the revert left empty/");
    assert_eq!(watched.status_porcelain(), "");
    watched.assert_fsck_clean();

    // Each attempt says how the worktree was read after it: all watched,
    // the first one too.
    assert_eq!(scans(&watched), all_watched());
    assert!(scans(&full).iter().all(|(_, _, scan)| scan == "none"));
}

#[test]
fn issue_24_full_scan_can_be_set_in_git_config() {
    let repo = project(THREE_STORIES);
    repo.git(&["config", "ralph.fullScan", "true"]);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(!repo.path(".git/ralph/cookies").exists());
}

/// How each attempt's worktree was read, from `state.json`: `watched`,
/// `full: <why>`, or `none` when the worktree was not watched at all.
fn scans(repo: &TestRepo) -> Vec<(&'static str, u32, String)> {
    let state = state(repo);
    let mut out = Vec::new();
    for story in state["stories"].as_array().expect("stories") {
        let id: &'static str = match story["id"].as_str() {
            Some("1") => "1",
            Some("2") => "2",
            Some("3") => "3",
            other => panic!("unexpected story {other:?}"),
        };
        for attempt in story["attempts"].as_array().expect("attempts") {
            let scan = &attempt["scan"];
            let text = match scan["scan"].as_str() {
                None => "none".to_owned(),
                Some("watched") => "watched".to_owned(),
                Some("full") => format!("full: {}", scan["why"].as_str().unwrap_or_default()),
                Some(other) => panic!("unknown scan {other}"),
            };
            out.push((id, attempt["attempt"].as_u64().unwrap() as u32, text));
        }
    }
    out
}

/// The checkpoints of a three-story run are git's, whatever the scans.
fn assert_checkpoints_are_gits(repo: &TestRepo) {
    for (rev, file) in [
        ("ralph/greet~2", "story-1.txt"),
        ("ralph/greet~1", "story-2.txt"),
        ("ralph/greet", "story-3.txt"),
    ] {
        assert!(tree_files(repo, rev).contains(&file.to_owned()), "{rev}");
    }
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn issue_24_a_watch_that_cannot_start_means_full_scans_with_a_warning() {
    let repo = project(THREE_STORIES);
    // Where the watch's cookies go, a file: the watch cannot begin.
    std::fs::create_dir_all(repo.path(".git/ralph")).unwrap();
    std::fs::write(repo.path(".git/ralph/cookies"), "in the way").unwrap();
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let err = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(
        err.matches("could not watch the worktree").count(),
        1,
        "told once, not at every attempt:\n{err}"
    );
    assert!(
        err.contains("every checkpoint looks at every file"),
        "{err}"
    );
    assert!(scans(&repo).iter().all(|(_, _, scan)| scan == "none"));
    assert_checkpoints_are_gits(&repo);
}

#[test]
fn issue_24_a_watch_that_fails_mid_run_means_a_full_scan() {
    let repo = project(THREE_STORIES);
    // Story 2's agent takes away the directory the cookies are written to:
    // no cookie can come back, so the watch cannot vouch for anything.
    let agent = story_two_does(&repo, "rm .git/ralph/cookies\n");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let scans = scans(&repo);
    assert_eq!(scans[0].2, "watched");
    for (story, _, scan) in &scans[1..] {
        assert!(
            scan.starts_with("full: the watch failed"),
            "story {story}: {scan}"
        );
    }
    assert_checkpoints_are_gits(&repo);
}

#[test]
fn issue_24_more_events_than_the_watch_can_hold_mean_a_full_scan() {
    let repo = project(THREE_STORIES);
    // Story 2's agent makes and removes more files than the kernel's queue
    // of events holds (16,384 by default), where the watch sees them.
    let churn: String = (0..20_000)
        .map(|n| format!("write churn-{n} x\n"))
        .chain((0..20_000).map(|n| format!("rm churn-{n}\n")))
        .collect();
    let agent = story_two_does(&repo, &churn);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let scans = scans(&repo);
    let story_2 = &scans[1];
    assert_eq!(story_2.0, "2");
    assert!(
        story_2.2.starts_with("full: the kernel dropped events")
            || story_2.2.starts_with("full: more than"),
        "{scans:?}"
    );
    assert_eq!(scans[2], ("3", 1, "watched".to_owned()), "{scans:?}");
    assert!(!repo.path("churn-0").exists());
    assert_checkpoints_are_gits(&repo);
}

/// What happens in an ignored directory is not the run's business: a
/// build deleting thousands of ignored files raises no event, and the
/// next checkpoint is still watched.
#[test]
fn issue_39_churn_in_an_ignored_directory_is_not_watched() {
    let repo = project(THREE_STORIES);
    repo.write(".gitignore", "scratch/\n");
    repo.git(&["add", ".gitignore"]);
    repo.git(&["commit", "-q", "-m", "ignore scratch"]);
    for dir in 0..20 {
        let dir = repo.path(format!("scratch/d{dir}"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in 0..1000 {
            std::fs::write(dir.join(format!("f{file}")), "").unwrap();
        }
    }
    let agent = story_two_does(
        &repo,
        "rm scratch\nmkdir scratch/d0\nwrite scratch/d0/f0 x\n",
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(
        scans(&repo).iter().all(|(_, _, scan)| scan == "watched"),
        "{:?}",
        scans(&repo)
    );
    assert!(!repo.path("scratch/d1").exists());
    assert_checkpoints_are_gits(&repo);
}

/// A run stopped and started again has had no watch while it was
/// stopped: it reads every file once, before its first attempt, whatever
/// the earlier process saw, and its attempts are watched from there.
#[test]
fn issue_24_a_resumed_run_reads_the_whole_worktree_first() {
    let repo = project(THREE_STORIES);
    let agent = script(&repo, &stories_done(&["1", "2", "3"]));
    let output = start(&repo, &agent, &["--max-iterations", "1"]);
    assert_exit(&output, 4);
    // Done while nothing watched: the next checkpoint must hold it.
    repo.write("story-1.txt", "edited while stopped\n");
    let output = run(crate::harness::ralph_with_fake(&repo, &agent).args([
        "start",
        CHANGE,
        "--max-iterations",
        "10",
    ]));
    assert_exit(&output, 0);
    assert_eq!(
        scans(&repo),
        [
            ("1", 1, "watched".to_owned()),
            ("2", 1, "watched".to_owned()),
            ("3", 1, "watched".to_owned()),
        ]
    );
    assert_eq!(
        repo.git(&["show", "ralph/greet:story-1.txt"]),
        "edited while stopped\n"
    );
    assert_checkpoints_are_gits(&repo);
}

/// A run in a worktree of its own watches that worktree; its cookies go
/// to the run's state, outside it.
#[test]
fn issue_24_a_run_in_its_own_worktree_is_watched_there() {
    let trees = |repo: &TestRepo| -> Vec<String> {
        [
            "ralph/greet",
            "ralph/greet~1",
            "ralph/greet~2",
            "ralph/greet~3",
        ]
        .iter()
        .map(|rev| repo.git(&["rev-parse", &format!("{rev}^{{tree}}")]))
        .collect()
    };
    let watched = project(THREE_STORIES);
    let agent = script(&watched, SCRIPT);
    let output = start(&watched, &agent, &["--on-finish", "keep", "--worktree"]);
    assert_exit(&output, 0);
    let full = project(THREE_STORIES);
    let agent = script(&full, SCRIPT);
    let output = start(
        &full,
        &agent,
        &["--on-finish", "keep", "--worktree", "--full-scan"],
    );
    assert_exit(&output, 0);
    assert_eq!(trees(&watched), trees(&full));
    assert_eq!(scans(&watched), all_watched());
    assert_eq!(
        watched.status_porcelain(),
        "",
        "the user's side is untouched"
    );
    watched.assert_fsck_clean();
}
