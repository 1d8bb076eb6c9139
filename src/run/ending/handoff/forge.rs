//! Opening the pull request, or updating the one already open for the
//! branch, with the forge's own CLI: `gh` for GitHub, `glab` for GitLab
//! (a remote whose host names GitLab). Both run through the process
//! supervisor with prompts turned off; the description goes to `gh` on its
//! standard input and to `glab` as an argument, never through a shell.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::error::ReviewFailure;
use crate::process::{self, ExitStatusKind, Limits, ProcessError, Spec, shell_quote};
use crate::settings::Forge;

/// One call of the forge's CLI: it talks to a server, so it gets a while.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
const OUTPUT_LIMIT: usize = 64 * 1024;

impl Forge {
    /// GitLab when the remote's host says so; GitHub otherwise.
    pub fn of(url: Option<&str>) -> Forge {
        match url.and_then(location) {
            Some((host, _)) if host.to_ascii_lowercase().contains("gitlab") => Forge::GitLab,
            _ => Forge::GitHub,
        }
    }

    pub fn tool(self) -> &'static str {
        match self {
            Forge::GitHub => "gh",
            Forge::GitLab => "glab",
        }
    }

    /// What the forge calls it.
    pub fn review_name(self) -> &'static str {
        match self {
            Forge::GitHub => "pull request",
            Forge::GitLab => "merge request",
        }
    }
}

/// What to open or update.
pub struct Request<'a> {
    pub forge: Forge,
    /// The remote's URL, to name the repository to the CLI.
    pub url: Option<&'a str>,
    pub branch: &'a str,
    pub base: Option<&'a str>,
    pub title: &'a str,
    pub body: &'a str,
    pub draft: bool,
    pub cwd: &'a Path,
}

/// The pull request, opened or found and updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub url: String,
    /// False: one was already open for the branch, and was updated.
    pub created: bool,
    /// It is a draft now.
    pub draft: bool,
    /// It was open and not a draft, and `--draft` made it one.
    pub made_draft: bool,
}

pub fn open_or_update(request: &Request) -> Result<Opened, ReviewFailure> {
    let tool = request.forge.tool();
    if !process::is_runnable(tool) {
        return Err(ReviewFailure::Missing { tool });
    }
    match find_open(request)? {
        Some(open) => {
            let args = match request.forge {
                Forge::GitHub => vec![
                    "pr".into(),
                    "edit".into(),
                    open.id.clone(),
                    "--body-file=-".into(),
                ],
                Forge::GitLab => vec![
                    "mr".into(),
                    "update".into(),
                    open.id.clone(),
                    format!("--description={}", request.body),
                ],
            };
            call(request, args, Some(request.body))?;
            // --draft asks for a draft; one already open is turned into
            // one rather than left as it was without a word.
            let made_draft = request.draft && !open.draft;
            if made_draft {
                let args = match request.forge {
                    Forge::GitHub => vec!["pr".into(), "ready".into(), open.id, "--undo".into()],
                    Forge::GitLab => vec!["mr".into(), "update".into(), open.id, "--draft".into()],
                };
                call(request, args, None)?;
            }
            Ok(Opened {
                url: open.url,
                created: false,
                draft: open.draft || made_draft,
                made_draft,
            })
        }
        None => {
            let stdout = call(request, create_args(request), Some(request.body))?;
            let url = stdout
                .split_whitespace()
                .rev()
                .find(|word| word.starts_with("http"))
                .unwrap_or_else(|| stdout.trim())
                .to_owned();
            Ok(Opened {
                url,
                created: true,
                draft: request.draft,
                made_draft: false,
            })
        }
    }
}

/// The command that opens it by hand, with the description in `body_file`.
pub fn by_hand(request: &Request, body_file: &Path) -> String {
    let file = shell_quote(&body_file.to_string_lossy());
    let mut words: Vec<String> = match request.forge {
        Forge::GitHub => vec!["gh pr create --head".into(), shell_quote(request.branch)],
        Forge::GitLab => vec![
            "glab mr create --source-branch".into(),
            shell_quote(request.branch),
        ],
    };
    if let Some(base) = request.base {
        words.push(match request.forge {
            Forge::GitHub => "--base".into(),
            Forge::GitLab => "--target-branch".into(),
        });
        words.push(shell_quote(base));
    }
    words.push("--title".into());
    words.push(shell_quote(request.title));
    words.push(match request.forge {
        Forge::GitHub => format!("--body-file {file}"),
        Forge::GitLab => format!("--description \"$(cat {file})\""),
    });
    if request.draft {
        words.push("--draft".into());
    }
    if let Some(repo) = repo_arg(request) {
        words.push(format!("--repo {}", shell_quote(&repo)));
    }
    words.join(" ")
}

