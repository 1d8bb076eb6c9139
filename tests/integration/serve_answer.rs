//! Answering a parked question from the web view: the "Answer" link beside
//! the question of a waiting story, its page with a form, and the answer
//! posted from it, recorded as `git ralph answer` records it; every bad
//! post refused with a 4xx, writing nothing.

use std::fs;

use crate::harness::story_run::*;
use crate::harness::web::*;
use crate::harness::*;
use crate::questions_e2e::{QUESTION, QUESTIONS_EXIT, asking_agent};
use crate::serve::shown;

const ANSWER: &str = "Casual: a plain \"bye\" on one line & no more.";

/// `text` as a browser posts it in a form.
fn form_encoded(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b' ' => out.push('+'),
            b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn answer_form(story: &str, text: &str) -> String {
    format!(
        "confirm=answer&story={}&text={}",
        form_encoded(story),
        form_encoded(text)
    )
}

#[test]
fn issue_38_a_question_is_answered_from_the_page_as_git_ralph_answer_does() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep"]),
        QUESTIONS_EXIT,
    );
    let waiting = status_json(&repo)["waiting"][0].clone();
    assert_eq!(waiting["story"], "2");
    assert_eq!(waiting["answered"], false, "{waiting}");
    let answers = run_dir(&repo).join("answers.jsonl");
    let served = Served::start(&repo, &[]);

    let run_page = served.get("/runs/greet");
    assert_eq!(run_page.status, 200, "{run_page:?}");
    assert!(
        run_page
            .body
            .contains("href=\"/runs/greet/answer?story=2\""),
        "no Answer link beside the question: {}",
        run_page.body
    );
    let page = served.get("/runs/greet/answer?story=2");
    assert_eq!(page.status, 200, "{page:?}");
    let text = shown(&page.body);
    assert!(text.contains("Answer story 2?"), "{text}");
    assert!(
        text.contains(QUESTION),
        "the page shows the question: {text}"
    );
    for field in ["name=\"story\"", "name=\"text\"", "value=\"answer\""] {
        assert!(page.body.contains(field), "{field}: {}", page.body);
    }
    let unknown_page = served.get("/runs/greet/answer?story=9");
    assert_eq!(unknown_page.status, 404, "{unknown_page:?}");

    let origin = format!("Origin: {}", served.base);
    let good = answer_form("2", ANSWER);
    let refused = [
        (
            "no token",
            served.post("/runs/greet/answer", &[&origin], &good),
            401,
        ),
        (
            "a foreign origin",
            served.post(
                "/runs/greet/answer",
                &[&served.cookie(), "Origin: http://evil.example"],
                &good,
            ),
            403,
        ),
        (
            "no origin",
            served.post("/runs/greet/answer", &[&served.cookie()], &good),
            403,
        ),
        (
            "not confirmed",
            served.post(
                "/runs/greet/answer",
                &[&served.bearer()],
                &good.replace("confirm=answer", "confirm=stop"),
            ),
            400,
        ),
        (
            "an unknown story",
            served.post(
                "/runs/greet/answer",
                &[&served.bearer()],
                &answer_form("9", ANSWER),
            ),
            404,
        ),
        (
            "a story that waits for nothing",
            served.post(
                "/runs/greet/answer",
                &[&served.bearer()],
                &answer_form("1", ANSWER),
            ),
            409,
        ),
        (
            "an empty text",
            served.post(
                "/runs/greet/answer",
                &[&served.bearer()],
                &answer_form("2", "  \n"),
            ),
            400,
        ),
        (
            "no text",
            served.post(
                "/runs/greet/answer",
                &[&served.bearer()],
                "confirm=answer&story=2",
            ),
            400,
        ),
        (
            "no story",
            served.post(
                "/runs/greet/answer",
                &[&served.bearer()],
                "confirm=answer&text=yes",
            ),
            400,
        ),
    ];
    for (what, reply, status) in refused {
        assert_eq!(reply.status, status, "{what}: {reply:?}");
        assert!(!answers.exists(), "{what} wrote an answer");
    }

    let answered = served.post("/runs/greet/answer", &[&served.cookie(), &origin], &good);
    assert_eq!(answered.status, 303, "{answered:?}");
    assert_eq!(answered.header("location"), Some("/runs/greet"));
    let line = fs::read_to_string(&answers).expect("answers.jsonl");
    let recorded: serde_json::Value = serde_json::from_str(line.trim()).expect("one answer");
    assert_eq!(recorded["story"], "2");
    assert_eq!(recorded["attempt"], 1);
    assert_eq!(recorded["text"], ANSWER);
    // Status reads it as it reads an answer from the command line.
    let waiting = status_json(&repo)["waiting"][0].clone();
    assert_eq!(waiting["story"], "2");
    assert_eq!(waiting["answered"], true, "{waiting}");
    // Not taken up yet: the command line replaces it, saying so.
    let again = ralph_cmd(&repo, &["answer", CHANGE, "2", "formal"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stdout(&again).contains(&format!("replacing the earlier answer \"{ANSWER}\"")),
        "{}",
        stdout(&again)
    );
    let lines = fs::read_to_string(&answers).unwrap();
    assert!(lines.starts_with(&line), "{lines}");
    assert_eq!(lines.lines().count(), 2, "{lines}");
    assert_eq!(repo.status_porcelain(), "");
    repo.assert_fsck_clean();
}
