//! Issue 49, end to end through the real binary: Linear issues as the
//! run's stories (`--source linear`), read from a local stand-in of
//! Linear's GraphQL API that answers with the shapes its schema gives:
//! `issues` a page at a time with `pageInfo`, "blocks" relations seen from
//! the blocked issue (`inverseRelations`), sub-issues (`children`), and the
//! comment and state mutations. The key comes from LINEAR_API_KEY, the
//! address from LINEAR_API_URL.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::harness::api::{
    Reply, Request, StandIn, assert_refused_before_writing, assert_secret_nowhere,
};
use crate::harness::story_commits_of;
use crate::harness::{
    TestRepo, assert_exit, describe, fake_agent_path, ralph, ralph_with_fake, recorded_prompt, run,
    script,
};

const CHANGE: &str = "linear";
const KEY: &str = "lin_api_secret_key_for_the_test";

const WORKER: &str =
    "format codex\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";

fn issue(identifier: &str, title: &str, priority: u64) -> Value {
    json!({
        "identifier": identifier, "title": title, "description": "", "priority": priority,
        "state": {"type": "unstarted"}, "labels": {"nodes": [{"name": "ralph"}]},
        "parent": null, "children": {"nodes": []}, "inverseRelations": {"nodes": []},
    })
}

/// ENG-1 is blocked by ENG-2; ENG-2 has two sub-issues, ENG-4 listed (it
/// is open) and ENG-5; ENG-1 and ENG-3 are urgent: without the link,
/// ENG-1 (the older) would go first and ENG-2 last.
fn four_issues() -> Vec<Value> {
    let mut one = issue("ENG-1", "Document the greeting", 1);
    one["inverseRelations"] =
        json!({"nodes": [{"type": "blocks", "issue": {"identifier": "ENG-2"}}]});
    let mut two = issue("ENG-2", "Greet the user", 2);
    two["description"] = json!("Whoever runs the tool should be greeted.");
    two["children"] = json!({"nodes": [
        {"identifier": "ENG-4", "title": "Write hello.txt", "state": {"type": "started"}},
        {"identifier": "ENG-5", "title": "Print it on start", "state": {"type": "unstarted"}},
    ]});
    let three = issue("ENG-3", "Fix the typo in the README", 1);
    let mut four = issue("ENG-4", "Write hello.txt", 0);
    four["parent"] = json!({"identifier": "ENG-2"});
    vec![one, two, three, four]
}

/// A stand-in Linear holding `issues` in team ENG, 100 a page.
fn linear(issues: Vec<Value>) -> StandIn {
    StandIn::serve(move |request: &Request| answer_linear(&issues, request))
}

/// [`linear`] whose issues also hold `comments` by identifier, served 50
/// a page (fewer than the hundred asked) newest first, with the comments
/// the run posts among them.
fn linear_with_comments(issues: Vec<Value>, comments: BTreeMap<String, Vec<Value>>) -> StandIn {
    let comments = Arc::new(Mutex::new(comments));
    StandIn::serve(move |request: &Request| {
        let body = request.json();
        let query = body["query"].as_str().unwrap_or_default();
        let variables = &body["variables"];
        let authorized = request.header("Authorization") == Some(KEY);
        if authorized && query.starts_with("query Comments") {
            let id = variables["id"].as_str().unwrap_or_default();
            let mut listed = comments
                .lock()
                .unwrap()
                .get(id)
                .cloned()
                .unwrap_or_default();
            listed.sort_by_key(|comment| comment["createdAt"].as_str().map(str::to_owned));
            listed.reverse();
            let from: usize = variables["after"]
                .as_str()
                .and_then(|a| a.parse().ok())
                .unwrap_or(0);
            let page: Vec<Value> = listed.iter().skip(from).take(50).cloned().collect();
            let next = from + page.len();
            return Reply::json(json!({"data": {"issue": {"comments": {"nodes": page,
                "pageInfo": {"hasNextPage": next < listed.len(), "endCursor": next.to_string()}}}}}));
        }
        if authorized && query.starts_with("mutation Comment") {
            let input = &variables["input"];
            let id = input["issueId"].as_str().unwrap_or_default().to_owned();
            comments.lock().unwrap().entry(id).or_default().push(json!({
                "id": "c-run", "body": input["body"], "createdAt": "2099-01-01T00:00:00.000Z",
                "user": {"name": "ralph-bot"}}));
        }
        answer_linear(&issues, request)
    })
}

