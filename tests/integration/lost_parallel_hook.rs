//! The git directory a `--parallel` run's stories share. First, agents
//! that plant a `post-checkout` hook in the common git directory. Each story's loop notes the git directory before
//! its attempt and puts it back after; with stories at once, one story's
//! note could be taken while another's agent had planted the hook: story
//! 1's loop then removed it, story 3's agent planted it again, and story
//! 3's loop, finding the hook as it had noted it, accepted the attempt and
//! left the hook in `.git/hooks` after the run. Now the run puts the git
//! directory back as it was before its stories went to work, and says so.
//!
//! The order is held by gates: story 2's check waits while story 1's agent
//! plants (no attempt's note is open then but story 1's), story 3 starts
//! when story 2's loop ends, and its agent plants once story 1's loop has
//! removed the hook.

use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(90);

/// The names of the files in `.git/hooks`.
fn hooks(repo: &TestRepo) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.path(".git/hooks"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn a_hook_planted_while_another_story_noted_the_git_directory_is_not_left_after_a_parallel_run() {
    let repo = independent_project();
    let before = hooks(&repo);
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let mark = |name: &str| marks.join(name).display().to_string();
    let hook = repo.path(".git/hooks/post-checkout");
    let plant = format!(
        "write {h} #!/bin/sh\\necho planted\\n\nchmod +x {h}\n",
        h = hook.display()
    );
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwait-for {checking}\n{plant}write {planted} x\n\
             wait-for {one}\n{done1}\
             [story=1]\n{done1}\
             {done2}\
             [story=3]\nwrite {noted} x\nwait-for {three}\n{plant}{done3}",
            checking = mark("checking"),
            planted = mark("planted"),
            one = mark("go-1"),
            noted = mark("noted"),
            three = mark("go-3"),
            done1 = finish_story("1"),
            done2 = story_done("2"),
            done3 = finish_story("3"),
        ),
    );
    // Story 2's check waits, in its worktree and on the merged tree, once.
    let check = format!(
        "if [ -e story-2.txt ]; then touch {c}; while [ ! -e {g} ]; do sleep 0.1; done; fi",
        c = shell_quote(&mark("checking")),
        g = shell_quote(&mark("go-2")),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(
        &repo,
        &agent,
        &["--parallel", "2", "--on-finish", "keep", "--check", &check],
    );
    wait_until("story 1's agent planted its hook", PATIENCE, || {
        marks.join("planted").exists()
    });
    std::fs::write(marks.join("go-2"), "").unwrap();
    // Story 3's attempt noted the git directory with story 1's hook.
    wait_until("story 3's agent is at work", PATIENCE, || {
        marks.join("noted").exists()
    });
    std::fs::write(marks.join("go-1"), "").unwrap();
    wait_until("story 1's loop removed the hook", PATIENCE, || {
        !hook.exists()
    });
    std::fs::write(marks.join("go-3"), "").unwrap();
    let ended = run.wait(PATIENCE);
    assert_eq!(
        ended.status.code(),
        Some(0),
        "{}\n{}",
        ended.stdout,
        ended.stderr
    );

    assert!(
        !hook.exists(),
        "an agent's hook is left in .git/hooks after the run:\n{}",
        ended.stdout
    );
    assert_eq!(
        hooks(&repo),
        before,
        "the hooks directory is not as the user left it"
    );
    // What was put back is said.
    let said: Vec<String> = events(&repo)
        .into_iter()
        .filter(|event| event.to_string().contains("post-checkout"))
        .map(|event| event.to_string())
        .collect();
    assert!(said.len() >= 2, "{said:#?}\n{}", ended.stdout);
    for id in ["1", "2", "3"] {
        assert_eq!(
            show(&repo, BRANCH, &format!("story-{id}.txt")),
            format!("work of story {id}\n")
        );
    }
    repo.assert_fsck_clean();
}

/// In a sparse checkout each story's worktree has a `config.worktree` of
/// its own. Story 3's attempt noted the git directory while story 1's
/// worktree was there; the run retired story 1's worktree meanwhile, and
/// story 3's loop took that for its agent's doing: it said the agent had
/// removed `config.worktree` (core.sparseCheckout) and made the file
/// again, in the administrative directory of a worktree that is gone.
#[test]
fn a_sibling_story_worktree_retired_during_an_attempt_is_not_the_agents_doing() {
    let repo = independent_project();
    repo.git(&["sparse-checkout", "set", "--cone", "openspec", "src"]);
    let marks = repo.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let mark = |name: &str| marks.join(name).display().to_string();
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwait-for {one}\n{done1}{done2}\
             [story=3]\nwrite {noted} x\nwait-for {three}\n{done3}",
            one = mark("go-1"),
            noted = mark("noted"),
            three = mark("go-3"),
            done1 = finish_story("1"),
            done2 = story_done("2"),
            done3 = finish_story("3"),
        ),
    );
    let _reaper = Reaper(repo.record_dir());
    let run = Background::start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    let story_1 = repo.path(".git/worktrees/greet.story-1");
    wait_until("story 3's agent is at work", PATIENCE, || {
        marks.join("noted").exists()
    });
    assert!(story_1.exists(), "story 1's worktree is not there");
    std::fs::write(marks.join("go-1"), "").unwrap();
    wait_until("story 1's worktree is retired", PATIENCE, || {
        !story_1.exists()
    });
    std::fs::write(marks.join("go-3"), "").unwrap();
    let ended = run.wait(PATIENCE);
    assert_eq!(
        ended.status.code(),
        Some(0),
        "{}\n{}",
        ended.stdout,
        ended.stderr
    );
    let changed: Vec<String> = events(&repo)
        .into_iter()
        .filter(|event| event["type"] == "git_dir_changed")
        .map(|event| event.to_string())
        .collect();
    assert!(changed.is_empty(), "{changed:#?}\n{}", ended.stdout);
    assert!(
        !story_1.exists(),
        "story 1's worktree's administrative directory is back"
    );
    for id in ["1", "2", "3"] {
        assert_eq!(
            show(&repo, BRANCH, &format!("story-{id}.txt")),
            format!("work of story {id}\n")
        );
    }
    repo.assert_fsck_clean();
}
