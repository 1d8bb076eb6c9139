//! Issue 35, end to end through the real binary: task files in shapes seen
//! in public repositories, each written here the same way. A title alone
//! never drops open tasks; what is skipped is named with its open tasks and
//! the reason, and can be kept or skipped by name; letter-numbered groups
//! keep their label; a GitHub tasklist block is a task list; no carriage
//! return reaches the prompt.

use serde_json::Value;

use crate::harness::{TestRepo, assert_exit, dry_run, ralph, run, stdout};

/// `git ralph start ARGS --dry-run --json`: the preview, which must be
/// given.
fn preview(repo: &TestRepo, args: &[&str]) -> Value {
    let output = run(ralph(repo).arg("start").args(args).args([
        "--dry-run",
        "--json",
        "--agent-command",
        "true",
    ]));
    assert_exit(&output, 0);
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// (id, title, done, tasks) of each story, in the order listed.
fn rows(preview: &Value) -> Vec<(String, String, u64, u64)> {
    preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|s| {
            (
                s["id"].as_str().expect("id").to_owned(),
                s["title"].as_str().expect("title").to_owned(),
                s["done"].as_u64().expect("done"),
                s["tasks"].as_u64().expect("tasks"),
            )
        })
        .collect()
}

fn row(id: &str, title: &str, done: u64, tasks: u64) -> (String, String, u64, u64) {
    (id.to_owned(), title.to_owned(), done, tasks)
}

/// The messages of the preview's warnings about skipped sections.
fn skipped(preview: &Value) -> Vec<String> {
    preview["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| w["kind"] == "skipped_section")
        .map(|w| w["message"].as_str().expect("message").to_owned())
        .collect()
}

/// Pattern 1: a numbered group is a story whatever its title says; an
/// unnumbered bookkeeping section is still not work.
#[test]
fn issue_35_a_numbered_group_is_work_whatever_its_title_says() {
    let tasks = "## 1. Dependencies & Setup\n- [x] 1.1 Add the crate\n- [ ] 1.2 Pin it\n\n\
                 ## 2. Summary page\n- [ ] 2.1 Lay it out\n\n\
                 ## 3. Notes on setup\n- [ ] 3.1 Write the notes page\n\n\
                 ## 4. Risks and fixes\n- [ ] 4.1 List the risks in the UI\n\n\
                 ## 5. Success Criteria UI\n- [ ] 5.1 Show the criteria\n\n\
                 ## 6. Testing\n- [ ] 6.1 Test it\n\n\
                 ## Notes\n- [ ] remember the release notes\n";
    let repo = TestRepo::with_change("add-summary", tasks);
    let preview = preview(&repo, &["add-summary"]);
    assert_eq!(
        rows(&preview),
        [
            row("1", "Dependencies & Setup", 1, 2),
            row("2", "Summary page", 0, 1),
            row("3", "Notes on setup", 0, 1),
            row("4", "Risks and fixes", 0, 1),
            row("5", "Success Criteria UI", 0, 1),
            row("6", "Testing", 0, 1),
        ],
        "{preview}"
    );
    assert_eq!(preview["stories"][0]["status"], "next");
    let skipped = skipped(&preview);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("\"Notes\""), "{skipped:?}");
}

/// Pattern 2: a list of lifecycle stages tracks the change; it is not
/// work, and the preview says why.
#[test]
fn issue_35_a_lifecycle_status_list_is_not_work() {
    let tasks = "# Change: parser\n\n## Status\n- [x] Planning\n- [x] Implementation\n- [ ] Review\n- [ ] Done\n\n\
                 ## 1. Parser\n- [ ] 1.1 Lex the input\n- [ ] 1.2 Parse it\n";
    let repo = TestRepo::with_change("add-parser", tasks);
    let preview = preview(&repo, &["add-parser"]);
    assert_eq!(rows(&preview), [row("1", "Parser", 0, 2)], "{preview}");
    assert_eq!(preview["stories"][0]["status"], "next");
    let skipped = skipped(&preview);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("\"Status\""), "{skipped:?}");
    assert!(skipped[0].contains("2 open tasks"), "{skipped:?}");
    assert!(skipped[0].contains("lifecycle"), "{skipped:?}");
    // Tasks that merely share a word with a stage are work.
    let tasks = "## Status\n- [ ] Review the status page\n- [ ] Done button\n";
    let repo = TestRepo::with_change("status-page", tasks);
    let preview = self::preview(&repo, &["status-page"]);
    assert_eq!(rows(&preview), [row("1", "Status", 0, 2)], "{preview}");
}

