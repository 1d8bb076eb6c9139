//! `git ralph answer <change> <story> [TEXT | --file PATH | stdin]`: answer
//! the question a story of a run waits on, from any terminal, while the
//! run goes on or after it stopped. The answer is recorded beside the
//! run's state ([`crate::state::answers`]); a live run takes it at its
//! next turn, a stopped one when it resumes.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::{CommandError, Exit};
use crate::state::answers::{self, Refused};
use crate::state::lock_holder;
use crate::ui;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The change whose run asked.
    #[arg(value_name = "CHANGE")]
    pub change: String,
    /// The story that waits for an answer (see 'git ralph status').
    #[arg(value_name = "STORY")]
    pub story: String,
    /// The answer; without it (and without --file), it is read from
    /// standard input.
    #[arg(value_name = "TEXT", conflicts_with = "file")]
    pub text: Option<String>,
    /// Read the answer from this file ('-' for standard input).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, CommandError> {
    let (repo, change, run_dir) = super::open_run(Some(&args.change))?;
    let text = answer_text(&args)?;
    let given = answers::give(&run_dir, &args.story, &text)
        .map_err(|refused| refusal(refused, &run_dir))?;
    let live = lock_holder(&super::lock_path(&repo)).is_some_and(|(_, c)| c == change.as_str());
    ui::answer::answered(&change, &given, live);
    Ok(Exit::Success.code())
}

/// The answer as given: the argument, the file, or standard input.
fn answer_text(args: &Args) -> Result<String, CommandError> {
    if let Some(text) = &args.text {
        return Ok(text.clone());
    }
    let read = match args.file.as_deref() {
        Some(path) if path != std::path::Path::new("-") => std::fs::read_to_string(path)
            .map_err(|err| CommandError::user(format!("cannot read {}: {err}", path.display())))?,
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|err| {
                CommandError::user(format!("cannot read the answer from standard input: {err}"))
            })?;
            text
        }
    };
    Ok(read)
}

/// A refused answer, with what to do instead.
fn refusal(refused: Refused, run_dir: &crate::state::RunDir) -> CommandError {
    let waiting = || {
        run_dir
            .load()
            .map(|state| Refused::waiting_in(&state, &run_dir.answers_path()))
            .unwrap_or_default()
    };
    let hint = match &refused {
        Refused::Empty => Some("give the answer as an argument, with --file, or on standard input".to_owned()),
        Refused::UnknownStory { change, .. } | Refused::NotWaiting { change, .. } => {
            Some(match waiting().as_slice() {
                [] => format!("no story of '{change}' waits for an answer now; 'git ralph status {change}' shows the run"),
                stories => format!("waiting for an answer: story {}", stories.join(", ")),
            })
        }
        Refused::Over { .. } => None,
        Refused::Answers(answers::AnswersError::TakenUp { change, story, .. }) => Some(format!(
            "an answer the run has taken up stays; if the next attempt at story {story} asks again, answer that; 'git ralph status {change}' shows the run"
        )),
        Refused::Answers(answers::AnswersError::Bad(_)) => Some(
            "git ralph answer writes one answer per line: mend or remove that line, then answer again".to_owned(),
        ),
        Refused::Answers(answers::AnswersError::State(err)) | Refused::State(err) => err.hint(),
    };
    let err = CommandError::user(refused.to_string());
    match hint {
        Some(hint) => err.hint(hint),
        None => err,
    }
}
