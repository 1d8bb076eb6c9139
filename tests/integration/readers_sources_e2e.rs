//! Issue 35, end to end through the real binary: prd.json shapes and beads
//! exports seen in the wild, each written here the same way, and the dry
//! run listing stories in the order the run takes them.

use std::process::Output;

use serde_json::Value;

use crate::harness::{
    TestRepo, assert_exit, describe, fake_agent_path, ralph, ralph_with_fake, run, script, stderr,
};

/// `git ralph start ARGS --dry-run --json` run to the end.
fn dry_run_json(repo: &TestRepo, args: &[&str]) -> Output {
    run(ralph(repo).arg("start").args(args).args([
        "--dry-run",
        "--json",
        "--agent-command",
        "true",
    ]))
}

/// The preview of `start ARGS --dry-run --json`, which must be given.
fn preview(repo: &TestRepo, args: &[&str]) -> Value {
    let output = dry_run_json(repo, args);
    assert_exit(&output, 0);
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// (id, title, status) of each story, in the order listed.
fn listed(preview: &Value) -> Vec<(String, String, String)> {
    preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|s| {
            (
                s["id"].as_str().expect("id").to_owned(),
                s["title"].as_str().expect("title").to_owned(),
                s["status"].as_str().expect("status").to_owned(),
            )
        })
        .collect()
}

fn ids(preview: &Value) -> Vec<String> {
    listed(preview).into_iter().map(|(id, _, _)| id).collect()
}

fn warnings(preview: &Value) -> String {
    preview["warnings"].to_string()
}

/// `git ralph start CHANGE ARGS` with the fake agent following `agent`.
fn start(repo: &TestRepo, change: &str, agent: &str, args: &[&str]) -> Output {
    let script_path = script(repo, agent);
    run(ralph_with_fake(repo, &script_path)
        .args(["start", change, "--agent-command", fake_agent_path()])
        .args(["--on-finish", "keep", "--max-retries", "0"])
        .args(args))
}

/// The story ids of the checkpoints on `ralph/<change>`, oldest first.
fn checkpointed(repo: &TestRepo, change: &str) -> Vec<String> {
    let prefix = format!("ralph({change}): story ");
    repo.git(&[
        "log",
        "--reverse",
        "--format=%s",
        &format!("main..ralph/{change}"),
    ])
    .lines()
    .filter_map(|subject| subject.strip_prefix(&prefix))
    .map(|rest| {
        rest.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    })
    .collect()
}

/// Pattern 5: stories one level down, under each milestone's list, are
/// the stories; a run works them and reads their flags where they are.
#[test]
fn issue_35_stories_nested_under_milestones_are_read_and_run() {
    let prd = |two: bool, three: bool| {
        serde_json::json!({
            "project": "Shop",
            "milestones": [
                {"id": "M1", "title": "Basics", "userStories": [
                    {"id": "US-1", "title": "Catalogue", "passes": true},
                    {"id": "US-2", "title": "Cart", "passes": two}
                ]},
                {"id": "M2", "title": "Money", "userStories": [
                    {"id": "US-3", "title": "Checkout", "passes": three}
                ]}
            ]
        })
        .to_string()
    };
    let repo = TestRepo::with_files(&[("prd.json", &prd(false, false))]);
    let preview = preview(&repo, &["shop"]);
    assert_eq!(
        listed(&preview),
        [
            ("US-1".into(), "Catalogue".into(), "done".into()),
            ("US-2".into(), "Cart".into(), "next".into()),
            ("US-3".into(), "Checkout".into(), "open".into()),
        ],
        "{preview}"
    );
    let agent = format!(
        "format claude\n[story=US-2]\nwrite prd.json {}\nappend cart.txt cart\\n\npromise COMPLETE\n[story=US-3]\nwrite prd.json {}\nappend checkout.txt checkout\\n\npromise COMPLETE\n",
        prd(true, false),
        prd(true, true)
    );
    let output = start(&repo, "shop", &agent, &[]);
    assert_exit(&output, 0);
    assert_eq!(
        checkpointed(&repo, "shop"),
        ["US-2", "US-3"],
        "{}",
        describe(&output)
    );
    repo.assert_fsck_clean();
}

