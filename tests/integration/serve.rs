//! `git ralph serve` and `start --serve` through the real binary, spoken to
//! over HTTP with the bytes a test writes: the token, what the pages show
//! (judged against `log` and `show`), the live events, the one action, bad
//! requests of every kind.
//! What the run page records of each attempt is `serve_records`'; the
//! server `start --serve` starts is `serve_start`'s; the pages in a real
//! browser are `serve_browser`'s.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::harness::story_run::*;
use crate::harness::web::*;
use crate::harness::*;

/// A run whose stories each write a file, say so, and wait for the test
/// (`go-<story>` in the test's directory) before they finish.
pub fn waiting_script(repo: &TestRepo) -> PathBuf {
    let mut text = String::new();
    for (story, file) in [("1", "hello.txt"), ("2", "bye.txt")] {
        text.push_str(&format!(
            "[story={story}]\nsay working on story {story}\nwrite {file} words of story {story}\\n\n\
             wait-for {}\ntick-story\npromise COMPLETE\n",
            go_file(repo, &format!("go-{story}")).display()
        ));
    }
    script(repo, &text)
}

/// A finished run of two stories: the first fails once, then passes.
fn finished_run() -> TestRepo {
    let repo = project(TWO_STORIES);
    let agent = second_try(&repo, "say trying <b>hard</b>\npromise FAILED: not yet\n");
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--check", "test -e story-1.txt"],
    );
    assert_exit(&output, 0);
    repo
}

/// Text as a page shows it: tags dropped, entities read.
pub fn shown(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[test]
fn issue_40_serve_answers_only_with_its_token_which_the_browser_keeps_as_a_cookie() {
    let repo = finished_run();
    let served = Served::start(&repo, &[]);
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "not on loopback: {}",
        served.url
    );
    assert_eq!(served.token.len(), 48, "{}", served.url);

    for (what, reply) in [
        ("no token", served.get_with("/runs/greet", &[])),
        (
            "an unknown page, no token",
            served.get_with("/nowhere", &[]),
        ),
        (
            "a wrong bearer token",
            served.get_with("/", &["Authorization: Bearer 0123"]),
        ),
        (
            "a wrong token in the URL",
            served.get_with("/?token=0123", &[]),
        ),
        (
            "a wrong cookie",
            served.get_with(
                "/",
                &[&format!("Cookie: ralph-token-{}=0123", served.addr.port())],
            ),
        ),
    ] {
        assert_eq!(reply.status, 401, "{what}: {reply:?}");
        assert!(
            reply.body.contains("needs the token"),
            "{what}: {}",
            reply.body
        );
        assert!(!reply.body.contains("Greeting"), "{what} leaked the run");
    }

    let first = served.get_with(&format!("/runs/greet?token={}", served.token), &[]);
    assert_eq!(first.status, 303, "{first:?}");
    assert_eq!(first.header("location"), Some("/runs/greet"));
    let cookie = first.header("set-cookie").expect("the token as a cookie");
    for part in ["HttpOnly", "SameSite=Strict", &served.token] {
        assert!(cookie.contains(part), "{cookie}");
    }
    let page = served.get_with("/runs/greet", &[&served.cookie()]);
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("Greeting"), "{}", page.body);
    assert_eq!(page.header("cache-control"), Some("no-store"));
}

