//! The completion contract and the guardrails, through the real binary: a
//! run ends only on verified success, or with a named reason, its own exit
//! code, the reason in `status --json`, and an Error or Complete event.

use std::process::Output;

use crate::harness::*;
use serde_json::Value;

const TWO_STORIES: &str = "## 1. First\n\n- [ ] 1.1 Do the first thing\n\n## 2. Second\n\n- [ ] 2.1 Do the second thing\n";
const ONE_STORY: &str = "## 1. Only\n\n- [ ] 1.1 Do the thing\n";

const CHANGE: &str = "c";
/// How long a test waits for a run to reach a state.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(20);

fn repo_with(tasks: &str) -> TestRepo {
    TestRepo::with_change(CHANGE, tasks)
}

/// `git ralph start c` with the fake agent following `script_text`.
fn start(repo: &TestRepo, script_text: &str, extra: &[&str]) -> Output {
    start_with_fake(repo, CHANGE, script_text, extra)
}

/// Commit the contract files just written, so an attempt's edits to them show.
fn commit_contract(repo: &TestRepo) {
    repo.commit_all("contract");
}

fn status_json(repo: &TestRepo) -> Value {
    repo.status_json(CHANGE)
}

fn events(repo: &TestRepo) -> Vec<Value> {
    repo.run_events(CHANGE)
}

fn last_event(repo: &TestRepo) -> Value {
    events(repo).pop().expect("at least one event")
}

/// Waits until `git ralph status c --json` answers and `check` holds.
fn wait_for_status(repo: &TestRepo, what: &str, check: impl Fn(&Value) -> bool) {
    wait_until(what, PATIENCE, || {
        let out = ralph_cmd(repo, &["status", CHANGE, "--json"]);
        serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|status| check(&status))
    });
}

/// A repository with `tasks`, a run of [`start`] on it, and the checks of
/// [`assert_ended`]: the run ended with `code` for `reason`.
fn run_ends(tasks: &str, script_text: &str, extra: &[&str], code: i32, reason: &str) -> TestRepo {
    let repo = repo_with(tasks);
    let out = start(&repo, script_text, extra);
    assert_ended(&repo, &out, code, reason);
    repo
}

/// Exit code, reason in status and reason in the last event all agree.
fn assert_ended(repo: &TestRepo, out: &Output, code: i32, reason: &str) {
    assert_exit(out, code);
    assert_eq!(status_json(repo)["reason"], reason);
    let last = last_event(repo);
    let kind = if reason == "completed" {
        "complete"
    } else {
        "error"
    };
    assert_eq!(last["type"], kind, "{last}");
    assert_eq!(last["reason"], reason, "{last}");
}

