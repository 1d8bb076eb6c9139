//! Truthful completions and memory across attempts (issue 13), through the
//! real binary and the fake agent: a claim that only ticks boxes is flagged,
//! or refused with `--require-change`; a final question is no signal, and
//! the next prompt says nobody will answer; what an attempt learns reaches
//! the attempts and stories after it, even when its work was reverted; and
//! every checkpoint carries its receipt as git trailers.

use std::fs;

use crate::harness::story_run::*;
use crate::harness::*;

/// Story 1 is only ticked and claimed; story 2 is really done.
fn tick_only_then_real() -> String {
    format!(
        "[story=1]\ntick-story\npromise COMPLETE\n{}",
        story_done("2")
    )
}

/// `start` with `args` and an agent following [`tick_only_then_real`].
fn start_tick_only(repo: &TestRepo, args: &[&str]) -> std::process::Output {
    let agent = script(repo, &tick_only_then_real());
    start(repo, &agent, args)
}

/// Keeps the branch, and gives up on a story after its first attempt.
const KEEP_WITHOUT_RETRIES: &[&str] = &["--on-finish", "keep", "--max-retries", "0"];

/// Commits `contract` as ralph.toml.
fn commit_contract(repo: &TestRepo, contract: &str) {
    repo.write("ralph.toml", contract);
    repo.git(&["add", "ralph.toml"]);
    repo.git(&["commit", "-q", "-m", "contract"]);
}

/// The trailers of `rev`, as git reads them.
fn trailers(repo: &TestRepo, rev: &str) -> String {
    repo.git(&["log", "-1", "--format=%(trailers)", rev])
}

#[test]
fn a_claim_that_only_ticks_boxes_is_flagged_by_default() {
    let repo = project(TWO_STORIES);
    let output = start_tick_only(&repo, &["--on-finish", "keep"]);
    assert_exit(&output, 0);

    // The console says so.
    assert!(
        stdout(&output).contains("flagged: story 1, attempt 1: no change besides ticking boxes"),
        "{}",
        stdout(&output)
    );
    // The event log says so, for story 1 only.
    let events = events(&repo);
    let flags = of_type(&events, "flag");
    assert_eq!(flags.len(), 1, "{flags:?}");
    assert_eq!(flags[0]["story_id"], "1");
    assert_eq!(flags[0]["flag"], "no change besides ticking boxes");
    // Status, as JSON and for people.
    let status = status_json(&repo);
    let story1 = attempt_records(&status, "1");
    assert_eq!(story1[0]["outcome"], "complete");
    assert_eq!(story1[0]["flag"], "no change besides ticking boxes");
    assert!(attempt_records(&status, "2")[0].get("flag").is_none());
    let human = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(
        human.contains("#1 complete (flagged: no change besides ticking boxes)"),
        "{human}"
    );
    // And the audit trail.
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(
        log.contains("flagged: no change besides ticking boxes"),
        "{log}"
    );
    assert!(log.contains("learnings: 0 bytes in "), "{log}");
    // The checkpoint's receipt.
    let commits: Vec<String> = repo
        .git(&["rev-list", "--reverse", &format!("main..{BRANCH}")])
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(commits.len(), 3);
    assert!(
        trailers(&repo, &commits[1]).contains("Ralph-Flag: no change besides ticking boxes\n"),
        "{}",
        trailers(&repo, &commits[1])
    );
    assert!(!trailers(&repo, &commits[2]).contains("Ralph-Flag"));
    // Only the boxes changed in story 1's checkpoint, indeed.
    assert_eq!(
        repo.git(&["diff", "--name-only", &commits[0], &commits[1]]),
        format!("{TASKS_PATH}\n")
    );
    repo.assert_fsck_clean();
}

