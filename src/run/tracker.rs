//! What a run tells the tracker its stories came from: nothing, unless the
//! user passed `--comment` or `--close` on a run over the issues of GitHub,
//! GitLab, Linear or Jira. With `--comment` each issue whose story is
//! finished gets one comment naming its checkpoint and its tasks, and each
//! whose story waits for an answer, one quoting the question; with
//! `--close` a finished issue is closed (or moved to a done state). On
//! every tracker, the first reply on such an issue that starts with
//! `/answer` is taken as its answer (with or without `--comment`). Ticks
//! never go to the tracker (the run keeps its own record), and a comment or
//! a close that fails is a warning: the run goes on.

use super::context::Run;
use crate::state::answers;
use crate::stories::trackers::Tracker;
use crate::stories::{IssuesError, Story};

/// The issue of `story`, finished in `attempt` as checkpoint `commit`:
/// commented on and closed, as the user asked.
pub(super) async fn tell_tracker(run: &mut Run, story: &Story, attempt: u32, commit: &str) {
    if !run.source.kind().is_remote_tracker() {
        return;
    }
    if run.settings.comment() {
        comment_finished(run, story, attempt, commit).await;
    }
    if run.settings.recorded().tracker.close {
        let id = story.id.clone();
        if let Err(err) = ask(run, move |tracker| tracker.close(&id)).await {
            run.warn(format!(
                "could not close issue {}: {err}",
                shown(run, &story.id)
            ));
        }
    }
}

/// The comment on the issue of `story`, finished in `attempt` as
/// checkpoint `commit`.
async fn comment_finished(run: &mut Run, story: &Story, attempt: u32, commit: &str) {
    // The story as the attempt left it: its boxes ticked.
    let finished = match run.load_stories().await {
        Ok(stories) => stories.into_iter().find(|s| s.id == story.id),
        Err(_) => None,
    };
    let body = comment_body(
        finished.as_ref().unwrap_or(story),
        run.settings.change().as_str(),
        run.state.branch(),
        commit,
        attempt,
    );
    post(run, &story.id, &body).await;
}

/// One comment on the issue of `story`, whose attempt ended with
/// `question`: the story waits for an answer.
pub(super) async fn tell_question(run: &mut Run, story: &str, question: &str) {
    if !run.settings.comment() || !run.source.kind().is_remote_tracker() {
        return;
    }
    let change = run.settings.change_shown().to_string();
    let mut body = format!(
        "git-ralph's run `{change}` needs an answer before it can go on with this issue:\n\n"
    );
    for line in question.trim().lines() {
        body.push_str(&format!("> {line}\n"));
    }
    body.push_str(&format!(
        "\nAnswer with `git ralph answer {change} {story} \"...\"`; the other issues go on meanwhile.\n"
    ));
    post(run, story, &body).await;
}

/// Answers given on the issues of the stories waiting for one, for a run
/// over a tracker's issues: the first reply that starts with `/answer`,
/// made once the question was asked, is recorded as `git ralph answer`
/// records one. Replies that cannot be read are a warning.
pub(super) async fn hear_answers(run: &mut Run) {
    if !run.source.kind().is_remote_tracker() {
        return;
    }
    let path = run.run_dir.answers_path();
    let given = answers::read(&path).unwrap_or_default();
    let waiting: Vec<(String, u32, u64)> = run
        .state
        .stories()
        .iter()
        .filter(|story| !story.done)
        .filter_map(|story| {
            let asked = answers::waiting(story, &given)?;
            Some((story.id.clone(), asked.attempt, asked.started_at))
        })
        .collect();
    for (story, attempt, since) in waiting {
        let id = story.clone();
        let text = match ask(run, move |tracker| tracker.answers_since(&id, since)).await {
            Ok(replies) => replies.into_iter().next(),
            Err(err) => {
                let issue = shown(run, &story);
                run.warn(format!(
                    "could not read the replies on issue {issue}: {err}"
                ));
                None
            }
        };
        let Some(text) = text else { continue };
        let answer = answers::Answer {
            story,
            attempt,
            text,
            at: crate::state::now(),
        };
        if let Err(err) = answers::append(&path, &answer) {
            let issue = shown(run, &answer.story);
            run.warn(format!(
                "could not record the answer on issue {issue}: {err}"
            ));
        }
    }
}

/// Post `body` on the issue of `story`; a failure is a warning.
async fn post(run: &mut Run, story: &str, body: &str) {
    let (id, body) = (story.to_owned(), body.to_owned());
    if let Err(err) = ask(run, move |tracker| tracker.comment(&id, &body)).await {
        let hint = err
            .hint()
            .map(|hint| format!("; {hint}"))
            .unwrap_or_default();
        run.warn(format!(
            "could not comment on issue {}: {err}{hint}",
            shown(run, story)
        ));
    }
}

/// `call` on the run's tracker, off the loop's threads: a tracker is asked
/// through a child process that may take its time.
async fn ask<T: Send + 'static>(
    run: &Run,
    call: impl FnOnce(&dyn Tracker) -> Result<T, IssuesError> + Send + 'static,
) -> Result<T, IssuesError> {
    let kind = run.source.kind();
    let tracker = super::sources::tracker_of(&run.repo_lock(), run.settings.recorded(), kind)?;
    tokio::task::spawn_blocking(move || call(tracker.as_ref()))
        .await
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()))
}

/// How the issue of `story` is named: `#7` on GitHub and GitLab, its key
/// elsewhere.
fn shown(run: &Run, story: &str) -> String {
    crate::stories::issues::reference(run.source.kind(), story)
}

/// The comment on a finished issue: where its work is, and its tasks.
fn comment_body(story: &Story, change: &str, branch: &str, commit: &str, attempt: u32) -> String {
    let short = commit.get(..10).unwrap_or(commit);
    let mut body = format!(
        "git-ralph finished this issue in the run `{change}`: checkpoint {short} on branch `{branch}` (attempt {attempt}).\n"
    );
    if !story.tasks.is_empty() {
        body.push('\n');
        for task in &story.tasks {
            let mark = if task.done { 'x' } else { ' ' };
            body.push_str(&format!("- [{mark}] {}\n", task.text));
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stories::Task;

    #[test]
    fn the_comment_names_the_checkpoint_and_the_tasks() {
        let story = Story::from_tasks(
            "7",
            "Greet",
            vec![Task {
                text: "Write hello.txt".into(),
                done: true,
                line: 5,
            }],
        );
        assert_eq!(
            comment_body(&story, "issues", "ralph/issues", "0123456789abcdef", 2),
            "git-ralph finished this issue in the run `issues`: checkpoint 0123456789 on branch `ralph/issues` (attempt 2).\n\n- [x] Write hello.txt\n"
        );
    }
}