fn create_args(request: &Request) -> Vec<String> {
    let mut args: Vec<String> = match request.forge {
        Forge::GitHub => vec![
            "pr".into(),
            "create".into(),
            format!("--head={}", request.branch),
            format!("--title={}", request.title),
            "--body-file=-".into(),
        ],
        Forge::GitLab => vec![
            "mr".into(),
            "create".into(),
            format!("--source-branch={}", request.branch),
            format!("--title={}", request.title),
            format!("--description={}", request.body),
            "--yes".into(),
        ],
    };
    if let Some(base) = request.base {
        args.push(match request.forge {
            Forge::GitHub => format!("--base={base}"),
            Forge::GitLab => format!("--target-branch={base}"),
        });
    }
    if request.draft {
        args.push("--draft".into());
    }
    args
}

/// A pull request open for the branch.
struct Found {
    id: String,
    url: String,
    draft: bool,
}

#[derive(Deserialize)]
struct GhPull {
    number: u64,
    url: String,
    #[serde(default, rename = "isDraft")]
    is_draft: bool,
}

#[derive(Deserialize)]
struct GlabMerge {
    iid: u64,
    web_url: String,
    #[serde(default)]
    draft: bool,
}

fn find_open(request: &Request) -> Result<Option<Found>, ReviewFailure> {
    let tool = request.forge.tool();
    let args: Vec<String> = match request.forge {
        Forge::GitHub => vec![
            "pr".into(),
            "list".into(),
            format!("--head={}", request.branch),
            "--state=open".into(),
            "--json=number,url,isDraft".into(),
        ],
        Forge::GitLab => vec![
            "mr".into(),
            "list".into(),
            format!("--source-branch={}", request.branch),
            "--output=json".into(),
        ],
    };
    let stdout = call(request, args, None)?;
    let unreadable = |err: serde_json::Error| ReviewFailure::Failed {
        tool,
        detail: format!("listed pull requests in a form git-ralph cannot read: {err}"),
    };
    let text = stdout.trim();
    if text.is_empty() {
        return Ok(None);
    }
    Ok(match request.forge {
        Forge::GitHub => serde_json::from_str::<Vec<GhPull>>(text)
            .map_err(unreadable)?
            .into_iter()
            .next()
            .map(|pull| Found {
                id: pull.number.to_string(),
                url: pull.url,
                draft: pull.is_draft,
            }),
        Forge::GitLab => serde_json::from_str::<Vec<GlabMerge>>(text)
            .map_err(unreadable)?
            .into_iter()
            .next()
            .map(|merge| Found {
                id: merge.iid.to_string(),
                url: merge.web_url,
                draft: merge.draft,
            }),
    })
}