fn answer_linear(issues: &[Value], request: &Request) -> Reply {
    {
        if request.header("Authorization") != Some(KEY) {
            return Reply::status(
                400,
                json!({"errors": [{"message": "Authentication required, not authenticated",
                    "extensions": {"type": "authentication error", "code": "AUTHENTICATION_ERROR",
                        "userPresentableMessage": "You need to authenticate to access this operation."}}]}),
            );
        }
        let body = request.json();
        let query = body["query"].as_str().unwrap_or_default();
        let variables = &body["variables"];
        if query.starts_with("query Teams") {
            let nodes = if variables["key"] == "ENG" {
                json!([{"id": "team-1"}])
            } else {
                json!([])
            };
            return Reply::json(json!({"data": {"teams": {"nodes": nodes}}}));
        }
        if query.starts_with("query Issues") {
            let from: usize = variables["after"]
                .as_str()
                .and_then(|a| a.parse().ok())
                .unwrap_or(0);
            let page: Vec<Value> = issues.iter().skip(from).take(100).cloned().collect();
            let next = from + page.len();
            return Reply::json(json!({"data": {"issues": {"nodes": page,
                "pageInfo": {"hasNextPage": next < issues.len(), "endCursor": next.to_string()}}}}));
        }
        if query.starts_with("mutation Comment") {
            return Reply::json(json!({"data": {"commentCreate": {"success": true}}}));
        }
        if query.starts_with("query States") {
            return Reply::json(
                json!({"data": {"issue": {"id": "uuid", "team": {"states": {"nodes": [
                    {"id": "state-todo", "type": "unstarted", "position": 0},
                    {"id": "state-shipped", "type": "completed", "position": 4},
                    {"id": "state-done", "type": "completed", "position": 3},
                ]}}}}}),
            );
        }
        if query.starts_with("mutation Move") {
            return Reply::json(json!({"data": {"issueUpdate": {"success": true}}}));
        }
        Reply::status(400, json!({"errors": [{"message": "unknown query"}]}))
    }
}

fn start_command(repo: &TestRepo, url: &str, args: &[&str]) -> Command {
    start_with_agent(repo, url, WORKER, args)
}

fn start_with_agent(repo: &TestRepo, url: &str, agent: &str, args: &[&str]) -> Command {
    let script_path = script(repo, agent);
    let mut cmd = ralph_with_fake(repo, &script_path);
    cmd.args(["start", CHANGE, "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--source", "linear"])
        .args(if args.contains(&"--team") {
            &[][..]
        } else {
            &["--team", "ENG"][..]
        })
        .args(args)
        .env("LINEAR_API_URL", url)
        .env("LINEAR_API_KEY", KEY)
        .env("FAKE_AGENT_TASKS", repo.run_dir(CHANGE).join("tasks.md"));
    cmd
}

/// The GraphQL operations the run sent, by the first word of their name.
fn operations(api: &StandIn) -> Vec<(String, Value)> {
    api.requests()
        .iter()
        .map(|request| {
            let body = request.json();
            let name = body["query"]
                .as_str()
                .unwrap_or_default()
                .split('(')
                .next()
                .unwrap_or_default()
                .to_owned();
            (name, body["variables"].clone())
        })
        .collect()
}

