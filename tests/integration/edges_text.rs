//! Issue 51, end to end through the real binary: text that comes from
//! outside reaches the user read as it means, and shown as data.
//!
//! - GitHub issues: a dependency phrase names the issues of this repository
//!   it lists, nothing more; a cycle among them is refused in the words of
//!   issues; a list `gh` cut at its limit is never taken for all the open
//!   issues. The scripted `gh` answers `gh issue list` as the real one does:
//!   newest first, the fields `--json` asks for, cut at `--limit`.
//! - An agent's terminal control sequences (a FAILED reason, its output)
//!   are shown escaped wherever git-ralph prints them.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::harness::story_run::{CHANGE as CHANGE_GREET, project, start_command};
use crate::harness::web::Served;
use crate::harness::{TestRepo, assert_exit, describe, ralph, run, script, stderr};

const CHANGE: &str = "issues";

/// A scripted `gh` holding `issues` (number, title, body), all open and
/// labelled `ralph`, in the repository `octo/app`; it records each call's
/// arguments in `calls.log`. `gh issue list` prints them newest first, each
/// with the fields `--json` names (`url` only when asked), at most
/// `--limit` of them (30 when not given), as the real CLI does. Returns
/// the directory and the PATH that finds it first.
fn scripted_gh(repo: &TestRepo, issues: &[(u64, String, String)]) -> (PathBuf, String) {
    let dir = repo.dir.path().join("gh-bin");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut newest_first: Vec<&(u64, String, String)> = issues.iter().collect();
    newest_first.sort_by_key(|(number, _, _)| std::cmp::Reverse(*number));
    let table: String = newest_first
        .iter()
        .map(|(number, title, body)| {
            format!(
                "{number}\t{{\"number\":{number},\"title\":{},\"body\":{},\"labels\":[{{\"name\":\"ralph\"}}],\"state\":\"OPEN\"\n",
                serde_json::to_string(title).unwrap(),
                serde_json::to_string(body).unwrap()
            )
        })
        .collect();
    std::fs::write(dir.join("issues.tsv"), table).expect("write the issues");
    let script = format!(
        r#"#!/bin/sh
printf '%s\n' "$*" >> '{dir}/calls.log'
[ "$1 $2" = "issue list" ] || {{ echo "unexpected: gh $*" >&2; exit 1; }}
limit=30; fields=
while [ $# -gt 0 ]; do
  case "$1" in --limit|-L) limit=$2; shift ;; --json) fields=$2; shift ;; esac
  shift
done
case ",$fields," in *,url,*) url=1 ;; *) url=0 ;; esac
awk -F '\t' -v n="$limit" -v url="$url" '
  NR <= n {{
    printf "%s%s", (shown ? "," : "["), $2; shown = 1
    if (url) printf ",\"url\":\"https://github.com/octo/app/issues/%s\"", $1
    printf "}}"
  }}
  END {{ if (!shown) printf "["; print "]" }}' '{dir}/issues.tsv'
"#,
        dir = dir.display()
    );
    let gh = dir.join("gh");
    std::fs::write(&gh, script).expect("write gh");
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

fn issue(number: u64, title: &str, body: &str) -> (u64, String, String) {
    (number, title.to_owned(), body.to_owned())
}

/// `git ralph start issues --source github` with `args` after, the scripted
/// `gh` first on `path`.
fn start_github(repo: &TestRepo, path: &str, args: &[&str]) -> Command {
    let mut cmd = ralph(repo);
    cmd.args(["start", CHANGE, "--source", "github"])
        .args(args)
        .env("PATH", path);
    cmd
}