fn attempt_reasons(repo: &TestRepo, story: usize) -> Vec<String> {
    status_json(repo)["stories"][story]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["reason"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn commits(repo: &TestRepo) -> Vec<String> {
    repo.subjects("main..HEAD")
}

mod reasons {
    use super::*;

    #[test]
    fn completed() {
        let repo = run_ends(
            ONE_STORY,
            "[*]\ntick-story\npromise COMPLETE\n",
            &[],
            0,
            "completed",
        );
        repo.assert_fsck_clean();
    }

    #[test]
    fn max_retries() {
        let repo = run_ends(
            ONE_STORY,
            "[*]\npromise FAILED: cannot\n",
            &["--max-retries", "1"],
            3,
            "max_retries",
        );
        assert_eq!(
            status_json(&repo)["stories"][0]["attempts"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn max_iters_counts_attempts_across_stories() {
        let repo = run_ends(
            TWO_STORIES,
            "[story=1]\ntick-story\npromise COMPLETE\n[story=2]\nwrite x.txt try\npromise FAILED: no\n",
            &["--max-iterations", "3", "--max-retries", "9"],
            4,
            "max_iters",
        );
        assert_eq!(status_json(&repo)["totals"]["attempts"], 3);
        assert_eq!(
            commits(&repo).len(),
            2,
            "initial state and story 1: {:?}",
            commits(&repo)
        );
    }

    #[test]
    fn no_progress_when_attempts_change_nothing() {
        let repo = repo_with(ONE_STORY);
        // The agent claims completion without touching a file.
        let out = start(
            &repo,
            "[*]\npromise COMPLETE\n",
            &["--no-progress-limit", "2", "--max-retries", "9"],
        );
        assert_ended(&repo, &out, 5, "no_progress");
        assert_eq!(status_json(&repo)["totals"]["attempts"], 2);
    }

    #[test]
    fn timeout_when_the_runtime_is_used_up() {
        let repo = repo_with(ONE_STORY);
        let started = std::time::Instant::now();
        let out = start(
            &repo,
            "[*]\nwrite w.txt x\nsleep 30\n",
            &["--max-runtime", "2s", "--max-retries", "9"],
        );
        assert_ended(&repo, &out, 6, "timeout");
        assert!(
            started.elapsed().as_secs() < 20,
            "the attempt was cut at the runtime limit"
        );
        assert_eq!(repo.status_porcelain(), "", "the cut attempt was reverted");
    }

    #[test]
    fn budget_from_summed_cost_and_tokens() {
        let repo = repo_with(ONE_STORY);
        let failing =
            "format claude\n[*]\nwrite w.txt x\nusage 100 50 0.30\npromise FAILED: not yet\n";
        let out = start(&repo, failing, &["--max-cost", "0.5", "--max-retries", "9"]);
        assert_ended(&repo, &out, 7, "budget");
        let status = status_json(&repo);
        assert_eq!(status["totals"]["attempts"], 2);
        assert!((status["totals"]["cost_usd"].as_f64().unwrap() - 0.6).abs() < 1e-9);

        let repo = run_ends(
            ONE_STORY,
            failing,
            &["--max-tokens", "400", "--max-retries", "9"],
            7,
            "budget",
        );
        assert_eq!(
            status_json(&repo)["totals"]["attempts"],
            3,
            "150 tokens an attempt reach 400 after three"
        );
    }

    #[test]
    fn budget_per_story_from_the_contract() {
        let repo = repo_with(TWO_STORIES);
        repo.write(
            "openspec/changes/c/ralph.toml",
            "[story.\"1\"]\nmax_cost = 0.25\n",
        );
        commit_contract(&repo);
        let out = start(
            &repo,
            "format claude\n[*]\nwrite w.txt x\nusage 10 10 0.20\npromise FAILED: no\n",
            &["--max-retries", "9"],
        );
        assert_ended(&repo, &out, 7, "budget");
        assert!(
            last_event(&repo)["message"]
                .as_str()
                .unwrap()
                .contains("story 1")
        );
    }

    #[test]
    fn stopped_by_the_user() {
        let repo = repo_with(ONE_STORY);
        let script_path = script(&repo, "[*]\nwrite w.txt x\nsleep 30\n");
        let child = fake_start(&repo, CHANGE, &script_path).spawn().unwrap();
        wait_for_status(&repo, "the attempt runs", |s| s["current_attempt"] == 1);
        std::thread::sleep(std::time::Duration::from_millis(300));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_ended(&repo, &out, 130, "stopped");
        assert_eq!(
            status_json(&repo)["stories"][0]["attempts"][0]["outcome"],
            "interrupted"
        );
    }

    #[test]
    fn error_when_git_ralph_itself_fails() {
        let repo = repo_with(ONE_STORY);
        // The agent wrecks the run's own state file: saving it fails, a
        // failure of git-ralph's own files, so the exit status is the
        // internal one.
        let out = start(
            &repo,
            "[*]\nrm .git/ralph/c/state.json\nmkdir .git/ralph/c/state.json\npromise FAILED: x\n",
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(70),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let last = last_event(&repo);
        assert_eq!(last["type"], "error");
        assert_eq!(last["reason"], "error");
    }
}

mod verification {
    use super::*;

    #[test]
    fn a_promise_with_a_failing_check_is_not_done_and_the_next_prompt_says_why() {
        let repo = repo_with(ONE_STORY);
        let out = start(
            &repo,
            "[story=1 attempt=1]\ntick-story\npromise COMPLETE\n[story=1 attempt=2]\nwrite proof.txt ok\ntick-story\npromise COMPLETE\n",
            &[
                "--check",
                "test -f proof.txt || { echo 'proof.txt is missing'; exit 1; }",
            ],
        );
        assert_ended(&repo, &out, 0, "completed");
        let reasons = attempt_reasons(&repo, 0);
        assert!(reasons[0].starts_with("checks failed"), "{reasons:?}");
        assert_eq!(
            status_json(&repo)["stories"][0]["attempts"][0]["outcome"],
            "rejected"
        );
        let retry = recorded_prompt(&repo, "1", 2);
        assert!(
            retry.contains("test -f proof.txt"),
            "the check's name is in the retry prompt"
        );
        assert!(
            retry.contains("proof.txt is missing"),
            "the tail of its output too"
        );
        assert!(repo.git_ok(&["rev-parse", "--verify", "-q", "refs/ralph/c/attempts/1/1"]));
    }

    #[test]
    fn checks_from_git_config_and_the_contract_file_are_authoritative() {
        let repo = repo_with(ONE_STORY);
        repo.git(&["config", "ralph.check", "test -f from-config.txt"]);
        repo.write(
            "ralph.toml",
            "[[check]]\nname = \"from the file\"\ncommand = \"test -f from-file.txt\"\n",
        );
        commit_contract(&repo);
        let out = start(
            &repo,
            "[story=1 attempt=1]\nwrite from-config.txt x\ntick-story\npromise COMPLETE\n[*]\nwrite from-config.txt x\nwrite from-file.txt x\ntick-story\npromise COMPLETE\n",
            &[],
        );
        assert_ended(&repo, &out, 0, "completed");
        let reasons = attempt_reasons(&repo, 0);
        assert!(reasons[0].contains("from the file"), "{reasons:?}");
        assert!(!reasons[0].contains("from-config"), "{reasons:?}");
    }

    #[test]
    fn a_check_that_hangs_times_out() {
        let repo = run_ends(
            ONE_STORY,
            "[*]\ntick-story\npromise COMPLETE\n",
            &[
                "--check",
                "sleep 20",
                "--command-timeout",
                "1",
                "--max-retries",
                "0",
            ],
            3,
            "max_retries",
        );
        assert!(
            attempt_reasons(&repo, 0)[0].contains("timed out"),
            "{:?}",
            attempt_reasons(&repo, 0)
        );
    }

    #[test]
    fn a_custom_promise_token_and_none() {
        let repo = run_ends(
            ONE_STORY,
            "[story=1 attempt=1]\ntick-story\npromise COMPLETE\n[*]\ntick-story\npromise AUTH_IMPLEMENTED\n",
            &["--promise", "AUTH_IMPLEMENTED"],
            0,
            "completed",
        );
        assert_eq!(
            status_json(&repo)["stories"][0]["attempts"][0]["outcome"],
            "no_signal"
        );
        assert!(recorded_prompt(&repo, "1", 1).contains("<promise>AUTH_IMPLEMENTED</promise>"));

        run_ends(
            ONE_STORY,
            "[*]\nwrite ok.txt y\ntick-story\nsay done\n",
            &["--promise", "none", "--check", "test -f ok.txt"],
            0,
            "completed",
        );
    }

    #[test]
    fn a_verifier_that_errors_falls_back_to_string_match_with_a_warning() {
        let repo = repo_with(ONE_STORY);
        repo.write(
            "ralph.toml",
            "[verify]\nmethod = \"semantic\"\ncriteria = [\"it works\"]\ncommand = \"echo broken >&2; exit 3\"\n",
        );
        commit_contract(&repo);
        let out = start(
            &repo,
            "[*]\nwrite a.txt x\ntick-story\npromise COMPLETE\n",
            &[],
        );
        assert_ended(&repo, &out, 0, "completed");
        let warned = events(&repo).iter().any(|e| {
            e["type"] == "warning"
                && e["message"]
                    .as_str()
                    .unwrap()
                    .contains("falling back to string_match")
        });
        assert!(warned);
    }

    #[test]
    fn semantic_negative_patterns_and_the_verifiers_answer() {
        let repo = repo_with(ONE_STORY);
        // The verifier reads the prompt it is given and judges bye.txt.
        let verifier = repo.write(
            "../verifier.sh",
            "#!/bin/sh\nif grep -q '+Goodbye' ; then echo VERIFIED; else echo 'NOT_VERIFIED: bye.txt does not say Goodbye'; fi\n",
        );
        repo.write(
            "ralph.toml",
            format!(
                "[verify]\nmethod = \"semantic\"\nnegative_patterns = [\"TODO\"]\ncommand = \"sh {}\"\n",
                verifier.display()
            ),
        );
        commit_contract(&repo);
        let out = start(
            &repo,
            "[story=1 attempt=1]\nwrite bye.txt TODO write this\ntick-story\npromise COMPLETE\n\
             [story=1 attempt=2]\nwrite bye.txt Later\ntick-story\npromise COMPLETE\n\
             [story=1 attempt=3]\nwrite bye.txt Goodbye\ntick-story\npromise COMPLETE\n",
            &[],
        );
        assert_ended(&repo, &out, 0, "completed");
        let reasons = attempt_reasons(&repo, 0);
        assert!(reasons[0].contains("TODO"), "{reasons:?}");
        assert!(
            reasons[1].contains("NOT_VERIFIED: bye.txt does not say Goodbye"),
            "{reasons:?}"
        );
        assert_eq!(repo.read("bye.txt"), "Goodbye");
    }

    #[test]
    fn multi_stage_stops_at_the_first_failing_required_stage_and_warns_for_optional_ones() {
        let repo = repo_with(ONE_STORY);
        repo.write(
            "ralph.toml",
            "[verify]\nmethod = \"multi_stage\"\n\
             [[verify.stages]]\nmethod = \"string_match\"\n\
             [[verify.stages]]\nmethod = \"external\"\ncommand = \"echo lint warning; exit 1\"\nrequired = false\n\
             [[verify.stages]]\nmethod = \"external\"\nname = \"built\"\ncommand = \"test -f built.txt\"\n",
        );
        commit_contract(&repo);
        let out = start(
            &repo,
            "[story=1 attempt=1]\ntick-story\npromise COMPLETE\n[*]\nwrite built.txt y\ntick-story\npromise COMPLETE\n",
            &[],
        );
        assert_ended(&repo, &out, 0, "completed");
        let reasons = attempt_reasons(&repo, 0);
        assert!(reasons[0].contains("stage 3 (external)"), "{reasons:?}");
        let warned = events(&repo).iter().any(|e| {
            e["type"] == "warning"
                && e["message"]
                    .as_str()
                    .unwrap()
                    .contains("optional stage 2 (external) failed")
        });
        assert!(warned);
    }

    #[test]
    fn an_attempt_that_edits_the_contract_or_a_protected_path_is_refused() {
        let repo = repo_with(ONE_STORY);
        repo.write(
            "ralph.toml",
            "protected = [\"tests/**\"]\n[[check]]\ncommand = \"test ! -f broken\"\n",
        );
        repo.write("tests/guard.sh", "exit 0\n");
        commit_contract(&repo);
        let out = start(
            &repo,
            "[story=1 attempt=1]\nwrite ralph.toml protected = []\ntick-story\npromise COMPLETE\n\
             [story=1 attempt=2]\nwrite tests/guard.sh exit 1\ntick-story\npromise COMPLETE\n\
             [*]\ntick-story\npromise COMPLETE\n",
            &[],
        );
        assert_ended(&repo, &out, 0, "completed");
        let reasons = attempt_reasons(&repo, 0);
        assert!(
            reasons[0].contains("edited the contract file ralph.toml"),
            "{reasons:?}"
        );
        assert!(reasons[1].contains("tests/guard.sh"), "{reasons:?}");
        assert_eq!(
            repo.read("ralph.toml"),
            "protected = [\"tests/**\"]\n[[check]]\ncommand = \"test ! -f broken\"\n"
        );
        assert!(
            repo.path(".git/ralph/c/contract.json").exists(),
            "the contract was snapshotted"
        );
    }

    #[test]
    fn a_malformed_contract_is_refused_before_anything_is_touched() {
        let repo = repo_with(ONE_STORY);
        repo.write(
            "ralph.toml",
            "[[check]]\ncommand = \"true\"\ntimeout = \"soon\"\n",
        );
        let before = repo.status_porcelain();
        let out = start(&repo, "[*]\npromise COMPLETE\n", &[]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("error:") && stderr.contains("ralph.toml"),
            "{stderr}"
        );
        assert!(stderr.contains("line 3"), "{stderr}");
        assert_eq!(repo.status_porcelain(), before);
        assert_eq!(repo.head_symbolic().as_deref(), Some("refs/heads/main"));
    }
}

mod modes {
    use super::*;

    #[test]
    fn once_runs_each_story_once_and_intercepts_nothing() {
        let repo = repo_with(TWO_STORIES);
        let out = start(
            &repo,
            "[story=1]\nwrite one.txt 1\ntick-story\npromise COMPLETE\n[story=2]\nwrite two.txt half\npromise FAILED: gave up\n",
            &["--once", "--check", "false"],
        );
        // The failing check does not intercept story 1; story 2 is not retried.
        assert_eq!(
            recorded_calls(&repo).len(),
            2,
            "{:?}",
            recorded_calls(&repo)
        );
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(status_json(&repo)["stories"][0]["done"], true);
        assert_eq!(repo.read("one.txt"), "1");
        assert_eq!(
            repo.read("two.txt"),
            "half",
            "the single pass keeps what the agent did"
        );
        assert_eq!(repo.status_porcelain(), "");
    }

    #[test]
    fn prompt_mode_repeats_the_prompt_until_the_contract_passes() {
        let repo = TestRepo::new();
        let prompt = repo.write("../PROMPT.md", "Make the tests pass.\n");
        let script_path = script(
            &repo,
            "[call=1]\nwrite notes.txt thinking\nsay not yet\n[*]\nwrite done.txt yes\nsay done\n",
        );
        let mut cmd = ralph_with_fake(&repo, &script_path);
        cmd.args(["start", "loopy", "--prompt"])
            .arg(&prompt)
            .args([
                "--agent-command",
                fake_agent_path(),
                "--promise",
                "none",
                "--check",
                "test -f done.txt",
            ])
            .args(["--on-finish", "keep"]);
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            repo.head_symbolic().as_deref(),
            Some("refs/heads/ralph/loopy")
        );
        assert!(repo.path("done.txt").exists());
        assert!(
            repo.path("notes.txt").exists(),
            "the first iteration's work is kept for the next to build on"
        );
        let calls = recorded_calls(&repo);
        assert_eq!(calls.len(), 2);
        let first = std::fs::read_to_string(repo.record_dir().join("prompt-1-1.txt")).unwrap();
        let second = std::fs::read_to_string(repo.record_dir().join("prompt-1-2.txt")).unwrap();
        assert!(first.starts_with("Make the tests pass."));
        assert!(
            second.starts_with("Make the tests pass."),
            "the same prompt, repeated"
        );
        assert!(second.contains("test -f done.txt"), "with what to fix");
    }
}

mod usage_limits {
    use super::*;

    #[test]
    fn a_usage_limit_spends_no_retry_reverts_nothing_and_shows_in_status() {
        let repo = repo_with(ONE_STORY);
        let reset = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 2;
        let script_path = script(
            &repo,
            &format!(
                "format claude\n[story=1 attempt=1]\nwrite partial.txt kept\nrate-limit {reset}\n[*]\ntick-story\npromise COMPLETE\n"
            ),
        );
        let mut cmd = fake_start(&repo, CHANGE, &script_path);
        cmd.args(["--max-retries", "0"]);
        let child = cmd.spawn().unwrap();
        wait_for_status(&repo, "status shows the pause", |s| {
            s["paused_until"].is_u64()
        });
        assert!(repo.path("partial.txt").exists(), "nothing was reverted");
        let out = child.wait_with_output().unwrap();
        assert_ended(&repo, &out, 0, "completed");
        let attempts = status_json(&repo)["stories"][0]["attempts"].clone();
        assert_eq!(attempts[0]["outcome"], "rate_limited");
        assert_eq!(attempts[1]["outcome"], "complete");
        assert_eq!(
            repo.read("partial.txt"),
            "kept",
            "the limited attempt's work carried on"
        );
    }
}

mod stop_hook {
    use super::*;

    fn hook(repo: &TestRepo, stop_hook_active: bool) -> Output {
        use std::io::Write;
        let mut cmd = ralph(repo);
        cmd.args(["hook", "claude-stop"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let input = serde_json::json!({
            "session_id": "s", "cwd": repo.root, "hook_event_name": "Stop", "stop_hook_active": stop_hook_active
        });
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    #[test]
    fn blocks_while_checks_fail_and_never_without_a_run() {
        let repo = repo_with(ONE_STORY);
        let out = hook(&repo, false);
        assert!(out.status.success());
        assert!(out.stdout.is_empty(), "no run, no opinion");

        let script_path = script(&repo, "[*]\nsleep 30\n");
        let mut cmd = fake_start(&repo, CHANGE, &script_path);
        cmd.args(["--check", "test -f ok.txt"]);
        let mut child = cmd.spawn().unwrap();
        wait_for_status(&repo, "the attempt runs", |s| {
            s["alive"] == true && s["current_attempt"] == 1
        });

        let out = hook(&repo, false);
        let answer: Value = serde_json::from_slice(&out.stdout).expect("a JSON decision");
        assert_eq!(answer["decision"], "block");
        assert!(
            answer["reason"]
                .as_str()
                .unwrap()
                .contains("test -f ok.txt")
        );
        // stop_hook_active and the cap keep it from blocking forever.
        let mut blocks = 1;
        while !hook(&repo, true).stdout.is_empty() {
            blocks += 1;
            assert!(blocks < 10, "the hook must stop blocking");
        }
        assert!(blocks <= 3, "{blocks} blocks");
        repo.write("ok.txt", "");
        assert!(
            hook(&repo, false).stdout.is_empty(),
            "passing checks let the agent stop"
        );

        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = child.wait();
    }
}
