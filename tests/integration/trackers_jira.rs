//! Issue 49, end to end through the real binary: the issues of a Jira
//! query as the run's stories (`--source jira`), read from a local
//! stand-in of Jira's REST API (v2) that answers with the shapes its
//! documentation gives: the search endpoint a page at a time with
//! `nextPageToken`, "is blocked by" issue links, subtasks, comments and
//! transitions. The site comes from JIRA_BASE_URL, the credentials from
//! JIRA_EMAIL and JIRA_API_TOKEN.

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
    TestRepo, assert_exit, describe, fake_agent_path, ralph, ralph_with_fake, recorded_prompt, run,
    script,
};

const CHANGE: &str = "jira";
const EMAIL: &str = "me@example.com";
const TOKEN: &str = "jira-secret-token";
/// `Basic` and base64 of `me@example.com:jira-secret-token`.
const AUTHORIZATION: &str = "Basic bWVAZXhhbXBsZS5jb206amlyYS1zZWNyZXQtdG9rZW4=";

const WORKER: &str =
    "format codex\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";

fn issue(key: &str, summary: &str, priority: &str) -> Value {
    json!({
        "id": "10001", "key": key, "self": format!("https://example.atlassian.net/rest/api/2/issue/{key}"),
        "fields": {
            "summary": summary, "description": null, "labels": ["ralph"],
            "priority": {"id": priority, "name": "Medium"},
            "status": {"name": "To Do", "statusCategory": {"key": "new", "name": "To Do"}},
            "issuelinks": [], "subtasks": [],
        }
    })
}

/// APP-1 is blocked by APP-2; APP-2 has subtasks APP-4 (listed, open) and
/// APP-5 (done); APP-3 is of the highest priority.
fn four_issues() -> Vec<Value> {
    let mut one = issue("APP-1", "Document the greeting", "3");
    one["fields"]["issuelinks"] = json!([
        {"id": "1", "type": {"name": "Blocks", "inward": "is blocked by", "outward": "blocks"},
         "inwardIssue": {"key": "APP-2"}},
        {"id": "2", "type": {"name": "Relates", "inward": "relates to", "outward": "relates to"},
         "inwardIssue": {"key": "APP-3"}},
    ]);
    let mut two = issue("APP-2", "Greet the user", "3");
    two["fields"]["description"] = json!("Whoever runs the tool should be greeted.");
    two["fields"]["subtasks"] = json!([
        {"key": "APP-4", "fields": {"summary": "Write hello.txt",
            "status": {"statusCategory": {"key": "indeterminate"}}}},
        {"key": "APP-5", "fields": {"summary": "Pick the words",
            "status": {"statusCategory": {"key": "done"}}}},
    ]);
    let three = issue("APP-3", "Fix the typo in the README", "1");
    let mut four = issue("APP-4", "Write hello.txt", "3");
    four["fields"]["parent"] = json!({"key": "APP-2"});
    vec![one, two, three, four]
}

fn jira(issues: Vec<Value>) -> StandIn {
    StandIn::serve(move |request: &Request| answer_jira(&issues, request))
}

/// [`jira`] whose issues also hold `comments` by key, served oldest first
/// at most 50 a page (fewer than the hundred asked, as a site may), with
/// the comments the run posts among them.
fn jira_with_comments(issues: Vec<Value>, comments: BTreeMap<String, Vec<Value>>) -> StandIn {
    let comments = Arc::new(Mutex::new(comments));
    StandIn::serve(move |request: &Request| {
        let path = request.path();
        let authorized = request.header("Authorization") == Some(AUTHORIZATION);
        let key = path
            .strip_prefix("/rest/api/2/issue/")
            .and_then(|rest| rest.strip_suffix("/comment"));
        if let (true, Some(key)) = (authorized, key) {
            let mut held = comments.lock().unwrap();
            let listed = held.entry(key.to_owned()).or_default();
            if request.method == "POST" {
                let posted = json!({"id": "900", "body": request.json()["body"],
                    "author": {"displayName": "ralph-bot"},
                    "created": "2099-01-01T00:00:00.000+0000"});
                listed.push(posted.clone());
                return Reply::status(201, posted);
            }
            let start: usize = request
                .query("startAt")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let page: Vec<Value> = listed.iter().skip(start).take(50).cloned().collect();
            return Reply::json(json!({"startAt": start, "maxResults": 50,
                "total": listed.len(), "comments": page}));
        }
        answer_jira(&issues, request)
    })
}