/// Pattern 3: a section the file puts out of scope is not given to an
/// agent, and the dry run says so with its open tasks and why.
#[test]
fn issue_35_a_deferred_section_is_named_in_the_dry_run() {
    let tasks = "## 1. Core\n- [ ] 1.1 Build it\n\n## 2. Docs\n- [ ] 2.1 Write them\n\n\
                 ## 10. Deferred (out of scope for this change)\n- [ ] 10.1 Sync to the cloud\n- [ ] 10.2 Share links\n- [x] 10.3 Decide what waits\n";
    let repo = TestRepo::with_change("add-core", tasks);
    let preview = preview(&repo, &["add-core"]);
    assert_eq!(
        rows(&preview),
        [row("1", "Core", 0, 1), row("2", "Docs", 0, 1)],
        "{preview}"
    );
    let output = dry_run(&repo, &["add-core"]);
    assert_exit(&output, 0);
    let said = stdout(&output);
    let line = said
        .lines()
        .find(|line| line.contains("Deferred (out of scope for this change)"))
        .unwrap_or_else(|| panic!("the deferred section is not named:\n{said}"));
    assert!(line.contains("2 open tasks"), "{line}");
    assert!(line.contains("out of scope"), "{line}");
    assert!(line.contains("keep"), "{line}");
}

/// The user keeps a skipped section, or skips a numbered one, by name:
/// its title, its heading as written, or its label.
#[test]
fn issue_35_a_section_is_kept_or_skipped_by_name() {
    let tasks = "## 1. Core\n- [ ] 1.1 Build it\n\n## 2. Docs\n- [ ] 2.1 Write them\n\n\
                 ## 3. Deferred\n- [ ] 3.1 Sync\n";
    for (settings, ids) in [
        ("[stories]\nkeep = [\"Deferred\"]\n", vec!["1", "2", "3"]),
        ("[stories]\nskip = [\"Docs\"]\n", vec!["1"]),
        ("[stories]\nskip = [\"2. Docs\"]\n", vec!["1"]),
        ("[stories]\nskip = [\"2\"]\n", vec!["1"]),
    ] {
        let repo = TestRepo::with_files(&[("ralph.toml", settings)]);
        repo.openspec_change("add-core", tasks);
        repo.commit_all("Add the change");
        let preview = preview(&repo, &["add-core"]);
        let got: Vec<String> = rows(&preview).into_iter().map(|r| r.0).collect();
        assert_eq!(got, ids, "{settings}: {preview}");
        if settings.contains("skip") {
            let skipped = skipped(&preview);
            assert!(
                skipped
                    .iter()
                    .any(|m| m.contains("Docs\"") && m.contains("ralph.toml")),
                "{settings}: {skipped:?}"
            );
        }
    }
}

/// Pattern 4: `## 1a.` and `## 5b.` are the groups' own labels, wherever
/// they stand.
#[test]
fn issue_35_letter_numbered_groups_keep_their_label() {
    let tasks = "## 1. Schema\n- [x] 1.1 Tables\n\n## 1a. Schema fixes\n- [ ] 1a.1 Indexes\n\n\
                 ## 2. API\n- [ ] 2.1 Routes\n\n## 5b) Late additions\n- [ ] 5b.1 Rate limits\n\n\
                 ## 5a: Tidying\n- [ ] 5a.1 Lint\n";
    let repo = TestRepo::with_change("add-shop", tasks);
    let preview = preview(&repo, &["add-shop"]);
    assert_eq!(
        rows(&preview),
        [
            row("1", "Schema", 1, 1),
            row("1a", "Schema fixes", 0, 1),
            row("2", "API", 0, 1),
            row("5b", "Late additions", 0, 1),
            row("5a", "Tidying", 0, 1),
        ],
        "{preview}"
    );
}