#[test]
fn issue_49_a_run_over_linear_issues_follows_blocks_and_priority_with_sub_issues_as_tasks() {
    let repo = TestRepo::new();
    let api = linear(four_issues());
    let output = run(&mut start_command(
        &repo,
        &api.base,
        &["--label", "ralph", "--comment", "--close"],
    ));
    assert_exit(&output, 0);
    // ENG-3 is urgent; ENG-1 waits for ENG-2; ENG-4 is ENG-2's task.
    assert_eq!(
        story_commits_of(&repo, CHANGE),
        [
            "ralph(linear): story ENG-3 Fix the typo in the README",
            "ralph(linear): story ENG-2 Greet the user",
            "ralph(linear): story ENG-1 Document the greeting",
        ],
        "{}",
        describe(&output)
    );
    let tracking =
        std::fs::read_to_string(repo.run_dir(CHANGE).join("tasks.md")).expect("tracking");
    assert!(
        tracking.contains("## ENG-2: Greet the user\n\n- [x] ENG-4: Write hello.txt\n- [x] ENG-5: Print it on start\n"),
        "{tracking}"
    );
    let sent = operations(&api);
    let listed = sent
        .iter()
        .find(|(name, _)| name == "query Issues")
        .expect("issues listed");
    assert_eq!(listed.1["filter"]["team"], json!({"key": {"eq": "ENG"}}));
    assert_eq!(
        listed.1["filter"]["labels"],
        json!({"some": {"name": {"eq": "ralph"}}})
    );
    let written: Vec<(String, Value)> = sent
        .into_iter()
        .filter(|(name, _)| name.starts_with("mutation"))
        .collect();
    let commented: Vec<&str> = written
        .iter()
        .filter(|(name, _)| name == "mutation Comment")
        .map(|(_, variables)| variables["input"]["issueId"].as_str().unwrap())
        .collect();
    assert_eq!(commented, ["ENG-3", "ENG-2", "ENG-1"]);
    let moved: Vec<(&str, &str)> = written
        .iter()
        .filter(|(name, _)| name == "mutation Move")
        .map(|(_, variables)| {
            (
                variables["id"].as_str().unwrap(),
                variables["input"]["stateId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [
            ("ENG-3", "state-done"),
            ("ENG-2", "state-done"),
            ("ENG-1", "state-done")
        ]
    );
    let body = written[0].1["input"]["body"].as_str().unwrap();
    assert!(body.contains("git-ralph finished this issue"), "{body}");
    let state = std::fs::read_to_string(repo.run_dir(CHANGE).join("state.json")).unwrap();
    assert!(!state.contains(KEY));
    repo.assert_fsck_clean();
}

#[test]
fn issue_49_linear_issues_past_250_are_read_page_by_page() {
    let repo = TestRepo::new();
    let issues: Vec<Value> = (1..=260)
        .map(|n| issue(&format!("ENG-{n}"), &format!("Issue number {n}"), 0))
        .collect();
    let api = linear(issues);
    let output = run(ralph(&repo)
        .args(["start", CHANGE, "--source", "linear", "--team", "ENG"])
        .args(["--dry-run", "--json", "--agent-command", "true"])
        .env("LINEAR_API_URL", &api.base)
        .env("LINEAR_API_KEY", KEY));
    assert_exit(&output, 0);
    let preview: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let ids: Vec<&str> = preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 260, "{}", describe(&output));
    assert_eq!((ids[0], ids[259]), ("ENG-1", "ENG-260"));
    let cursors: Vec<Value> = operations(&api)
        .into_iter()
        .filter(|(name, _)| name == "query Issues")
        .map(|(_, variables)| variables["after"].clone())
        .collect();
    assert_eq!(cursors, [Value::Null, json!("100"), json!("200")]);
    assert!(!repo.run_dir(CHANGE).exists());
}

#[test]
fn issue_49_a_bad_linear_key_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = linear(four_issues());
    let output = run(start_command(&repo, &api.base, &[]).env("LINEAR_API_KEY", "lin_api_wrong"));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "Linear refused the token in LINEAR_API_KEY",
        KEY,
    );
}

