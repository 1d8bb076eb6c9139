//! Issue 38: questions reach a person. An attempt that ends with a question
//! parks its story (its work kept under the attempt's ref, the worktree
//! reverted, no retry spent) while the rest of the run goes on; `git ralph
//! answer` records the answer from any terminal, during the run or after
//! it stopped; the next attempt's prompt carries every question and answer
//! word for word; only parked stories left stops the run with its own exit
//! status, resumable. Through the real binary, with git as the oracle.

use std::fs;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::*;

pub(crate) const QUESTION: &str = "Should the farewell be formal or casual?";
const ANSWER: &str = "Casual: a plain \"bye\" on one line.";
/// The exit status of a run left with only stories waiting for an answer.
pub(crate) const QUESTIONS_EXIT: i32 = 9;

/// Stories 1 and 3 are done at once; the first attempt at story 2 drafts
/// a file and asks; the second finishes it.
pub(crate) fn asking_agent(repo: &TestRepo) -> std::path::PathBuf {
    script(
        repo,
        &format!(
            "format claude\n\
             {}\
             [story=2 attempt=1]\n\
             write story-2.txt a draft\\n\n\
             final I read the task.\\n\\n{QUESTION}\n\
             [story=2 attempt=2]\n{}{}",
            story_done("1"),
            finish_story("2"),
            story_done("3")
        ),
    )
}

fn answer(repo: &TestRepo, story: &str, text: &str) -> std::process::Output {
    ralph_cmd(repo, &["answer", CHANGE, story, text])
}

/// Story 2 parked with its question, its draft kept under its attempt's
/// ref and gone from the worktree.
fn assert_parked(repo: &TestRepo) {
    let state = state(repo);
    let story2 = attempt_records(&state, "2");
    assert_eq!(story2.len(), 1, "{story2:?}");
    assert_eq!(story2[0]["outcome"], "question");
    assert_eq!(story2[0]["asked"], QUESTION);
    let kept = format!("{NS}/attempts/2/1");
    assert_eq!(story2[0]["preserved"], kept.as_str());
    assert_eq!(show(repo, &kept, "story-2.txt"), "a draft\n");
    assert!(!repo.path("story-2.txt").exists());
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_38_a_question_parks_story_2_while_1_and_3_finish() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, QUESTIONS_EXIT);
    let said = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        said.contains(&format!(
            "1 story waits for an answer: story 2 asks \"{QUESTION}\"; answer with git ralph answer greet"
        )),
        "{said}"
    );
    assert_parked(&repo);
    let stopped = state(&repo);
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(stopped["reason"], "questions");
    for story in ["1", "3"] {
        assert_eq!(attempt_records(&stopped, story)[0]["outcome"], "complete");
    }
    // Left stopped on its branch, whatever --on-finish says.
    assert_eq!(
        repo.head_symbolic().as_deref(),
        Some("refs/heads/ralph/greet")
    );
    assert_eq!(subjects(&repo, &format!("main..{BRANCH}")).len(), 3);
    let asked = of_type(&events(&repo), "question").len();
    assert_eq!(asked, 1);
    // Status says which story waits, and on what.
    let human = stdout(&ralph_cmd(&repo, &["status", CHANGE]));
    assert!(
        human.contains(&format!("waits for an answer: {QUESTION}")),
        "{human}"
    );
    let json = status_json(&repo);
    assert_eq!(json["waiting"][0]["story"], "2");
    assert_eq!(json["waiting"][0]["question"], QUESTION);
    repo.assert_fsck_clean();

    // The answer, then the resume: the exchange reaches the prompt word
    // for word, and the story is done.
    let answered = answer(&repo, "2", ANSWER);
    assert_exit(&answered, 0);
    assert!(
        stdout(&answered).contains("answered story 2"),
        "{}",
        stdout(&answered)
    );
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let prompt = saved_prompt(&repo, "2", 2);
    let section = prompt
        .find("## Questions and answers")
        .unwrap_or_else(|| panic!("{prompt}"));
    let question = prompt
        .find(&format!("> {QUESTION}\n"))
        .expect("the question");
    let given = prompt.find(&format!("> {ANSWER}\n")).expect("the answer");
    assert!(section < question && question < given, "{prompt}");
    let story2 = attempt_records(&state(&repo), "2");
    assert_eq!(story2[0]["answer"], ANSWER);
    assert_eq!(story2[1]["outcome"], "complete");
    // The checkpoint says the story was answered; log and show print it.
    let trailers = repo.git(&["log", "-1", "--format=%(trailers)", BRANCH]);
    assert!(trailers.contains("Ralph-Answered: 1\n"), "{trailers}");
    let log = stdout(&ralph_cmd(&repo, &["log", CHANGE]));
    assert!(log.contains(&format!("asked: {QUESTION}")), "{log}");
    assert!(log.contains(&format!("answer: {ANSWER}")), "{log}");
    let shown = stdout(&ralph_cmd(&repo, &["show", "2/1", CHANGE]));
    assert!(shown.contains(&format!("answer: {ANSWER}")), "{shown}");
    repo.assert_fsck_clean();
}