#[test]
fn a_claim_that_only_ticks_boxes_is_refused_with_require_change() {
    let repo = project(TWO_STORIES);
    let tasks_before = repo.read(TASKS_PATH);
    let output = start_tick_only(&repo, &["--require-change", "--max-retries", "0"]);
    assert_exit(&output, 3);
    let reason = format!("no change besides ticking boxes in {TASKS_PATH}");
    assert_eq!(
        attempts_of(&state(&repo), "1"),
        vec![("rejected".to_owned(), reason.clone())]
    );
    assert!(stdout(&output).contains(&reason), "{}", stdout(&output));
    assert!(of_type(&events(&repo), "flag").is_empty());
    // Reverted: the boxes are unticked again, the ticks kept under the
    // attempt's ref, and no checkpoint was made.
    assert_eq!(repo.read(TASKS_PATH), tasks_before);
    assert_eq!(repo.status_porcelain(), "");
    assert!(has_ref(&repo, &format!("{NS}/attempts/1/1")));
    assert_eq!(subjects(&repo, &format!("main..{BRANCH}")).len(), 1);
    repo.assert_fsck_clean();

    // Abort keeps what the agents learned.
    let learnings = run_dir(&repo).join("learnings.md");
    fs::write(&learnings, "a lesson\n").expect("learnings.md is written");
    assert_exit(&ralph_cmd(&repo, &["abort", CHANGE]), 0);
    assert_eq!(
        fs::read_to_string(&learnings).expect("learnings.md outlives abort"),
        "a lesson\n"
    );
}

#[test]
fn require_change_comes_from_git_config_and_the_contract_per_story() {
    // ralph.requireChange refuses.
    let repo = project(TWO_STORIES);
    repo.git(&["config", "ralph.requireChange", "true"]);
    let output = start_tick_only(&repo, KEEP_WITHOUT_RETRIES);
    assert_exit(&output, 3);
    assert_eq!(attempts_of(&state(&repo), "1")[0].0, "rejected");

    // A story the contract lets change nothing is accepted, and flagged.
    let repo = project(TWO_STORIES);
    repo.git(&["config", "ralph.requireChange", "true"]);
    commit_contract(&repo, "[story.\"1\"]\nrequire_change = false\n");
    let output = start_tick_only(&repo, KEEP_WITHOUT_RETRIES);
    assert_exit(&output, 0);
    let story1 = attempt_records(&state(&repo), "1");
    assert_eq!(story1[0]["flag"], "no change besides ticking boxes");

    // And `require_change = true` in the contract refuses without any flag.
    let repo = project(TWO_STORIES);
    commit_contract(&repo, "require_change = true\n");
    let output = start_tick_only(&repo, KEEP_WITHOUT_RETRIES);
    assert_exit(&output, 3);
    assert_eq!(attempts_of(&state(&repo), "1")[0].0, "rejected");
}

#[test]
fn a_bad_require_change_setting_names_its_key() {
    let repo = project(TWO_STORIES);
    repo.git(&["config", "ralph.requireChange", "maybe"]);
    let output = start_tick_only(&repo, &["--on-finish", "keep"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains("ralph.requireChange"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_question_instead_of_work_is_no_signal_and_the_next_prompt_says_nobody_will_answer() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "format claude\n\
             [story=1 attempt=1]\n\
             final I compared both stores.\\n\\nShould I store sessions in Redis or in Postgres?\n\
             [story=1 attempt=2]\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &[
            "--on-finish",
            "keep",
            "--max-retries",
            "1",
            "--no-questions",
        ],
    );
    assert_exit(&output, 0);
    let question = "Should I store sessions in Redis or in Postgres?";
    let attempts = attempts_of(&state(&repo), "1");
    assert_eq!(
        attempts,
        vec![
            (
                "no_signal".to_owned(),
                format!("the agent asked instead of working: {question}")
            ),
            ("complete".to_owned(), String::new()),
        ]
    );
    let retry = saved_prompt(&repo, "1", 2);
    assert!(retry.contains(&format!("> {question}\n")), "{retry}");
    assert!(retry.contains("Nobody will answer it"), "{retry}");
    let learnings = run_dir(&repo).join("learnings.md");
    assert!(
        retry.contains(&format!(
            "record it and why in `{}`",
            learnings.to_string_lossy()
        )),
        "{retry}"
    );
    // Every prompt says it, question or not.
    assert!(saved_prompt(&repo, "1", 1).contains("Nobody will answer a question"));
}

#[test]
fn a_rhetorical_or_quoted_question_in_finished_work_still_completes() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        "format claude\n\
         [story=1]\n\
         write story-1.txt done\n\
         tick-story\n\
         final Why did the test fail? The fixture was stale.\\n\\n> Should sessions expire?\\n\\nThey now do.\n\
         promise COMPLETE\n\
         [story=2 attempt=1]\n\
         write story-2.txt half\n\
         final Should I go on? I went on: the farewell is half written.\n\
         [story=2 attempt=2]\n\
         write story-2.txt done\n\
         tick-story\n\
         final Does it work? Yes:\\n\\n```\\nContinue?\\n```\n\
         promise COMPLETE\n",
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--max-retries", "1"],
    );
    assert_exit(&output, 0);
    let state = state(&repo);
    assert_eq!(
        attempts_of(&state, "1"),
        vec![("complete".to_owned(), String::new())]
    );
    // A question along the way is no question at the end: plain silence.
    assert_eq!(
        attempts_of(&state, "2"),
        vec![
            (
                "no_signal".to_owned(),
                "the agent ended without a promise".to_owned()
            ),
            ("complete".to_owned(), String::new()),
        ]
    );
    assert!(!saved_prompt(&repo, "2", 2).contains("Nobody will answer it"));
}

