//! The actions of `git ralph serve` as a person takes them: headless
//! Chromium (see `harness::browser`) opens the URL `serve` printed,
//! follows the links and presses the buttons, at a phone's width and a
//! desk's; the run really stops, the answer is really recorded, judged by
//! git and the run's record. Skipped, with a note, where Chromium is not
//! installed.

use std::time::Duration;

use crate::harness::browser::{Browser, DESKTOP, PHONE};
use crate::harness::story_run::*;
use crate::harness::web::*;
use crate::harness::*;
use crate::questions_e2e::{QUESTION, QUESTIONS_EXIT, asking_agent};
use crate::serve::waiting_script;

const ANSWER: &str = "Casual: a plain \"bye\" & nothing more.";

/// A page of no site of the server's: `html` as a `data:` URL.
fn other_site(html: &str) -> String {
    let mut url = "data:text/html;charset=utf-8,".to_owned();
    for byte in html.bytes() {
        match byte {
            b if b.is_ascii_alphanumeric() => url.push(b as char),
            b => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

#[test]
fn issue_47_stop_clicked_in_a_browser_stops_the_run() {
    let Some(browser) = Browser::start(PHONE) else {
        return;
    };
    for (size, width) in [(PHONE, "phone"), (DESKTOP, "desktop")] {
        browser.resize(size);
        let repo = project(TWO_STORIES);
        let agent = waiting_script(&repo);
        let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
        let served = Served::start(&repo, &[]);
        agent_at_work(&repo, &repo.root, "1", 1, "hello.txt");

        browser.goto(&served.url);
        // Another site's page sends the same form from the browser that
        // holds the cookie: refused, and the run goes on.
        browser.goto(&other_site(&format!(
            "<form method=\"post\" action=\"{}/runs/greet/stop\">\
             <input type=\"hidden\" name=\"confirm\" value=\"stop\">\
             <button id=\"go\" type=\"submit\">Win a prize</button></form>",
            served.base
        )));
        browser.click("#go");
        let refused = browser.wait_for("the refusal", |text| {
            text.contains("401") || text.contains("403")
        });
        assert!(!refused.contains("Greeting"), "{width}: {refused}");
        assert!(
            alive(run.pid()),
            "{width}: another site's page stopped the run"
        );

        browser.goto(&format!("{}/runs/greet", served.base));
        browser.wait_for("the run at work", |text| text.contains("at work"));
        browser.click("a.button.danger");
        browser.wait_for("the confirmation", |text| text.contains("Stop the run?"));
        browser.screenshot(&format!("stop-{width}"));
        browser.click("form.action button[type=submit]");
        let run_page = format!("{}/runs/greet", served.base);
        wait_until(
            &format!("{width}: the browser leaves the confirmation"),
            Duration::from_secs(60),
            || browser.location() == run_page || browser.text().contains("403"),
        );
        let text = browser.text();
        assert!(
            !text.contains("403"),
            "{width}: the click was refused:\n{text}"
        );
        let ended = run.wait(Duration::from_secs(60));
        assert_eq!(ended.status.code(), Some(130), "{width}: {}", ended.stderr);
        browser.wait_for("the stopped run", |text| text.contains("stopped ("));

        let status = status_json(&repo);
        assert_eq!(status["state"], "stopped", "{width}: {status}");
        assert_eq!(status["reason"], "stopped", "{width}: {status}");
        assert_eq!(attempts_of(&state(&repo), "1")[0].0, "interrupted");
        assert!(
            has_ref(&repo, &format!("{NS}/attempts/1/1")),
            "{width}: the stopped attempt's work is kept"
        );
        assert_eq!(
            repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
            "ralph/greet",
            "{width}: the run's branch stays checked out"
        );
        assert_eq!(
            repo.status_porcelain(),
            "",
            "{width}: the worktree is reverted"
        );
        assert_eq!(
            repo.git(&["worktree", "list"]).lines().count(),
            1,
            "{width}: no worktree is left behind"
        );
        repo.assert_fsck_clean();
    }
}

#[test]
fn issue_47_an_answer_typed_in_a_browser_is_recorded() {
    let Some(browser) = Browser::start(DESKTOP) else {
        return;
    };
    for (size, width) in [(PHONE, "phone"), (DESKTOP, "desktop")] {
        browser.resize(size);
        let repo = independent_project();
        let agent = asking_agent(&repo);
        assert_exit(
            &start(&repo, &agent, &["--on-finish", "keep"]),
            QUESTIONS_EXIT,
        );
        let answers = run_dir(&repo).join("answers.jsonl");
        let served = Served::start(&repo, &[]);

        browser.goto(&served.url);
        browser.goto(&format!("{}/runs/greet", served.base));
        browser.wait_for("the question", |text| text.contains(QUESTION));
        browser.click("a.button[href=\"/runs/greet/answer?story=2\"]");
        browser.wait_for("the answer page", |text| text.contains("Answer story 2?"));
        browser.fill("textarea[name=text]", ANSWER);
        browser.screenshot(&format!("answer-{width}"));
        browser.click("form.action button[type=submit]");
        wait_until(
            &format!("{width}: the answer is recorded"),
            Duration::from_secs(60),
            || answers.exists() || browser.text().contains("403"),
        );
        let line = std::fs::read_to_string(&answers).unwrap_or_else(|_| {
            panic!(
                "{width}: no answer was recorded; the page shows:\n{}",
                browser.text()
            )
        });
        let recorded: serde_json::Value = serde_json::from_str(line.trim()).expect("one answer");
        assert_eq!(recorded["story"], "2", "{width}");
        assert_eq!(recorded["text"], ANSWER, "{width}");
        let waiting = status_json(&repo)["waiting"][0].clone();
        assert_eq!(waiting["answered"], true, "{width}: {waiting}");
        browser.wait_for("the run page again", |text| text.contains("Greeting"));
        assert_eq!(browser.location(), format!("{}/runs/greet", served.base));

        // The run takes the answer up: story 2 is finished on its branch.
        let resumed = start(&repo, &agent, &["--on-finish", "keep"]);
        assert_exit(&resumed, 0);
        assert!(
            saved_prompt(&repo, "2", 2).contains(&format!("> {ANSWER}\n")),
            "{width}: the answer reaches the prompt"
        );
        let trailers = repo.git(&["log", "-1", "--format=%(trailers)", BRANCH]);
        assert!(
            trailers.contains("Ralph-Answered: 1\n"),
            "{width}: {trailers}"
        );
        assert_eq!(repo.status_porcelain(), "");
        repo.assert_fsck_clean();
    }
}