/// Runs the forge's CLI with `args` (and the repository named, when the
/// remote's URL says which); its stdout, or why it failed.
fn call(
    request: &Request,
    mut args: Vec<String>,
    stdin: Option<&str>,
) -> Result<String, ReviewFailure> {
    let tool = request.forge.tool();
    if let Some(repo) = repo_arg(request) {
        args.push(format!("--repo={repo}"));
    }
    // `glab` takes the description as an argument: no standard input.
    let stdin = match request.forge {
        Forge::GitHub => stdin.map(str::to_owned),
        Forge::GitLab => None,
    };
    let spec = Spec {
        program: tool.into(),
        args,
        env: [
            ("GH_PROMPT_DISABLED", "1"),
            ("GH_NO_UPDATE_NOTIFIER", "1"),
            ("GH_SPINNER_DISABLED", "1"),
            ("NO_PROMPT", "1"),
            ("GLAB_CHECK_UPDATE", "false"),
            ("NO_COLOR", "1"),
            ("GIT_TERMINAL_PROMPT", "0"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect(),
        cwd: request.cwd.to_owned(),
        stdin,
        ..Spec::default()
    };
    let (exit, stdout, stderr) =
        process::run_split_blocking(&spec, Limits::timeout(CALL_TIMEOUT), OUTPUT_LIMIT)
            .map_err(|err| spawn_failure(tool, err))?;
    let (stdout, stderr) = (stdout.text(), stderr.text());
    if exit.is_success() {
        return Ok(stdout);
    }
    Err(failure(tool, exit, &stderr))
}

fn spawn_failure(tool: &'static str, err: ProcessError) -> ReviewFailure {
    match err {
        ProcessError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            ReviewFailure::Missing { tool }
        }
        err => ReviewFailure::Failed {
            tool,
            detail: format!("could not be run: {err}"),
        },
    }
}

fn failure(tool: &'static str, exit: ExitStatusKind, stderr: &str) -> ReviewFailure {
    let lower = stderr.to_ascii_lowercase();
    // gh exits with 4 when it needs a login.
    let login = exit == ExitStatusKind::Exited(4) && tool == "gh"
        || lower.contains("auth login")
        || lower.contains("not logged in")
        || lower.contains("401 unauthorized");
    if login {
        return ReviewFailure::NotLoggedIn { tool };
    }
    let said = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    ReviewFailure::Failed {
        tool,
        detail: if said.is_empty() {
            exit.to_string()
        } else {
            format!("{exit}: {}", process::tail_str(&said, 600))
        },
    }
}

/// The repository as the CLI's `--repo` takes it, when the remote's URL
/// names one: `HOST/OWNER/REPO` for gh, the web address for glab.
fn repo_arg(request: &Request) -> Option<String> {
    let (host, path) = location(request.url?)?;
    Some(match request.forge {
        Forge::GitHub => format!("{host}/{path}"),
        Forge::GitLab => format!("https://{host}/{path}"),
    })
}

/// The host and repository path of a remote URL (`https://host/o/r.git`,
/// `ssh://git@host:22/o/r`, `git@host:o/r.git`); `None` for a local path.
pub fn location(url: &str) -> Option<(String, String)> {
    let url = url.trim();
    let (host, path) = match url.split_once("://") {
        Some((scheme, rest)) => {
            if scheme.eq_ignore_ascii_case("file") {
                return None;
            }
            let (authority, path) = rest.split_once('/')?;
            let host = authority.rsplit('@').next()?;
            let host = host.split(':').next()?;
            (host, path)
        }
        None => {
            // scp-like `[user@]host:path`, never a path with a slash first.
            let (authority, path) = url.split_once(':')?;
            if authority.contains('/') || authority.is_empty() {
                return None;
            }
            (authority.rsplit('@').next()?, path)
        }
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    if host.is_empty() || !path.contains('/') {
        return None;
    }
    Some((host.to_owned(), path.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_name_host_and_repository() {
        let cases = [
            ("https://github.com/o/r.git", Some(("github.com", "o/r"))),
            (
                "https://x-access-token:t@github.com/o/r",
                Some(("github.com", "o/r")),
            ),
            (
                "ssh://git@gitlab.example.com:2222/group/sub/r.git",
                Some(("gitlab.example.com", "group/sub/r")),
            ),
            ("git@github.com:o/r.git", Some(("github.com", "o/r"))),
            ("/srv/git/r.git", None),
            ("./r.git", None),
            ("file:///srv/git/r.git", None),
            ("../remote.git", None),
        ];
        for (url, expected) in cases {
            assert_eq!(
                location(url),
                expected.map(|(h, p)| (h.to_owned(), p.to_owned())),
                "{url}"
            );
        }
    }

    #[test]
    fn gitlab_hosts_get_glab_and_the_rest_gh() {
        assert_eq!(Forge::of(Some("git@gitlab.com:g/r.git")), Forge::GitLab);
        assert_eq!(
            Forge::of(Some("https://gitlab.corp.example/g/r")),
            Forge::GitLab
        );
        assert_eq!(Forge::of(Some("https://github.com/o/r")), Forge::GitHub);
        assert_eq!(Forge::of(Some("/srv/git/r.git")), Forge::GitHub);
        assert_eq!(Forge::of(None), Forge::GitHub);
    }

    #[test]
    fn the_command_by_hand_is_quoted_for_the_shell() {
        let request = Request {
            forge: Forge::GitHub,
            url: Some("https://github.com/o/r.git"),
            branch: "ralph/add-x",
            base: Some("main"),
            title: "Add x's part",
            body: "",
            draft: true,
            cwd: Path::new("/"),
        };
        assert_eq!(
            by_hand(
                &request,
                Path::new("/repo/.git/ralph/add-x/pull-request.md")
            ),
            "gh pr create --head ralph/add-x --base main --title 'Add x'\\''s part' \
             --body-file /repo/.git/ralph/add-x/pull-request.md --draft --repo github.com/o/r"
        );
    }

    #[test]
    fn a_login_prompt_is_told_from_other_failures() {
        assert_eq!(
            failure(
                "gh",
                ExitStatusKind::Exited(4),
                "To get started with GitHub CLI, please run:  gh auth login\n"
            ),
            ReviewFailure::NotLoggedIn { tool: "gh" }
        );
        assert_eq!(
            failure(
                "gh",
                ExitStatusKind::Exited(1),
                "GraphQL: Head sha can't be blank\n"
            ),
            ReviewFailure::Failed {
                tool: "gh",
                detail: "exited with code 1: GraphQL: Head sha can't be blank".into()
            }
        );
    }
}