#[test]
fn a_lesson_from_a_failed_attempt_reaches_the_next_attempt_and_the_next_story() {
    let repo = project(TWO_STORIES);
    let learnings_rel = format!(".git/ralph/{CHANGE}/learnings.md");
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\n\
             write story-1.txt wrong\n\
             append {learnings_rel} The greeting must go in story-1.txt, not hello.txt.\\n\n\
             promise FAILED: wrong file\n\
             [story=1 attempt=2]\n\
             append {learnings_rel} Decided: plain ASCII greeting.\\n\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "cleanup", "--max-retries", "1"],
    );
    assert_exit(&output, 0);
    let path = run_dir(&repo).join("learnings.md");
    let shown = path.to_string_lossy().into_owned();
    // The cleanup left no checkpoint commit, so it sums up their receipts.
    assert!(
        stderr(&output).contains(&format!(
            "receipts: 2 checkpoints over 3 attempts, usage unknown; each checkpoint's trailers are kept in {}.",
            run_dir(&repo).join("receipts.txt").display()
        )),
        "{}",
        stderr(&output)
    );

    // Attempt 1 was told where the file is, and nothing was in it yet.
    let first = saved_prompt(&repo, "1", 1);
    assert!(first.contains(&format!("append to `{shown}`")), "{first}");
    assert!(
        first.contains("Nothing has been recorded there yet."),
        "{first}"
    );
    assert!(
        agent_record(&repo, "env", "1", 1).contains(&format!("RALPH_LEARNINGS_FILE={shown}\n"))
    );
    // Its work was reverted, its lesson was not.
    let second = saved_prompt(&repo, "1", 2);
    assert!(
        second.contains("## Attempt 1 at story 1\n\nThe greeting must go in story-1.txt"),
        "{second}"
    );
    assert!(second.contains("at most 8 KiB"), "{second}");
    // Story 2 sees both, newest first.
    let story2 = saved_prompt(&repo, "2", 1);
    let newest = story2
        .find("Decided: plain ASCII greeting.")
        .expect(&story2);
    let oldest = story2.find("The greeting must go in").expect(&story2);
    assert!(newest < oldest, "{story2}");
    // The file is labelled, outlives the cleanup, and status measures it.
    let text = fs::read_to_string(&path).expect("learnings.md is kept");
    assert_eq!(
        text,
        "## Attempt 1 at story 1\n\nThe greeting must go in story-1.txt, not hello.txt.\n\n\
         ## Attempt 2 at story 1\n\nDecided: plain ASCII greeting.\n"
    );
    let status = status_json(&repo);
    assert_eq!(status["learnings"]["bytes"], text.len() as u64);
    let human = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(
        human.contains(&format!("learnings: {} bytes in {shown}", text.len())),
        "{human}"
    );
}