fn answer_jira(issues: &[Value], request: &Request) -> Reply {
    {
        if request.header("Authorization") != Some(AUTHORIZATION) {
            return Reply::status(
                401,
                json!({"errorMessages": ["You are not authenticated. Authentication required to perform this operation."], "errors": {}}),
            );
        }
        let path = request.path();
        if path == "/rest/api/2/search/jql" {
            let jql = request.query("jql").unwrap_or_default();
            if jql.contains("NOPE") {
                return Reply::status(
                    400,
                    json!({"errorMessages": ["The value 'NOPE' does not exist for the field 'project'."], "errors": {}}),
                );
            }
            let from: usize = request
                .query("nextPageToken")
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let page: Vec<Value> = issues.iter().skip(from).take(100).cloned().collect();
            let next = from + page.len();
            let mut body = json!({"issues": page, "isLast": next >= issues.len()});
            if next < issues.len() {
                body["nextPageToken"] = json!(next.to_string());
            }
            return Reply::json(body);
        }
        if path.ends_with("/comment") && request.method == "POST" {
            return Reply::status(201, json!({"id": "100", "body": request.json()["body"]}));
        }
        if path.ends_with("/transitions") {
            if request.method == "GET" {
                return Reply::json(json!({"transitions": [
                    {"id": "11", "name": "To Do", "to": {"statusCategory": {"key": "new"}}},
                    {"id": "21", "name": "In Progress", "to": {"statusCategory": {"key": "indeterminate"}}},
                    {"id": "31", "name": "Done", "to": {"statusCategory": {"key": "done"}}},
                ]}));
            }
            return Reply {
                status: 204,
                headers: Vec::new(),
                body: String::new(),
            };
        }
        Reply::status(
            404,
            json!({"errorMessages": ["Issue does not exist or you do not have permission to see it."]}),
        )
    }
}

fn start_command(repo: &TestRepo, site: &str, args: &[&str]) -> Command {
    start_with_agent(repo, site, WORKER, args)
}

fn start_with_agent(repo: &TestRepo, site: &str, agent: &str, args: &[&str]) -> Command {
    let script_path = script(repo, agent);
    let mut cmd = ralph_with_fake(repo, &script_path);
    cmd.args(["start", CHANGE, "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--source", "jira"])
        .args(args)
        .env("JIRA_BASE_URL", site)
        .env("JIRA_EMAIL", EMAIL)
        .env("JIRA_API_TOKEN", TOKEN)
        .env("FAKE_AGENT_TASKS", repo.run_dir(CHANGE).join("tasks.md"));
    cmd
}

#[test]
fn issue_49_a_run_over_a_jira_query_follows_is_blocked_by_and_priority_with_subtasks_as_tasks() {
    let repo = TestRepo::new();
    let api = jira(four_issues());
    let output = run(&mut start_command(
        &repo,
        &api.base,
        &[
            "--jql",
            "project = APP ORDER BY rank",
            "--comment",
            "--close",
        ],
    ));
    assert_exit(&output, 0);
    assert_eq!(
        story_commits_of(&repo, CHANGE),
        [
            "ralph(jira): story APP-3 Fix the typo in the README",
            "ralph(jira): story APP-2 Greet the user",
            "ralph(jira): story APP-1 Document the greeting",
        ],
        "{}",
        describe(&output)
    );
    let tracking =
        std::fs::read_to_string(repo.run_dir(CHANGE).join("tasks.md")).expect("tracking");
    assert!(
        tracking.contains("## APP-2: Greet the user\n\n- [x] APP-4: Write hello.txt\n- [x] APP-5: Pick the words\n"),
        "{tracking}"
    );
    let requests = api.requests();
    let search = requests
        .iter()
        .find(|r| r.path().ends_with("/search/jql"))
        .expect("a search");
    assert_eq!(
        search.query("jql").as_deref(),
        Some("(project = APP) AND statusCategory != Done ORDER BY rank")
    );
    let written: Vec<(String, String)> = requests
        .iter()
        .filter(|request| request.method == "POST")
        .map(|request| (request.path().to_owned(), request.body.clone()))
        .collect();
    let paths: Vec<&str> = written.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/rest/api/2/issue/APP-3/comment",
            "/rest/api/2/issue/APP-3/transitions",
            "/rest/api/2/issue/APP-2/comment",
            "/rest/api/2/issue/APP-2/transitions",
            "/rest/api/2/issue/APP-1/comment",
            "/rest/api/2/issue/APP-1/transitions",
        ]
    );
    assert_eq!(
        serde_json::from_str::<Value>(&written[1].1).unwrap(),
        json!({"transition": {"id": "31"}})
    );
    repo.assert_fsck_clean();
}

#[test]
fn issue_49_jira_issues_past_250_are_read_page_by_page() {
    let repo = TestRepo::new();
    let issues: Vec<Value> = (1..=260)
        .map(|n| issue(&format!("APP-{n}"), &format!("Issue {n}"), "3"))
        .collect();
    let api = jira(issues);
    let output = run(ralph(&repo)
        .args([
            "start",
            CHANGE,
            "--source",
            "jira",
            "--project",
            "APP",
            "--label",
            "ralph",
        ])
        .args(["--dry-run", "--json", "--agent-command", "true"])
        .env("JIRA_BASE_URL", &api.base)
        .env("JIRA_EMAIL", EMAIL)
        .env("JIRA_API_TOKEN", TOKEN));
    assert_exit(&output, 0);
    let preview: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(
        preview["stories"].as_array().expect("stories").len(),
        260,
        "{}",
        describe(&output)
    );
    let searches: Vec<(Option<String>, Option<String>)> = api
        .requests()
        .iter()
        .map(|request| (request.query("jql"), request.query("nextPageToken")))
        .collect();
    let jql = Some(
        "project = \"APP\" AND statusCategory != Done AND labels = \"ralph\" ORDER BY created ASC"
            .to_owned(),
    );
    assert_eq!(
        searches,
        [
            (jql.clone(), None),
            (jql.clone(), Some("100".into())),
            (jql, Some("200".into()))
        ]
    );
    assert!(!repo.run_dir(CHANGE).exists());
}

