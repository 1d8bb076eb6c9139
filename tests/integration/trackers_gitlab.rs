//! Issue 49, end to end through the real binary: the open issues of a
//! GitLab project as the run's stories (`--source gitlab`), read from a
//! local stand-in of GitLab's REST API (v4) that answers with the shapes
//! its documentation gives: pages of issues with `X-Next-Page`, "blocks"
//! links per issue, notes and state events. The token comes from
//! GITLAB_TOKEN, the address from GITLAB_HOST; neither is ever written.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::harness::api::{
    Reply, Request, StandIn, assert_refused_before_writing, assert_secret_nowhere,
    nothing_listening,
};
use crate::harness::story_commits_of;
use crate::harness::{
    TestRepo, assert_exit, describe, ralph, ralph_with_fake, recorded_prompt, run, script,
};

const CHANGE: &str = "gitlab";
const TOKEN: &str = "glpat-secret-token-for-the-test";
const PROJECT: &str = "group/app";

/// An agent that ticks its story's boxes, changes a file and says done.
const WORKER: &str =
    "format codex\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";

/// One GitLab issue as the list endpoint gives it.
fn issue(iid: u64, title: &str, description: &str, labels: &[&str]) -> Value {
    json!({
        "id": 1000 + iid, "iid": iid, "project_id": 42, "title": title,
        "description": description, "state": "opened", "labels": labels,
        "milestone": {"id": 7, "iid": 1, "title": "v1", "state": "active"},
        "issue_type": "issue", "type": "ISSUE",
        "web_url": format!("https://gitlab.example.com/{PROJECT}/-/issues/{iid}"),
        "references": {"short": format!("#{iid}"), "full": format!("{PROJECT}#{iid}")},
        "created_at": "2026-01-01T00:00:00.000Z",
    })
}

/// A link of `links` on an issue: `link_type` as seen from that issue.
fn link(iid: u64, link_type: &str) -> Value {
    json!({"id": 1000 + iid, "iid": iid, "project_id": 42, "title": "t", "state": "opened",
           "issue_link_id": 9, "link_type": link_type})
}

/// A stand-in GitLab with `issues` (served 100 a page, newest first, as
/// GitLab orders them by default) and `links` per iid, that takes notes
/// and state events.
fn gitlab(issues: Vec<Value>, links: BTreeMap<u64, Vec<Value>>) -> StandIn {
    gitlab_with_notes(issues, links, BTreeMap::new())
}

/// [`gitlab`] whose issues also hold `notes` per iid, served as GitLab
/// lists them: newest first unless `sort=asc`, at most 100 a page, with
/// the notes the run posts among them.
fn gitlab_with_notes(
    issues: Vec<Value>,
    links: BTreeMap<u64, Vec<Value>>,
    notes: BTreeMap<u64, Vec<Value>>,
) -> StandIn {
    let notes = Arc::new(Mutex::new(notes));
    StandIn::serve(move |request: &Request| {
        if request.header("PRIVATE-TOKEN") != Some(TOKEN) {
            return Reply::status(401, json!({"message": "401 Unauthorized"}));
        }
        let project = "/api/v4/projects/group%2Fapp";
        let path = request.path();
        let Some(rest) = path.strip_prefix(project) else {
            return Reply::status(404, json!({"message": "404 Project Not Found"}));
        };
        match (request.method.as_str(), rest) {
            ("GET", "/issues") => {
                let mut newest_first = issues.clone();
                newest_first.reverse();
                page_of(&newest_first, request)
            }
            ("GET", rest) if rest.ends_with("/links") => {
                let iid: u64 = rest
                    .trim_start_matches("/issues/")
                    .trim_end_matches("/links")
                    .parse()
                    .unwrap_or(0);
                Reply::json(Value::from(links.get(&iid).cloned().unwrap_or_default()))
            }
            ("GET", rest) if rest.ends_with("/notes") => {
                let iid = iid_of(rest, "/notes");
                let mut listed = notes.lock().unwrap().get(&iid).cloned().unwrap_or_default();
                listed.sort_by_key(|note| note["created_at"].as_str().map(str::to_owned));
                if request.query("sort").as_deref() != Some("asc") {
                    listed.reverse();
                }
                page_of(&listed, request)
            }
            ("POST", rest) if rest.ends_with("/notes") => {
                let posted = json!({"id": 1, "body": request.json()["body"], "system": false,
                    "author": {"id": 1, "username": "ralph-bot"},
                    "created_at": "2099-01-01T00:00:00.000Z"});
                let iid = iid_of(rest, "/notes");
                notes
                    .lock()
                    .unwrap()
                    .entry(iid)
                    .or_default()
                    .push(posted.clone());
                Reply::status(201, posted)
            }
            ("PUT", rest) if rest.starts_with("/issues/") => {
                Reply::json(json!({"iid": 1, "state": "closed"}))
            }
            _ => Reply::status(404, json!({"message": "404 Not found"})),
        }
    })
}

