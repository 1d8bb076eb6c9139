//! How `git ralph agents` shows the presets and `--verify` its verdicts.

use console::Term;
use serde::Serialize;

use super::{Styles, note, out};
use crate::verification::{Progress, Report, Verdict};

/// One preset as `agents` lists it (and `agents --json` prints it).
#[derive(Debug, Serialize)]
pub struct AgentRow {
    pub name: &'static str,
    pub title: &'static str,
    pub program: &'static str,
    /// The release git-ralph was verified on (its transcripts are in the
    /// tests, and the real-CLI tests install it); `None` for a CLI that
    /// talks only to its vendor's service.
    pub verified_release: Option<&'static str>,
    /// The oldest release whose output the tests hold too, when older than
    /// `verified_release`.
    pub oldest_release: Option<&'static str>,
    /// The releases git-ralph understands, as people read them
    /// (`0.15.10 to 0.24.4`); `None` when none can be verified.
    pub releases: Option<String>,
    pub on_path: bool,
    /// `git ralph start` without --agent runs this one.
    pub default: bool,
    /// The option `--model` is passed with, if the CLI has one.
    pub model_option: Option<&'static str>,
    pub command_line: String,
    /// The agent's own files, left out of checkpoints and reverts.
    pub scratch: &'static [&'static str],
    /// What `PROGRAM --version` says, when it is on PATH.
    pub version: Option<String>,
    /// The verdict `agents --verify` last reached for this version on
    /// this machine, if it ran.
    pub verified: Option<String>,
}

pub fn print_agents(rows: &[AgentRow]) {
    let term = Term::stdout();
    let s = Styles::for_term(&term);
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0);
    for row in rows {
        let found = if row.on_path {
            let version = row
                .version
                .as_deref()
                .map(|version| format!(" {version}"))
                .unwrap_or_default();
            let checked = match row.verified.as_deref() {
                Some("verified") => s.good.apply_to(" · verified here".to_owned()),
                Some(other) => s.warn.apply_to(format!(" · {}", other.replace('_', " "))),
                None => s.dim.apply_to(" · not verified here".to_owned()),
            };
            format!("{}{checked}", s.good.apply_to(format!("on PATH{version}")))
        } else {
            s.dim
                .apply_to(format!("{} not found", row.program))
                .to_string()
        };
        let default = if row.default { " · default" } else { "" };
        let release = match &row.releases {
            Some(releases) => format!("understands {releases}"),
            None => "cannot be verified (its vendor's service only)".to_owned(),
        };
        out(&format!(
            "{} {} · {release} · {found}{default}",
            s.bold.apply_to(format!("{:width$}", row.name)),
            row.title,
        ));
        out(&format!("  {}", row.command_line));
    }
    let without_model: Vec<&str> = rows
        .iter()
        .filter(|row| row.model_option.is_none())
        .map(|row| row.name)
        .collect();
    let mut footer = String::from(
        "--model <M> is passed with each CLI's model option; extra arguments come from git config ralph.<agent>.args",
    );
    if !without_model.is_empty() {
        footer.push_str(&format!(
            "\nno model option, so --model is refused: {}",
            without_model.join(", ")
        ));
    }
    if rows.iter().any(|row| row.on_path && row.verified.is_none()) {
        footer.push_str("\n'git ralph agents --verify' checks the installed CLIs against a local stand-in, offline");
    }
    out(&s.dim.apply_to(footer).to_string());
}

/// Live progress of `--verify`, on stderr.
pub fn print_progress(progress: &Progress) {
    let term = Term::stderr();
    let s = Styles::for_term(&term);
    match progress {
        Progress::Started { name, version } => note(&format!(
            "{} {}",
            s.bold.apply_to(name),
            version.as_deref().unwrap_or("(version unknown)")
        )),
        Progress::Scenario(outcome) => {
            let mark = if outcome.passed {
                s.good.apply_to("ok  ")
            } else {
                s.bad.apply_to("FAIL")
            };
            note(&format!(
                "  {mark} {:<15} expected {}, concluded {} ({:.1}s)",
                outcome.scenario,
                outcome.expected.describe(),
                outcome.concluded,
                outcome.seconds
            ));
        }
    }
}

/// The verdicts, one paragraph per CLI, on stdout.
pub fn print_verdicts(reports: &[Report]) {
    let term = Term::stdout();
    let s = Styles::for_term(&term);
    let width = reports.iter().map(|r| r.name.len()).max().unwrap_or(0);
    for report in reports {
        let name = s.bold.apply_to(format!("{:width$}", report.name));
        let version = report.version.as_deref().unwrap_or("?");
        match &report.verdict {
            Verdict::Verified => out(&format!(
                "{name} {version} · {}",
                s.good.apply_to("verified")
            )),
            Verdict::FormatNotUnderstood {
                scenario,
                expected,
                concluded,
                line,
            } => {
                out(&format!(
                    "{name} {version} · {}",
                    s.bad.apply_to("format not understood")
                ));
                out(&format!(
                    "  {scenario}: expected {expected}, concluded {concluded}"
                ));
                if let Some(line) = line {
                    out(&format!("  first line it could not place: {line}"));
                }
            }
            Verdict::CannotPoint { reason } => {
                out(&format!(
                    "{name} {version} · {}",
                    s.warn.apply_to("cannot be pointed at a local API")
                ));
                out(&format!("  {reason}"));
            }
            Verdict::NotInstalled => out(&format!(
                "{name} · {}",
                s.dim
                    .apply_to(format!("not installed ({} not on PATH)", report.program))
            )),
        }
    }
}