/// Pattern 6: stories without ids under `userStories` are numbered, as
/// they are in any other list; a title may be written as `story`.
#[test]
fn issue_35_stories_without_ids_under_user_stories_are_numbered() {
    let prd = r#"{"userStories": [
  {"story": "As a shopper I can search", "passes": true},
  {"story": "As a shopper I can filter", "passes": false},
  {"story": "As a shopper I can sort", "passes": false}
]}"#;
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let preview = preview(&repo, &["shop"]);
    assert_eq!(
        listed(&preview),
        [
            (
                "1".into(),
                "As a shopper I can search".into(),
                "done".into()
            ),
            (
                "2".into(),
                "As a shopper I can filter".into(),
                "next".into()
            ),
            ("3".into(), "As a shopper I can sort".into(), "open".into()),
        ],
        "{preview}"
    );
}

/// Pattern 7: a dependency of finished work on an id that no longer
/// exists is reported, not a refusal; one of open work still is.
#[test]
fn issue_35_a_stale_dependency_of_done_work_does_not_stop_the_run() {
    let prd = r#"{"userStories": [
  {"id": "US-1", "title": "Search", "passes": true, "dependsOn": ["US-0"]},
  {"id": "US-2", "title": "Filter", "passes": false, "dependsOn": ["US-1"]}
]}"#;
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let preview = preview(&repo, &["shop"]);
    assert_eq!(ids(&preview), ["US-1", "US-2"], "{preview}");
    let said = warnings(&preview);
    assert!(said.contains("US-0"), "{said}");
    assert!(said.contains("US-1"), "{said}");
    let open = prd.replace(
        r#""passes": false, "dependsOn": ["US-1"]"#,
        r#""passes": false, "dependsOn": ["US-9"]"#,
    );
    let repo = TestRepo::with_files(&[("prd.json", &open)]);
    let output = dry_run_json(&repo, &["shop"]);
    assert_ne!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(stderr(&output).contains("US-9"), "{}", describe(&output));
}

/// Pattern 8: `issues` is a list of stories, even beside another list of
/// objects.
#[test]
fn issue_35_issues_is_a_list_of_stories() {
    let prd = r#"{"milestones": [{"id": "M1", "title": "Beta"}],
 "issues": [
  {"id": 1, "title": "Crash on start", "status": "closed"},
  {"id": 2, "title": "Slow search", "status": "open"}
]}"#;
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let preview = preview(&repo, &["bugs"]);
    assert_eq!(
        listed(&preview),
        [
            ("1".into(), "Crash on start".into(), "done".into()),
            ("2".into(), "Slow search".into(), "next".into()),
        ],
        "{preview}"
    );
}

/// The dry run lists a prd.json's stories in the order the run takes
/// them: priority among the stories whose dependencies are done.
#[test]
fn issue_35_the_dry_run_lists_prd_stories_in_the_order_of_the_run() {
    let prd = r#"{"userStories": [
  {"id": "US-1", "title": "Login", "priority": 1, "passes": false, "dependsOn": ["US-3"]},
  {"id": "US-2", "title": "Search", "priority": 2, "passes": false},
  {"id": "US-3", "title": "Accounts", "priority": 3, "passes": false},
  {"id": "US-4", "title": "Landing", "priority": 0, "passes": true}
]}"#;
    let repo = TestRepo::with_files(&[("prd.json", prd)]);
    let preview = preview(&repo, &["shop"]);
    let open: Vec<String> = listed(&preview)
        .into_iter()
        .filter(|(_, _, status)| status != "done")
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(open, ["US-2", "US-3", "US-1"], "{preview}");
    let agent = "format claude\n[story=US-1]\nset-passes US-1 true\nappend log.txt 1\\n\npromise COMPLETE\n[story=US-2]\nset-passes US-2 true\nappend log.txt 2\\n\npromise COMPLETE\n[story=US-3]\nset-passes US-3 true\nappend log.txt 3\\n\npromise COMPLETE\n";
    let output = start(&repo, "shop", agent, &[]);
    assert_exit(&output, 0);
    assert_eq!(checkpointed(&repo, "shop"), open, "{}", describe(&output));
}

