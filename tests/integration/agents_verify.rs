//! `git ralph agents --verify` through the real binary, with impostor CLIs
//! first on PATH: it succeeds only when every CLI it checked was verified.
//! A CLI whose output it cannot read, one that never calls the local API,
//! and one asked for by name that is not installed each make it fail, with
//! every verdict printed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use crate::harness::*;
use serde_json::Value;

/// What an impostor does between reading its prompt and exiting: print a
/// line of a format no preset writes, after calling the stand-in or not.
const UNKNOWN_FORMAT: &str =
    r#"{"type":"assistant_v9","text":"Created hello.txt. <promise>COMPLETE</promise>"}"#;

/// Puts a `claude` in the test's bin directory that answers `--version`,
/// reads its prompt, runs `body` (bash) and prints `line`.
fn install_claude(repo: &TestRepo, body: &str, line: &str) {
    let bin = bin_dir(repo);
    fs::create_dir_all(&bin).expect("bin dir");
    let script = format!(
        "#!/bin/bash\n\
         if [ \"$1\" = --version ]; then echo '9.9.9 (Claude Code)'; exit 0; fi\n\
         cat > /dev/null\n\
         {body}\n\
         printf '%s\\n' {line}\n",
        line = shell_quote(line)
    );
    let path = bin.join("claude");
    fs::write(&path, script).expect("the impostor is written");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("executable");
}

/// A conversation request to the Anthropic stand-in at
/// `$ANTHROPIC_BASE_URL`, offering a Bash tool, sent with bash alone.
const CALLS_THE_STANDIN: &str = r#"url=${ANTHROPIC_BASE_URL#http://}
host=${url%%:*}; port=${url##*:}
body='{"model":"m","tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}],"messages":[{"role":"user","content":"go"}]}'
exec 3<>"/dev/tcp/$host/$port"
printf 'POST /v1/messages HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\ncontent-length: %s\r\nconnection: close\r\n\r\n%s' "$host" "${#body}" "$body" >&3
cat <&3 > /dev/null"#;

/// PATH: the test's bin directory, then the few tools the impostors use.
fn path(repo: &TestRepo) -> String {
    path_with_bin_and(repo, &["bash", "sh", "cat", "printf", "git"])
}

fn verify(repo: &TestRepo, args: &[&str]) -> Output {
    run(ralph(repo)
        .env("PATH", path(repo))
        .env("XDG_CACHE_HOME", repo.dir.path().join("cache"))
        .args(["agents", "--verify"])
        .args(args))
}

/// Issue 25: a `claude` that prints what no parser reads, without ever
/// calling the model API, was "cannot be pointed", and the command
/// succeeded.
#[test]
fn issue_25_a_claude_impostor_of_unknown_format_fails_the_verification() {
    let repo = TestRepo::new();
    install_claude(&repo, "", UNKNOWN_FORMAT);
    let output = verify(&repo, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stdout = stdout(&output);
    assert!(stdout.starts_with("claude 9.9.9 · "), "{stdout}");
    assert!(
        stdout.contains("cannot be pointed at a local API"),
        "{stdout}"
    );
    assert!(stdout.contains("never called the local API"), "{stdout}");
}

#[test]
fn issue_25_a_cli_whose_output_is_not_understood_fails_with_the_line() {
    let repo = TestRepo::new();
    install_claude(&repo, CALLS_THE_STANDIN, UNKNOWN_FORMAT);
    let output = verify(&repo, &["claude"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stdout = stdout(&output);
    assert!(
        stdout.contains("claude 9.9.9 · format not understood"),
        "{stdout}"
    );
    assert!(
        stdout.contains("complete: expected COMPLETE, concluded no signal"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("first line it could not place: {UNKNOWN_FORMAT}")),
        "{stdout}"
    );
    // The verdict is kept for this version, and `agents` shows it.
    let listed = run(ralph(&repo)
        .env("PATH", path(&repo))
        .env("XDG_CACHE_HOME", repo.dir.path().join("cache"))
        .args(["agents", "--json"]));
    let rows: Value = serde_json::from_slice(&listed.stdout).expect("JSON rows");
    let claude = &rows[0];
    assert_eq!(claude["name"], "claude");
    assert_eq!(claude["version"], "9.9.9");
    assert_eq!(claude["verified"], "format_not_understood");
}

/// Issue 25: a CLI asked for by name that is not installed is not
/// verified either.
#[test]
fn issue_25_verifying_amp_that_is_not_installed_fails() {
    let repo = TestRepo::new();
    let output = verify(&repo, &["amp", "--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let reports: Value = serde_json::from_slice(&output.stdout).expect("JSON reports");
    assert_eq!(reports[0]["name"], "amp");
    assert_eq!(reports[0]["verdict"], "not_installed");
    let human = verify(&repo, &["amp"]);
    assert_eq!(human.status.code(), Some(1), "{}", describe(&human));
    assert!(
        stdout(&human).contains("amp · not installed (amp not on PATH)"),
        "{}",
        describe(&human)
    );
}

/// Every verdict is printed, the verified ones included, before the
/// command fails for the one that was not.
#[test]
fn every_verdict_is_printed_and_one_failure_fails_the_whole() {
    let repo = TestRepo::new();
    install_claude(&repo, "", UNKNOWN_FORMAT);
    let output = verify(&repo, &["claude", "codex"]);
    assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
    let stdout = stdout(&output);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|line| !line.starts_with(' '))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("claude 9.9.9 · "), "{stdout}");
    assert_eq!(lines[1], "codex  · not installed (codex not on PATH)");
}
