//! The rules every request to `git ralph serve` is held to, through the
//! real binary: one rule on where an action may come from, for programs
//! and pages alike; a token renewed from another terminal reaching the
//! server already running; an action's body bounded in time and size as
//! its head is; and pages that say what is so (a running attempt's time,
//! a finished run with nothing to stop).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::story_run::*;
use crate::harness::web::*;
use crate::harness::*;
use crate::questions_e2e::{QUESTIONS_EXIT, asking_agent};
use crate::serve::{shown, waiting_script};

const GOOD: &str = "confirm=answer&story=2&text=casual";

#[test]
fn issue_47_an_action_from_another_site_is_refused_whatever_token_it_carries() {
    let repo = independent_project();
    let agent = asking_agent(&repo);
    assert_exit(
        &start(&repo, &agent, &["--on-finish", "keep"]),
        QUESTIONS_EXIT,
    );
    let answers = run_dir(&repo).join("answers.jsonl");
    let served = Served::start(&repo, &[]);
    let (cookie, bearer) = (served.cookie(), served.bearer());
    let own = format!("Origin: {}", served.base);
    let refused: [(&str, Vec<&str>); 7] = [
        (
            "the bearer token from a foreign origin",
            vec![&bearer, "Origin: http://evil.example"],
        ),
        (
            "the bearer token from a cross-site page",
            vec![&bearer, "Sec-Fetch-Site: cross-site"],
        ),
        (
            "the cookie from a foreign origin",
            vec![&cookie, "Origin: http://evil.example"],
        ),
        (
            "the cookie from a page of no origin",
            vec![&cookie, "Origin: null"],
        ),
        (
            "the cookie from a cross-site page of no origin",
            vec![&cookie, "Origin: null", "Sec-Fetch-Site: cross-site"],
        ),
        (
            "the cookie with our origin from a cross-site page",
            vec![&cookie, &own, "Sec-Fetch-Site: cross-site"],
        ),
        ("the cookie saying nothing", vec![&cookie]),
    ];
    for (what, headers) in refused {
        let reply = served.post("/runs/greet/answer", &headers, GOOD);
        assert_eq!(reply.status, 403, "{what}: {reply:?}");
        assert!(!answers.exists(), "{what} recorded an answer");
    }
    // A browser's own form under the page's referrer policy.
    let page = served.get("/runs/greet");
    assert_eq!(page.header("referrer-policy"), Some("same-origin"));
    let reply = served.post(
        "/runs/greet/answer",
        &[&cookie, "Origin: null", "Sec-Fetch-Site: same-origin"],
        GOOD,
    );
    assert_eq!(reply.status, 303, "{reply:?}");
    assert!(answers.exists(), "the answer is recorded");
    assert_eq!(repo.status_porcelain(), "");
}

#[test]
fn issue_47_a_new_token_reaches_the_server_already_running() {
    let repo = project(TWO_STORIES);
    let running = Served::start(&repo, &[]);
    let old = running.token.clone();
    assert_eq!(running.get("/").status, 200);
    let renewed = Served::start(&repo, &["--new-token"]);
    assert_ne!(renewed.token, old);

    let old_cookie = format!("Cookie: ralph-token-{}={old}", running.addr.port());
    let new_cookie = format!(
        "Cookie: ralph-token-{}={}",
        running.addr.port(),
        renewed.token
    );
    assert_eq!(
        running.get_with("/", &[&old_cookie]).status,
        401,
        "the running server still takes the old token"
    );
    assert_eq!(running.get("/").status, 401, "the old bearer token");
    assert_eq!(
        running.get_with("/", &[&new_cookie]).status,
        200,
        "the running server refuses the new token"
    );
    let new_bearer = format!("Authorization: Bearer {}", renewed.token);
    assert_eq!(running.get_with("/", &[&new_bearer]).status, 200);
    let first_visit = running.get_with(&format!("/?token={}", renewed.token), &[]);
    assert_eq!(first_visit.status, 303, "{first_visit:?}");
}

/// Sends `request` and reads until the server closes the connection;
/// `None` when it neither answers nor closes within 60 s.
fn answered_and_closed(addr: std::net::SocketAddr, request: &[u8]) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).expect("the server accepts connections");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    let _ = stream.write_all(request);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    (!raw.is_empty()).then(|| Reply::parse(&raw).status)
}

#[test]
fn issue_47_an_action_body_is_bounded_in_time_and_size_as_its_head_is() {
    let repo = project(TWO_STORIES);
    let served = Served::start(&repo, &[]);
    let head = |framing: &str| {
        format!(
            "POST /runs/greet/stop HTTP/1.1\r\nHost: {}\r\n{}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n",
            served.addr,
            served.bearer()
        )
    };
    let never_sent = format!("{}ffffffff\r\nconfirm=", head("Transfer-Encoding: chunked"));
    assert_eq!(
        answered_and_closed(served.addr, never_sent.as_bytes()),
        Some(408),
        "a chunk announced and never sent"
    );
    let short = format!("{}confirm=", head("Content-Length: 100"));
    assert_eq!(
        answered_and_closed(served.addr, short.as_bytes()),
        Some(408),
        "a Content-Length that never arrives"
    );
    let mut huge = head("Transfer-Encoding: chunked");
    for _ in 0..8 {
        huge.push_str(&format!("400\r\n{}\r\n", "a".repeat(0x400)));
    }
    assert_eq!(
        answered_and_closed(served.addr, huge.as_bytes()),
        Some(413),
        "a chunked body larger than any form"
    );
    // The server goes on answering.
    assert_eq!(served.get("/").status, 200);
}

#[test]
fn issue_47_a_running_attempt_shows_its_time_and_an_ended_run_offers_no_stop() {
    let repo = project(TWO_STORIES);
    let agent = waiting_script(&repo);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let served = Served::start(&repo, &[]);
    agent_at_work(&repo, &repo.root, "1", 1, "hello.txt");
    wait_until("a second at work", Duration::from_secs(60), || {
        let attempt = shown(&served.get("/runs/greet/attempts/1/1").body);
        attempt.contains("at work for ") && !attempt.contains("at work for 0.0s")
    });
    let page = shown(&served.get("/runs/greet").body);
    // The attempt's line: from its number to its cost.
    let item = page
        .split_once("#1 ")
        .and_then(|(_, rest)| rest.split_once('$'))
        .map(|(item, _)| item)
        .unwrap_or_else(|| panic!("no attempt on the run page:\n{page}"));
    assert!(item.contains("at work for "), "{item}");
    assert!(!item.contains("0.0s"), "{item}");

    let confirm = served.get("/runs/greet/stop");
    assert_eq!(confirm.status, 200, "{confirm:?}");
    assert!(shown(&confirm.body).contains("Stop the run?"));

    release(&go_file(&repo, "go-1"));
    release(&go_file(&repo, "go-2"));
    assert!(run.wait(Duration::from_secs(60)).status.success());
    let ended = served.get("/runs/greet/stop");
    let text = shown(&ended.body);
    assert_eq!(ended.status, 409, "{text}");
    assert!(text.contains("has ended"), "{text}");
    assert!(!text.contains("Stop the run?"), "{text}");
    assert!(!ended.body.contains("<form"), "{}", ended.body);
}
