//! Issue 49, end to end through the real binary: the open issues of a
//! GitLab project as the run's stories (`--source gitlab`), read from a
//! local stand-in of GitLab's REST API (v4) that answers with the shapes
//! its documentation gives: pages of issues with `X-Next-Page`, "blocks"
//! links per issue, notes and state events. The token comes from
//! GITLAB_TOKEN, the address from GITLAB_HOST; neither is ever written.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};

use crate::harness::api::{
    Reply, Request, StandIn, assert_refused_before_writing, nothing_listening,
};
use crate::harness::story_commits_of;
use crate::harness::{TestRepo, assert_exit, describe, ralph, ralph_with_fake, run, script};

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
            ("GET", "/issues") => page_of(&issues, request),
            ("GET", rest) if rest.ends_with("/links") => {
                let iid: u64 = rest
                    .trim_start_matches("/issues/")
                    .trim_end_matches("/links")
                    .parse()
                    .unwrap_or(0);
                Reply::json(Value::from(links.get(&iid).cloned().unwrap_or_default()))
            }
            ("POST", rest) if rest.ends_with("/notes") => {
                Reply::status(201, json!({"id": 1, "body": request.json()["body"]}))
            }
            ("PUT", rest) if rest.starts_with("/issues/") => {
                Reply::json(json!({"iid": 1, "state": "closed"}))
            }
            _ => Reply::status(404, json!({"message": "404 Not found"})),
        }
    })
}

fn page_of(issues: &[Value], request: &Request) -> Reply {
    let per_page: usize = request
        .query("per_page")
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let page: usize = request
        .query("page")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut newest_first = issues.to_vec();
    newest_first.reverse();
    let slice: Vec<Value> = newest_first
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .cloned()
        .collect();
    let next = if page * per_page < issues.len() {
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
    let script_path = script(repo, WORKER);
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

/// No byte under .git/ralph/ holds the token.
fn assert_token_nowhere(repo: &TestRepo) {
    let ralph_dir = repo.path(".git/ralph");
    let mut pending = vec![ralph_dir];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(TOKEN),
                    "{} holds the token",
                    path.display()
                );
            }
        }
    }
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
    assert_token_nowhere(&repo);
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
