//! The fake agent is the ground every end-to-end test of git-ralph stands on,
//! so its own behaviour is pinned here, run directly in throwaway repositories.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::harness::*;
use serde_json::Value;

/// Runs the fake agent for one attempt of `story` with `prompt` on stdin.
fn attempt(
    repo: &TestRepo,
    script_path: &std::path::Path,
    story: &str,
    attempt: u32,
    prompt: &str,
) -> Output {
    let mut child = fake_agent(repo, script_path)
        .env("RALPH_CHANGE", "add-greeting")
        .env("RALPH_STORY", story)
        .env("RALPH_ATTEMPT", attempt.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the fake agent starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    stdin
        .write_all(prompt.as_bytes())
        .expect("the prompt is written");
    drop(stdin);
    child.wait_with_output().expect("the fake agent finishes")
}

fn run_script(repo: &TestRepo, text: &str) -> Output {
    let path = script(repo, text);
    attempt(repo, &path, "1", 1, "Do story 1.")
}

fn parse_events(output: &Output) -> Vec<Value> {
    parse_json_lines(&stdout(output), "the fake agent's stdout")
}

const TASKS: &str = "\
# Tasks

- [ ] 0.1 Loose task before any heading

## 1. Greeting

- [ ] 1.1 Create hello.txt
- [ ] 1.2 Test hello.txt
  - [ ] 1.2.1 Run the test in CI

## 2. Farewell

- [X] 2.1 Decide the wording
-  [ ] 2.2 Create bye.txt
* [ ] 2.3 Mention bye.txt

## 3. Docs

- [ ] 3.1 Mention hello.txt
";

#[test]
fn plain_complete_prints_the_promise_last() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\nsay Working on it.\npromise COMPLETE\n");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Working on it.\n<promise>COMPLETE</promise>\n"
    );
}

#[test]
fn plain_failed_carries_its_reason_after_the_final_text() {
    let repo = TestRepo::new();
    let output = run_script(
        &repo,
        "[*]\nfinal I could not finish.\\nSorry.\npromise FAILED: tests need a database\n",
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "I could not finish.\nSorry.\n<promise>FAILED: tests need a database</promise>\n"
    );
}

#[test]
fn tool_output_is_printed_as_is_in_plain() {
    let repo = TestRepo::new();
    let output = run_script(
        &repo,
        "[*]\ntool echo <promise>COMPLETE</promise>\nsay done\n",
    );
    assert_eq!(stdout(&output), "echo <promise>COMPLETE</promise>\ndone\n");
}

#[test]
fn claude_stream_has_the_real_shape() {
    let repo = TestRepo::new();
    let output = run_script(
        &repo,
        "format claude\n[*]\nsay Step one.\ntool When done, print <promise>COMPLETE</promise>\n\
         usage 2001 101 0.01253\nfinal All done.\npromise COMPLETE\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = parse_events(&output);
    assert_eq!(events[0]["type"], "system");
    assert_eq!(events[0]["subtype"], "init");
    let session = events[0]["session_id"].as_str().expect("a session id");
    assert!(
        events.iter().all(|e| e["session_id"] == session),
        "one session throughout"
    );

    let texts: Vec<&str> = of_type(&events, "assistant")
        .iter()
        .flat_map(|e| e["message"]["content"].as_array().expect("content blocks"))
        .filter(|block| block["type"] == "text")
        .map(|block| block["text"].as_str().expect("text"))
        .collect();
    assert_eq!(
        texts,
        ["Step one.", "All done.\n<promise>COMPLETE</promise>"]
    );

    let tool_use = of_type(&events, "assistant")
        .into_iter()
        .flat_map(|e| e["message"]["content"].as_array().expect("content blocks"))
        .find(|block| block["type"] == "tool_use")
        .expect("a tool_use block");
    let users = of_type(&events, "user");
    assert_eq!(users.len(), 1);
    let tool_result = &users[0]["message"]["content"][0];
    assert_eq!(tool_result["type"], "tool_result");
    assert_eq!(tool_result["tool_use_id"], tool_use["id"]);
    assert_eq!(
        tool_result["content"],
        "When done, print <promise>COMPLETE</promise>"
    );

    let result = events.last().expect("events");
    assert_eq!(result["type"], "result");
    assert_eq!(of_type(&events, "result").len(), 1);
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "All done.\n<promise>COMPLETE</promise>");
    assert_eq!(result["num_turns"], 3);
    assert_eq!(result["total_cost_usd"], 0.01253);
    assert_eq!(result["usage"]["input_tokens"], 2001);
    assert_eq!(result["usage"]["output_tokens"], 101);
}

