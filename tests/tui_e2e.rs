//! Seeing a run: `log` and `show` read back a real run with a failed and a
//! retried attempt, judged against git and the run's own files, and change
//! nothing; `watch` drives the loop screen in a real terminal (tmux).

mod common;
mod loop_support;

use std::fs;
use std::path::Path;

use common::*;
use loop_support::*;
use serde_json::Value;

/// Story 1 fails once (with a tool call and usage), then passes its check;
/// story 2 passes at once.
fn failed_then_retried() -> (TestRepo, std::path::PathBuf) {
    let repo = project(TWO_STORIES);
    let agent = script(
        &repo,
        &format!(
            "[story=1 attempt=1]\n\
             format claude\n\
             write hello.txt half a greeting\\n\n\
             say Looking at the tests first.\n\
             tool ran the test suite: database unavailable\n\
             usage 120 30 0.25\n\
             final The database is down.\n\
             promise FAILED: the tests need a database\n\
             [story=1 attempt=2]\n\
             format claude\n\
             usage 200 50 0.5\n{}{}",
            finish_story("1"),
            story_done("2")
        ),
    );
    let output = start(
        &repo,
        &agent,
        &["--on-finish", "keep", "--check", "test -f story-1.txt"],
    );
    assert_exit(&output, 0);
    (repo, agent)
}

/// Everything a read-only command could disturb: refs, HEAD, index and
/// worktree, and every file of the run.
fn snapshot(repo: &TestRepo) -> String {
    let mut text = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    text.push_str(&repo.git(&["rev-parse", "HEAD"]));
    text.push_str(&repo.status_porcelain());
    text.push_str(&repo.git(&["ls-files", "-s"]));
    let mut files = Vec::new();
    collect(&git_dir(repo).join("ralph"), &mut files);
    files.sort();
    for (path, bytes) in files {
        text.push_str(&format!("{path} {}\n", bytes.len()));
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    text
}

fn collect(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            let bytes = fs::read(&path).unwrap_or_default();
            out.push((path.display().to_string(), bytes));
        }
    }
}

fn json(output: &std::process::Output) -> Value {
    assert_exit(output, 0);
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("not JSON: {err}\n{}", stdout(output)))
}

#[test]
fn log_json_lists_every_attempt_with_its_outcome_and_where_the_work_is() {
    let (repo, _agent) = failed_then_retried();
    let before = snapshot(&repo);
    let trail = json(&ralph_cmd(&repo, &["log", "--json"]));
    assert_eq!(trail["change"], CHANGE);
    assert_eq!(trail["branch"], BRANCH);
    let stories = trail["stories"].as_array().unwrap();
    assert_eq!(stories.len(), 2);
    let first = stories[0]["attempts"].as_array().unwrap();
    assert_eq!(first.len(), 2, "{trail:#}");
    assert_eq!(first[0]["outcome"], "failed");
    assert!(
        first[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the tests need a database"),
        "{trail:#}"
    );
    let attempt_ref = first[0]["attempt_ref"].as_str().unwrap();
    assert_eq!(attempt_ref, format!("{NS}/attempts/1/1"));
    assert!(repo.git_ok(&["rev-parse", "--verify", attempt_ref]));
    assert_eq!(first[0]["checkpoint"], Value::Null);
    assert_eq!(first[0]["input_tokens"], 120);
    assert_eq!(first[0]["output_tokens"], 30);
    assert_eq!(first[0]["cost_usd"], 0.25);

    assert_eq!(first[1]["outcome"], "complete");
    let checkpoint = first[1]["checkpoint"].as_str().unwrap();
    // The checkpoint of story 1 is the commit below story 2's, on the branch.
    assert_eq!(checkpoint, repo.rev_parse(&format!("{BRANCH}~1")));
    assert_eq!(first[1]["attempt_ref"], Value::Null);
    let second = stories[1]["attempts"].as_array().unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(
        second[0]["checkpoint"].as_str().unwrap(),
        repo.rev_parse(BRANCH)
    );
    assert_eq!(trail["totals"]["attempts"], 3);

    let text = ralph_cmd(&repo, &["log", CHANGE]);
    assert_exit(&text, 0);
    let text = stdout(&text);
    assert!(text.contains("#1 failed"), "{text}");
    assert!(text.contains(&format!("{NS}/attempts/1/1")), "{text}");
    assert!(
        text.contains(&format!("checkpoint {}", &checkpoint[..10])),
        "{text}"
    );
    assert_eq!(snapshot(&repo), before, "log changed nothing");
}

#[test]
fn show_prints_prompt_transcript_diff_and_checks_of_one_attempt() {
    let (repo, _agent) = failed_then_retried();
    let before = snapshot(&repo);

    let failed = json(&ralph_cmd(&repo, &["show", "1/1", "--json"]));
    assert_eq!(failed["outcome"], "failed");
    let prompt_file = run_dir(&repo).join("attempts/1-1.prompt.md");
    assert_eq!(
        failed["prompt"].as_str().unwrap(),
        fs::read_to_string(&prompt_file).unwrap(),
        "the prompt is the one the agent was given"
    );
    let transcript = failed["transcript"].to_string();
    assert!(
        transcript.contains("Looking at the tests first."),
        "{transcript}"
    );
    assert!(transcript.contains("database unavailable"), "{transcript}");
    // The diff is the attempt ref against its parent, file for file.
    let diff = failed["diff"].as_str().unwrap();
    let attempt_ref = format!("{NS}/attempts/1/1");
    let files: Vec<String> = repo
        .git(&[
            "diff",
            "--name-only",
            &format!("{attempt_ref}^"),
            &attempt_ref,
        ])
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(!files.is_empty());
    for file in &files {
        assert!(
            diff.contains(&format!("diff --git a/{file} b/{file}")),
            "{diff}"
        );
    }
    assert!(diff.contains("+half a greeting"), "{diff}");

    let retried = json(&ralph_cmd(&repo, &["show", "1", "--json", "--checks"]));
    assert_eq!(retried["attempt"], 2, "the last attempt by default");
    assert!(retried.get("prompt").is_none(), "only the part asked for");
    let checks = retried["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{retried:#}");
    assert_eq!(checks[0]["name"], "test -f story-1.txt");
    assert_eq!(checks[0]["passed"], true);

    let text = ralph_cmd(&repo, &["show", "1/1", CHANGE, "--transcript"]);
    assert_exit(&text, 0);
    let text = stdout(&text);
    assert!(text.contains("Looking at the tests first."), "{text}");
    assert!(!text.contains("── prompt"), "{text}");

    let all = ralph_cmd(&repo, &["show", "1/2"]);
    assert_exit(&all, 0);
    let all = stdout(&all);
    for part in ["── prompt", "── transcript", "── diff", "── checks"] {
        assert!(all.contains(part), "{part} missing:\n{all}");
    }
    assert!(all.contains("+work of story 1"), "{all}");

    let missing = ralph_cmd(&repo, &["show", "1/9"]);
    assert_exit(&missing, 1);
    assert!(
        stderr(&missing).contains("no attempt 9"),
        "{}",
        stderr(&missing)
    );
    assert_eq!(snapshot(&repo), before, "show changed nothing");
}