fn iid_of(rest: &str, tail: &str) -> u64 {
    rest.trim_start_matches("/issues/")
        .trim_end_matches(tail)
        .parse()
        .unwrap_or(0)
}

/// One page of `items`, in the order given, as GitLab pages them: at most
/// 100 a page whatever `per_page` asks.
fn page_of(items: &[Value], request: &Request) -> Reply {
    let per_page: usize = request
        .query("per_page")
        .and_then(|n| n.parse().ok())
        .unwrap_or(20)
        .min(100);
    let page: usize = request
        .query("page")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let slice: Vec<Value> = items
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .cloned()
        .collect();
    let next = if page * per_page < items.len() {
        (page + 1).to_string()
    } else {
        String::new()
    };
    Reply::json(Value::from(slice))
        .with_header("X-Page", &page.to_string())
        .with_header("X-Per-Page", &per_page.to_string())
        .with_header("X-Next-Page", &next)
}

/// The three issues of the project: #1 is blocked by #2.
fn three_issues() -> StandIn {
    gitlab(
        vec![
            issue(
                1,
                "Document the greeting",
                "Describe hello.txt in the README.",
                &["ralph"],
            ),
            issue(
                2,
                "Greet the user",
                "Whoever runs the tool should be greeted.\n\n- [ ] Write hello.txt\n- [ ] Print it on start\n",
                &["ralph", "feature"],
            ),
            issue(3, "Fix the typo in the README", "", &["ralph"]),
        ],
        BTreeMap::from([
            (1, vec![link(2, "is_blocked_by")]),
            (2, vec![link(1, "blocks"), link(3, "relates_to")]),
        ]),
    )
}

fn start_command(repo: &TestRepo, host: &str, args: &[&str]) -> Command {
    start_with_agent(repo, host, WORKER, args)
}

fn start_with_agent(repo: &TestRepo, host: &str, agent: &str, args: &[&str]) -> Command {
    let script_path = script(repo, agent);
    let mut cmd = ralph_with_fake(repo, &script_path);
    cmd.args([
        "start",
        CHANGE,
        "--agent-command",
        crate::harness::fake_agent_path(),
    ])
    .args(["--on-finish", "keep", "--source", "gitlab"])
    .args(if args.contains(&"--project") {
        &[][..]
    } else {
        &["--project", PROJECT][..]
    })
    .args(args)
    .env("GITLAB_HOST", host)
    .env("GITLAB_TOKEN", TOKEN)
    .env("FAKE_AGENT_TASKS", repo.run_dir(CHANGE).join("tasks.md"));
    cmd
}

#[test]
fn issue_49_a_run_over_gitlab_issues_follows_their_blocks_links_and_comments_and_closes_when_asked()
{
    let repo = TestRepo::new();
    let api = three_issues();
    let output = run(&mut start_command(
        &repo,
        &api.base,
        &[
            "--label",
            "ralph",
            "--milestone",
            "v1",
            "--comment",
            "--close",
        ],
    ));
    assert_exit(&output, 0);
    // #1 waits for #2; otherwise oldest first.
    assert_eq!(
        story_commits_of(&repo, CHANGE),
        [
            "ralph(gitlab): story 2 Greet the user",
            "ralph(gitlab): story 1 Document the greeting",
            "ralph(gitlab): story 3 Fix the typo in the README",
        ],
        "{}",
        describe(&output)
    );
    let requests = api.requests();
    let list = requests
        .iter()
        .find(|request| request.path().ends_with("/issues"))
        .expect("the issues were listed");
    assert_eq!(list.query("state").as_deref(), Some("opened"));
    assert_eq!(list.query("labels").as_deref(), Some("ralph"));
    assert_eq!(list.query("milestone").as_deref(), Some("v1"));
    // One note per finished issue, naming its checkpoint, then its close.
    let posted: Vec<(String, String)> = requests
        .iter()
        .filter(|request| request.method != "GET")
        .map(|request| (request.method.clone(), request.path().to_owned()))
        .collect();
    let issue = |iid: u64, tail: &str| format!("/api/v4/projects/group%2Fapp/issues/{iid}{tail}");
    assert_eq!(
        posted,
        [
            ("POST".to_owned(), issue(2, "/notes")),
            ("PUT".to_owned(), issue(2, "")),
            ("POST".to_owned(), issue(1, "/notes")),
            ("PUT".to_owned(), issue(1, "")),
            ("POST".to_owned(), issue(3, "/notes")),
            ("PUT".to_owned(), issue(3, "")),
        ]
    );
    let note = requests
        .iter()
        .find(|request| request.method == "POST")
        .expect("a note")
        .json();
    let checkpoint = repo.git(&["log", "--format=%H", "-1", &format!("ralph/{CHANGE}~2")]);
    let body = note["body"].as_str().expect("a body");
    assert!(body.contains(&checkpoint.trim()[..10]), "{body}");
    assert!(body.contains("- [x] Write hello.txt"), "{body}");
    let closed = requests
        .iter()
        .find(|request| request.method == "PUT")
        .expect("a close")
        .json();
    assert_eq!(closed, json!({"state_event": "close"}));
    assert_eq!(repo.status_json(CHANGE)["source"], "gitlab");
    assert_secret_nowhere(&repo, &output, TOKEN);
    repo.assert_fsck_clean();
}

