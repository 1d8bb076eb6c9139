//! `git ralph` with no subcommand, on a terminal: the selection screen of
//! the repository's OpenSpec changes and runs, the preview of a run, and R
//! to start it. A run started here is the run `git ralph start <change>`
//! would be, with its loop screen; when it ends (q stops it), the user is
//! back on the selection screen, told how it ended. A force-quit quits.

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::audit::{self, RunSummary};
use crate::exit::{CommandError, Exit};
use crate::git::{ChangeName, Repo};
use crate::preview::StoryStatus;
use crate::run::plan::{Plan, plan};
use crate::settings::Requested;
use crate::state::{RunDir, RunStatus, lock_holder};
use crate::stories::{self, SourceKind, openspec};
use crate::ui::tui::{
    ChangeEntry, Home, HomeChoice, HomeSource, PreviewData, PreviewStory, Problem, SelectionData,
};

pub fn run() -> Result<ExitCode, CommandError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CommandError::usage("git ralph needs a subcommand here")
            .hint("see 'git ralph --help'; on a terminal, 'git ralph' alone opens the selection screen"));
    }
    let cwd = super::current_dir()?;
    // Refuse outside a repository before taking the terminal.
    Repo::open_for_recovery(&cwd)?;
    let mut home = Home::default();
    let mut source = Repository { cwd: cwd.clone() };
    loop {
        match home.show(&mut source)? {
            HomeChoice::Quit => return Ok(Exit::Success.code()),
            HomeChoice::Open(label) => {
                let repo = Repo::open_for_recovery(&cwd)?;
                if let Err(err) = super::watch::watch(repo, Some(&label)) {
                    home.tell(format!("{label}: {}", first_line(&err)));
                }
            }
            HomeChoice::Plan { change, brief } => match plan_new(&cwd, &change, brief) {
                Ok(said) => match said {
                    Some(message) => home.tell(message),
                    None => home.preview_next(change),
                },
                Err(err) => home.tell(format!("could not plan {change}: {}", first_line(&err))),
            },
            HomeChoice::Start(change) => {
                let started = Repo::open(&cwd)
                    .map_err(CommandError::from)
                    .and_then(|repo| {
                        let args = super::start::Args {
                            change: change.clone(),
                            max_retries: more_retries(&repo, &change),
                            ..Default::default()
                        };
                        super::start::start(repo, args)
                    });
                match started {
                    Ok(super::start::Started::ForceQuit) => return Ok(Exit::Interrupted.code()),
                    Ok(super::start::Started::Ended(_)) => home.tell(source.ended(&change)),
                    Err(err) => {
                        home.tell(format!("could not start {change}: {}", first_line(&err)))
                    }
                }
            }
        }
    }
}

/// `n`: plan `change` from `brief` as `git ralph plan <change> <brief>`
/// would, its progress on the console meanwhile. Returns what to tell the
/// user when the plan was not accepted; an accepted one is previewed.
fn plan_new(
    cwd: &std::path::Path,
    change: &str,
    brief: String,
) -> Result<Option<String>, CommandError> {
    let repo = Repo::open(cwd)?;
    let args = super::plan::Args {
        change: change.to_owned(),
        brief: Some(brief),
        ..Default::default()
    };
    let planned = super::plan::plan(repo, &args)?;
    Ok(match planned.outcome {
        crate::planning::Outcome::Accepted { .. } => None,
        crate::planning::Outcome::NotValid { findings } => Some(format!(
            "{change}: the plan is not accepted after {} tries, {} {}: {}",
            planned.attempts,
            if planned.written {
                "and is kept in"
            } else {
                "and nothing was written in"
            },
            planned.target.shown(),
            findings
                .first()
                .map(String::as_str)
                .unwrap_or("see its record")
        )),
        crate::planning::Outcome::Stopped => Some(format!(
            "{change}: planning stopped; what was written is kept in {}",
            planned.target.shown()
        )),
    })
}

/// The `--max-retries` a resume from here needs, as the command line's
/// hint would give it (see [`crate::state::RunState::retries_to_resume`]).
fn more_retries(repo: &Repo, change: &str) -> Option<u32> {
    RunDir::new(&repo.ralph_dir(), change)
        .load()
        .ok()?
        .retries_to_resume()
}

/// An error as one line for the selection screen: the message and its
/// first hint.
fn first_line(err: &CommandError) -> String {
    match err.hints.first() {
        Some(hint) => format!("{} ({hint})", err.message),
        None => err.message.clone(),
    }
}

