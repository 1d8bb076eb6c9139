//! Questions that reach a person. An attempt that ends with a question
//! parks its story: the work is kept under the attempt's ref, the
//! worktree reverted, no retry spent, and the story waits for an answer
//! while the run goes on with the stories that do not depend on it, by
//! the rules a parallel run uses. Answers come through `answers.jsonl`
//! (`git ralph answer`, from any terminal), and are taken into the state
//! at the loop's next turn. When only stories waiting for an answer are
//! left, the run waits `--answer-timeout` for one, then stops, resumable.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::asked::{parked, waiting};
use super::attempt::Attempt;
use super::context::Run;
use super::error::RunError;
use super::judge::Failure;
use super::parallel::schedule::Order;
use super::runtime::blocking;
use super::{notifications, settle};
use crate::events::Event;
use crate::state::StopReason;
use crate::state::answers::{self, Answer};
use crate::stories::Story;

/// How often a run waiting for answers looks for one.
const ANSWER_POLL: Duration = Duration::from_millis(500);
/// Every how many looks it asks the tracker, too (about every 30 s).
const TRACKER_POLLS: u64 = 60;

/// The attempt ended with a question: its work is preserved and
/// reverted like a failed attempt's, and the story waits for an answer.
pub(super) async fn park(
    run: &mut Run,
    attempt: &Attempt,
    failure: Failure,
) -> Result<(), RunError> {
    let question = run
        .attempt_record(attempt.id(), attempt.number)
        .and_then(|record| record.asked.clone())
        .unwrap_or_else(|| failure.reason.clone());
    settle::reject(run, attempt, failure).await?;
    run.state.story_left();
    let others_go_on = others_go_on(run, attempt.id()).await;
    // Saved with the state that parks the story, as every event of it is.
    run.emit(Event::Question {
        story_id: attempt.id().to_owned(),
        attempt: attempt.number,
        question: question.clone(),
        preserved: Some(attempt.work_ref()),
        others_go_on,
    });
    notifications::notify_question(run, attempt.id(), &question);
    super::tracker::tell_question(run, attempt.id(), &question).await;
    Ok(())
}

/// Whether another story may start while `story` waits for its answer,
/// by the rules [`next_beside`] follows; unknown when the stories cannot
/// be read.
async fn others_go_on(run: &Run, story: &str) -> Option<bool> {
    let stories = run.load_stories().await.ok()?;
    let mut waiting = parked(&run.state);
    waiting.insert(story.to_owned());
    Some(next_beside(run, &stories, &waiting).is_some())
}

/// Take the answers given since the last turn (with `git ralph answer`,
/// or on a GitHub issue) into the state, and say so. Taking one twice
/// changes nothing.
pub(super) async fn take_answers(run: &mut Run) -> Result<(), RunError> {
    super::tracker::hear_answers(run).await;
    fold_answers(run).await
}

/// Take the answers recorded in `answers.jsonl` into the state.
async fn fold_answers(run: &mut Run) -> Result<(), RunError> {
    let path = run.run_dir.answers_path();
    let given = blocking(move || answers::read(&path)).await?;
    let mut taken = Vec::new();
    // An answer given again before the run took the first replaces it.
    for answer in answers::latest(&given) {
        if run
            .state
            .answered(&answer.story, answer.attempt, &answer.text)
        {
            taken.push(answer);
        }
    }
    // Each answer is saved with the state that holds it as it is told.
    for Answer {
        story,
        attempt,
        text,
        ..
    } in taken
    {
        run.emit(Event::Answered {
            story_id: story,
            attempt,
            answer: text,
        });
    }
    Ok(())
}

/// The story to attempt next while some wait for an answer: the first
/// that may start by the rules a parallel run uses (prd.json's
/// `dependsOn`, `after` in ralph.toml, checklists in file order unless
/// `[stories] independent`), the parked ones and those after them left
/// to wait; among equals, a prd.json's priority.
pub(super) fn next_beside<'s>(
    run: &Run,
    stories: &'s [Story],
    parked: &BTreeSet<String>,
) -> Option<&'s Story> {
    let order = Order::of(run.settings.contract());
    order
        .ready(run.source.kind(), stories, parked, &BTreeSet::new())
        .into_iter()
        .min_by_key(|story| story.priority.unwrap_or(i64::MAX))
}

/// What the loop does when no story may start.
pub(super) enum Waiting {
    /// No story waits for an answer: the run ends as it always did.
    Nobody,
    /// An answer came: the loop takes another turn.
    Answered,
    /// The run stops until someone answers.
    Stop((StopReason, String)),
}

/// No story may start: wait `--answer-timeout` for an answer to one of
/// the stories waiting, then stop with the questions as the reason.
pub(super) async fn when_none_may_start(run: &mut Run) -> Result<Waiting, RunError> {
    let waiting = waiting(&run.state);
    if waiting.is_empty() {
        return Ok(Waiting::Nobody);
    }
    if let Some(timeout) = run.settings.answer_timeout()
        && answer_within(run, timeout).await?
    {
        return Ok(Waiting::Answered);
    }
    if run.stop_requested() {
        return Ok(Waiting::Stop((
            StopReason::Stopped,
            "stopped by the user".into(),
        )));
    }
    Ok(Waiting::Stop((
        StopReason::Questions,
        stop_message(run, &waiting),
    )))
}

/// "2 stories wait for an answer: …; answer with git ralph answer …".
fn stop_message(run: &Run, waiting: &[(String, String)]) -> String {
    let count = match waiting.len() {
        1 => "1 story waits".to_owned(),
        n => format!("{n} stories wait"),
    };
    let asked: Vec<String> = waiting
        .iter()
        .map(|(story, question)| format!("story {story} asks \"{question}\""))
        .collect();
    let change = run.settings.change_shown();
    let how: Vec<String> = waiting
        .iter()
        .map(|(story, _)| format!("git ralph answer {change} {story} \"...\""))
        .collect();
    format!(
        "{count} for an answer: {}; answer with {}, then git ralph start {change} goes on",
        asked.join("; "),
        how.join(" or ")
    )
}

/// Wait up to `timeout` for an answer to a story that waits for one;
/// whether one came. A stop request ends the wait.
async fn answer_within(run: &mut Run, timeout: Duration) -> Result<bool, RunError> {
    let deadline = Instant::now() + timeout;
    let mut stop = run.stop.clone();
    for poll in 0u64.. {
        let before = parked(&run.state).len();
        // The tracker is asked now and then, the answers file at each poll.
        if poll % TRACKER_POLLS == 0 {
            take_answers(run).await?;
        } else {
            fold_answers(run).await?;
        }
        if parked(&run.state).len() < before {
            return Ok(true);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        tokio::select! {
            _ = tokio::time::sleep(left.min(ANSWER_POLL)) => {}
            _ = stop.wait_for(|stop| *stop) => return Ok(false),
        }
    }
    Ok(false)
}