#[test]
fn issue_49_a_missing_linear_team_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = linear(four_issues());
    let output = run(&mut start_command(&repo, &api.base, &["--team", "OPS"]));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "Linear has no team with the key 'OPS'",
        KEY,
    );
}

#[test]
fn issue_49_a_linear_rate_limit_ends_clearly_before_anything_is_written() {
    let repo = TestRepo::new();
    let api = StandIn::serve(|_: &Request| {
        Reply::status(
            400,
            json!({"errors": [{"message": "Rate limit exceeded",
            "extensions": {"code": "RATELIMITED"}}]}),
        )
        .with_header("Retry-After", "12")
    });
    let output = run(&mut start_command(&repo, &api.base, &[]));
    assert_refused_before_writing(
        &repo,
        CHANGE,
        &output,
        "Linear is limiting the rate of requests: try again in 12s",
        KEY,
    );
}

/// A comment on an issue as Linear's `comments` connection gives it.
fn comment(id: usize, body: &str, created_at: &str) -> Value {
    json!({"id": format!("c-{id}"), "body": body, "createdAt": created_at,
           "user": {"name": "Ada"}})
}

#[test]
fn issue_49_an_answer_comment_on_a_linear_issue_answers_its_question_first_answer_first() {
    let repo = TestRepo::new();
    // Past a page of chatter: an answer from before the question, the
    // first answer given and a later one.
    let mut comments: Vec<Value> = (1..=70)
        .map(|id| comment(id, "Looking into it", "2099-01-01T00:00:00.000Z"))
        .collect();
    comments.push(comment(
        100,
        "/answer an old reply",
        "2020-01-01T00:00:00.000Z",
    ));
    comments.push(comment(
        101,
        "/answer Keep it British.",
        "2099-01-02T10:00:00.000Z",
    ));
    comments.push(comment(
        102,
        "/answer No, American.",
        "2099-01-03T10:00:00.000Z",
    ));
    let api = linear_with_comments(
        vec![
            issue("ENG-1", "Greet the user", 1),
            issue("ENG-3", "Fix the typo in the README", 2),
        ],
        BTreeMap::from([("ENG-3".to_owned(), comments)]),
    );
    let agent = "format codex\n[story=ENG-3 attempt=1]\nfinal Reply /answer yes or /answer no: should the typo fix keep British spelling?\n[*]\ntick-story\nappend progress.txt one more story\\n\npromise COMPLETE\n";
    let output = run(&mut start_with_agent(
        &repo,
        &api.base,
        agent,
        &["--comment"],
    ));
    assert_exit(&output, 0);
    let retry = recorded_prompt(&repo, "ENG-3", 2);
    assert!(retry.contains("> Keep it British.\n"), "{retry}");
    let state = repo.run_state(CHANGE);
    let story = state["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .find(|story| story["id"] == "ENG-3")
        .expect("story ENG-3")
        .clone();
    assert_eq!(story["attempts"][0]["outcome"], "question");
    assert_eq!(story["attempts"][0]["answer"], "Keep it British.");
    assert_eq!(story["attempts"][1]["outcome"], "complete");
    let answers = std::fs::read_to_string(repo.run_dir(CHANGE).join("answers.jsonl"))
        .expect("the answer is recorded");
    assert_eq!(answers.lines().count(), 1, "{answers}");
    assert!(
        answers.contains(r#""story":"ENG-3","attempt":1,"text":"Keep it British.""#),
        "{answers}"
    );
    // The comments were read page by page, past the first.
    let pages: Vec<Value> = operations(&api)
        .into_iter()
        .filter(|(name, _)| name == "query Comments")
        .map(|(_, variables)| variables["after"].clone())
        .collect();
    assert!(pages.contains(&json!("50")), "{pages:?}");
    assert_secret_nowhere(&repo, &output, KEY);
    repo.assert_fsck_clean();
}
