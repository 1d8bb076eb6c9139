//! What a run tells the tracker its stories came from: nothing, unless the
//! user passed `--comment` on a run over GitHub issues. Then each issue
//! whose story is finished gets one comment naming its checkpoint and its
//! tasks. Ticks never go to the tracker (the run keeps its own record), and
//! a comment that cannot be posted is a warning: the run goes on.

use super::context::Run;
use crate::stories::{SourceKind, Story, github};

/// One comment on the issue of `story`, finished in `attempt` as
/// checkpoint `commit`.
pub(super) async fn tell_tracker(run: &mut Run, story: &Story, attempt: u32, commit: &str) {
    if !run.settings.comment() || run.source.kind() != SourceKind::Github {
        return;
    }
    // The story as the attempt left it: its boxes ticked.
    let finished = match run.load_stories().await {
        Ok(stories) => stories.into_iter().find(|s| s.id == story.id),
        Err(_) => None,
    };
    let body = comment_body(
        finished.as_ref().unwrap_or(story),
        run.settings.change().as_str(),
        &run.state.branch,
        commit,
        attempt,
    );
    let workdir = run.repo_lock().workdir().to_owned();
    let timeout = run.settings.command_timeout();
    if let Err(err) = github::comment(&workdir, &story.id, &body, timeout).await {
        let hint = err
            .hint()
            .map(|hint| format!("; {hint}"))
            .unwrap_or_default();
        run.warn(format!(
            "could not comment on issue #{}: {err}{hint}",
            story.id
        ));
    }
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