#[test]
fn issue_49_gitlab_issues_are_left_open_and_unremarked_unless_asked() {
    let repo = TestRepo::new();
    let api = three_issues();
    let output = run(&mut start_command(&repo, &api.base, &[]));
    assert_exit(&output, 0);
    assert_eq!(
        story_commits_of(&repo, CHANGE).len(),
        3,
        "{}",
        describe(&output)
    );
    let written: Vec<String> = api
        .requests()
        .iter()
        .filter(|request| request.method != "GET")
        .map(|request| request.target.clone())
        .collect();
    assert!(written.is_empty(), "{written:?}");
}

#[test]
fn issue_49_gitlab_issues_past_250_are_read_page_by_page() {
    let repo = TestRepo::new();
    let issues: Vec<Value> = (1..=260)
        .map(|iid| issue(iid, &format!("Issue number {iid}"), "", &["ralph"]))
        .collect();
    // The oldest waits for the newest.
    let api = gitlab(
        issues,
        BTreeMap::from([(1, vec![link(260, "is_blocked_by")])]),
    );
    let output = run(ralph(&repo)
        .args(["start", CHANGE, "--source", "gitlab", "--project", PROJECT])
        .args(["--dry-run", "--json", "--agent-command", "true"])
        .env("GITLAB_HOST", &api.base)
        .env("GITLAB_TOKEN", TOKEN));
    assert_exit(&output, 0);
    let preview: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let ids: Vec<&str> = preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|story| story["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 260, "{}", describe(&output));
    assert_eq!(ids[0], "2");
    assert_eq!(&ids[258..], ["260", "1"]);
    let pages: Vec<String> = api
        .requests()
        .iter()
        .filter(|request| request.path().ends_with("/issues"))
        .filter_map(|request| request.query("page"))
        .collect();
    assert_eq!(pages, ["1", "2", "3"]);
    assert!(!repo.run_dir(CHANGE).exists());
}

#[test]
fn issue_49_a_bad_gitlab_token_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = three_issues();
    let output = run(start_command(&repo, &api.base, &[]).env("GITLAB_TOKEN", "glpat-wrong"));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "GitLab refused the token in GITLAB_TOKEN",
        TOKEN,
    );
}

#[test]
fn issue_49_a_missing_gitlab_project_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = three_issues();
    let output = run(&mut start_command(
        &repo,
        &api.base,
        &["--project", "group/gone"],
    ));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "GitLab has no project 'group/gone'",
        TOKEN,
    );
}

#[test]
fn issue_49_a_gitlab_rate_limit_ends_clearly_with_its_wait_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = StandIn::serve(|_: &Request| {
        Reply::status(429, json!({"message": "429 Too Many Requests"}))
            .with_header("Retry-After", "37")
    });
    let output = run(&mut start_command(&repo, &api.base, &[]));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "GitLab is limiting the rate of requests: try again in 37s",
        TOKEN,
    );
}

#[test]
fn issue_49_an_unreachable_gitlab_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let host = nothing_listening();
    let output = run(&mut start_command(&repo, &host, &[]));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        &format!("could not reach GitLab at {host}"),
        TOKEN,
    );
}

#[test]
fn issue_49_gitlab_without_a_token_says_which_variable_to_set() {
    let repo = TestRepo::new();
    let api = three_issues();
    let output = run(start_command(&repo, &api.base, &[])
        .env_remove("GITLAB_TOKEN")
        .env_remove("CI_JOB_TOKEN"));
    assert_refused_before_writing(&repo, CHANGE, &output, "GITLAB_TOKEN", TOKEN);
}

