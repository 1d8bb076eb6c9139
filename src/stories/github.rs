//! GitHub issues as stories (`--source github`), and the two things the run
//! asks of the GitHub CLI: the list of issues, and a comment on each
//! finished one when the user passes `--comment`.
//!
//! The issues are what `gh issue list --label <label> --state open --limit
//! 10000 --json number,title,body,labels,state,url` prints (a JSON array; `--issues FILE`
//! reads the same array from a file). Of each issue, `number` gives the
//! story's id, `title` its title, `body` its text and task list, `labels`
//! (their `name`) the summary the agent sees, and `state` keeps a closed
//! issue of an exported file out of the run; other fields are ignored.
//! GitHub issues carry no priority: they are worked oldest first (by
//! number). A line of the body that starts with "Depends on" or "Blocked
//! by" lists the issues (`#3, #4`) that must be done first (see
//! `references`); one of this repository that is not among the run's
//! issues is taken as met. `url` places an `owner/name#3` or an address in
//! this repository.
//!
//! `gh` lists at most `--limit` issues, the newest; a list as long as the
//! limit may have left older ones out. The run then says so, and refuses
//! to take a dependency the cut may have left out as met.
//!
//! `gh` runs through the one supervisor of child processes, with no
//! prompts and no colour, under the command timeout.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::issues::{Issue, IssuesError, Snapshot};
use super::trackers::replies::{Comment, answers, unix_time};
use super::{SourceKind, StoriesError, Warning, WarningKind};
use crate::process::{self, ExitStatusKind, Limits, Spec};
use references::Repository;

mod references;

/// The label `--source github` looks for when `--label` is not given.
pub const DEFAULT_LABEL: &str = "ralph";
/// The fields the run asks `gh issue list` for.
pub const FIELDS: &str = "number,title,body,labels,state,url";
/// The most issues one run reads: `gh` pages through them all up to it.
const LIMIT: usize = 10_000;
/// The CLI, looked up on the search path.
const PROGRAM: &str = "gh";
/// The most of `gh`'s output that is kept.
const OUTPUT_LIMIT: usize = 64 * 1024 * 1024;