/// The screens' data, read from the repository each time it is asked for.
struct Repository {
    cwd: std::path::PathBuf,
}

impl Repository {
    /// How the run of `change` stands after its loop ended.
    fn ended(&mut self, change: &str) -> String {
        let runs = self.selection().runs;
        let run = runs
            .iter()
            .find(|run| run.label == change)
            .or_else(|| runs.iter().find(|run| run.change == change));
        match run {
            Some(run) => describe(run),
            None => format!("{change}: the run ended"),
        }
    }
}

fn describe(run: &RunSummary) -> String {
    let mut text = format!("{}: {}", run.change, run.state);
    if let Some(reason) = run.reason {
        text.push_str(&format!(" ({reason})"));
    }
    text.push_str(&format!(
        ", {}/{} stories done",
        run.stories_done, run.stories_total
    ));
    if run.state == RunStatus::Stopped {
        text.push_str("; Enter on it resumes");
    }
    text
}

impl HomeSource for Repository {
    fn selection(&mut self) -> SelectionData {
        let Ok(repo) = Repo::open_for_recovery(&self.cwd) else {
            return SelectionData::default();
        };
        let workdir = repo.workdir().to_owned();
        let changes = openspec::list_changes(&workdir)
            .unwrap_or_default()
            .into_iter()
            .map(|name| {
                let stories =
                    stories::detect(&workdir, &name, Some(SourceKind::OpenSpec), None, None)
                        .and_then(|source| source.load())
                        .unwrap_or_default();
                ChangeEntry {
                    stories_done: stories.iter().filter(|story| story.is_complete()).count(),
                    stories_total: stories.len(),
                    name,
                }
            })
            .collect();
        let holder = lock_holder(&super::lock_path(&repo)).map(|(_, change)| change);
        SelectionData {
            changes,
            runs: audit::list_all(&repo.ralph_dir(), holder.as_deref()),
            now: crate::state::now(),
        }
    }

    fn preview(&mut self, change: &str) -> Result<PreviewData, Problem> {
        let problem = |err: CommandError| Problem {
            hint: err.hints.first().cloned(),
            message: err.message,
        };
        let repo = Repo::open_for_recovery(&self.cwd).map_err(|err| problem(err.into()))?;
        let name = ChangeName::parse(change).map_err(|err| problem(err.into()))?;
        let more = more_retries(&repo, change);
        let requested = Requested {
            cwd: self.cwd.clone(),
            max_retries: more,
            ..Default::default()
        };
        let plan = plan(&repo, &name, &requested).map_err(|err| problem(err.into()))?;
        let mut data = preview_data(change, plan);
        if let Some(retries) = more {
            data.notes.insert(
                0,
                format!("the run stopped when a story used its retries: R resumes it with --max-retries {retries}"),
            );
        }
        Ok(data)
    }
}

fn preview_data(change: &str, plan: Plan) -> PreviewData {
    let mut notes: Vec<String> = plan
        .preview
        .warnings
        .iter()
        .map(ToString::to_string)
        .collect();
    if !plan.agent.installed {
        notes.insert(
            0,
            format!(
                "{} is not on PATH: install it, or pick another agent with 'git config ralph.agent <name>'",
                plan.agent.name
            ),
        );
    }
    let first_prompt = match plan.preview.prompt {
        Some(prompt) => prompt,
        None if plan.preview.all_done => "every story is done: no agent would start".to_owned(),
        None => "no story can be worked on: see the notes".to_owned(),
    };
    PreviewData {
        change: change.to_owned(),
        stories: plan
            .preview
            .stories
            .into_iter()
            .map(|story| PreviewStory {
                done: story.status == StoryStatus::Done,
                next: story.status == StoryStatus::Next,
                tasks: story
                    .task_list
                    .into_iter()
                    .map(|task| (task.done, task.text))
                    .collect(),
                pipeline: story
                    .pipeline
                    .iter()
                    .map(|role| {
                        format!(
                            "{}: {}, at most {} iterations; {}",
                            role.role, role.agent, role.max_iterations, role.verification
                        )
                    })
                    .collect(),
                id: story.id,
                title: story.title,
            })
            .collect(),
        first_prompt,
        agent_command: plan.agent.command,
        contract: plan.contract,
        guardrails: plan.guardrails,
        notes,
        resumes: plan.resumes,
    }
}