/// Pattern 9: CRLF files read as what they say: no carriage return in the
/// prompt, whichever file it came from.
#[test]
fn issue_35_carriage_returns_never_reach_the_prompt() {
    let repo = TestRepo::new();
    repo.write(
        "openspec/changes/add-crlf/tasks.md",
        "## 1. Parser\r\n- [ ] 1.1 Lex\r\n  - keep comments\r\n\r\n```\r\ncode\r\n```\r\n",
    );
    repo.write(
        "openspec/changes/add-crlf/proposal.md",
        "## Why\r\nBecause.\r\n",
    );
    repo.write("openspec/project.md", "# Project\r\nContext.\r\n");
    repo.write(
        "prd.json",
        "{\r\n  \"userStories\": [\r\n    {\"id\": \"US-1\", \"title\": \"Log in\", \"description\": \"First line.\\r\\nSecond line.\", \"notes\": \"a\\r\\nb\", \"acceptanceCriteria\": [\"works\\r\\n\"], \"passes\": false}\r\n  ]\r\n}\r\n",
    );
    repo.write("PLAN.md", "# Plan\r\n\r\n## Work\r\n- [ ] do it\r\n");
    repo.commit_all("Add files written on Windows");
    for args in [
        vec!["add-crlf"],
        vec!["crlf", "--prd", "prd.json"],
        vec!["crlf", "--tasks", "PLAN.md"],
    ] {
        let preview = preview(&repo, &args);
        let prompt = preview["prompt"].as_str().expect("a first prompt");
        assert!(!prompt.contains('\r'), "{args:?}: {prompt:?}");
        assert!(
            prompt.contains("Lex") || prompt.contains("Second line") || prompt.contains("do it"),
            "{args:?}: {prompt}"
        );
    }
}

/// Pattern 11: the tasks of GitHub's ```` ```[tasklist] ```` block are
/// tasks, in an issue's body and in a task file alike.
#[test]
fn issue_35_a_github_tasklist_block_holds_tasks() {
    let body = "Ship the exporter.\n\n```[tasklist]\n### Tasks\n- [ ] Write the writer\n- [x] Pick the format\n- [ ] Document it\n- [ ] https://github.com/o/r/issues/9\n```\n\n```sh\n- [ ] not a task, an example\n```\n";
    let issues = serde_json::json!([
        {"number": 4, "title": "Exporter", "body": body, "labels": [{"name": "ralph"}], "state": "OPEN"}
    ]);
    let repo = TestRepo::with_files(&[("PLAN.md", &format!("# Plan\n\n## Exporter\n\n{body}"))]);
    let file = repo.dir.path().join("issues.json");
    std::fs::write(&file, issues.to_string()).expect("write the export");
    let github = preview(
        &repo,
        &[
            "issues",
            "--source",
            "github",
            "--issues",
            file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(rows(&github), [row("4", "Exporter", 1, 4)], "{github}");
    let plan = preview(&repo, &["plan", "--tasks", "PLAN.md"]);
    assert_eq!(rows(&plan), [row("1", "Exporter", 1, 4)], "{plan}");
}

/// The start output names a skipped section with open tasks too, and the
/// run leaves its boxes as they are.
#[test]
fn issue_35_start_names_a_skipped_section_and_leaves_it_alone() {
    let tasks = "## 1. Core\n- [ ] 1.1 Build it\n\n## Deferred\n- [ ] Sync to the cloud\n";
    let repo = TestRepo::with_change("add-core", tasks);
    let agent = "format claude\n[*]\ntick-story\nappend core.txt built\\n\npromise COMPLETE\n";
    let script_path = crate::harness::script(&repo, agent);
    let output = run(crate::harness::ralph_with_fake(&repo, &script_path)
        .args(["start", "add-core", "--agent-command"])
        .arg(crate::harness::fake_agent_path())
        .args(["--on-finish", "keep", "--max-retries", "0"]));
    assert_exit(&output, 0);
    let said = format!("{}{}", stdout(&output), crate::harness::stderr(&output));
    let line = said
        .lines()
        .find(|line| line.contains("\"Deferred\""))
        .unwrap_or_else(|| panic!("the skipped section is not named:\n{said}"));
    assert!(line.contains("1 open task"), "{line}");
    assert!(line.contains("out of scope"), "{line}");
    let on_branch = repo.git(&["show", "ralph/add-core:openspec/changes/add-core/tasks.md"]);
    assert!(on_branch.contains("- [x] 1.1 Build it"), "{on_branch}");
    assert!(on_branch.contains("- [ ] Sync to the cloud"), "{on_branch}");
    repo.assert_fsck_clean();
}