#[test]
fn no_learnings_turns_the_file_off() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let output = start(&repo, &agent, &["--on-finish", "keep", "--no-learnings"]);
    assert_exit(&output, 0);
    let prompt = saved_prompt(&repo, "1", 1);
    assert!(!prompt.contains("## Learnings"), "{prompt}");
    assert!(!agent_record(&repo, "env", "1", 1).contains("RALPH_LEARNINGS_FILE"));
    assert!(!run_dir(&repo).join("learnings.md").exists());
    assert!(status_json(&repo)["learnings"].is_null());
}

#[test]
fn every_checkpoint_carries_its_receipt_as_trailers() {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "format claude\n\
             [story=1]\nusage 1000 200 0.25\n{}\
             [story=2 attempt=1]\nwrite story-2.txt half\n\
             [story=2 attempt=2]\nusage 500 100 0\n{}",
            finish_story("1"),
            finish_story("2"),
        ),
    );
    let output = start(
        &repo,
        &agent,
        &[
            "--on-finish",
            "keep",
            "--max-retries",
            "2",
            "--check",
            "test -s story-1.txt",
        ],
    );
    assert_exit(&output, 0);
    let log = repo.git(&[
        "log",
        "--reverse",
        "--format=%s%n%(trailers)--",
        &format!("main..{BRANCH}"),
    ]);
    let entries: Vec<&str> = log.split("--\n").filter(|e| !e.trim().is_empty()).collect();
    assert_eq!(entries.len(), 3, "{log}");
    assert_eq!(entries[0].trim(), "ralph(greet): initial state");
    let receipt = |entry: &str| -> Vec<String> {
        entry
            .lines()
            .skip(1)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let story1 = receipt(entries[1]);
    assert_eq!(story1[0], "Ralph-Change: greet");
    assert_eq!(story1[1], "Ralph-Story: 1");
    assert_eq!(story1[2], "Ralph-Attempt: 1 of 3");
    assert!(
        story1[3].starts_with("Ralph-Agent: command ") && !story1[3].contains("model"),
        "{story1:?}"
    );
    assert_eq!(
        story1[4..].to_vec(),
        vec![
            "Ralph-Tokens: 1200".to_owned(),
            "Ralph-Cost: 0.2500".to_owned(),
            "Ralph-Checks: test -s story-1.txt passed".to_owned(),
        ]
    );
    let story2 = receipt(entries[2]);
    assert_eq!(story2[1], "Ralph-Story: 2");
    assert_eq!(story2[2], "Ralph-Attempt: 2 of 3");
    assert!(
        story2.contains(&"Ralph-Tokens: 600".to_owned()),
        "{story2:?}"
    );
    assert!(
        !story2.iter().any(|t| t.starts_with("Ralph-Cost")),
        "{story2:?}"
    );

    // `git interpret-trailers --parse` reads the same block.
    let message = repo.git(&["log", "-1", "--format=%B", BRANCH]);
    let parsed = {
        use std::io::Write;
        let mut child = std::process::Command::new("git")
            .args(["interpret-trailers", "--parse"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("git runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(message.as_bytes())
            .expect("message written");
        String::from_utf8(child.wait_with_output().expect("git ends").stdout).expect("utf-8")
    };
    assert_eq!(parsed.lines().collect::<Vec<_>>(), story2);

    // The receipts outlive the commits in the run's directory.
    let kept = fs::read_to_string(run_dir(&repo).join("receipts.txt")).expect("receipts.txt");
    assert_eq!(kept.matches("Ralph-Story: ").count(), 2, "{kept}");
    assert!(kept.contains(&repo.rev_parse(BRANCH)), "{kept}");
}

const PRD: &str = r#"{
  "project": "greeter",
  "userStories": [
    {"id": "US-001", "title": "Say hello", "priority": 1, "passes": false},
    {"id": "US-002", "title": "Say goodbye", "priority": 2, "passes": false}
  ]
}
"#;

/// A PRD run where US-001 only sets `passes` (the agent rewrites the whole
/// file, keys sorted) and US-002 does real work.
fn prd_run(extra: &[&str]) -> (TestRepo, std::process::Output) {
    let repo = TestRepo::new();
    repo.write("prd.json", PRD);
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "Add the stories"]);
    let agent = script(
        &repo,
        "[story=US-001]\nset-passes US-001 true\npromise COMPLETE\n\
         [story=US-002]\nwrite bye.txt bye\\n\nset-passes US-002 true\npromise COMPLETE\n",
    );
    let output = ralph_with_fake(&repo, &agent)
        .args(["start", "greeter", "--prd", "prd.json", "--agent-command"])
        .arg(fake_agent_path())
        .args(["--on-finish", "keep", "--max-retries", "0"])
        .args(extra)
        .output()
        .expect("git-ralph runs");
    (repo, output)
}

