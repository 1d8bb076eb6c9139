//! `git ralph agents --verify`: proof, offline and for free, that git-ralph
//! understands the agent CLI installed on this machine.
//!
//! Agent CLIs change their output between releases, and a parser that no
//! longer understands them fails silently: completions go unnoticed, rate
//! limits spend retries. This module runs the installed CLI, with its
//! preset's own command line, against the scripted [`standin`](crate::standin)
//! on loopback, and checks that each short scenario reaches the conclusion
//! it must. It reports typed events and a [`Report`]; it never prints, and
//! touches nothing outside a throwaway directory and its own cache file.

mod cache;
pub mod pointing;
mod recording;
mod scenarios;

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

use crate::agent::presets::{self, Pointing, Preset, StandinSetup};
use crate::agent::{self, AgentRun, Conclusion, DEFAULT_TOKEN};
use crate::standin::Standin;

pub use cache::{Cache, CacheError};
pub use recording::Recording;
pub use scenarios::{Expected, FAILED_REASON, Scenario, scenarios};

/// How long one scenario may take; rate-limit scenarios wait through the
/// CLI's own retries.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(240);
/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// What `--verify` found out about one CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every scenario reached its conclusion.
    Verified,
    /// A scenario did not; `line` is the first output line carrying the
    /// model's words that the parser could not place.
    FormatNotUnderstood {
        scenario: String,
        expected: String,
        concluded: String,
        line: Option<String>,
    },
    /// The CLI has no known way to use a local API, or never reached it.
    CannotPoint { reason: String },
    /// Its program is not on PATH.
    NotInstalled,
}

impl Verdict {
    pub fn is_verified(&self) -> bool {
        matches!(self, Verdict::Verified)
    }

    /// The word for the verdict, as the cache and `--json` store it.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::FormatNotUnderstood { .. } => "format_not_understood",
            Verdict::CannotPoint { .. } => "cannot_point",
            Verdict::NotInstalled => "not_installed",
        }
    }
}

/// One scenario's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioOutcome {
    pub scenario: &'static str,
    pub expected: Expected,
    pub concluded: String,
    pub passed: bool,
    /// Conversation requests the stand-in answered.
    pub requests: usize,
    pub exit: String,
    pub seconds: f64,
}

/// The report for one CLI.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub name: &'static str,
    pub title: &'static str,
    pub program: &'static str,
    pub version: Option<String>,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub scenarios: Vec<ScenarioOutcome>,
    pub seconds: f64,
}

