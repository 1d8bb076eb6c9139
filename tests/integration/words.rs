//! Issue 47, the words of the second hour: what `plan` and a run's
//! questions say must be true, name the real change and story, offer only
//! options that exist, and say each thing once. Through the real binary,
//! with git as the oracle.

use std::fs;
use std::process::Output;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;
use crate::plan_e2e::{self, FOLDER, project as plan_project};
use crate::questions_e2e::{QUESTION, QUESTIONS_EXIT, asking_agent};

const FIRST_ANSWER: &str = "Formal: \"Goodbye, dear visitor.\"";
const SECOND_ANSWER: &str = "Casual: a plain \"bye\" on one line.";

/// A directory holding `git` alone, to stand for a PATH without the
/// agent's CLI or `gh`.
fn git_only_path(repo: &TestRepo) -> String {
    let bin = repo.dir.path().join("git-only-bin");
    fs::create_dir_all(&bin).unwrap();
    let git = String::from_utf8(
        run(std::process::Command::new("sh").args(["-c", "command -v git"])).stdout,
    )
    .unwrap();
    let link = bin.join("git");
    if !link.exists() {
        std::os::unix::fs::symlink(git.trim(), &link).unwrap();
    }
    bin.display().to_string()
}

/// Every `--option` in `text`.
fn options_named(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("--") {
        let name: String = text[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
            found.push(format!("--{name}"));
        }
    }
    found
}

/// Asserts that every option `said` offers is one `git ralph plan` has.
fn offers_only_plan_options(repo: &TestRepo, said: &str) {
    let help = stdout(&ralph_cmd(repo, &["plan", "--help"]));
    for option in options_named(said) {
        assert!(
            help.contains(&format!("{option} ")) || help.contains(&format!("{option}\n")),
            "{option} is offered, but `git ralph plan` has no such option:\n{said}"
        );
    }
}

// ---------------------------------------------------------------------------
// Planning

#[test]
fn issue_47_a_missing_agent_cli_exits_8_and_says_its_cause_once() {
    let repo = plan_project();
    let output = run(ralph(&repo)
        .args(["plan", plan_e2e::CHANGE, "Greet the visitors"])
        .args(["--agent", "codex"])
        .env("PATH", git_only_path(&repo)));
    assert_exit(&output, 8);
    let err = stderr(&output);
    assert_eq!(
        err.matches("No such file or directory").count(),
        1,
        "the cause is said once:\n{err}"
    );
    assert_eq!(err.matches("`codex`").count(), 2, "{err}");
    assert!(err.contains("hint: install `codex`"), "{err}");
    assert_eq!(repo.status_porcelain(), "", "nothing was written");
    repo.assert_fsck_clean();
}