#[test]
fn issue_40_the_pages_show_what_log_and_show_read() {
    let repo = finished_run();
    let served = Served::start(&repo, &[]);

    let list = served.get("/");
    assert_eq!(list.status, 200);
    assert!(
        shown(&list.body).contains("finished (completed)"),
        "{}",
        list.body
    );

    let log: serde_json::Value =
        serde_json::from_slice(&ralph_cmd(&repo, &["log", "--json"]).stdout).expect("log --json");
    let run = shown(&served.get("/runs/greet").body);
    for story in log["stories"].as_array().expect("stories") {
        let title = format!(
            "{}. {}",
            story["id"].as_str().unwrap(),
            story["title"].as_str().unwrap()
        );
        assert!(run.contains(&title), "{title} missing from:\n{run}");
        for attempt in story["attempts"].as_array().expect("attempts") {
            let outcome = attempt["outcome"].as_str().unwrap().replace('_', " ");
            assert!(run.contains(&outcome), "{outcome} missing from:\n{run}");
            if let Some(reason) = attempt["reason"].as_str() {
                assert!(run.contains(reason), "{reason} missing from:\n{run}");
            }
        }
    }
    assert!(run.contains("3 attempts"), "{run}");

    let failed = served.get("/runs/greet/attempts/1/1");
    assert_eq!(failed.status, 200);
    let failed = shown(&failed.body);
    assert!(
        failed.contains("trying <b>hard</b>"),
        "the transcript, escaped: {failed}"
    );
    assert!(failed.contains("not yet"), "{failed}");
    let prompt = stdout(&ralph_cmd(&repo, &["show", "1/1", "--prompt"]));
    let first_line = prompt
        .lines()
        .skip_while(|line| !line.contains("── prompt ──"))
        .nth(1)
        .expect("the prompt's first line");
    assert!(
        failed.contains(first_line.trim()),
        "{first_line} missing from:\n{failed}"
    );

    let passed = shown(&served.get("/runs/greet/attempts/1/2").body);
    let diff = stdout(&ralph_cmd(&repo, &["show", "1/2", "--diff"]));
    for line in diff.lines().skip(3).filter(|line| !line.is_empty()) {
        assert!(
            passed.contains(line),
            "diff line {line:?} missing from:\n{passed}"
        );
    }
    assert!(
        passed.contains("✓ test -e story-1.txt"),
        "the check: {passed}"
    );

    let transcript = served.get("/runs/greet/attempts/1/1/transcript");
    assert_eq!(
        transcript.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(
        transcript.body.contains("trying <b>hard</b>"),
        "{}",
        transcript.body
    );
}

#[test]
fn issue_40_a_page_following_a_live_run_is_sent_each_change() {
    let repo = project(TWO_STORIES);
    let agent = waiting_script(&repo);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let served = Served::start(&repo, &[]);
    wait_until("the run began", Duration::from_secs(30), || {
        repo.run_dir(CHANGE).join("state.json").exists()
    });

    let seen = served.events_until("/runs/greet/events", |text| {
        text.contains("data-story=\"1\" data-done=\"false\"") && text.contains("running")
    });
    assert!(seen.starts_with("retry: "), "{seen}");
    release(&go_file(&repo, "go-1"));
    served.events_until("/runs/greet/events", |text| {
        text.contains("data-story=\"1\" data-done=\"true\"")
    });

    served.events_until("/runs/greet/attempts/2/1/events", |text| {
        text.contains("working on story 2")
            && event_data(text, "head")
                .iter()
                .any(|head| head.contains(">running<"))
    });
    release(&go_file(&repo, "go-2"));
    served.events_until("/runs/greet/attempts/2/1/events", |text| {
        event_data(text, "head")
            .iter()
            .any(|head| head.contains(">complete<"))
    });
    let done = run.wait(Duration::from_secs(60));
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn issue_40_a_stop_from_the_page_stops_the_loop_as_q_does() {
    let repo = project(TWO_STORIES);
    let agent = waiting_script(&repo);
    let run = Background::start(&repo, &agent, &["--on-finish", "keep"]);
    let served = Served::start(&repo, &[]);
    agent_at_work(&repo, &repo.root, "1", 1, "hello.txt");

    let confirm = served.get("/runs/greet/stop");
    assert_eq!(confirm.status, 200);
    assert!(
        shown(&confirm.body).contains("Stop the run?"),
        "{}",
        confirm.body
    );

    let origin = format!("Origin: {}", served.base);
    let refused = [
        (
            served.post("/runs/greet/stop", &[&served.cookie()], "confirm=stop"),
            403,
        ),
        (
            served.post(
                "/runs/greet/stop",
                &[&served.cookie(), "Origin: http://evil.example"],
                "confirm=stop",
            ),
            403,
        ),
        (
            served.post("/runs/greet/stop", &[&served.cookie(), &origin], ""),
            400,
        ),
        (
            served.post("/runs/greet/stop", &[&served.bearer()], "confirm=abort"),
            400,
        ),
    ];
    for (reply, status) in refused {
        assert_eq!(reply.status, status, "{reply:?}");
    }
    assert!(alive(run.pid()), "a refused action stopped the run");

    let stopped = served.post(
        "/runs/greet/stop",
        &[&served.cookie(), &origin],
        "confirm=stop",
    );
    assert_eq!(stopped.status, 303, "{stopped:?}");
    assert_eq!(stopped.header("location"), Some("/runs/greet"));
    let ended = run.wait(Duration::from_secs(60));
    assert_eq!(ended.status.code(), Some(130), "{}", ended.stderr);
    let status = status_json(&repo);
    assert_eq!(status["state"], "stopped");
    assert_eq!(status["reason"], "stopped");
    assert_eq!(attempts_of(&state(&repo), "1")[0].0, "interrupted");
    assert!(
        has_ref(&repo, &format!("{NS}/attempts/1/1")),
        "the attempt's work is kept"
    );
    let again = served.post("/runs/greet/stop", &[&served.bearer()], "confirm=stop");
    assert_eq!(again.status, 409, "nothing runs it now: {again:?}");
    repo.assert_fsck_clean();
}

#[test]
fn issue_40_bad_requests_get_a_clear_4xx_change_nothing_and_crash_nothing() {
    let repo = finished_run();
    let served = Served::start(&repo, &[]);
    let before = Untouched::take(&repo);
    let bearer = served.bearer();
    let cookie = served.cookie();
    let origin = format!("Origin: {}", served.base);
    let huge = "x".repeat(100 << 10);
    let many: String = (0..200).map(|n| format!("X-Many-{n}: {n}\r\n")).collect();
    let host = served.addr;
    let cases: Vec<(&str, String, &[u16])> = vec![
        (
            "an unknown page",
            served.request("GET", "/nowhere", &[&bearer], ""),
            &[404],
        ),
        (
            "an unknown run",
            served.request("GET", "/runs/nope", &[&bearer], ""),
            &[404],
        ),
        (
            "a run up the tree",
            served.request("GET", "/runs/..%2F..%2Fetc", &[&bearer], ""),
            &[404],
        ),
        (
            "dots",
            served.request("GET", "/runs/%2e%2e", &[&bearer], ""),
            &[404],
        ),
        (
            "history up the tree",
            served.request("GET", "/runs/history/..%2Fgreet", &[&bearer], ""),
            &[404],
        ),
        (
            "history itself",
            served.request("GET", "/runs/history/..", &[&bearer], ""),
            &[404],
        ),
        (
            "a raw ..",
            served.request(
                "GET",
                "/runs/greet/attempts/1/1/../../../..",
                &[&bearer],
                "",
            ),
            &[404],
        ),
        (
            "a NUL",
            served.request("GET", "/runs/greet%00", &[&bearer], ""),
            &[404],
        ),
        (
            "a bad escape",
            served.request("GET", "/runs/%zz", &[&bearer], ""),
            &[404],
        ),
        (
            "no such attempt",
            served.request("GET", "/runs/greet/attempts/1/99", &[&bearer], ""),
            &[404],
        ),
        (
            "no such transcript",
            served.request(
                "GET",
                "/runs/greet/attempts/1/99/transcript",
                &[&bearer],
                "",
            ),
            &[404],
        ),
        (
            "no such diff",
            served.request("GET", "/runs/greet/attempts/1/99/diff", &[&bearer], ""),
            &[404],
        ),
        (
            "no such feed",
            served.request("GET", "/runs/nope/events", &[&bearer], ""),
            &[404],
        ),
        (
            "no such story",
            served.request("GET", "/runs/greet/attempts/nine/1", &[&bearer], ""),
            &[404],
        ),
        (
            "an attempt past u32",
            served.request("GET", "/runs/greet/attempts/1/99999999999", &[&bearer], ""),
            &[404],
        ),
        (
            "another host",
            format!(
                "GET / HTTP/1.1\r\nHost: evil.example:{}\r\n{bearer}\r\nConnection: close\r\n\r\n",
                host.port()
            ),
            &[400],
        ),
        (
            "no host",
            format!("GET / HTTP/1.0\r\n{bearer}\r\n\r\n"),
            &[400],
        ),
        (
            "a page posted to",
            served.request("POST", "/runs/greet", &[&bearer], "confirm=stop"),
            &[405],
        ),
        (
            "a delete",
            served.request("DELETE", "/runs/greet/stop", &[&bearer], ""),
            &[405],
        ),
        (
            "an abort: not from a browser",
            served.request("POST", "/runs/greet/abort", &[&bearer], "confirm=abort"),
            &[404],
        ),
        (
            "a finish: not from a browser",
            served.request("POST", "/runs/greet/finish", &[&bearer], "confirm=finish"),
            &[404],
        ),
        (
            "a stop without its origin",
            served.request("POST", "/runs/greet/stop", &[&cookie], "confirm=stop"),
            &[403],
        ),
        (
            "a stop of a run not running",
            served.request(
                "POST",
                "/runs/greet/stop",
                &[&cookie, &origin],
                "confirm=stop",
            ),
            &[409],
        ),
        (
            "a stop of a history run",
            served.request(
                "POST",
                "/runs/history/greet-1/stop",
                &[&bearer],
                "confirm=stop",
            ),
            &[404],
        ),
        (
            "a huge form",
            format!(
                "POST /runs/greet/stop HTTP/1.1\r\nHost: {host}\r\n{bearer}\r\nContent-Length: 100000000\r\nConnection: close\r\n\r\nconfirm=stop&{huge}"
            ),
            &[413],
        ),
        (
            "a huge chunked form",
            format!(
                "POST /runs/greet/stop HTTP/1.1\r\nHost: {host}\r\n{bearer}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{huge}\r\n0\r\n\r\n",
                huge.len()
            ),
            &[413],
        ),
        (
            "a huge header",
            format!("GET / HTTP/1.1\r\nHost: {host}\r\n{bearer}\r\nX-Huge: {huge}\r\n\r\n"),
            &[431],
        ),
        (
            "a huge path",
            format!("GET /{huge} HTTP/1.1\r\nHost: {host}\r\n{bearer}\r\n\r\n"),
            &[414, 431],
        ),
        (
            "too many headers",
            format!("GET / HTTP/1.1\r\nHost: {host}\r\n{bearer}\r\n{many}\r\n"),
            &[431],
        ),
        ("a bad request line", "GARBAGE\r\n\r\n".to_owned(), &[400]),
        (
            "binary",
            "\u{0}\u{1}\u{2}\u{3}\u{ff}\r\n\r\n".to_owned(),
            &[400],
        ),
        (
            "a bad length",
            format!(
                "POST /runs/greet/stop HTTP/1.1\r\nHost: {host}\r\n{bearer}\r\nContent-Length: many\r\n\r\n"
            ),
            &[400],
        ),
        (
            "a bad header",
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nNo colon here\r\n\r\n"),
            &[400],
        ),
    ];
    for (what, request, expected) in cases {
        let reply = send_raw(served.addr, request.as_bytes())
            .unwrap_or_else(|| panic!("{what}: no answer at all"));
        assert!(
            expected.contains(&reply.status),
            "{what}: expected {expected:?}, got {} {}",
            reply.status,
            reply.body
        );
    }
    // A client that sends half a request and leaves, and one that says nothing.
    let _ = std::net::TcpStream::connect(served.addr)
        .and_then(|mut s| std::io::Write::write_all(&mut s, b"GET / HTT"));
    let _ = std::net::TcpStream::connect(served.addr);

    let still = served.get("/runs/greet");
    assert_eq!(still.status, 200, "the server still serves: {still:?}");
    let stderr = served.process.stderr_so_far();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("bug"),
        "{stderr}"
    );
    before.assert_still(&repo, "bad requests");
}

#[test]
fn issue_40_the_token_is_kept_for_the_next_server_until_renewed() {
    let repo = finished_run();
    let first = Served::start(&repo, &[]);
    let token = first.token.clone();
    let path = repo.path(".git/ralph/serve-token");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&path).expect("kept").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "only its owner reads the token");
    first.process.signal(Signal::SIGTERM);
    let ended = first.process.wait(Duration::from_secs(30));
    assert!(
        ended.status.success(),
        "Ctrl-C or SIGTERM ends it well: {}",
        ended.stderr
    );

    let again = Served::start(&repo, &[]);
    assert_eq!(again.token, token, "a restarted server keeps the token");
    let renewed = Served::start(&repo, &["--new-token"]);
    assert_ne!(renewed.token, token);
    let old = renewed.get_with(
        "/",
        &[&format!(
            "Cookie: ralph-token-{}={token}",
            renewed.addr.port()
        )],
    );
    assert_eq!(old.status, 401, "the old token is shut out");
    assert_eq!(renewed.get("/").status, 200);
}

