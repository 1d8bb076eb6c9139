//! Agents told not to touch history sometimes do anyway: they commit on the
//! run's branch, or switch to a branch of their own and commit there. The
//! loop puts HEAD back on `ralph/<change>` at the last checkpoint and keeps
//! the agent's commits under `refs/ralph/<change>/strays/`, so the work is
//! judged like any other and nothing is lost — checked with `git log`, the
//! refs and the final tree.

use crate::harness::story_run::*;
use crate::harness::*;

/// The strays refs with the subjects of the commits they keep.
fn strays(repo: &crate::harness::TestRepo) -> Vec<String> {
    refs_under(repo, &format!("{NS}/strays/"))
        .into_iter()
        .map(|(_, id)| {
            repo.git(&["log", "-1", "--format=%s", &id])
                .trim()
                .to_string()
        })
        .collect()
}

#[test]
fn commits_made_by_the_agent_on_the_branch_are_folded_into_the_checkpoint() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite hello.txt hello\ntick-story\ngit add -A\n\
             git commit -q -m 'agent: add hello'\npromise COMPLETE\n{}",
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    // The agent's commit is not on the branch; its work is in the checkpoint.
    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    assert_eq!(show(&repo, "ralph/greet~1", "hello.txt"), "hello");
    assert_eq!(
        strays(&repo),
        ["agent: add hello"],
        "the agent's commit stays reachable"
    );
    let stray = &refs_under(&repo, &format!("{NS}/strays/"))[0].1;
    assert_eq!(
        repo.rev_parse(&format!("{stray}^")),
        repo.rev_parse("ralph/greet~2"),
        "the kept commit sits on the checkpoint the agent started from"
    );
    let shown = stdout(&output);
    assert!(
        shown.contains("brought back onto ralph/greet"),
        "the user is told:\n{shown}"
    );
    assert!(
        of_type(&events(&repo), "warning")
            .iter()
            .any(|w| w["message"].as_str().unwrap_or_default().contains("strays")),
        "the warning is logged"
    );
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn a_branch_switch_by_the_agent_is_undone_and_its_work_kept() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "{}[story=2]\ngit switch -q -c agent-branch\nwrite bye.txt bye\ntick-story\n\
             git add -A\ngit commit -q -m 'agent: add bye on its own branch'\npromise COMPLETE\n",
            story_done("1")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    assert_on_branch(&repo, &["2 Farewell", "1 Greeting"]);
    assert_eq!(show(&repo, "ralph/greet", "bye.txt"), "bye");
    assert_eq!(
        show(&repo, "ralph/greet", "story-1.txt"),
        "work of story 1\n"
    );
    assert_eq!(strays(&repo), ["agent: add bye on its own branch"]);
    let reflog = repo.git(&["reflog", "--format=%gs", "HEAD"]);
    assert!(
        reflog.contains("checkout: moving from agent-branch to ralph/greet"),
        "the way back is in HEAD's reflog:\n{reflog}"
    );
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}

#[test]
fn the_commits_of_a_failed_attempt_stay_reachable_and_off_the_branch() {
    let repo = project(TWO_STORIES);
    let agent = second_try(
        &repo,
        "write hello.txt first try\ngit add -A\ngit commit -q -m 'agent: first try'\npromise FAILED: the greeting is wrong\n",
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    assert_eq!(strays(&repo), ["agent: first try"]);
    let preserved = format!("{NS}/attempts/1/1");
    assert_eq!(show(&repo, &preserved, "hello.txt"), "first try");
    assert!(
        !tree_files(&repo, "ralph/greet").contains(&"hello.txt".to_string()),
        "the failed attempt's committed work was reverted"
    );
    assert_eq!(
        subjects(&repo, "main..ralph/greet"),
        checkpoint_subjects(&["2 Farewell", "1 Greeting"])
    );
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}