#[test]
fn issue_38_a_story_after_a_parked_one_waits_in_a_checklist() {
    // A checklist's stories build on the ones before them: story 3 waits.
    let repo = project(THREE_STORIES);
    let agent = asking_agent(&repo);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, QUESTIONS_EXIT);
    assert_parked(&repo);
    let stopped = state(&repo);
    assert_eq!(attempt_records(&stopped, "1")[0]["outcome"], "complete");
    assert!(attempt_records(&stopped, "3").is_empty());
    let runs = agent_runs(&repo);
    assert!(runs.iter().all(|(story, _)| story != "3"), "{runs:?}");
}

#[test]
fn issue_38_no_questions_keeps_the_unattended_behaviour() {
    for how in ["flag", "config"] {
        let repo = independent_project();
        let agent = asking_agent(&repo);
        let mut args = vec!["--on-finish", "keep", "--max-retries", "1"];
        match how {
            "flag" => args.push("--no-questions"),
            _ => {
                repo.git(&["config", "ralph.questions", "false"]);
            }
        }
        let output = start(&repo, &agent, &args);
        assert_exit(&output, 0);
        let story2 = attempt_records(&state(&repo), "2");
        assert_eq!(story2[0]["outcome"], "no_signal", "{how}");
        assert!(saved_prompt(&repo, "2", 2).contains("Nobody will answer it"));
        assert!(saved_prompt(&repo, "1", 1).contains("Nobody will answer a question"));
    }
}

/// A run started in the background, once story 2 waits for an answer
/// (within `answer_timeout`) and story 3 is done.
fn parked_run(repo: &TestRepo, agent: &std::path::Path, answer_timeout: &str) -> Background {
    let run = Background::start(
        repo,
        agent,
        &["--on-finish", "keep", "--answer-timeout", answer_timeout],
    );
    wait_until(
        "story 2 waits for an answer",
        Duration::from_secs(60),
        || {
            fs::read_to_string(run_dir(repo).join("state.json"))
                .is_ok_and(|text| text.contains("\"outcome\": \"question\""))
                && state(repo)["stories"][2]["done"] == true
        },
    );
    run
}

#[test]
fn issue_38_an_answer_during_a_live_run_is_taken_at_its_next_turn() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let run = parked_run(&repo, &agent, "5m");
    let answered = answer(&repo, "2", ANSWER);
    assert_exit(&answered, 0);
    assert!(
        stdout(&answered).contains("the run takes it up at its next turn"),
        "{}",
        stdout(&answered)
    );
    let finished = run.wait(Duration::from_secs(60));
    assert_eq!(finished.status.code(), Some(0), "{}", finished.stderr);
    assert!(saved_prompt(&repo, "2", 2).contains(&format!("> {ANSWER}\n")));
    assert_eq!(of_type(&events(&repo), "answered").len(), 1);
    repo.assert_fsck_clean();
}

#[test]
fn issue_38_kill_9_while_parked_then_answer_and_resume_loses_nothing() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let run = parked_run(&repo, &agent, "10m");
    run.signal(nix::sys::signal::Signal::SIGKILL);
    run.wait(Duration::from_secs(30));
    kill_agents(&repo.record_dir());
    assert_parked(&repo);
    let answered = answer(&repo, "2", ANSWER);
    assert_exit(&answered, 0);
    assert!(stdout(&answered).contains("'git ralph start greet' goes on with it"));
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    let story2 = attempt_records(&state(&repo), "2");
    assert_eq!(story2[0]["asked"], QUESTION);
    assert_eq!(story2[0]["answer"], ANSWER);
    assert!(saved_prompt(&repo, "2", 2).contains(&format!("> {QUESTION}\n")));
    assert!(saved_prompt(&repo, "2", 2).contains(&format!("> {ANSWER}\n")));
    repo.assert_fsck_clean();
}