/// A note on an issue as GitLab lists it.
fn note(id: u64, body: &str, created_at: &str, system: bool) -> Value {
    json!({"id": id, "body": body, "system": system, "noteable_type": "Issue",
           "author": {"id": 7, "username": "ada", "name": "Ada"},
           "created_at": created_at, "updated_at": created_at})
}

#[test]
fn issue_49_an_answer_note_on_a_gitlab_issue_answers_its_question_first_answer_first() {
    let repo = TestRepo::new();
    // Past a page of chatter: an answer from before the question, the
    // first answer given, a later one, and a system note.
    let mut notes: Vec<Value> = (1..=120)
        .map(|id| note(id, "Looking into it", "2099-01-01T00:00:00.000Z", false))
        .collect();
    notes.push(note(
        200,
        "/answer an old reply",
        "2020-01-01T00:00:00.000Z",
        false,
    ));
    notes.push(note(
        201,
        "/answer Keep it British.",
        "2099-01-02T10:00:00.000Z",
        false,
    ));
    notes.push(note(
        202,
        "/answer No, American.",
        "2099-01-03T10:00:00.000Z",
        false,
    ));
    notes.push(note(
        203,
        "changed the description",
        "2099-01-04T10:00:00.000Z",
        true,
    ));
    let api = gitlab_with_notes(
        vec![
            issue(1, "Greet the user", "", &["ralph"]),
            issue(3, "Fix the typo in the README", "", &["ralph"]),
        ],
        BTreeMap::new(),
        BTreeMap::from([(3, notes)]),
    );
    let agent = "format codex\n[story=3 attempt=1]\nfinal Reply /answer yes or /answer no: should the typo fix keep British spelling?\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let output = run(&mut start_with_agent(
        &repo,
        &api.base,
        agent,
        &["--comment"],
    ));
    assert_exit(&output, 0);
    let retry = recorded_prompt(&repo, "3", 2);
    assert!(retry.contains("> Keep it British.\n"), "{retry}");
    let state = repo.run_state(CHANGE);
    let story3 = state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|story| story["id"] == "3")
        .expect("story 3")
        .clone();
    assert_eq!(story3["attempts"][0]["outcome"], "question");
    assert_eq!(story3["attempts"][0]["answer"], "Keep it British.");
    assert_eq!(story3["attempts"][1]["outcome"], "complete");
    let answers = std::fs::read_to_string(repo.run_dir(CHANGE).join("answers.jsonl"))
        .expect("the answer is recorded");
    assert_eq!(answers.lines().count(), 1, "{answers}");
    assert!(
        answers.contains(r#""story":"3","attempt":1,"text":"Keep it British.""#),
        "{answers}"
    );
    // The notes were read page by page, past the first hundred.
    let pages: Vec<String> = api
        .requests()
        .iter()
        .filter(|request| request.method == "GET" && request.path().ends_with("/3/notes"))
        .filter_map(|request| request.query("page"))
        .collect();
    assert!(pages.contains(&"2".to_owned()), "{pages:?}");
    assert_secret_nowhere(&repo, &output, TOKEN);
    repo.assert_fsck_clean();
}

#[test]
fn issue_49_a_merge_request_of_a_run_over_gitlab_issues_closes_the_finished_ones() {
    use crate::harness::forge::FakeForge;
    let repo = TestRepo::new();
    let bare = repo.dir.path().join("gitlab.git");
    repo.git_at(
        repo.dir.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let url = "https://gitlab.example.com/group/app.git";
    repo.git(&["remote", "add", "origin", url]);
    repo.git(&["config", &format!("url.{}.insteadOf", bare.display()), url]);
    let api = three_issues();
    // #2 and #1 are done; #3 fails, stays open, and the run stops.
    let agent = "format codex\n[story=3]\npromise FAILED: cannot do it\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let output = run(&mut start_with_agent(
        &repo,
        &api.base,
        agent,
        &["--max-retries", "0"],
    ));
    assert_exit(&output, 3);
    let forge = FakeForge::new(&repo);
    let mut finish = ralph(&repo);
    finish.args(["finish", CHANGE, "--pr"]);
    forge.on_path(&mut finish);
    let output = run(&mut finish);
    assert_exit(&output, 0);
    assert_eq!(forge.verbs(), ["glab mr list", "glab mr create"]);
    let calls = forge.calls();
    let description = calls[1]
        .args
        .iter()
        .find_map(|arg| arg.strip_prefix("--description="))
        .expect("a description");
    let closes: Vec<&str> = description
        .lines()
        .filter(|line| line.starts_with("Closes "))
        .collect();
    assert_eq!(
        closes,
        ["Closes group/app#1", "Closes group/app#2"],
        "{description}"
    );
    assert_secret_nowhere(&repo, &output, TOKEN);
}