#[derive(Deserialize)]
struct GhIssue {
    number: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    labels: Vec<GhLabel>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

#[derive(Deserialize)]
struct GhLabel {
    name: String,
}

/// The open issues `gh issue list` gives for `label`, in the repository of
/// `workdir`.
pub fn list(workdir: &Path, label: &str, timeout: Duration) -> Result<Snapshot, StoriesError> {
    let args = list_args(label);
    let stdout = run_gh(workdir, &args, timeout)?;
    let from = format!("gh {}", shown(&args[..4]));
    Ok(parse_listed(&from, &stdout, Some(label), Some(LIMIT))?)
}

/// The open issues of a file `gh issue list --json` wrote; only those
/// labelled `label`, when one is given.
pub fn read_file(path: &Path, label: Option<&str>) -> Result<Snapshot, StoriesError> {
    if !path.is_file() {
        return Err(StoriesError::FileNotFound {
            path: path.to_owned(),
        });
    }
    let text = super::read_text(path)?;
    Ok(parse(&path.display().to_string(), &text, label)?)
}

/// The title and body of issue `number` (`gh issue view <number> --json
/// title,body`), in the repository of `workdir`: the brief of a plan.
pub fn view(
    workdir: &Path,
    number: u64,
    timeout: Duration,
) -> Result<(String, String), StoriesError> {
    #[derive(Deserialize)]
    struct Viewed {
        #[serde(default)]
        title: String,
        #[serde(default)]
        body: Option<String>,
    }
    let args: Vec<String> = ["issue", "view", &number.to_string(), "--json", "title,body"]
        .map(String::from)
        .to_vec();
    let stdout = run_gh(workdir, &args, timeout)?;
    let viewed: Viewed =
        serde_json::from_str(&stdout).map_err(|error| IssuesError::MalformedGithub {
            from: format!("gh {}", shown(&args)),
            line: error.line(),
            message: without_position(&error),
        })?;
    Ok((viewed.title, viewed.body.unwrap_or_default()))
}

/// The replies on issue `number` made at `since` (unix seconds) or later
/// that start with `/answer`, oldest first: each one's text after it.
pub fn answers_since(
    workdir: &Path,
    number: &str,
    since: u64,
    timeout: Duration,
) -> Result<Vec<String>, IssuesError> {
    let args: Vec<String> = ["issue", "view", number, "--json", "comments"]
        .map(String::from)
        .to_vec();
    let stdout = run_gh(workdir, &args, timeout)?;
    Ok(replies(&stdout, since))
}

#[derive(Deserialize)]
struct GhComments {
    #[serde(default)]
    comments: Vec<GhComment>,
}

#[derive(Deserialize)]
struct GhComment {
    #[serde(default)]
    body: String,
    #[serde(default, rename = "createdAt")]
    created_at: String,
}

/// The `/answer` replies of `gh issue view --json comments` output made
/// at `since` or later; anything else in it is no answer.
fn replies(json: &str, since: u64) -> Vec<String> {
    let Ok(view) = serde_json::from_str::<GhComments>(json) else {
        return Vec::new();
    };
    let comments = view.comments.into_iter().map(|comment| Comment {
        at: unix_time(&comment.created_at),
        body: comment.body,
    });
    answers(comments, since)
}

fn list_args(label: &str) -> Vec<String> {
    let limit = LIMIT.to_string();
    [
        "issue", "list", "--label", label, "--state", "open", "--limit", &limit, "--json", FIELDS,
    ]
    .map(String::from)
    .to_vec()
}

/// Posts `body` as a comment on issue `number`, from code that is not
/// async.
pub fn comment_now(
    workdir: &Path,
    number: &str,
    body: &str,
    timeout: Duration,
) -> Result<(), IssuesError> {
    let args: Vec<String> = ["issue", "comment", number, "--body-file", "-"]
        .map(String::from)
        .to_vec();
    run_gh_with(workdir, &args, Some(body.to_owned()), timeout).map(|_| ())
}

/// Closes issue `number` (`gh issue close`).
pub fn close(workdir: &Path, number: &str, timeout: Duration) -> Result<(), IssuesError> {
    let args: Vec<String> = ["issue", "close", number].map(String::from).to_vec();
    run_gh(workdir, &args, timeout).map(|_| ())
}

/// Runs `gh` from code that is not async, and returns its stdout.
fn run_gh(workdir: &Path, args: &[String], timeout: Duration) -> Result<String, IssuesError> {
    run_gh_with(workdir, args, None, timeout)
}

fn run_gh_with(
    workdir: &Path,
    args: &[String],
    stdin: Option<String>,
    timeout: Duration,
) -> Result<String, IssuesError> {
    let spec = gh_spec(workdir, args, stdin)?;
    let done = process::run_split_blocking(&spec, Limits::timeout(timeout), OUTPUT_LIMIT);
    outcome(args, done, timeout)
}

fn gh_spec(workdir: &Path, args: &[String], stdin: Option<String>) -> Result<Spec, IssuesError> {
    if !process::is_runnable(PROGRAM) {
        return Err(IssuesError::GhMissing);
    }
    Ok(Spec {
        program: PROGRAM.to_owned(),
        args: args.to_vec(),
        env: [
            ("GH_PROMPT_DISABLED", "1"),
            ("GH_NO_UPDATE_NOTIFIER", "1"),
            ("NO_COLOR", "1"),
        ]
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .to_vec(),
        cwd: workdir.to_owned(),
        stdin,
        pid_file: None,
    })
}

/// `gh`'s stdout, or why there is none.
fn outcome(
    args: &[String],
    done: Result<(ExitStatusKind, process::Tail, process::Tail), process::ProcessError>,
    timeout: Duration,
) -> Result<String, IssuesError> {
    let (exit, stdout, stderr) = done.map_err(|source| IssuesError::GhSpawn {
        args: shown(args),
        source,
    })?;
    match exit {
        ExitStatusKind::TimedOut => Err(IssuesError::GhTimedOut {
            args: shown(args),
            secs: timeout.as_secs(),
        }),
        exit if !exit.is_success() => Err(IssuesError::GhFailed {
            args: shown(args),
            exit,
            stderr: process::tail_str(stderr.text().trim(), 400).to_owned(),
        }),
        _ => Ok(stdout.text()),
    }
}

fn shown(args: &[String]) -> String {
    args.join(" ")
}

/// The open issues of `gh issue list --json` output, oldest first; only
/// those labelled `label`, when one is given. `from` names where the text
/// came from, for errors.
pub fn parse(from: &str, text: &str, label: Option<&str>) -> Result<Snapshot, IssuesError> {
    parse_listed(from, text, label, None)
}

/// Where `gh` may have cut the list: it gave as many issues as it was
/// asked for, the newest, down to `oldest`.
struct Cut {
    limit: usize,
    oldest: u64,
}

/// [`parse`] of a list `gh` was asked for at most `limit` issues of.
fn parse_listed(
    from: &str,
    text: &str,
    label: Option<&str>,
    limit: Option<usize>,
) -> Result<Snapshot, IssuesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let listed: Vec<GhIssue> =
        serde_json::from_str(text).map_err(|err| IssuesError::MalformedGithub {
            from: from.to_owned(),
            line: err.line(),
            message: without_position(&err),
        })?;
    let cut = limit
        .filter(|limit| listed.len() >= *limit)
        .map(|limit| Cut {
            limit,
            oldest: listed.iter().map(|issue| issue.number).min().unwrap_or(0),
        });
    let this = listed
        .iter()
        .find_map(|issue| issue.url.as_deref().and_then(Repository::of_url));
    let open = open_issues(listed, label);
    if open.is_empty() {
        return Err(IssuesError::NoIssues {
            from: from.to_owned(),
            label: label.map(str::to_owned),
        });
    }
    let numbers: HashSet<u64> = open.iter().map(|issue| issue.number).collect();
    let mut warnings = Vec::new();
    if let Some(Cut { limit, oldest }) = cut {
        warnings.push(Warning {
            line: None,
            kind: WarningKind::LeftOut,
            message: format!(
                "gh lists at most {limit} issues and gave as many: open issues older than #{oldest} may be left out of the run"
            ),
        });
    }
    let mut issues = Vec::with_capacity(open.len());
    for issue in open {
        let depends_on = waits_for(&issue, &numbers, this.as_ref(), cut.as_ref(), &mut warnings)?;
        issues.push(as_issue(issue, depends_on));
    }
    Ok(Snapshot {
        tracker: SourceKind::Github,
        read_from: from.to_owned(),
        issues,
        warnings,
    })
}

