//! What the pages of `git ralph serve` show of each attempt beyond its
//! outcome, judged against what `status` and `show` print from the same
//! files: tokens and cost, a failed check's output, ticks outside the
//! story, changes in `.git` undone, a reviewer's findings, and every story
//! at work in a parallel run.

use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::web::*;
use crate::harness::*;
use crate::serve::{shown, waiting_script};

const ONE_STORY: &str = "# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create story-1.txt\n";

#[test]
fn issue_40_the_pages_show_tokens_cost_and_the_output_of_a_failed_check() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        "format claude\n\
         [story=1 attempt=1]\nwrite notes.txt a draft\\n\ntick-story\nusage 1200 340 0.25\npromise COMPLETE\n\
         [story=1 attempt=2]\nwrite story-1.txt hello\\n\ntick-story\nusage 800 60 0.5\npromise COMPLETE\n\
         [story=2]\nwrite story-2.txt bye\\n\ntick-story\npromise COMPLETE\n",
    );
    let check = "test -e story-1.txt || { echo no greeting in story-1.txt yet; exit 1; }";
    let output = start(&repo, &agent, &["--on-finish", "keep", "--check", check]);
    assert_exit(&output, 0);
    let served = Served::start(&repo, &[]);

    let run = shown(&served.get("/runs/greet").body);
    for figure in [
        "#1 rejected",
        "1540 tokens · $0.25",
        "860 tokens · $0.50",
        "3 attempts · 2000 tokens in, 400 out · $0.75",
    ] {
        assert!(run.contains(figure), "{figure:?} missing from:\n{run}");
    }
    let totals = &status_json(&repo)["totals"];
    assert!(
        (totals["cost_usd"].as_f64().expect("a cost") - 0.75).abs() < 1e-9,
        "status says otherwise: {totals}"
    );

    let failed = shown(&served.get("/runs/greet/attempts/1/1").body);
    let show = stdout(&ralph_cmd(&repo, &["show", "1/1"]));
    for said in ["no greeting in story-1.txt yet", "1200 in, 340 out"] {
        assert!(failed.contains(said), "{said:?} missing from:\n{failed}");
    }
    assert!(
        failed.contains(&format!("✗ {check}")),
        "the failed check: {failed}"
    );
    assert!(
        show.contains("no greeting in story-1.txt yet"),
        "show no longer prints the check's output:\n{show}"
    );
}

#[test]
fn issue_40_the_pages_show_what_a_reviewer_sent_back() {
    let repo = project(ONE_STORY);
    let coder = script(
        &repo,
        "[story=1]\nwrite story-1.txt work of story 1\\n\ntick-story\npromise IMPLEMENTATION_COMPLETE\n",
    );
    let reviewer = format!(
        "FAKE_AGENT_SCRIPT={} {}",
        shell_quote(
            &script(
                &repo,
                "[call=1]\npromise FAILED: story-1.txt says nothing about greetings\n\
                 [call=2]\npromise REVIEW_PASSED\n",
            )
            .to_string_lossy()
        ),
        shell_quote(fake_agent_path())
    );
    let output = start(
        &repo,
        &coder,
        &[
            "--on-finish",
            "keep",
            "--roles",
            "coder,reviewer",
            "--role-agent-command",
            &format!("reviewer={reviewer}"),
        ],
    );
    assert_exit(&output, 0);
    let served = Served::start(&repo, &[]);

    let run = shown(&served.get("/runs/greet").body);
    for said in [
        "#2 reviewer failed",
        "the reviewer sent story 1 back to the coder: story-1.txt says nothing about greetings",
    ] {
        assert!(run.contains(said), "{said:?} missing from:\n{run}");
    }
    let review = shown(&served.get("/runs/greet/attempts/1/2").body);
    for said in [
        "Story 1 · attempt 2 · the reviewer",
        "The reviewer sent the story back",
        "story-1.txt says nothing about greetings",
    ] {
        assert!(review.contains(said), "{said:?} missing from:\n{review}");
    }
}

#[test]
fn issue_40_the_run_page_names_what_each_attempt_did_beyond_its_story() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite story-1.txt one\\n\nwrite .git/hooks/pre-commit #!/bin/sh\\n\n\
             tick-story 1\ntick-story 2\npromise COMPLETE\n{}",
            story_done("2")
        ),
    );
    // How the run ends does not matter here: what it recorded does.
    start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    let served = Served::start(&repo, &[]);
    let page = shown(&served.get("/runs/greet").body);
    let status = stdout(&ralph_cmd(&repo, &["status"]));
    for remark in [
        "ticked outside its story: 2, put back",
        "undone in the git directory: .git/hooks/pre-commit",
    ] {
        assert!(
            status.contains(remark),
            "status no longer says {remark:?}:\n{status}"
        );
        assert!(page.contains(remark), "{remark:?} missing from:\n{page}");
    }
    assert!(
        page.contains("the agent changed .git/hooks/pre-commit"),
        "the notice: {page}"
    );
}

#[test]
fn issue_40_the_page_of_a_parallel_run_shows_every_story_at_work() {
    let repo = project(TWO_STORIES);
    repo.write(
        "openspec/changes/greet/ralph.toml",
        "[stories]\nindependent = true\n",
    );
    repo.commit_all("The stories of greet are independent");
    let agent = waiting_script(&repo);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep", "--parallel", "2"]);
    let served = Served::start(&repo, &[]);
    wait_until("both stories at work", Duration::from_secs(60), || {
        let page = shown(&served.get("/runs/greet").body);
        page.contains("story 1 · attempt 1") && page.contains("story 2 · attempt 1")
    });
    // A story at work in its own worktree: its attempt, output and live diff.
    wait_until("story 2's page", Duration::from_secs(60), || {
        let page = shown(&served.get("/runs/greet/attempts/2/1").body);
        page.contains("working on story 2") && page.contains("Story 2 · attempt 1")
    });
    wait_until("story 2's live diff", Duration::from_secs(60), || {
        shown(&served.get("/runs/greet/attempts/2/1/diff").body).contains("+words of story 2")
    });
    release(&go_file(&repo, "go-1"));
    release(&go_file(&repo, "go-2"));
    assert!(run.wait(Duration::from_secs(90)).status.success());
    assert_eq!(status_json(&repo)["reason"], "completed");
}