#[test]
fn claude_result_without_a_final_message_is_the_last_text() {
    let repo = TestRepo::new();
    let output = run_script(
        &repo,
        "[*]\nformat claude\nsay Plan: <promise>COMPLETE</promise> later.\nsay Ran out of ideas.\n",
    );
    let events = parse_events(&output);
    let result = events.last().expect("events");
    assert_eq!(result["result"], "Ran out of ideas.");
    assert_eq!(result["is_error"], false);
}

#[test]
fn claude_error_is_an_error_result_and_exit_one() {
    let repo = TestRepo::new();
    let output = run_script(
        &repo,
        "[*]\nformat claude\nerror API Error: 400 bad request\n",
    );
    assert_eq!(output.status.code(), Some(1));
    let events = parse_events(&output);
    let result = events.last().expect("events");
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["result"], "API Error: 400 bad request");
}

#[test]
fn claude_rate_limit_names_its_reset_time() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\nformat claude\nrate-limit 1767229200\n");
    assert_eq!(output.status.code(), Some(1));
    let events = parse_events(&output);
    let result = events.last().expect("events");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["api_error_status"], 429);
    assert_eq!(result["result"], "Claude AI usage limit reached|1767229200");

    let output = run_script(&repo, "[*]\nformat claude\nrate-limit\n");
    let events = parse_events(&output);
    assert_eq!(
        events.last().expect("events")["result"],
        "Claude AI usage limit reached"
    );
}

#[test]
fn codex_stream_has_the_real_shape() {
    let repo = TestRepo::new();
    let output = run_script(
        &repo,
        "[*]\nformat codex\nsay Step one.\ntool hi\nusage 3003 153 0\npromise COMPLETE\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = parse_events(&output);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        kinds,
        [
            "thread.started",
            "turn.started",
            "item.completed",
            "item.started",
            "item.completed",
            "item.completed",
            "turn.completed"
        ]
    );
    assert_eq!(events[4]["item"]["type"], "command_execution");
    assert_eq!(events[4]["item"]["aggregated_output"], "hi");
    assert_eq!(events[5]["item"]["type"], "agent_message");
    assert_eq!(events[5]["item"]["text"], "<promise>COMPLETE</promise>");
    assert_eq!(events[6]["usage"]["input_tokens"], 3003);
    assert_eq!(events[6]["usage"]["output_tokens"], 153);
}

#[test]
fn codex_error_fails_the_turn() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\nformat codex\nerror scripted bad request\n");
    assert_eq!(output.status.code(), Some(1));
    let events = parse_events(&output);
    let n = events.len();
    assert_eq!(events[n - 2]["type"], "error");
    assert_eq!(events[n - 2]["message"], "scripted bad request");
    assert_eq!(events[n - 1]["type"], "turn.failed");
    assert_eq!(events[n - 1]["error"]["message"], "scripted bad request");
}