#[test]
fn issue_49_a_bad_jira_token_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = jira(four_issues());
    let output =
        run(start_command(&repo, &api.base, &["--project", "APP"]).env("JIRA_API_TOKEN", "wrong"));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "Jira refused the token in JIRA_API_TOKEN",
        TOKEN,
    );
}

#[test]
fn issue_49_a_missing_jira_project_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = jira(four_issues());
    let output = run(&mut start_command(&repo, &api.base, &["--project", "NOPE"]));
    assert_refused_before_writing(&repo, CHANGE, &output, "Jira has no project 'NOPE'", TOKEN);
}

#[test]
fn issue_49_a_jira_rate_limit_and_an_unreachable_site_end_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = StandIn::serve(|_: &Request| {
        Reply::status(429, json!({"errorMessages": ["Rate limit exceeded"]}))
            .with_header("Retry-After", "5")
    });
    let output = run(&mut start_command(&repo, &api.base, &["--project", "APP"]));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "Jira is limiting the rate of requests: try again in 5s",
        TOKEN,
    );
    let site = nothing_listening();
    let output = run(&mut start_command(&repo, &site, &["--project", "APP"]));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        &format!("could not reach Jira at {site}"),
        TOKEN,
    );
}

/// A comment on an issue as Jira's comment endpoint gives it.
fn comment(id: usize, body: &str, created: &str) -> Value {
    json!({"id": id.to_string(), "body": body, "created": created, "updated": created,
           "author": {"displayName": "Ada", "accountId": "5b10a2844c20165700ede21g"}})
}

#[test]
fn issue_49_an_answer_comment_on_a_jira_issue_answers_its_question_first_answer_first() {
    let repo = TestRepo::new();
    // Past a page of chatter: an answer from before the question, then
    // two answers at offsets: the one written later in the day was given
    // first.
    let mut comments: Vec<Value> = (1..=70)
        .map(|id| comment(id, "Looking into it", "2099-01-01T00:00:00.000+0000"))
        .collect();
    comments.push(comment(
        100,
        "/answer an old reply",
        "2020-01-01T00:00:00.000+0000",
    ));
    comments.push(comment(
        101,
        "/answer No, American.",
        "2099-01-02T05:00:00.000+0000",
    ));
    comments.push(comment(
        102,
        "/answer Keep it British.",
        "2099-01-02T09:00:00.000+0900",
    ));
    let api = jira_with_comments(
        vec![
            issue("APP-1", "Greet the user", "1"),
            issue("APP-3", "Fix the typo in the README", "2"),
        ],
        BTreeMap::from([("APP-3".to_owned(), comments)]),
    );
    let agent = "format codex\n[story=APP-3 attempt=1]\nfinal Reply /answer yes or /answer no: should the typo fix keep British spelling?\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let output = run(&mut start_with_agent(
        &repo,
        &api.base,
        agent,
        &["--project", "APP", "--comment"],
    ));
    assert_exit(&output, 0);
    let retry = recorded_prompt(&repo, "APP-3", 2);
    assert!(retry.contains("> Keep it British.\n"), "{retry}");
    let state = repo.run_state(CHANGE);
    let story = state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|story| story["id"] == "APP-3")
        .expect("story APP-3")
        .clone();
    assert_eq!(story["attempts"][0]["outcome"], "question");
    assert_eq!(story["attempts"][0]["answer"], "Keep it British.");
    assert_eq!(story["attempts"][1]["outcome"], "complete");
    let answers = std::fs::read_to_string(repo.run_dir(CHANGE).join("answers.jsonl"))
        .expect("the answer is recorded");
    assert_eq!(answers.lines().count(), 1, "{answers}");
    assert!(
        answers.contains(r#""story":"APP-3","attempt":1,"text":"Keep it British.""#),
        "{answers}"
    );
    // The comments were read page by page, from where the last page ended.
    let starts: Vec<String> = api
        .requests()
        .iter()
        .filter(|request| request.method == "GET" && request.path().ends_with("APP-3/comment"))
        .filter_map(|request| request.query("startAt"))
        .collect();
    assert!(starts.contains(&"50".to_owned()), "{starts:?}");
    assert_secret_nowhere(&repo, &output, TOKEN);
    assert_secret_nowhere(&repo, &output, AUTHORIZATION);
    repo.assert_fsck_clean();
}