#[test]
fn issue_47_a_plan_the_agent_wrote_nothing_of_claims_nothing_kept() {
    let repo = plan_project();
    let (output, _) = plan_e2e::plan(
        &repo,
        "[*]\nsay I looked around.\n",
        &["--max-retries", "1"],
    );
    assert_exit(&output, 3);
    let said = stdout(&output);
    assert!(!said.contains("kept"), "nothing was kept:\n{said}");
    assert!(
        said.contains(&format!("nothing was written in {FOLDER}/")),
        "{said}"
    );
    assert!(!said.contains("--refine"), "refine would refuse:\n{said}");
    offers_only_plan_options(&repo, &said);
    assert!(!repo.path(FOLDER).exists());
    // What the suggestion would have led to: refine refuses.
    let refine = run(ralph(&repo).args([
        "plan",
        plan_e2e::CHANGE,
        "--refine",
        "--agent-command",
        "true",
    ]));
    assert_exit(&refine, 1);
    // The agent is told what it did, not the user's options.
    let prompt = fs::read_to_string(repo.path(format!(
        ".git/ralph/plans/{}/1/attempts/2.prompt.md",
        plan_e2e::CHANGE
    )))
    .unwrap();
    assert!(!prompt.contains("pass --"), "{prompt}");
    assert!(!prompt.contains("openspec new change"), "{prompt}");
    assert!(
        prompt.contains(&format!("nothing was written in {FOLDER}/")),
        "{prompt}"
    );
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_47_a_plan_written_but_not_accepted_is_kept_and_refine_takes_it() {
    let repo = plan_project();
    let tasks = "## 1. Greeting\\n\\nJust greet.\\n";
    let (output, _) = plan_e2e::plan(
        &repo,
        &format!("[*]\n{}", plan_e2e::plan_with_tasks(tasks)),
        &["--max-retries", "0"],
    );
    assert_exit(&output, 3);
    let said = stdout(&output);
    assert!(said.contains(&format!("kept in {FOLDER}/")), "{said}");
    assert!(said.contains("git ralph plan greet --refine"), "{said}");
    offers_only_plan_options(&repo, &said);
    let script_path = script(&repo, &format!("[*]\n{}", plan_e2e::good_plan()));
    let refined = plan_e2e::plan_with(&repo, &script_path, &[plan_e2e::CHANGE, "--refine"]);
    assert_exit(&refined, 0);
}

#[test]
fn issue_47_plan_from_an_issue_without_gh_offers_only_plans_options() {
    let repo = plan_project();
    let output = run(ralph(&repo)
        .args(["plan", "bye", "--issue", "12", "--agent-command", "true"])
        .env("PATH", git_only_path(&repo)));
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(err.contains("`gh` is not on PATH"), "{err}");
    assert!(err.contains("--from"), "{err}");
    offers_only_plan_options(&repo, &err);
    assert_eq!(repo.status_porcelain(), "");
}

// ---------------------------------------------------------------------------
// Questions

fn answer(repo: &TestRepo, story: &str, text: &str) -> Output {
    ralph_cmd(repo, &["answer", CHANGE, story, text])
}

#[test]
fn issue_47_the_loop_names_what_to_answer_and_says_the_question_once() {
    // An ordered checklist: story 3 waits for story 2, so nothing goes on.
    let repo = project(THREE_STORIES);
    let agent = asking_agent(&repo);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, QUESTIONS_EXIT);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    for placeholder in ["<change>", "<story>", "<answer>"] {
        assert!(!said.contains(placeholder), "{placeholder}:\n{said}");
    }
    let how = format!("git ralph answer {CHANGE} 2 \"...\"");
    assert!(said.contains(&how), "{said}");
    let status = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(status.contains(&how), "{status}");
    assert!(said.contains("attempt 1 asked a question"), "{said}");
    assert!(!said.contains("the agent asked a question"), "{said}");
    // Nothing goes on beside it in an ordered checklist.
    assert!(!said.contains("do not depend on it go on"), "{said}");
    assert!(
        said.contains("no other story may start until it is answered"),
        "{said}"
    );
    assert!(attempt_records(&state(&repo), "3").is_empty());
}

#[test]
fn issue_47_independent_stories_do_go_on_beside_a_question() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, QUESTIONS_EXIT);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        said.contains("the stories that do not depend on it go on"),
        "{said}"
    );
    assert_eq!(
        attempt_records(&state(&repo), "3")[0]["outcome"],
        "complete"
    );
}