/// The preview of a run over the scripted issues, as JSON.
fn preview(repo: &TestRepo, path: &str) -> Value {
    let output = run(&mut start_github(
        repo,
        path,
        &["--dry-run", "--json", "--agent-command", "true"],
    ));
    assert_exit(&output, 0);
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

fn story_ids(preview: &Value) -> Vec<String> {
    preview["stories"]
        .as_array()
        .expect("stories")
        .iter()
        .map(|story| story["id"].as_str().expect("id").to_owned())
        .collect()
}

fn warnings(preview: &Value) -> Vec<String> {
    preview["warnings"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|warning| warning["message"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn issue_51_a_dependency_phrase_names_only_the_issues_of_this_repository_it_lists() {
    let repo = TestRepo::new();
    let (_, path) = scripted_gh(
        &repo,
        &[
            issue(1, "Remove the hack", "Depends on #2"),
            issue(
                2,
                "Fix it properly",
                "Depends on #3 (it replaces the hack in #1)",
            ),
            issue(3, "Groundwork", "- Blocked by octo/other-repo#4"),
            issue(
                4,
                "Ship it",
                "Depends on https://github.com/octo/app/issues/3.",
            ),
            issue(
                5,
                "Tell the world",
                "Blocked by https://github.com/octo/other-repo/issues/1, octo/app#4 and #2\n\nSee #1 for the story so far.",
            ),
        ],
    );
    let preview = preview(&repo, &path);
    // #1 waits for #2, #2 for #3, #4 for #3 (named by its address), #5 for
    // #4 and #2; nothing waits for another repository's issue, and the
    // words after a phrase's references are not read as references.
    assert_eq!(
        story_ids(&preview),
        ["3", "2", "1", "4", "5"],
        "{preview:#}"
    );
    let said = warnings(&preview);
    assert!(
        said.iter().any(
            |warning| warning.contains("#3 depends on octo/other-repo#4")
                && warning.contains("another repository")
        ),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|warning| warning
                .contains("#5 depends on https://github.com/octo/other-repo/issues/1")),
        "{said:?}"
    );
    assert!(
        !repo.path(".git/ralph").exists(),
        "a preview writes nothing"
    );
}

#[test]
fn issue_51_issues_that_wait_on_each_other_are_refused_in_the_words_of_issues() {
    let repo = TestRepo::new();
    let (_, path) = scripted_gh(
        &repo,
        &[
            issue(1, "Remove the hack", "Depends on #2"),
            issue(2, "Fix it properly", "Blocked by #1"),
        ],
    );
    let before = repo.git(&["for-each-ref"]);
    let output = run(&mut start_github(
        &repo,
        &path,
        &["--agent-command", "true", "--on-finish", "keep"],
    ));
    assert_exit(&output, 1);
    let said = stderr(&output);
    assert!(said.contains("#1 -> #2 -> #1"), "{}", describe(&output));
    assert!(
        said.contains("\"Depends on\"") && said.contains("\"Blocked by\""),
        "{}",
        describe(&output)
    );
    assert!(!said.contains("dependsOn"), "{}", describe(&output));
    assert_eq!(repo.git(&["for-each-ref"]), before, "no ref written");
    assert_eq!(repo.status_porcelain(), "");
    assert!(!repo.path(".git/ralph").exists(), "nothing written");
}

/// 1,200 open issues, #1100 waiting for #150.
fn twelve_hundred() -> Vec<(u64, String, String)> {
    (1..=1200)
        .map(|number| {
            let body = if number == 1100 {
                "Depends on #150"
            } else {
                ""
            };
            issue(number, &format!("Issue {number}"), body)
        })
        .collect()
}

#[test]
fn issue_51_every_open_issue_is_read_past_a_thousand() {
    let repo = TestRepo::new();
    let (_, path) = scripted_gh(&repo, &twelve_hundred());
    let preview = preview(&repo, &path);
    let ids = story_ids(&preview);
    assert_eq!(ids.len(), 1200, "every open issue is a story");
    assert_eq!(ids[0], "1", "the oldest first");
    let said = warnings(&preview);
    assert!(
        !said.iter().any(|warning| warning.contains("taken as done")),
        "{said:?}"
    );
}

#[test]
fn issue_51_a_dependency_a_cut_list_may_have_left_out_is_refused() {
    let repo = TestRepo::new();
    // More open issues than one run reads: the newest 10,000 are listed,
    // and #10005 waits for #3, which is open but beyond the cut.
    let issues: Vec<(u64, String, String)> = (1..=10_005)
        .map(|number| {
            let body = if number == 10_005 {
                "Depends on #3"
            } else {
                ""
            };
            issue(number, &format!("Issue {number}"), body)
        })
        .collect();
    let (_, path) = scripted_gh(&repo, &issues);
    let output = run(&mut start_github(
        &repo,
        &path,
        &["--dry-run", "--agent-command", "true"],
    ));
    assert_exit(&output, 1);
    let said = stderr(&output);
    assert!(
        said.contains("issue #10005 depends on #3") && said.contains("10000"),
        "{}",
        describe(&output)
    );
    assert!(!said.contains("taken as done"), "{}", describe(&output));
    assert!(said.contains("hint:"), "{}", describe(&output));
}

/// What a hostile agent writes: a window title set, the screen cleared,
/// and a NUL.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2Jgone\u{0}";
/// What it writes in a file (a NUL would make the file binary to git).
const WRITTEN: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2Jgone";
/// How git-ralph shows [`HOSTILE`].
const SHOWN: &str = "\\x1b]0;pwned\\x07\\x1b[2Jgone\\x00";

/// A one-story run whose agent says, runs a tool that prints, and fails
/// with [`HOSTILE`] text; `NO_COLOR` set when `no_color`.
fn hostile_run(no_color: bool) -> (TestRepo, std::process::Output) {
    let repo = project(ONE_STORY);
    let agent = script(
        &repo,
        &format!(
            "format codex\n[*]\nsay thinking {HOSTILE} aloud\ntool {HOSTILE} printed\nwrite hostile.txt {WRITTEN} written\\n\npromise FAILED: {HOSTILE} cannot\n"
        ),
    );
    let mut cmd = start_command(
        &repo,
        &agent,
        &["--max-retries", "0", "--on-finish", "keep"],
    );
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let output = run(&mut cmd);
    assert_exit(&output, 3);
    (repo, output)
}

const ONE_STORY: &str = "# Tasks\n\n## 1. Greeting\n\n- [ ] 1.1 Create hello.txt\n";

/// `bytes` (what `what` printed) hold no raw ESC, BEL or NUL, and show
/// the hostile text escaped.
fn assert_shown(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for (byte, name) in [(0x1b, "ESC"), (0x07, "BEL"), (0x00, "NUL")] {
        assert!(
            !bytes.contains(&byte),
            "{what} printed a raw {name}:\n{text:?}"
        );
    }
    assert!(
        text.contains(SHOWN),
        "{what} does not show {SHOWN}:\n{text}"
    );
}

#[test]
fn issue_51_an_agent_s_control_sequences_are_shown_escaped_on_the_terminal() {
    for no_color in [false, true] {
        let (repo, output) = hostile_run(no_color);
        let all = [output.stdout.as_slice(), output.stderr.as_slice()].concat();
        assert_shown(&format!("the console (NO_COLOR: {no_color})"), &all);
        let ask = |args: &[&str]| {
            let mut cmd = ralph(&repo);
            cmd.args(args);
            if no_color {
                cmd.env("NO_COLOR", "1");
            }
            let output = run(&mut cmd);
            assert_exit(&output, 0);
            output.stdout
        };
        assert_shown("status", &ask(&["status"]));
        assert_shown("log", &ask(&["log"]));
        let show = ask(&["show", "1/1"]);
        assert_shown("show", &show);
        let shown = String::from_utf8_lossy(&show);
        assert!(
            shown.contains(&format!("thinking {SHOWN} aloud")),
            "{shown}"
        );
        assert!(shown.contains(&format!("{SHOWN} printed")), "{shown}");
        // JSON escapes them its own way.
        let json = ask(&["status", "--json"]);
        assert!(!json.iter().any(|b| [0x1b, 0x07, 0x00].contains(b)));
        let json = String::from_utf8(json).expect("UTF-8");
        serde_json::from_str::<Value>(&json).expect("JSON");
        assert!(
            json.contains("\\u001b]0;pwned\\u0007\\u001b[2Jgone\\u0000"),
            "{json}"
        );
    }
}

#[test]
fn issue_51_the_agent_s_record_and_its_patch_stay_byte_for_byte() {
    let (repo, _) = hostile_run(true);
    // The agent's output is kept as it came (codex writes JSON, which
    // escapes the bytes its own way).
    let log = std::fs::read_to_string(repo.run_dir(CHANGE_GREET).join("attempts/1-1.jsonl"))
        .expect("the attempt's log");
    assert!(
        log.contains("\\u001b]0;pwned\\u0007\\u001b[2Jgone\\u0000"),
        "{log}"
    );
    // A patch is for `git apply`: exact, control bytes and all.
    let output = run(ralph(&repo).args(["show", "1/1", "--patch"]));
    assert_exit(&output, 0);
    let patch = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(patch.contains(&format!("+{WRITTEN} written")), "{patch:?}");
    let file = repo.dir.path().join("attempt.patch");
    std::fs::write(&file, &patch).expect("write the patch");
    repo.git(&["apply", file.to_str().unwrap()]);
    assert_eq!(repo.read("hostile.txt"), format!("{WRITTEN} written\n"));
}

#[test]
fn issue_51_the_web_pages_show_an_agent_s_control_sequences_escaped() {
    let (repo, _) = hostile_run(false);
    let served = Served::start(&repo, &[]);
    for page in ["/runs/greet", "/runs/greet/attempts/1/1"] {
        let reply = served.get(page);
        assert_eq!(reply.status, 200, "{page}");
        assert_shown(page, reply.body.as_bytes());
    }
}