/// The open issues of the list, labelled `label` when one is given, oldest
/// first, each once.
fn open_issues(listed: Vec<GhIssue>, label: Option<&str>) -> Vec<GhIssue> {
    let mut open: Vec<GhIssue> = listed
        .into_iter()
        .filter(|issue| {
            issue
                .state
                .as_deref()
                .is_none_or(|state| state.eq_ignore_ascii_case("open"))
        })
        .filter(|issue| {
            label.is_none_or(|label| {
                issue
                    .labels
                    .iter()
                    .any(|l| l.name.eq_ignore_ascii_case(label))
            })
        })
        .collect();
    open.sort_by_key(|issue| issue.number);
    open.dedup_by_key(|issue| issue.number);
    open
}

/// The issues of the run `issue` waits for. A reference to another
/// repository, or to an issue of this one that is not in the run, is a
/// warning; one the cut may have left out is an error.
fn waits_for(
    issue: &GhIssue,
    numbers: &HashSet<u64>,
    this: Option<&Repository>,
    cut: Option<&Cut>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<String>, IssuesError> {
    let mut depends_on: Vec<String> = Vec::new();
    let mut warn = |message: String| {
        warnings.push(Warning {
            line: None,
            kind: WarningKind::OutsideDependency,
            message,
        });
    };
    for reference in references::dependencies(issue.body.as_deref().unwrap_or_default()) {
        let Some(number) = reference.local_number(this) else {
            let place = match this {
                Some(_) => "an issue of another repository",
                None => "which the list cannot place in this repository (it has no `url`)",
            };
            warn(format!(
                "issue #{} depends on {reference}, {place}; the run does not wait for it",
                issue.number
            ));
            continue;
        };
        if number == issue.number || depends_on.contains(&number.to_string()) {
            continue;
        }
        if numbers.contains(&number) {
            depends_on.push(number.to_string());
        } else if let Some(cut) = cut.filter(|cut| number < cut.oldest) {
            return Err(IssuesError::DependencyBeyondList {
                issue: issue.number,
                dependency: number,
                limit: cut.limit,
                oldest: cut.oldest,
            });
        } else {
            warn(format!(
                "issue #{} depends on #{number}, which is not among the open issues of the run; it is taken as done",
                issue.number
            ));
        }
    }
    Ok(depends_on)
}

/// The issue as a story of the run takes it.
fn as_issue(issue: GhIssue, depends_on: Vec<String>) -> Issue {
    let names: Vec<&str> = issue.labels.iter().map(|l| l.name.as_str()).collect();
    let summary = match names.as_slice() {
        [] => format!("GitHub issue #{}", issue.number),
        names => format!(
            "GitHub issue #{} (labels: {})",
            issue.number,
            names.join(", ")
        ),
    };
    Issue {
        id: issue.number.to_string(),
        title: issue.title,
        summary,
        text: issue.body.unwrap_or_default(),
        priority: None,
        depends_on,
        acceptance_criteria: Vec::new(),
    }
}

/// serde_json's message without its " at line L column C".
fn without_position(err: &serde_json::Error) -> String {
    let full = err.to_string();
    match full.rfind(" at line ") {
        Some(index) if err.line() > 0 => full[..index].to_owned(),
        _ => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_replies_since_the_question_are_read_in_order() {
        let json = r#"{"comments":[
            {"body":"/answer too early","createdAt":"2025-12-31T23:59:59Z"},
            {"body":"Thanks!","createdAt":"2026-01-02T00:00:00Z"},
            {"body":"/answers are not this","createdAt":"2026-01-02T00:00:00Z"},
            {"body":"  /answer CSV, with a header line.\n","createdAt":"2026-01-02T00:00:00Z"},
            {"body":"/answer","createdAt":"2026-01-03T00:00:00Z"},
            {"body":"/answer Semicolons.","createdAt":"2026-01-03T00:00:00Z"}]}"#;
        assert_eq!(
            replies(json, 1_767_225_600),
            ["CSV, with a header line.", "Semicolons."]
        );
        assert!(replies("not json", 0).is_empty());
    }

    const LISTED: &str = include_str!("../../tests/fixtures/trackers/github/issue-list.json");

    #[test]
    fn the_recorded_list_gives_the_open_issues_oldest_first() {
        let snapshot = parse("issue-list.json", LISTED, Some("ralph")).expect("parse");
        let ids: Vec<&str> = snapshot.issues.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["3", "5", "7"]);
        assert_eq!(snapshot.issues[0].depends_on, ["7"], "blocked by #7");
        assert!(
            snapshot.issues[0]
                .summary
                .starts_with("GitHub issue #3 (labels: "),
            "{}",
            snapshot.issues[0].summary
        );
        assert!(snapshot.warnings.is_empty(), "{:?}", snapshot.warnings);
    }

    #[test]
    fn closed_and_unlabelled_issues_are_left_out() {
        let text = r#"[{"body":"","labels":[],"number":1,"state":"CLOSED","title":"old"},{"body":"","labels":[{"id":"x","name":"Ralph","description":"","color":"ededed"}],"number":2,"state":"OPEN","title":"new"},{"body":"","labels":[],"number":4,"state":"OPEN","title":"other"}]"#;
        let snapshot = parse("f", text, Some("ralph")).expect("parse");
        let ids: Vec<&str> = snapshot.issues.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["2"], "labels match in any case");
        let all = parse("f", text, None).expect("parse");
        assert_eq!(all.issues.len(), 2, "without a label, every open issue");
    }

    #[test]
    fn no_open_issue_is_an_error_naming_the_label() {
        let error = parse("gh issue list", "[]\n", Some("ralph")).expect_err("empty");
        assert_eq!(
            error.to_string(),
            "gh issue list holds no open issue labelled `ralph`"
        );
        assert!(error.hint().is_some_and(|hint| hint.contains("--label")));
    }

    #[test]
    fn text_that_is_not_the_list_names_its_line() {
        let error = parse("issues.json", "[\n{\"number\": \"x\"}]", None).expect_err("bad");
        assert!(
            error.to_string().starts_with("issues.json:2: not the JSON"),
            "{error}"
        );
    }

    #[test]
    fn dependencies_are_read_from_lines_that_say_so() {
        let text = r##"[{"body":"Depends on #8\nBlocked by #2","labels":[],"number":2,"state":"OPEN","title":"a"}]"##;
        let snapshot = parse("f", text, None).expect("parse");
        assert!(
            snapshot.issues[0].depends_on.is_empty(),
            "itself, and #8 outside"
        );
        assert_eq!(snapshot.warnings.len(), 1);
        assert_eq!(snapshot.warnings[0].kind, WarningKind::OutsideDependency);
    }

    #[test]
    fn a_list_as_long_as_its_limit_says_so_and_refuses_what_the_cut_may_hide() {
        let text = r##"[{"number":9,"title":"a","body":"Depends on #8"},{"number":8,"title":"b","body":"Depends on #7"}]"##;
        let error = parse_listed("gh", text, None, Some(2)).expect_err("#7 may be open");
        assert!(
            error.to_string().starts_with("issue #8 depends on #7, "),
            "{error}"
        );
        assert!(error.hint().is_some());
        let text =
            r##"[{"number":9,"title":"a","body":"Depends on #8"},{"number":8,"title":"b"}]"##;
        let snapshot = parse_listed("gh", text, None, Some(2)).expect("parse");
        assert_eq!(snapshot.issues[1].depends_on, ["8"]);
        assert_eq!(snapshot.warnings.len(), 1, "{:?}", snapshot.warnings);
        assert_eq!(snapshot.warnings[0].kind, WarningKind::LeftOut);
        assert!(snapshot.warnings[0].message.contains("older than #8"));
        let whole = parse_listed("gh", text, None, Some(3)).expect("parse");
        assert!(whole.warnings.is_empty(), "{:?}", whole.warnings);
    }
}
