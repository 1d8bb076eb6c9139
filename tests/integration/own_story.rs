//! Issue 20, end to end: a story is done only when its own attempt proved
//! it. Ticks an agent makes in other stories do not count for them, and a
//! task list cannot be shortened or rewritten by the agent working on it.

use crate::harness::story_run::*;
use crate::harness::*;

/// Story 1's agent does story 1, then "tidies up" the list: it ticks every
/// box of stories 2 and 3 as well. Stories 2 and 3 are really done only by
/// their own attempts.
fn tidy_up_then_real() -> String {
    format!(
        "[story=1]\nwrite story-1.txt work of story 1\\n\ntick-story 1\ntick-story 2\ntick-story 3\npromise COMPLETE\n{}{}",
        story_done("2"),
        story_done("3")
    )
}

#[test]
fn issue_20_ticks_in_other_stories_do_not_count_for_them() {
    let repo = project(THREE_STORIES);
    let agent = script(&repo, &tidy_up_then_real());
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    // Every story got an agent of its own.
    let runs = agent_runs(&repo);
    let stories: Vec<&str> = runs.iter().map(|(story, _)| story.as_str()).collect();
    assert_eq!(stories, ["1", "2", "3"], "{}", describe(&output));
    let tip = repo.rev_parse(BRANCH);
    for id in ["1", "2", "3"] {
        assert!(
            tree_files(&repo, &tip).contains(&format!("story-{id}.txt")),
            "story {id}'s work exists"
        );
    }
    // Story 1's checkpoint holds story 1's ticks only: the others were put
    // back, so no commit claims work that did not exist yet.
    let first = subjects(&repo, &format!("main..{BRANCH}"))
        .iter()
        .position(|s| s.starts_with("ralph(greet): story 1 "))
        .expect("a checkpoint of story 1");
    let story1 = format!("{BRANCH}~{first}");
    let tasks = show(&repo, &story1, TASKS_PATH);
    assert!(tasks.contains("- [x] 1.1 Create hello.txt"), "{tasks}");
    assert!(tasks.contains("- [ ] 2.1 Create bye.txt"), "{tasks}");
    assert!(tasks.contains("- [ ] 3.1 Mention"), "{tasks}");

    // Said in the events, the console, status and log.
    let events = events(&repo);
    let outside = of_type(&events, "ticks_outside_story");
    assert_eq!(outside.len(), 1, "{outside:?}");
    assert_eq!(outside[0]["story_id"], "1");
    let ticked: Vec<&str> = outside[0]["stories"]
        .as_array()
        .expect("the stories ticked")
        .iter()
        .map(|s| s["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ticked, ["2", "3"]);
    let said = "ticked boxes of other stories (2, 3); they are unticked again";
    assert!(stdout(&output).contains(said), "{}", stdout(&output));
    // And the final summary, after the last story.
    let summary = stdout(&output)
        .split("all 3 stories done")
        .nth(1)
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(
        summary.contains("beyond its story: story 1 attempt 1 ticked story 2, 3 (put back)"),
        "{}",
        stdout(&output)
    );
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(
        status.contains("ticked outside its story: 2, 3"),
        "{status}"
    );
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(log.contains("ticked outside its story: 2, 3"), "{log}");
    repo.assert_fsck_clean();
}

#[test]
fn issue_20_ticks_in_other_prd_stories_do_not_count_for_them() {
    let prd = r#"{
  "project": "greet",
  "userStories": [
    {"id": "US-1", "title": "Greeting", "priority": 1, "passes": false},
    {"id": "US-2", "title": "Farewell", "priority": 2, "passes": false}
  ]
}
"#;
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let agent = script(
        &repo,
        "[story=US-1]\nwrite one.txt one\nset-passes US-1 true\nset-passes US-2 true\npromise COMPLETE\n\
         [story=US-2]\nwrite two.txt two\nset-passes US-2 true\npromise COMPLETE\n",
    );
    let output = run(ralph_with_fake(&repo, &agent)
        .args(["start", "greet", "--prd", "prd.json", "--on-finish", "keep"])
        .args(["--agent-command", fake_agent_path()]));
    assert_exit(&output, 0);
    let stories: Vec<String> = recorded_calls(&repo)
        .iter()
        .filter_map(|line| line.split(' ').next().map(str::to_owned))
        .collect();
    assert_eq!(
        stories,
        ["story=US-1", "story=US-2"],
        "{}",
        describe(&output)
    );
    let tip = repo.rev_parse("ralph/greet");
    assert!(tree_files(&repo, &tip).contains(&"two.txt".to_owned()));
    // Story US-1's checkpoint does not claim US-2.
    let first = repo.rev_parse("ralph/greet~1");
    let prd_then: serde_json::Value =
        serde_json::from_str(&show(&repo, &first, "prd.json")).expect("prd.json is JSON");
    assert_eq!(prd_then["userStories"][0]["passes"], true);
    assert_eq!(prd_then["userStories"][1]["passes"], false);
    assert!(
        stdout(&output).contains("ticked boxes of other stories (US-2)"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn issue_20_a_story_deleted_from_the_list_fails_the_attempt() {
    let repo = project(THREE_STORIES);
    // Attempt 1 does story 1 and deletes story 3's section.
    let shortened = "# Tasks\\n\\n## 1. Greeting\\n\\n- [x] 1.1 Create hello.txt\\n- [x] 1.2 Say hello in it\\n\\n## 2. Farewell\\n\\n- [ ] 2.1 Create bye.txt\\n";
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\nwrite story-1.txt work of story 1\\n\nwrite {TASKS_PATH} {shortened}\npromise COMPLETE\n\
             [story=1]\n{}{}{}",
            finish_story("1"),
            story_done("2"),
            story_done("3")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0].0, "rejected");
    assert!(
        attempts[0].1.contains("removed story 3 (Docs)"),
        "the reason names what was removed: {attempts:?}"
    );
    assert_eq!(attempts[1].0, "complete");
    // Story 3 was not lost: it got its agent and its work.
    let tasks = repo.read(TASKS_PATH);
    assert!(tasks.contains("- [x] 3.1 Mention"), "{tasks}");
    assert!(has_ref(&repo, &format!("{NS}/attempts/1/1")));
    repo.assert_fsck_clean();
}

#[test]
fn issue_20_a_rewritten_task_fails_the_attempt() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            // Attempt 1 rewrites story 2's task into something easier.
            "[story=1 attempt=1]\nwrite story-1.txt one\\n\n\
             write {TASKS_PATH} # Tasks\\n\\n## 1. Greeting\\n\\n- [x] 1.1 Create hello.txt\\n\\n## 2. Farewell\\n\\n- [ ] 2.1 Nothing to do\\n\n\
             promise COMPLETE\n\
             [story=1]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(attempts[0].0, "rejected", "{attempts:?}");
    assert!(
        attempts[0].1.contains("rewrote task 2.1 of story 2"),
        "{attempts:?}"
    );
    assert_eq!(attempts[1].0, "complete", "{attempts:?}");
}

#[test]
fn issue_20_tasks_an_agent_adds_to_its_own_story_are_accepted_and_reported() {
    let repo = project(TWO_STORIES);
    let with_more = "# Tasks\\n\\n## 1. Greeting\\n\\n- [x] 1.1 Create hello.txt\\n- [x] 1.2 Test hello.txt\\n\\n## 2. Farewell\\n\\n- [ ] 2.1 Create bye.txt\\n";
    let agent = script(
        &repo,
        &format!(
            "[story=1]\nwrite story-1.txt one\\n\nwrite {TASKS_PATH} {with_more}\npromise COMPLETE\n{}",
            story_done("2")
        ),
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert_eq!(attempts_of(&state(&repo), "1")[0].0, "complete");
    assert!(
        stdout(&output).contains("added a task to story 1: 1.2 Test hello.txt"),
        "{}",
        stdout(&output)
    );
    let events = events(&repo);
    let added = of_type(&events, "tasks_added");
    assert_eq!(added.len(), 1, "{added:?}");
}
