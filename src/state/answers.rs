//! `answers.jsonl`: the answers people give to the questions of a run's
//! stories (`git ralph answer`), one JSON line each, only ever appended
//! to. The loop that drives the run owns `state.json` and rewrites it
//! whole, so an answer given from another terminal while it runs goes
//! here, where the loop picks it up at its next turn, and a stopped run
//! on resume. Folding an answer into the state is idempotent: the file is
//! never emptied, and an answer already in the state is not taken twice.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::StateError;

/// One answer to the question an attempt at a story ended with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub story: String,
    /// The attempt that asked.
    pub attempt: u32,
    pub text: String,
    /// When it was given, in seconds since the epoch.
    pub at: u64,
}

/// A line of the answers file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("line {line} of {} is not an answer", path.display())]
pub struct BadAnswer {
    pub path: std::path::PathBuf,
    pub line: usize,
    #[source]
    pub source: serde_json::Error,
}

/// Every answer in `path`, oldest first; none when there is no file. A
/// last line cut short (an `answer` killed while writing) is left out.
pub fn read(path: &Path) -> Result<Vec<Answer>, AnswersError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(AnswersError::State(StateError::Read {
                path: path.to_owned(),
                source,
            }));
        }
    };
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    let mut answers = Vec::new();
    for (index, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let answer = serde_json::from_str(line).map_err(|source| BadAnswer {
            path: path.to_owned(),
            line: index + 1,
            source,
        })?;
        answers.push(answer);
    }
    Ok(answers)
}

/// Add `answer` to `path`, in one write, synced before it returns.
pub fn append(path: &Path, answer: &Answer) -> Result<(), StateError> {
    let mut line = serde_json::to_string(answer).expect("an answer serializes");
    line.push('\n');
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        file.write_all(line.as_bytes())?;
        file.sync_all()
    };
    write().map_err(|source| StateError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Why the answers could not be read, or a new one cannot join them.
#[derive(Debug, thiserror::Error)]
pub enum AnswersError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Bad(#[from] BadAnswer),
    /// The run has taken the story's answer up already: it stands.
    #[error("story {story} of '{change}' was answered, and the run has taken it up: {answer}")]
    TakenUp {
        change: String,
        story: String,
        answer: String,
    },
}

/// The question a story waits on: the last attempt at it ended in a
/// question nobody has answered yet, in the state or in `answers`.
pub fn waiting<'r>(
    story: &'r super::StoryRecord,
    answers: &[Answer],
) -> Option<&'r super::AttemptRecord> {
    let last = story.attempts.last()?;
    let answered = last.answer.is_some()
        || answers
            .iter()
            .any(|a| a.story == story.id && a.attempt == last.attempt);
    (last.outcome == super::AttemptOutcome::Question && !answered).then_some(last)
}

/// Why an answer was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the answer is empty")]
    Empty,
    #[error("the run '{change}' is {status}: nothing waits for an answer any more")]
    Over { change: String, status: String },
    #[error("the run '{change}' has no story '{story}'")]
    UnknownStory { change: String, story: String },
    #[error("story {story} of '{change}' is not waiting for an answer")]
    NotWaiting { change: String, story: String },
    #[error(transparent)]
    Answers(#[from] AnswersError),
    #[error(transparent)]
    State(#[from] StateError),
}

impl Refused {
    /// The stories that do wait, for the hint.
    pub fn waiting_in(state: &super::RunState, path: &Path) -> Vec<String> {
        let given = read(path).unwrap_or_default();
        state
            .stories
            .iter()
            .filter(|story| !story.done && waiting(story, &given).is_some())
            .map(|story| story.id.clone())
            .collect()
    }
}

/// An answer recorded, and the one it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub answer: Answer,
    /// The earlier answer to the same question the run had not taken up
    /// yet: the run takes this one instead.
    pub replaced: Option<Answer>,
}

/// The answers the run is to take up: for each question, the last one
/// given, in the order they were given.
pub fn latest(given: &[Answer]) -> Vec<Answer> {
    given
        .iter()
        .enumerate()
        .filter(|(at, answer)| {
            !given[at + 1..]
                .iter()
                .any(|later| later.story == answer.story && later.attempt == answer.attempt)
        })
        .map(|(_, answer)| answer.clone())
        .collect()
}

/// Record `text` as the answer to the question story `story` of the run
/// in `run_dir` waits on, replacing an answer given to it that the run
/// has not taken up yet; refused, writing nothing, when the story waits
/// for none (or the run has taken its answer up).
pub fn give(run_dir: &super::RunDir, story: &str, text: &str) -> Result<Given, Refused> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Refused::Empty);
    }
    let state = run_dir.load()?;
    if state.status.is_over() {
        return Err(Refused::Over {
            change: state.change.clone(),
            status: state.status.to_string(),
        });
    }
    let Some(record) = state.stories.iter().find(|s| s.id == story) else {
        return Err(Refused::UnknownStory {
            change: state.change.clone(),
            story: story.to_owned(),
        });
    };
    let path = run_dir.answers_path();
    let given = read(&path)?;
    // The story's last question: once answered and taken up, the attempts
    // after it may already be at work.
    let asked = record
        .attempts
        .iter()
        .rev()
        .find(|a| a.outcome == super::AttemptOutcome::Question)
        .filter(|_| !record.done);
    let last = record.attempts.last().map(|a| a.attempt);
    let Some(asked) = asked.filter(|a| a.answer.is_some() || Some(a.attempt) == last) else {
        return Err(Refused::NotWaiting {
            change: state.change.clone(),
            story: story.to_owned(),
        });
    };
    if let Some(taken) = &asked.answer {
        return Err(Refused::Answers(AnswersError::TakenUp {
            change: state.change.clone(),
            story: story.to_owned(),
            answer: taken.clone(),
        }));
    }
    let replaced = latest(&given)
        .into_iter()
        .find(|a| a.story == story && a.attempt == asked.attempt);
    let answer = Answer {
        story: story.to_owned(),
        attempt: asked.attempt,
        text: text.to_owned(),
        at: super::now(),
    };
    append(&path, &answer)?;
    Ok(Given { answer, replaced })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_back_and_a_torn_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        assert!(read(&path).unwrap().is_empty());
        let answer = Answer {
            story: "2".into(),
            attempt: 1,
            text: "CSV, with a header line".into(),
            at: 7,
        };
        append(&path, &answer).unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"story\":\"3\",\"att").unwrap();
        assert_eq!(read(&path).unwrap(), vec![answer]);
    }

    #[test]
    fn a_bad_line_names_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.jsonl");
        std::fs::write(&path, "\nnot json\n").unwrap();
        let err = read(&path).unwrap_err();
        assert!(err.to_string().starts_with("line 2 of "), "{err}");
    }
}