#[test]
fn issue_38_an_answer_nobody_waits_for_is_refused_and_changes_nothing() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep"]),
        QUESTIONS_EXIT,
    );
    let answers = run_dir(&repo).join("answers.jsonl");
    let refused = answer(&repo, "1", "whatever");
    assert_exit(&refused, 1);
    assert!(
        stderr(&refused).contains("story 1 of 'greet' is not waiting for an answer"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&refused).contains("waiting for an answer: story 2"));
    assert_exit(&answer(&repo, "9", "whatever"), 1);
    assert_exit(&answer(&repo, "2", "  \n"), 1);
    assert!(!answers.exists());
    // From a file; a second answer before the run takes the first up
    // replaces it (issue 47).
    let file = repo.write("answer.txt", format!("{ANSWER}\n"));
    let given = ralph_cmd(
        &repo,
        &["answer", CHANGE, "2", "--file", &file.to_string_lossy()],
    );
    assert_exit(&given, 0);
    assert_exit(&answer(&repo, "2", "again"), 0);
    let lines = fs::read_to_string(&answers).expect("answers.jsonl");
    assert_eq!(lines.lines().count(), 2);
    assert!(
        lines.contains(ANSWER.replace('"', "\\\"").as_str()),
        "{lines}"
    );
}

#[test]
fn issue_38_parallel_workers_go_on_while_a_story_waits() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    let output = start(&repo, &agent, &["--parallel", "2", "--on-finish", "keep"]);
    assert_exit(&output, QUESTIONS_EXIT);
    let stopped = state(&repo);
    assert_eq!(stopped["reason"], "questions");
    for story in ["1", "3"] {
        assert_eq!(
            stopped["stories"][story.parse::<usize>().unwrap() - 1]["done"],
            true
        );
    }
    let story2 = attempt_records(&stopped, "2");
    assert_eq!(story2.len(), 1, "{story2:?}");
    assert_eq!(story2[0]["outcome"], "question");
    assert_eq!(story2[0]["asked"], QUESTION);
    // Its draft is kept, and no story worktree is left.
    let kept = story2[0]["preserved"].as_str().expect("a ref").to_owned();
    assert_eq!(show(&repo, &kept, "story-2.txt"), "a draft\n");
    let branches = repo.git(&["branch", "--list", "ralph/greet.story-*"]);
    assert_eq!(branches.trim(), "");
    assert_eq!(repo.status_porcelain(), "");

    assert_exit(&answer(&repo, "2", ANSWER), 0);
    let output = start(&repo, &agent, &["--on-finish", "keep"]);
    assert_exit(&output, 0);
    assert!(saved_prompt_of_worker(&repo, "2", 2).contains(&format!("> {ANSWER}\n")));
    assert_eq!(state(&repo)["stories"][1]["done"], true);
    repo.assert_fsck_clean();
}

/// The prompt an attempt of a parallel run's story was given, as the
/// agent saw it.
fn saved_prompt_of_worker(repo: &TestRepo, story: &str, attempt: u32) -> String {
    agent_record(repo, "promptfile", story, attempt)
}

#[test]
fn issue_38_the_watch_screen_answers_a_waiting_story_in_a_terminal() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep"]),
        QUESTIONS_EXIT,
    );
    let answers = run_dir(&repo).join("answers.jsonl");
    assert!(!answers.exists());
    let binary = env!("CARGO_BIN_EXE_git-ralph");
    let Some(tmux) = crate::harness::tmux::Tmux::start(
        &repo,
        &format!("'{binary}' watch {CHANGE}; echo watch-exited-$?; sleep 30"),
    ) else {
        return;
    };
    tmux.wait_for("asks: Should the farewell");
    tmux.keys(&["a"]);
    let screen = tmux.wait_for("answer story 2. Farewell");
    assert!(screen.contains("Enter records"), "{screen}");
    // Enter on nothing typed is refused in the box; nothing is written.
    tmux.keys(&["Enter"]);
    tmux.wait_for("the answer is empty");
    assert!(!answers.exists());
    tmux.keys(&["Casual"]);
    tmux.wait_for("> Casual_");
    tmux.keys(&["Enter"]);
    tmux.wait_for("answer recorded for story 2");
    tmux.keys(&["q"]);
    tmux.wait_for("watch-exited-0");

    let given = fs::read_to_string(&answers).expect("answers.jsonl");
    assert_eq!(given.lines().count(), 1, "{given}");
    let line: serde_json::Value = serde_json::from_str(given.trim()).expect("one answer");
    assert_eq!(line["story"], "2");
    assert_eq!(line["attempt"], 1);
    assert_eq!(line["text"], "Casual");
    let json = status_json(&repo);
    assert_eq!(json["waiting"][0]["answered"], true, "{json}");
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}