#[test]
fn gemini_stream_has_the_real_shape() {
    let repo = TestRepo::new();
    let path = script(
        &repo,
        "[*]\nformat gemini\ntool README.md\nusage 3001 151 0\npromise FAILED: no database\n",
    );
    let output = attempt(
        &repo,
        &path,
        "1",
        1,
        "Say <promise>COMPLETE</promise> when done.",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = parse_events(&output);
    assert_eq!(events[0]["type"], "init");
    assert_eq!(events[1]["type"], "message");
    assert_eq!(events[1]["role"], "user");
    assert_eq!(
        events[1]["content"],
        "Say <promise>COMPLETE</promise> when done."
    );
    assert_eq!(events[2]["type"], "tool_use");
    assert_eq!(events[3]["type"], "tool_result");
    assert_eq!(events[3]["tool_id"], events[2]["tool_id"]);
    assert_eq!(events[4]["role"], "assistant");
    assert_eq!(
        events[4]["content"],
        "<promise>FAILED: no database</promise>"
    );
    let result = &events[5];
    assert_eq!(result["type"], "result");
    assert_eq!(result["status"], "success");
    assert_eq!(result["stats"]["input_tokens"], 3001);
    assert_eq!(result["stats"]["tool_calls"], 1);
    assert_eq!(events.len(), 6);

    let output = run_script(&repo, "[*]\nformat gemini\nerror quota\n");
    assert_eq!(output.status.code(), Some(1));
    let events = parse_events(&output);
    let result = events.last().expect("events");
    assert_eq!(result["status"], "error");
    assert_eq!(result["error"]["message"], "quota");
}

#[test]
fn tick_ticks_the_first_unticked_task_with_the_prefix() {
    let repo = TestRepo::new();
    let tasks = repo.openspec_change("add-greeting", TASKS);
    let output = run_script(&repo, "[*]\ntick 1.2\ntick 2.\n");
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = TASKS
        .replace("- [ ] 1.2 Test", "- [x] 1.2 Test")
        .replace("-  [ ] 2.2 Create", "-  [x] 2.2 Create");
    assert_eq!(std::fs::read_to_string(&tasks).expect("tasks.md"), expected);
}

#[test]
fn tick_fails_loudly_when_no_task_matches() {
    let repo = TestRepo::new();
    let tasks = repo.openspec_change("add-greeting", TASKS);
    let output = run_script(&repo, "[*]\ntick 2.1\n");
    assert_eq!(output.status.code(), Some(99));
    assert!(stderr(&output).contains("2.1"), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&tasks).expect("tasks.md"), TASKS);
}

#[test]
fn tick_follows_fake_agent_tasks() {
    let repo = TestRepo::new();
    let tasks = repo.write("elsewhere/tasks.md", "- [ ] a\n- [ ] b\n");
    let path = script(&repo, "[*]\ntick b\n");
    let output = fake_agent(&repo, &path)
        .env("FAKE_AGENT_TASKS", &tasks)
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(repo.read("elsewhere/tasks.md"), "- [ ] a\n- [x] b\n");
}

#[test]
fn tick_story_ticks_every_box_of_the_story_only() {
    let repo = TestRepo::new();
    let tasks = repo.openspec_change("add-greeting", TASKS);
    let path = script(&repo, "[*]\ntick-story\n");
    let output = attempt(&repo, &path, "2", 1, "");
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = TASKS
        .replace("-  [ ] 2.2", "-  [x] 2.2")
        .replace("* [ ] 2.3", "* [x] 2.3");
    assert_eq!(std::fs::read_to_string(&tasks).expect("tasks.md"), expected);

    let output = run_script(&repo, "[*]\ntick-story 1\ntick-story 0\n");
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = expected
        .replace("- [ ] 0.1", "- [x] 0.1")
        .replace("- [ ] 1.1", "- [x] 1.1")
        .replace("- [ ] 1.2 ", "- [x] 1.2 ")
        .replace("- [ ] 1.2.1", "- [x] 1.2.1");
    assert_eq!(std::fs::read_to_string(&tasks).expect("tasks.md"), expected);
    assert!(expected.contains("- [ ] 3.1"));
}

#[test]
fn tick_story_fails_loudly_on_an_unknown_story() {
    let repo = TestRepo::new();
    repo.openspec_change("add-greeting", TASKS);
    let output = run_script(&repo, "[*]\ntick-story 7\n");
    assert_eq!(output.status.code(), Some(99));
}

#[test]
fn set_passes_edits_one_story_of_prd_json() {
    let repo = TestRepo::new();
    repo.write(
        "prd.json",
        r#"{"project": "demo", "userStories": [
            {"id": "US-001", "title": "One", "passes": false},
            {"id": "US-002", "title": "Two", "passes": false}]}"#,
    );
    let output = run_script(&repo, "[*]\nset-passes US-002 true\n");
    assert!(output.status.success(), "{}", stderr(&output));
    let prd: Value = serde_json::from_str(&repo.read("prd.json")).expect("JSON");
    assert_eq!(prd["project"], "demo");
    assert_eq!(prd["userStories"][0]["passes"], false);
    assert_eq!(prd["userStories"][1]["passes"], true);
    assert_eq!(prd["userStories"][1]["title"], "Two");

    let output = run_script(&repo, "[*]\nset-passes US-404 true\n");
    assert_eq!(output.status.code(), Some(99));
}