/// `▶ story 2/3 · 2. Farewell · attempt 2/N`: N.
fn most_attempts_shown(said: &str, story: &str, attempt: u32) -> u32 {
    let line = said
        .lines()
        .find(|line| {
            line.contains(&format!("· {story}. ")) && line.contains(&format!("attempt {attempt}/"))
        })
        .unwrap_or_else(|| panic!("no line for attempt {attempt} at story {story}:\n{said}"));
    let after = line.split(&format!("attempt {attempt}/")).nth(1).unwrap();
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn issue_47_the_resumed_attempt_shows_the_number_its_trailer_carries() {
    let repo = project(THREE_STORIES);
    let agent = asking_agent(&repo);
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep"]),
        QUESTIONS_EXIT,
    );
    assert_exit(&answer(&repo, "2", SECOND_ANSWER), 0);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let said = stdout(&output);
    // Three retries and the question, which spent none.
    let shown = most_attempts_shown(&said, "2", 2);
    assert_eq!(shown, 5, "{said}");
    let trailers = repo.git(&[
        "log",
        "--format=%(trailers:key=Ralph-Story,key=Ralph-Attempt,valueonly,separator=%x20)",
        BRANCH,
    ]);
    assert!(
        trailers
            .lines()
            .any(|line| line == format!("2 2 of {shown}")),
        "{trailers}"
    );
    assert!(
        trailers.lines().any(|line| line == "3 1 of 4"),
        "{trailers}"
    );
    let status = status_json(&repo);
    let numbers: Vec<u64> = status["stories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|story| story["id"] == "2")
        .map(|story| {
            story["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["attempt"].as_u64().unwrap())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(numbers, vec![1, 2], "{status}");
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(log.contains("#2 complete"), "{log}");
}

#[test]
fn issue_47_an_answer_not_yet_taken_up_is_replaced_by_a_second() {
    let repo = project(THREE_STORIES);
    let agent = asking_agent(&repo);
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep"]),
        QUESTIONS_EXIT,
    );
    assert_exit(&answer(&repo, "2", FIRST_ANSWER), 0);
    let second = answer(&repo, "2", SECOND_ANSWER);
    assert_exit(&second, 0);
    let said = stdout(&second);
    assert!(said.contains("replacing the earlier answer"), "{said}");
    assert!(said.contains(FIRST_ANSWER), "{said}");
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let prompt = saved_prompt(&repo, "2", 2);
    assert!(prompt.contains(&format!("> {SECOND_ANSWER}\n")), "{prompt}");
    assert!(!prompt.contains(FIRST_ANSWER), "{prompt}");
    let story2 = attempt_records(&state(&repo), "2");
    assert_eq!(story2[0]["answer"], SECOND_ANSWER);
    assert_eq!(of_type(&events(&repo), "answered").len(), 1);
    repo.assert_fsck_clean();
}

#[test]
fn issue_47_an_answer_the_run_took_up_is_refused_clearly() {
    let repo = independent_project();
    let release = repo.dir.path().join("release");
    let agent = script(
        &repo,
        &format!(
            "format claude\n\
             {}\
             [story=2 attempt=1]\n\
             write story-2.txt a draft\\n\n\
             final I read the task.\\n\\n{QUESTION}\n\
             [story=2 attempt=2]\nwait-for {}\n{}{}",
            story_done("1"),
            release.display(),
            finish_story("2"),
            story_done("3")
        ),
    );
    let live = Background::start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--answer-timeout", "5m"],
    );
    wait_until(
        "story 2 waits for an answer",
        Duration::from_secs(60),
        || {
            fs::read_to_string(run_dir(&repo).join("state.json"))
                .is_ok_and(|text| text.contains("\"outcome\": \"question\""))
        },
    );
    assert_exit(&answer(&repo, "2", FIRST_ANSWER), 0);
    wait_until(
        "the run takes the answer up",
        Duration::from_secs(60),
        || {
            attempt_records(&state(&repo), "2")
                .first()
                .is_some_and(|first| first["answer"] == FIRST_ANSWER)
        },
    );
    let answers = run_dir(&repo).join("answers.jsonl");
    let before = fs::read(&answers).unwrap();
    let refused = answer(&repo, "2", SECOND_ANSWER);
    assert_exit(&refused, 1);
    let err = stderr(&refused);
    assert!(err.contains("the run has taken it up"), "{err}");
    assert!(err.contains(FIRST_ANSWER), "{err}");
    assert_eq!(fs::read(&answers).unwrap(), before, "nothing was written");
    fs::write(&release, "go\n").unwrap();
    let finished = live.wait(Duration::from_secs(120));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(saved_prompt(&repo, "2", 2).contains(FIRST_ANSWER));
    repo.assert_fsck_clean();
}

/// The paragraph of `docs/contract.md` on questions instead of work.
fn contract_on_questions() -> String {
    let guide = fs::read_to_string(source_path("docs/contract.md")).unwrap();
    let start = guide
        .find("- **Questions instead of work.**")
        .expect("docs/contract.md speaks of questions instead of work");
    let rest = &guide[start + 2..];
    let end = rest.find("\n- **").unwrap_or(rest.len());
    rest[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn issue_47_the_contract_guide_says_what_a_question_does_by_default() {
    let guide = contract_on_questions();
    // By default the story waits for an answer, and the run says so.
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, QUESTIONS_EXIT);
    assert_eq!(
        attempt_records(&state(&repo), "2")[0]["outcome"],
        "question"
    );
    for words in ["waits for an answer", "git ralph answer", "spends no retry"] {
        assert!(guide.contains(words), "{words:?} is not in:\n{guide}");
    }
    // With --no-questions, the words the guide quotes are the run's.
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let output = start(
        &repo,
        &agent,
        &[
            "--on-finish",
            "keep",
            "--no-questions",
            "--max-retries",
            "1",
        ],
    );
    assert_exit(&output, 0);
    let first = &attempt_records(&state(&repo), "2")[0];
    assert_eq!(first["outcome"], "no_signal");
    let reason = first["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        format!("the agent asked instead of working: {QUESTION}")
    );
    let unattended = guide
        .find("--no-questions")
        .unwrap_or_else(|| panic!("--no-questions is not in:\n{guide}"));
    let quoted = guide
        .find("the agent asked instead of working:")
        .expect("the guide quotes the reason");
    assert!(
        unattended < quoted,
        "the guide gives the unattended reason as the default:\n{guide}"
    );
}