/// What happens while verifying, for the ui to show.
#[derive(Debug, Clone)]
pub enum Progress {
    Started {
        name: &'static str,
        version: Option<String>,
    },
    Scenario(ScenarioOutcome),
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Standin(#[from] crate::standin::StandinError),
    #[error("could not prepare a throwaway directory: {0}")]
    Sandbox(#[source] std::io::Error),
    #[error(transparent)]
    Runner(#[from] agent::RunnerError),
    #[error("could not record a transcript: {0}")]
    Record(#[source] std::io::Error),
}

/// The version `program --version` prints: the first word that looks like
/// a version number (`2.1.197`, `0.169.0`) on stdout, else on stderr (where
/// pi prints it), or `None` when it cannot run.
pub async fn version(program: &str) -> Option<String> {
    let spec = crate::process::Spec {
        program: program.to_owned(),
        args: vec!["--version".to_owned()],
        cwd: std::env::temp_dir(),
        ..crate::process::Spec::default()
    };
    let limits = crate::process::Limits::timeout(VERSION_TIMEOUT);
    let (_, stdout, stderr) = crate::process::run_split(&spec, limits, 64 * 1024)
        .await
        .ok()?;
    version_in(&stdout.text()).or_else(|| version_in(&stderr.text()))
}

fn version_in(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|word| word.trim_start_matches('v').trim_end_matches(['.', ',']))
        .find(|word| {
            word.contains('.')
                && word.starts_with(|c: char| c.is_ascii_digit())
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
        })
        .map(str::to_owned)
}

/// Runs every scenario for `preset` and decides the verdict; with a
/// `recording`, keeps what the CLI printed in each as a fixture.
pub async fn verify(
    preset: &'static Preset,
    recording: Option<&Recording>,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Report, VerifyError> {
    let started = Instant::now();
    let mut report = Report {
        name: preset.name,
        title: preset.title,
        program: preset.program,
        version: None,
        verdict: Verdict::Verified,
        scenarios: Vec::new(),
        seconds: 0.0,
    };
    if !crate::process::is_runnable(preset.program) {
        report.verdict = Verdict::NotInstalled;
        return Ok(report);
    }
    report.version = version(preset.program).await;
    progress(Progress::Started {
        name: preset.name,
        version: report.version.clone(),
    });
    let Some(setup) = preset.standin else {
        report.verdict = Verdict::CannotPoint {
            reason: format!(
                "{} talks only to its vendor's service; it has no setting for a local model API",
                preset.title
            ),
        };
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    };
    for scenario in scenarios(setup.offers_tools) {
        let (outcome, ended) = run_one(preset, &setup, &scenario, recording).await?;
        progress(Progress::Scenario(outcome.clone()));
        report.scenarios.push(outcome);
        if let Some(verdict) = ended {
            report.verdict = verdict;
            break;
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// One scenario, played by a stand-in the CLI is pointed at in a sandbox
/// of its own: how it went, and the verdict when it ends the verification.
async fn run_one(
    preset: &'static Preset,
    setup: &StandinSetup,
    scenario: &Scenario,
    recording: Option<&Recording>,
) -> Result<(ScenarioOutcome, Option<Verdict>), VerifyError> {
    let sandbox = tempfile::Builder::new()
        .prefix("git-ralph-verify-")
        .tempdir()
        .map_err(VerifyError::Sandbox)?;
    let standin = Standin::start(scenario.script.clone()).await?;
    let home = sandbox.path().join("home");
    let project = sandbox.path().join("project");
    let mut env = pointing::home_env(&home).map_err(VerifyError::Sandbox)?;
    let base = standin.base_url();
    let pointing = Pointing {
        base: &base,
        home: &home,
    };
    env.extend((setup.point)(&pointing).map_err(VerifyError::Sandbox)?);
    prepare_project(&project).map_err(VerifyError::Sandbox)?;
    let at = Instant::now();
    let (run, log) = run_scenario(preset, &project, env, sandbox.path()).await?;
    let requests = standin.turn_requests();
    standin.stop().await;
    if let Some(recording) = recording {
        let places = recording::Places {
            sandbox: sandbox.path(),
            project: &project,
            home: &home,
            base: &base,
        };
        recording
            .write(scenario.name, &log, run.exit, scenario.expected, &places)
            .map_err(VerifyError::Record)?;
    }
    let passed = scenario.expected.met_by(&run, scenario.marker);
    let outcome = ScenarioOutcome {
        scenario: scenario.name,
        expected: scenario.expected,
        concluded: describe(&run),
        passed,
        requests,
        exit: run.exit.to_string(),
        seconds: at.elapsed().as_secs_f64(),
    };
    let ended = if requests == 0 {
        Some(Verdict::CannotPoint {
            reason: format!(
                "it never called the local API; {}",
                match &run.conclusion {
                    Conclusion::AgentError { message } => one_line(message),
                    _ => format!("it said: {}", first_words(&log, &run.stderr_tail)),
                }
            ),
        })
    } else if !passed {
        Some(Verdict::FormatNotUnderstood {
            scenario: scenario.name.to_owned(),
            expected: scenario.expected.describe().to_owned(),
            concluded: describe(&run),
            line: unplaced_line(preset, &log, scenario.marker),
        })
    } else {
        None
    };
    Ok((outcome, ended))
}

/// A git repository with one file for the CLI to work in.
fn prepare_project(project: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(project)?;
    crate::git::init(project).map_err(std::io::Error::other)?;
    std::fs::write(
        project.join("README.md"),
        "# verify\n\nA throwaway project.\n",
    )
}

/// Runs the preset's own command line once; returns the run and its stdout.
async fn run_scenario(
    preset: &Preset,
    project: &Path,
    env: Vec<(String, String)>,
    sandbox: &Path,
) -> Result<(AgentRun, String), VerifyError> {
    let spec = presets::preset(preset.name, None, &[])
        .map_err(|err| VerifyError::Sandbox(std::io::Error::other(err.to_string())))?;
    let prompt = "Work on story 1.1: create hello.txt. End your final message with \
                  <promise>COMPLETE</promise> when it is done.";
    let prompt_file = sandbox.join("prompt.md");
    std::fs::write(&prompt_file, prompt).map_err(VerifyError::Sandbox)?;
    let invocation = spec.invocation(prompt, &prompt_file, project, env, DEFAULT_TOKEN);
    let log_path = sandbox.join("agent.log");
    let (_stop_tx, stop_rx) = watch::channel(false);
    let run = agent::run(
        &invocation,
        &log_path,
        SCENARIO_TIMEOUT,
        stop_rx,
        &mut |_event| {},
    )
    .await?;
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    Ok((run, log))
}

fn describe(run: &AgentRun) -> String {
    match &run.conclusion {
        Conclusion::Complete => "COMPLETE".into(),
        Conclusion::Failed { reason } => format!("FAILED: {reason}"),
        Conclusion::NoSignal => "no signal".into(),
        Conclusion::AgentError { message } => {
            let limited = run
                .done
                .as_ref()
                .is_some_and(|done| done.rate_limit.is_some());
            let kind = if limited {
                "rate limited"
            } else {
                "agent error"
            };
            format!("{kind}: {}", one_line(message))
        }
    }
}

/// The first line of `log` that carries `marker` (the model's words) but
/// that a fresh parser turns into no event; failing that, the first line
/// the parser turns into nothing at all. A plain-text parser places every
/// line, so for it this is the first line with the marker, else the last.
fn unplaced_line(preset: &Preset, log: &str, marker: &str) -> Option<String> {
    let mut parser = (preset.parser)();
    let mut first_silent = None;
    let lines = || log.lines().filter(|line| !line.trim().is_empty());
    for line in lines() {
        let placed = !parser.feed_line(line).is_empty();
        if placed {
            continue;
        }
        if line.contains(marker) {
            return Some(shorten(line));
        }
        first_silent.get_or_insert_with(|| shorten(line));
    }
    first_silent
        .or_else(|| lines().find(|line| line.contains(marker)).map(shorten))
        .or_else(|| lines().next_back().map(shorten))
}

fn first_words(log: &str, stderr: &str) -> String {
    stderr
        .lines()
        .chain(log.lines())
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(shorten)
        .unwrap_or_else(|| "nothing".into())
}

fn one_line(text: &str) -> String {
    shorten(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn shorten(text: &str) -> String {
    const MAX: usize = 240;
    if text.chars().count() <= MAX {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_whatever_the_cli_wraps_them_in() {
        assert_eq!(
            version_in("2.1.197 (Claude Code)\n").as_deref(),
            Some("2.1.197")
        );
        assert_eq!(
            version_in("codex-cli 0.169.0\n").as_deref(),
            Some("0.169.0")
        );
        assert_eq!(
            version_in("Package extraction took 5219ms\nGitHub Copilot CLI 1.0.102.\n").as_deref(),
            Some("1.0.102")
        );
        assert_eq!(version_in("aider v0.86.2").as_deref(), Some("0.86.2"));
        assert_eq!(version_in("no version here"), None);
    }

    #[test]
    fn the_unplaced_line_is_the_one_with_the_models_words() {
        let claude = presets::lookup("claude").expect("a preset");
        let log = "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n\
                   {\"type\":\"assistant_v2\",\"text\":\"done <promise>COMPLETE</promise>\"}\n";
        assert_eq!(
            unplaced_line(claude, log, "promise").as_deref(),
            Some("{\"type\":\"assistant_v2\",\"text\":\"done <promise>COMPLETE</promise>\"}")
        );
    }

    #[test]
    fn for_plain_text_the_line_with_the_models_words_is_shown() {
        let aider = presets::lookup("aider").expect("a preset");
        let log = "Aider v0.86.2\nlitellm.RateLimitError: AnthropicException - {\"message\": \"This request\nwould exceed the rate limit\"}\n";
        let line = unplaced_line(aider, log, "rate limit").expect("a line");
        assert!(line.contains("rate limit"), "{line}");
    }
}
