//! The pages of `git ralph serve` in a real browser: headless Chromium
//! (see `harness::browser`) on a live run. It sees a story turn done and
//! the run end without reloading, the live diff of the attempt at work, a
//! page that goes on after the server is restarted, and nothing without
//! the token; at a phone's width and a desk's, judged by the text in the
//! DOM. Skipped, with a note, where Chromium is not installed.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::browser::{Browser, DESKTOP, PHONE};
use crate::harness::story_run::*;
use crate::harness::web::*;
use crate::harness::*;
use crate::serve::waiting_script;

/// Whether `story` shows as done on the run page.
fn done_on_page(browser: &Browser, story: &str) -> bool {
    browser.run(&format!(
        "var s = document.querySelector('[data-story=\"{story}\"]'); return !!s && s.dataset.done === 'true';"
    )) == serde_json::Value::Bool(true)
}

/// Whether the page has been loaded again since `mark` was left in it.
fn still_marked(browser: &Browser) -> bool {
    browser.run("return window.__ralph_mark === 42;") == serde_json::Value::Bool(true)
}

/// What the page says of its connection: `live`, or that it is trying again.
fn live_says(browser: &Browser) -> String {
    browser
        .run("var l = document.getElementById('live'); return l ? l.textContent : '';")
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn no_sideways_scroll(browser: &Browser, page: &str) {
    let fits = browser.run("return document.documentElement.scrollWidth <= window.innerWidth;");
    assert_eq!(
        fits,
        serde_json::Value::Bool(true),
        "{page} scrolls sideways"
    );
}

#[test]
fn issue_40_a_browser_follows_a_live_run_across_a_server_restart() {
    let Some(browser) = Browser::start(DESKTOP) else {
        return;
    };
    let repo = project(TWO_STORIES);
    let agent = waiting_script(&repo);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let served = Served::start(&repo, &[]);
    agent_at_work(&repo, &repo.root, "1", 1, "hello.txt");

    browser.goto(&served.url);
    browser.wait_for("the run in the list", |text| {
        text.contains("greet") && text.contains("running")
    });
    browser.goto(&format!("{}/runs/greet", served.base));
    browser.wait_for("story 1 at work", |text| {
        text.contains("1. Greeting") && text.contains("at work")
    });
    browser.run("window.__ralph_mark = 42; return true;");
    release(&go_file(&repo, "go-1"));
    wait_until("story 1 shows done", Duration::from_secs(60), || {
        done_on_page(&browser, "1")
    });
    assert!(still_marked(&browser), "the page was reloaded to show it");

    // The attempt at work: its output and its live diff.
    agent_at_work(&repo, &repo.root, "2", 1, "bye.txt");
    browser.goto(&format!("{}/runs/greet/attempts/2/1", served.base));
    browser.wait_for("the live diff and the output", |text| {
        text.contains("+++ b/bye.txt")
            && text.contains("+words of story 2")
            && text.contains("working on story 2")
    });
    browser.goto(&format!("{}/runs/greet", served.base));
    browser.wait_for("the run page", |text| text.contains("2. Farewell"));
    browser.run("window.__ralph_mark = 42; return true;");

    // The server goes and comes back on its port, with the token it kept.
    let port = served.addr.port();
    served.process.signal(Signal::SIGTERM);
    served.process.wait(Duration::from_secs(30));
    wait_until("the page notices", Duration::from_secs(60), || {
        live_says(&browser) != "live"
    });
    let mut again = ralph(&repo);
    again.args(["serve", "--bind", &format!("127.0.0.1:{port}")]);
    let again = Served::spawn(&repo, again);
    wait_until("the page is back", Duration::from_secs(60), || {
        live_says(&browser) == "live"
    });
    release(&go_file(&repo, "go-2"));
    browser.wait_for("the run's end", |text| {
        text.contains("finished (completed)")
    });
    assert!(done_on_page(&browser, "2"));
    assert!(
        still_marked(&browser),
        "the page was reloaded to show the end"
    );
    assert!(run.wait(Duration::from_secs(60)).status.success());
    drop(again);
}

#[test]
fn issue_40_the_pages_read_on_a_phone_and_a_desk_and_not_without_the_token() {
    let Some(browser) = Browser::start(PHONE) else {
        return;
    };
    let repo = project(TWO_STORIES);
    let agent = waiting_script(&repo);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let served = Served::start(&repo, &[]);
    agent_at_work(&repo, &repo.root, "1", 1, "hello.txt");
    browser.goto(&served.url);

    let run_page = format!("{}/runs/greet", served.base);
    let attempt_page = format!("{}/runs/greet/attempts/1/1", served.base);
    for (size, width) in [(PHONE, "phone"), (DESKTOP, "desktop")] {
        browser.resize(size);
        browser.goto(&run_page);
        let text = browser.wait_for("the run page", |text| text.contains("Farewell"));
        for shown in [
            "greet",
            "running",
            "loop alive",
            "0/2 stories done",
            "1. Greeting",
            "2. Farewell",
            "0/1 tasks",
            "at work",
            "#1",
            "Stop the run",
            "totals",
        ] {
            assert!(
                text.contains(shown),
                "{width}: {shown:?} missing from the run page:\n{text}"
            );
        }
        no_sideways_scroll(&browser, &format!("the run page on a {width}"));
        browser.screenshot(&format!("run-{width}"));

        browser.goto(&attempt_page);
        let text = browser.wait_for("the attempt page", |text| text.contains("+++ b/hello.txt"));
        for shown in [
            "Story 1 · attempt 1",
            "running",
            "Prompt",
            "Transcript",
            "working on story 1",
            "Diff",
            "+words of story 1",
            "They run once the agent is done.",
        ] {
            assert!(
                text.contains(shown),
                "{width}: {shown:?} missing from the attempt page:\n{text}"
            );
        }
        no_sideways_scroll(&browser, &format!("the attempt page on a {width}"));
        browser.screenshot(&format!("attempt-{width}"));
    }

    browser.delete_cookies();
    browser.goto(&run_page);
    let text = browser.wait_for("the refusal", |text| text.contains("401"));
    assert!(text.contains("needs the token"), "{text}");
    assert!(!text.contains("Greeting"), "the run leaked: {text}");

    release(&go_file(&repo, "go-1"));
    release(&go_file(&repo, "go-2"));
    assert!(run.wait(Duration::from_secs(60)).status.success());
}