fn bead(id: &str, title: &str, extra: &str) -> String {
    format!(
        r#"{{"_type":"issue","id":"{id}","title":"{title}","description":"- [ ] {title}","status":"open","created_at":"2026-01-0{n}T10:00:00Z"{extra}}}"#,
        n = id.len() % 9 + 1
    )
}

fn blocks(on: &str, kind: &str) -> String {
    format!(r#","dependencies":[{{"depends_on_id":"{on}","type":"{kind}"}}]"#)
}

/// Pattern 10: a `bd export` with memory records after the issues is
/// read; the dry run lists the issues in the order the run takes them
/// (blockers first, an epic after its children), and the run agrees.
#[test]
fn issue_35_beads_exports_are_read_and_listed_in_the_order_of_the_run() {
    let lines = [
        bead("bd-e", "Epic", r#","priority":0,"issue_type":"epic""#),
        bead(
            "bd-c1",
            "Child one",
            &format!(r#","priority":2{}"#, blocks("bd-e", "parent-child")),
        ),
        bead(
            "bd-c2",
            "Child two",
            r#","priority":1,"dependencies":[{"depends_on_id":"bd-e","type":"parent-child"},{"depends_on_id":"bd-c3","type":"blocks"}]"#,
        ),
        bead("bd-c3", "Child three", r#","priority":3"#),
        r#"{"_type":"memory","key":"style","value":"short commits"}"#.to_owned(),
        r#"{"_type":"memory","key":"ci","value":"cargo test"}"#.to_owned(),
    ];
    let repo = TestRepo::with_files(&[(".beads/issues.jsonl", &(lines.join("\n") + "\n"))]);
    let preview = preview(&repo, &["work", "--source", "beads"]);
    assert_eq!(
        ids(&preview),
        ["bd-c1", "bd-c3", "bd-c2", "bd-e"],
        "{preview}"
    );
    assert_eq!(preview["stories"][0]["status"], "next");
    let tracking = repo.run_dir("work").join("tasks.md");
    let agent = "format claude\n[*]\ntick-story\nappend log.txt one more\\n\npromise COMPLETE\n";
    let script_path = script(&repo, agent);
    let output = run(ralph_with_fake(&repo, &script_path)
        .args(["start", "work", "--source", "beads"])
        .args(["--agent-command", fake_agent_path(), "--on-finish", "keep"])
        .env("FAKE_AGENT_TASKS", &tracking));
    assert_exit(&output, 0);
    assert_eq!(
        checkpointed(&repo, "work"),
        ["bd-c1", "bd-c3", "bd-c2", "bd-e"],
        "{}",
        describe(&output)
    );
}

/// Pattern 10: issues of a type that is not work, and dependencies of a
/// type beads does not define, are named, not dropped without a word;
/// stories and spikes are work.
#[test]
fn issue_35_beads_types_and_dependency_types_left_out_are_named() {
    let lines = [
        bead("bd-1", "Pick a database", r#","issue_type":"decision""#),
        bead("bd-2", "Checkout story", r#","issue_type":"story""#),
        bead("bd-3", "Try a cache", r#","issue_type":"spike""#),
        bead("bd-4", "Cart", &blocks("bd-2", "mirrors")),
        bead("bd-5", "Wishlist", &blocks("bd-2", "related")),
    ];
    let repo = TestRepo::with_files(&[(".beads/issues.jsonl", &(lines.join("\n") + "\n"))]);
    let preview = preview(&repo, &["work", "--source", "beads"]);
    let mut got = ids(&preview);
    got.sort();
    assert_eq!(got, ["bd-2", "bd-3", "bd-4", "bd-5"], "{preview}");
    let said = warnings(&preview);
    assert!(said.contains("bd-1") && said.contains("decision"), "{said}");
    assert!(said.contains("bd-4") && said.contains("mirrors"), "{said}");
    assert!(!said.contains("related"), "{said}");
}