#[test]
fn no_matching_section_is_silence() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "format claude\n[story=9]\nsay not me\n");
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());
    assert!(output.stderr.is_empty());
}

#[test]
fn exit_sets_the_code_after_the_final_event() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\npromise COMPLETE\nexit 3\nwrite never.txt x\n");
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(stdout(&output), "<promise>COMPLETE</promise>\n");
    assert!(!repo.path("never.txt").exists());
}

#[test]
fn crash_dies_by_a_signal() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\nformat claude\nsay about to die\ncrash\n");
    assert_eq!(output.status.code(), None);
    assert_eq!(output.status.signal(), Some(6), "SIGABRT");
    let events = parse_events(&output);
    assert!(of_type(&events, "result").is_empty());
}

#[test]
fn the_most_specific_section_wins() {
    let repo = TestRepo::new();
    let path = script(
        &repo,
        "[*]\nsay any\n[call=2]\nsay call two\n[story=1]\nsay story one\n\
         [story=1 attempt=2]\nsay story one attempt two\n",
    );
    let said = |story, n| stdout(&attempt(&repo, &path, story, n, ""));
    assert_eq!(said("1", 1), "story one\n");
    assert_eq!(said("2", 1), "call two\n", "second call");
    assert_eq!(said("1", 2), "story one attempt two\n");
    assert_eq!(said("2", 2), "any\n");
    assert_eq!(said("1", 3), "story one\n");
}

#[test]
fn the_call_counter_lives_next_to_the_script() {
    let repo = TestRepo::new();
    let path = script(&repo, "[call=1]\nsay first\n[call=3]\nsay third\n");
    let said: Vec<String> = (1..=4)
        .map(|n| stdout(&attempt(&repo, &path, "1", n, "")))
        .collect();
    assert_eq!(said, ["first\n", "", "third\n", ""]);
    assert_eq!(script_calls(&path), 4);

    let other = script(&repo, "[call=1]\nsay fresh counter\n");
    assert_eq!(
        stdout(&attempt(&repo, &other, "1", 1, "")),
        "fresh counter\n"
    );
}

#[test]
fn the_prompt_and_argv_are_recorded() {
    let repo = TestRepo::new();
    let path = script(&repo, "[*]\nsay ok\n");
    let output = fake_agent(&repo, &path)
        .args(["-p", "--output-format", "stream-json"])
        .env("RALPH_STORY", "2")
        .env("RALPH_ATTEMPT", "3")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let mut stdin = child.stdin.take().expect("piped");
            stdin.write_all("Implement story 2.\nüñí\n".as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        })
        .expect("runs");
    assert!(output.status.success());
    assert_eq!(recorded_prompt(&repo, "2", 3), "Implement story 2.\nüñí\n");
    assert_eq!(
        recorded_calls(&repo),
        ["story=2 attempt=3 argv=-p --output-format stream-json"]
    );

    attempt(&repo, &path, "4", 1, "next");
    assert_eq!(recorded_calls(&repo).len(), 2);
    assert_eq!(recorded_calls(&repo)[1], "story=4 attempt=1 argv=");
    assert_eq!(recorded_prompt(&repo, "4", 1), "next");
}