#[test]
fn a_prd_claim_that_only_sets_passes_is_flagged_or_refused() {
    let (repo, output) = prd_run(&[]);
    assert_exit(&output, 0);
    // The file was rewritten, yet only `passes` changed.
    assert_ne!(
        repo.git(&["show", "ralph/greeter:prd.json"]),
        PRD,
        "the agent reformatted prd.json"
    );
    let messages = repo.git(&["log", "--format=%s%n%(trailers)--", "main..ralph/greeter"]);
    let flagged: Vec<&str> = messages
        .split("--\n")
        .filter(|entry| entry.contains("Ralph-Flag: no change besides ticking boxes"))
        .collect();
    assert_eq!(flagged.len(), 1, "{messages}");
    assert!(flagged[0].contains("Ralph-Story: US-001"), "{messages}");

    let (repo, output) = prd_run(&["--require-change"]);
    assert_exit(&output, 3);
    let state: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(repo.path(".git/ralph/greeter/state.json")).expect("state.json"),
    )
    .expect("state.json is JSON");
    let attempt = &attempt_records(&state, "US-001")[0];
    assert_eq!(attempt["outcome"], "rejected");
    assert_eq!(
        attempt["reason"],
        "no change besides ticking boxes in prd.json"
    );
}

#[test]
fn a_dry_run_shows_the_first_prompt_with_its_learnings_section() {
    let repo = project(TWO_STORIES);
    let agent = script(&repo, &format!("{}{}", story_done("1"), story_done("2")));
    let preview = start(&repo, &agent, &["--dry-run", "--json"]);
    assert_exit(&preview, 0);
    let preview: serde_json::Value =
        serde_json::from_slice(&preview.stdout).expect("--dry-run --json prints JSON");
    let shown = preview["prompt"].as_str().expect("a prompt").to_owned();
    assert!(shown.contains("## Learnings"), "{shown}");

    assert_exit(&start(&repo, &agent, &["--on-finish", "keep"]), 0);
    assert_eq!(shown, saved_prompt(&repo, "1", 1));
}

/// Copies the run directory `name` of `tests/fixtures/state-flags/`, written
/// by the release before flags were typed, into `repo` as the run of the
/// change.
fn previous_release_run(repo: &TestRepo, name: &str) {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        fs::create_dir_all(to).expect("the run directory is created");
        for entry in fs::read_dir(from).expect("the fixture is readable") {
            let entry = entry.expect("a fixture entry");
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                fs::copy(entry.path(), &target).expect("a fixture file is copied");
            }
        }
    }
    copy(
        &source_path("tests/fixtures/state-flags").join(name),
        &run_dir(repo),
    );
}

#[test]
fn issue_19_flags_written_by_the_previous_release_read_and_show_as_before() {
    for (name, flag) in [
        ("tick-only", "no change besides ticking boxes"),
        ("no-change", "no change at all"),
    ] {
        let repo = project(TWO_STORIES);
        previous_release_run(&repo, name);

        let story1 = attempt_records(&status_json(&repo), "1");
        assert_eq!(story1[0]["flag"], flag, "{name}");
        let human = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
        assert!(
            human.contains(&format!("#1 complete (flagged: {flag})")),
            "{name}: {human}"
        );
        let log = ralph_cmd(&repo, &["log", CHANGE]);
        assert_exit(&log, 0);
        assert!(
            stdout(&log).contains(&format!("flagged: {flag}")),
            "{name}: {}",
            stdout(&log)
        );
        let log = ralph_cmd(&repo, &["log", CHANGE, "--json"]);
        assert_exit(&log, 0);
        let trail: serde_json::Value =
            serde_json::from_slice(&log.stdout).expect("log --json is JSON");
        assert_eq!(trail["stories"][0]["attempts"][0]["flag"], flag, "{name}");
    }
}