#[test]
fn issue_40_serve_on_an_address_others_reach_says_so() {
    let repo = finished_run();
    let mut cmd = ralph(&repo);
    cmd.args(["serve", "--bind", "0.0.0.0:0"]);
    let served = Served::spawn(&repo, cmd);
    assert!(
        served.url.starts_with("http://127.0.0.1:"),
        "{}",
        served.url
    );
    wait_until("the warning", Duration::from_secs(10), || {
        served
            .process
            .stderr_so_far()
            .contains("other machines can reach")
    });
    let request = format!(
        "GET / HTTP/1.1\r\nHost: box.lan:{}\r\n{}\r\nConnection: close\r\n\r\n",
        served.addr.port(),
        served.bearer()
    );
    let reply = send_raw(served.addr, request.as_bytes()).expect("an answer");
    assert_eq!(reply.status, 200, "reached by another name: {reply:?}");
}

#[test]
fn issue_40_a_refused_serve_writes_nothing() {
    let repo = finished_run();
    let before = Untouched::take(&repo);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("its address").port();
    let bind = format!("127.0.0.1:{port}");
    let busy = ralph_cmd(&repo, &["serve", "--bind", &bind]);
    assert_exit(&busy, 1);
    assert!(
        stderr(&busy).contains("could not listen"),
        "{}",
        stderr(&busy)
    );
    assert!(stderr(&busy).contains("hint:"), "{}", stderr(&busy));
    let unknown = ralph_cmd(&repo, &["serve", "nosuch", "--bind", "127.0.0.1:0"]);
    assert_exit(&unknown, 1);
    before.assert_still(&repo, "a refused serve");
    assert!(!repo.path(".git/ralph/serve-token").exists());
}