#[test]
fn flood_writes_exactly_that_many_bytes_of_lines() {
    let repo = TestRepo::new();
    let bytes = 3 * 64 * 1024 + 1234;
    let output = run_script(&repo, &format!("[*]\nflood {bytes}\n"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(output.stdout.len(), bytes);
    let lines: Vec<&[u8]> = output.stdout.split_inclusive(|b| *b == b'\n').collect();
    assert_eq!(lines.len(), bytes.div_ceil(100));
    assert!(lines[..lines.len() - 1].iter().all(|l| l.len() == 100));
    assert_eq!(lines.last().map(|l| l.len()), Some(bytes % 100));
}

#[test]
fn flood_stops_quietly_when_the_reader_goes_away() {
    let repo = TestRepo::new();
    let path = script(&repo, "[*]\nflood 100000000\n");
    let mut child = fake_agent(&repo, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut stdout = child.stdout.take().expect("piped");
    let mut first = [0u8; 4096];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let output = child.wait_with_output().expect("finishes");
    assert_eq!(output.status.code(), Some(141));
    assert_eq!(stderr(&output), "");
}

#[test]
fn output_is_flushed_line_by_line() {
    let repo = TestRepo::new();
    let path = script(
        &repo,
        "[*]\nformat claude\nsay first\nsleep 4\nsay second\n",
    );
    let mut child = fake_agent(&repo, &path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let started = Instant::now();
    let init = lines.next().expect("a line").expect("readable");
    let first = lines.next().expect("a line").expect("readable");
    assert!(init.contains("\"init\""));
    assert!(first.contains("first"));
    assert!(
        child.try_wait().expect("waitable").is_none(),
        "the agent was still sleeping"
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    let rest: Vec<String> = lines.map(|l| l.expect("readable")).collect();
    assert!(rest[0].contains("second"));
    assert!(child.wait().expect("finishes").success());
}

#[test]
fn sleep_takes_fractional_seconds() {
    let repo = TestRepo::new();
    let started = Instant::now();
    let output = run_script(&repo, "[*]\nsleep 0.3\n");
    assert!(output.status.success());
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn git_commits_on_its_own() {
    let repo = TestRepo::new();
    let before = repo.rev_parse("HEAD");
    let output = run_script(
        &repo,
        "[*]\nwrite src/hello.txt hello\\n\ngit add -A\ngit commit -q -m 'agent work'\npromise COMPLETE\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "<promise>COMPLETE</promise>\n");
    assert_eq!(repo.rev_parse("HEAD~1"), before);
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]), "agent work\n");
    assert_eq!(repo.git(&["show", "HEAD:src/hello.txt"]), "hello\n");
    assert_eq!(repo.status_porcelain(), "");
    assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    repo.assert_fsck_clean();
}

#[test]
fn a_failing_git_command_fails_loudly() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\ngit switch no-such-branch\nsay unreachable\n");
    assert_eq!(output.status.code(), Some(99));
    assert!(stderr(&output).contains("git switch no-such-branch"));
    assert_eq!(stdout(&output), "");
}

#[test]
fn file_commands_edit_the_worktree() {
    use std::os::unix::fs::PermissionsExt;
    let repo = TestRepo::new();
    repo.write("old/dir/file.txt", "x");
    repo.write("gone.txt", "x");
    let output = run_script(
        &repo,
        "[*]\nwrite a/b.txt one\\ttwo\\n\nappend a/b.txt three\\n\nappend new.txt fresh\n\
         mkdir empty/dir\nrm old\nrm gone.txt\nwrite run.sh #!/bin/sh\\n\nchmod +x run.sh\n\
         symlink a/b.txt link\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(repo.read("a/b.txt"), "one\ttwo\nthree\n");
    assert_eq!(repo.read("new.txt"), "fresh");
    assert!(repo.path("empty/dir").is_dir());
    assert!(!repo.path("old").exists());
    assert!(!repo.path("gone.txt").exists());
    let mode = std::fs::metadata(repo.path("run.sh"))
        .expect("run.sh")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    assert_eq!(
        std::fs::read_link(repo.path("link")).expect("a symlink"),
        std::path::Path::new("a/b.txt")
    );

    let output = run_script(&repo, "[*]\nchmod -x run.sh\n");
    assert!(output.status.success());
    let mode = std::fs::metadata(repo.path("run.sh"))
        .expect("run.sh")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0);
}

#[test]
fn print_env_shows_what_the_agent_was_given() {
    let repo = TestRepo::new();
    let path = script(
        &repo,
        "[*]\nprint-env RALPH_CHANGE\nprint-env RALPH_STORY\nprint-env GIT_DIR\n",
    );
    let output = attempt(&repo, &path, "2", 1, "");
    assert_eq!(stdout(&output), "add-greeting\n2\n<unset>\n");
}

#[test]
fn a_broken_script_is_refused_before_doing_anything() {
    let repo = TestRepo::new();
    for text in [
        "[*]\nwrite ok.txt x\nfrobnicate\n",
        "say before any header\n",
        "[story=1]\n[story=1]\n",
        "[attempt=2]\n",
        "[*]\nformat yaml\n",
        "[*]\nexit 300\n",
    ] {
        let output = run_script(&repo, text);
        assert_eq!(
            output.status.code(),
            Some(98),
            "{text:?}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains("script line"), "{text:?}");
        assert!(!repo.path("ok.txt").exists());
    }
    let output = fake_agent(&repo, &repo.dir.path().join("missing.script"))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(98));
}

#[test]
fn the_harness_locks_the_environment() {
    let repo = TestRepo::new();
    let path = script(
        &repo,
        "[*]\nprint-env HOME\nprint-env GIT_CONFIG_GLOBAL\nprint-env TZ\nprint-env GIT_COMMITTER_DATE\n",
    );
    let output = fake_agent(&repo, &path).output().expect("runs");
    let lines: Vec<String> = stdout(&output).lines().map(str::to_string).collect();
    assert_eq!(lines[0], repo.home().display().to_string());
    assert_eq!(lines[1], repo.global_config().display().to_string());
    assert_eq!(lines[2], "UTC");
    assert_eq!(lines[3], FIXED_DATE);
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae> %ad", "--date=raw"]),
        format!("{} <{}> {}\n", AUTHOR_NAME, AUTHOR_EMAIL, FIXED_DATE)
    );
    assert_eq!(repo.reflog(5), ["commit (initial): Initial commit"]);
}

#[test]
fn the_worktree_copy_oracle_leaves_the_index_alone() {
    let repo = TestRepo::new();
    repo.write("new.txt", "new\n");
    let tree = repo.write_tree_of_worktree_copy();
    assert_eq!(repo.status_porcelain(), "?? new.txt\n");
    repo.git(&["add", "-A"]);
    assert_eq!(repo.git(&["write-tree"]).trim(), tree);

    let empty = TestRepo::empty();
    assert_eq!(empty.head_symbolic().as_deref(), Some("refs/heads/main"));
    assert!(!empty.git_ok(&["rev-parse", "--verify", "HEAD"]));
    assert_eq!(
        git_in(&empty.root, &["symbolic-ref", "HEAD"]),
        "refs/heads/main\n"
    );
}

#[test]
fn rate_limits_read_as_429_in_every_dialect() {
    let repo = TestRepo::new();
    let output = run_script(&repo, "[*]\nformat codex\nrate-limit 1767229200\n");
    assert_eq!(output.status.code(), Some(1));
    let events = parse_events(&output);
    let failed = events.last().expect("events");
    assert_eq!(failed["type"], "turn.failed");
    let message = failed["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("429") && message.contains("|1767229200"),
        "{message}"
    );

    let output = run_script(&repo, "[*]\nformat gemini\nrate-limit\n");
    assert_eq!(output.status.code(), Some(1));
    let events = parse_events(&output);
    let result = events.last().expect("events");
    assert_eq!(result["status"], "error");
    let message = result["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("429") && message.contains("RESOURCE_EXHAUSTED"),
        "{message}"
    );

    let output = run_script(&repo, "[*]\nrate-limit 5\n");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(stderr(&output), "usage limit reached|5\n");
}

/// The session a process leads or belongs to, from `/proc/<pid>/stat`.
fn session_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(3)?.parse().ok()
}

#[test]
fn detach_leaves_a_child_in_a_session_of_its_own_that_writes_later() {
    let repo = TestRepo::new();
    let pid_file = repo.dir.path().join("detached.pid");
    let output = run_script(
        &repo,
        &format!(
            "[*]\ndetach 3 {} late.txt written late\\n\nsay gone\n",
            pid_file.display()
        ),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the pid file")
        .trim()
        .parse()
        .expect("a pid");
    // It outlives the agent and, once `setsid` has run (its exec may
    // still be under way when the agent exits), leads a session of its
    // own before it writes.
    crate::harness::wait_until(
        "the child leads a session of its own",
        std::time::Duration::from_secs(3),
        || session_of(pid) == Some(pid),
    );
    assert!(
        !repo.path("late.txt").exists(),
        "the child wrote before it was seen alone in its session"
    );
    crate::harness::wait_until(
        "the late write lands",
        std::time::Duration::from_secs(30),
        || std::fs::read_to_string(repo.path("late.txt")).is_ok_and(|text| text.ends_with('\n')),
    );
    assert_eq!(repo.read("late.txt"), "written late\n");
}
