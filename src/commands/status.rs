//! `git ralph status [<change>] [--json]`: report a run from any terminal.
//! It only reads `state.json` (written atomically, so never torn) and the
//! lock, so it is safe while a loop runs.

use std::process::ExitCode;

use serde::Serialize;

use crate::exit::{CommandError, Exit};
use crate::git::Repo;
use crate::state::{AttemptOutcome, RunState, RunStatus, lock_holder};
use crate::ui::{self, Styles};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run to show; may be omitted when there is one run.
    #[arg(value_name = "CHANGE")]
    pub change: Option<String>,
    /// Print the run as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What `status --json` prints.
#[derive(Serialize)]
struct Report<'a> {
    change: &'a str,
    branch: &'a str,
    state: &'static str,
    reason: Option<&'static str>,
    alive: bool,
    pid: Option<u32>,
    source: &'a str,
    agent: &'a str,
    stories_done: usize,
    stories_total: usize,
    current_story: Option<&'a str>,
    current_attempt: u32,
    last_failure: Option<&'a str>,
    original: String,
    finished_with: Option<&'a str>,
    /// A usage-limit pause in force until then (unix seconds).
    paused_until: Option<u64>,
    pause_reason: Option<&'a str>,
    totals: &'a crate::state::Totals,
    stories: &'a [crate::state::StoryRecord],
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let repo = Repo::open_for_recovery(&super::current_dir()?)?;
    let change = super::pick_change(&repo, args.change.as_deref())?;
    let run_dir = super::existing_run(&repo, &change)?;
    let state = run_dir.load()?;
    let holder = lock_holder(&super::lock_path(&repo)).filter(|(_, c)| c == change.as_str());
    let alive = holder.is_some();
    // A loop that died without saving still says "running".
    let run_state = match (state.status, alive) {
        (RunStatus::Running, false) => "stopped",
        (status, _) => status.as_str(),
    };
    let report = Report {
        change: &state.change,
        branch: &state.branch,
        state: run_state,
        reason: state.reason.map(|r| r.as_str()),
        alive,
        pid: holder.map(|(pid, _)| pid),
        source: &state.settings.source,
        agent: state
            .settings
            .agent_command
            .as_deref()
            .unwrap_or(&state.settings.agent),
        stories_done: state.stories_done(),
        stories_total: state.stories.len(),
        current_story: state.current_story.as_deref(),
        current_attempt: state.current_attempt,
        last_failure: state.last_failure.as_deref(),
        original: state.original.head.describe(),
        finished_with: state.finished_with.as_deref(),
        paused_until: state
            .paused_until
            .filter(|until| *until > crate::state::now()),
        pause_reason: state.pause_reason.as_deref(),
        totals: &state.totals,
        stories: &state.stories,
    };
    if args.json {
        ui::out(
            &serde_json::to_string_pretty(&report)
                .map_err(|err| CommandError::internal(err.to_string()))?,
        );
    } else {
        print_human(&report, &state);
    }
    Ok(Exit::Success.code())
}

fn print_human(report: &Report, state: &RunState) {
    let term = console::Term::stdout();
    let s = Styles::for_term(&term);
    ui::out(&format!("{} {}", s.bold.apply_to("change:"), report.change));
    ui::out(&format!("{} {}", s.bold.apply_to("branch:"), report.branch));
    let mut line = format!("{} {}", s.bold.apply_to("state: "), report.state);
    if let Some(reason) = report.reason {
        line.push_str(&format!(" ({reason})"));
    }
    if let Some(with) = report.finished_with {
        line.push_str(&format!(" with {with}"));
    }
    line.push_str(&match report.pid {
        Some(pid) => format!(" · loop alive (pid {pid})"),
        None => " · no loop process".to_owned(),
    });
    ui::out(&line);
    ui::out(&format!(
        "{} {} · agent: {}",
        s.bold.apply_to("source:"),
        report.source,
        report.agent
    ));
    ui::out(&format!(
        "{} {}",
        s.bold.apply_to("started from:"),
        report.original
    ));
    ui::out(&format!(
        "{} {}/{} done",
        s.bold.apply_to("stories:"),
        report.stories_done,
        report.stories_total
    ));
    for story in &state.stories {
        let mark = if story.done {
            s.good.apply_to("✓").to_string()
        } else {
            " ".to_owned()
        };
        let current = report.current_story == Some(story.id.as_str()) && !story.done;
        let attempts: Vec<String> = story
            .attempts
            .iter()
            .map(|a| format!("#{} {}", a.attempt, outcome(a.outcome)))
            .collect();
        ui::out(&format!(
            "  {mark} {}. {} [{}/{} tasks]{}{}",
            story.id,
            story.title,
            story.tasks_done,
            story.tasks_total,
            if attempts.is_empty() {
                String::new()
            } else {
                format!(" · {}", attempts.join(", "))
            },
            if current {
                format!(" {}", s.bold.apply_to("← current"))
            } else {
                String::new()
            }
        ));
    }
    if let Some(story) = report.current_story {
        ui::out(&format!(
            "{} story {story}, attempt {}",
            s.bold.apply_to("current:"),
            report.current_attempt
        ));
    }
    if let Some(until) = report.paused_until {
        ui::out(&format!(
            "{} {} — resuming in {}s",
            s.bold.apply_to("paused:"),
            report.pause_reason.unwrap_or("usage limit"),
            until.saturating_sub(crate::state::now())
        ));
    }
    if let Some(failure) = report.last_failure {
        ui::out(&format!("{} {failure}", s.bold.apply_to("last failure:")));
    }
    let totals = &report.totals;
    let tokens = match (totals.tokens_unknown, totals.tokens()) {
        (true, 0) => "tokens unknown (the agent reports none)".to_owned(),
        (unknown, _) => format!(
            "{} tokens in, {} out{}",
            totals.input_tokens + totals.cache_read_tokens + totals.cache_creation_tokens,
            totals.output_tokens,
            if unknown {
                " (some attempts' tokens unknown)"
            } else {
                ""
            }
        ),
    };
    ui::out(&format!(
        "{} {} attempts · {tokens} · ${:.2}",
        s.bold.apply_to("totals:"),
        totals.attempts,
        totals.cost_usd
    ));
}

fn outcome(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Complete => "complete",
        AttemptOutcome::Failed => "failed",
        AttemptOutcome::Rejected => "rejected",
        AttemptOutcome::RateLimited => "usage-limited",
        AttemptOutcome::NoSignal => "no signal",
        AttemptOutcome::AgentError => "agent error",
        AttemptOutcome::TimedOut => "timed out",
        AttemptOutcome::Interrupted => "interrupted",
        AttemptOutcome::Running => "running",
    }
}
