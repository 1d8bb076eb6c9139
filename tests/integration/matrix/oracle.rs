//! The judges of a cell. [`assert_record_agrees_with_branch`]: every
//! account of the run says a story is done if and only if its work is on
//! the run's branch, and the hook and the webhook were told only once it
//! was there. [`assert_repo_sound`]: git's own view of what the run left,
//! and the user's state given back.

use std::collections::BTreeSet;

use serde_json::Value;

use super::Mode;
use super::world::{USER_FILES, UserState, World, kept_failures, user_state};
use crate::harness::story_run::*;
use crate::harness::*;

/// Where the run's work is to be found at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    /// On `ralph/<change>`, the run live, stopped or kept.
    Branch,
    /// After cleanup: at `refs/ralph/<change>/finished`, and in the user's
    /// worktree.
    Finished,
    /// After abort: at `refs/ralph/<change>/aborted`.
    Aborted,
}

impl Shelf {
    fn rev(self) -> String {
        match self {
            Shelf::Branch => format!("refs/heads/{BRANCH}"),
            Shelf::Finished => format!("{NS}/finished"),
            Shelf::Aborted => format!("{NS}/aborted"),
        }
    }
}

/// What is left once the run is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Kept: the branch stays.
    Kept,
    /// Cleaned up: back on `main`, the work uncommitted.
    Cleaned,
    /// Aborted: exactly as before the run.
    Aborted,
}

type Ids = BTreeSet<String>;

fn ids(items: impl IntoIterator<Item = impl Into<String>>) -> Ids {
    items.into_iter().map(Into::into).collect()
}

/// The stories whose file is among `files`.
fn stories_in(mode: Mode, files: &[String]) -> Ids {
    mode.stories()
        .iter()
        .filter(|id| files.iter().any(|file| *file == format!("story-{id}.txt")))
        .map(|id| id.to_string())
        .collect()
}

/// The stories a text shows done: lines `✓ <id>. <title>`.
fn ticked_in(mode: Mode, text: &str) -> Ids {
    text.lines()
        .filter_map(|line| line.trim_start().strip_prefix("✓ "))
        .filter_map(|rest| rest.split_once(". ").map(|(id, _)| id.to_string()))
        .filter(|id| mode.stories().contains(&id.as_str()))
        .collect()
}

/// What git holds at the moment the oracle looks, asked once: every ref,
/// and the commits of the shelf.
struct GitView {
    rev: String,
    refs: BTreeSet<String>,
    ancestors: BTreeSet<String>,
}

impl GitView {
    fn take(repo: &TestRepo, rev: String) -> GitView {
        let lines = |args: &[&str]| -> BTreeSet<String> {
            repo.git(args).lines().map(str::to_string).collect()
        };
        GitView {
            refs: lines(&["for-each-ref", "--format=%(refname)"]),
            ancestors: lines(&["rev-list", &rev]),
            rev,
        }
    }

    fn on_rev(&self, commit: &str) -> bool {
        self.ancestors.contains(commit)
    }
}

/// Which of `objects` (`<commit>:<path>`) exist, asked of git at once.
fn exist(repo: &TestRepo, objects: &[String]) -> Vec<bool> {
    if objects.is_empty() {
        return Vec::new();
    }
    let mut cmd = repo.command_here("git");
    cmd.args(["cat-file", "--batch-check"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("git cat-file runs");
    let mut input = objects.join("\n");
    input.push('\n');
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().expect("git cat-file ends");
    stdout(&output)
        .lines()
        .map(|line| !line.ends_with(" missing"))
        .collect()
}

/// Every account of the run agrees with what `shelf` holds, at `moment`.
pub fn assert_record_agrees_with_branch(w: &mut World, moment: &str, shelf: Shelf) {
    let rev = shelf.rev();
    if !has_ref(&w.repo, &rev) {
        w.find(format!("{moment}: {rev} does not exist"));
        return;
    }
    let kept = kept_failures(&w.repo.root, &rev);
    let on_branch: Ids = stories_in(w.mode, &tree_files(&w.repo, &rev))
        .difference(&kept)
        .cloned()
        .collect();
    let view = GitView::take(&w.repo, rev.clone());
    let log = w.ralph(&["log", CHANGE]);
    let mut accounts = vec![
        ("status --json", status_json_done(w, moment)),
        ("status", status_text_done(w, moment)),
        ("log", ticked_in(w.mode, &stdout(&log))),
        (
            "log --json",
            log_json_done(w, moment, CHANGE, &view.refs, Some(&view)),
        ),
        ("events.jsonl", events_done(w, moment, &view)),
        ("on_story_done", hooks_told(w, moment)),
    ];
    if let Some(said) = pull_request_done(w) {
        accounts.push(("the pull request", said));
    }
    if shelf == Shelf::Finished {
        let files: Vec<String> = w
            .mode
            .stories()
            .iter()
            .map(|id| format!("story-{id}.txt"))
            .filter(|file| w.repo.path(file).exists())
            .collect();
        accounts.push(("the user's worktree", stories_in(w.mode, &files)));
    }
    let on_branch: Ids = on_branch.difference(&w.by_hand).cloned().collect();
    for (who, said) in accounts {
        let said: Ids = said.difference(&w.by_hand).cloned().collect();
        w.check(said == on_branch, || {
            format!(
                "{moment}: {who} shows done {said:?}, but {rev} holds the work of {on_branch:?}"
            )
        });
    }
    webhook_agrees(w, moment);
    history_agrees(w, moment, &view);
}

/// The stories `log --json` of `run` calls done. Every complete attempt's
/// checkpoint must be on the shelf (for the current run), and every ref
/// the trail names must exist, in the run's own namespace.
fn log_json_done(
    w: &mut World,
    moment: &str,
    run: &str,
    refs: &BTreeSet<String>,
    shelf: Option<&GitView>,
) -> Ids {
    let output = w.ralph(&["log", run, "--json"]);
    let json: Value = match serde_json::from_slice(&output.stdout) {
        Ok(json) if output.status.success() => json,
        _ => {
            w.find(format!("{moment}: log {run} --json: {}", describe(&output)));
            return Ids::new();
        }
    };
    let within = match run.strip_prefix("history/") {
        Some(id) => format!("{NS}/history/{id}/"),
        None => format!("{NS}/"),
    };
    let mut done = Ids::new();
    for story in json["stories"].as_array().into_iter().flatten() {
        let id = story["id"].as_str().unwrap_or_default().to_string();
        if story["done"] == true {
            done.insert(id.clone());
        }
        for attempt in story["attempts"].as_array().into_iter().flatten() {
            let n = &attempt["attempt"];
            if let Some(named) = attempt["attempt_ref"].as_str() {
                let exists = refs.contains(named);
                w.check(exists && named.starts_with(&within), || {
                    format!(
                        "{moment}: log {run} names {named} for story {id} attempt {n}, \
                         which {} under {within}",
                        if exists {
                            "is not"
                        } else {
                            "does not exist, let alone"
                        }
                    )
                });
            }
            let checkpoint = attempt["checkpoint"].as_str().unwrap_or_default();
            if let Some(view) = shelf
                && attempt["outcome"] == "complete"
            {
                let rev = &view.rev;
                w.check(view.on_rev(checkpoint), || {
                    format!(
                        "{moment}: log {run} gives story {id} attempt {n} the checkpoint \
                         {checkpoint:?}, which is not on {rev}"
                    )
                });
            }
        }
    }
    done
}

/// Every earlier run kept in history still names only refs of its own.
fn history_agrees(w: &mut World, moment: &str, view: &GitView) {
    let history = w.repo.path(".git/ralph/history");
    let Ok(entries) = std::fs::read_dir(&history) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = format!("history/{}", entry.file_name().to_string_lossy());
        log_json_done(w, moment, &name, &view.refs, None);
    }
}

fn status_json_done(w: &mut World, moment: &str) -> Ids {
    let output = w.ralph(&["status", CHANGE, "--json"]);
    let json: Value = match serde_json::from_slice(&output.stdout) {
        Ok(json) if output.status.success() => json,
        _ => {
            w.find(format!("{moment}: status --json: {}", describe(&output)));
            return Ids::new();
        }
    };
    let done = ids(json["stories"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|story| story["done"] == true)
        .filter_map(|story| story["id"].as_str()));
    let count = json["stories_done"].as_u64().unwrap_or(u64::MAX);
    w.check(count == done.len() as u64, || {
        format!("{moment}: status --json says stories_done {count} but marks {done:?}")
    });
    done
}

fn status_text_done(w: &mut World, moment: &str) -> Ids {
    let output = w.ralph(&["status", CHANGE]);
    let text = stdout(&output);
    let done = ticked_in(w.mode, &text);
    let count = text
        .lines()
        .find_map(|line| line.strip_prefix("stories: "))
        .and_then(|rest| rest.split('/').next())
        .and_then(|n| n.trim().parse::<usize>().ok());
    w.check(count == Some(done.len()), || {
        format!("{moment}: status counts {count:?} stories done but ticks {done:?}:\n{text}")
    });
    done
}

/// The stories an `attempt_finished` event calls complete; each such
/// event's checkpoint must be on the shelf and hold the story's work.
fn events_done(w: &mut World, moment: &str, view: &GitView) -> Ids {
    // A start killed after its state was first written and before its
    // events file was made leaves none: no events, not a broken record.
    let written = w.repo.run_dir(CHANGE).join("events.jsonl").exists();
    let events = if written {
        w.repo.run_events(CHANGE)
    } else {
        Vec::new()
    };
    let complete: Vec<(String, String)> = of_type(&events, "attempt_finished")
        .into_iter()
        .filter(|event| event["outcome"] == "complete")
        .map(|event| {
            (
                event["story_id"].as_str().unwrap_or_default().to_string(),
                event["checkpoint"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let objects: Vec<String> = complete
        .iter()
        .map(|(story, checkpoint)| format!("{checkpoint}:story-{story}.txt"))
        .collect();
    let held = exist(&w.repo, &objects);
    let rev = &view.rev;
    let mut done = Ids::new();
    for ((story, checkpoint), holds) in complete.into_iter().zip(held) {
        let on_rev = view.on_rev(&checkpoint);
        let holds = holds && !checkpoint.is_empty();
        w.check(on_rev && holds, || {
            format!(
                "{moment}: events.jsonl calls story {story} complete at checkpoint {checkpoint:?}, \
                 which is {} {rev} and {} its work",
                if on_rev { "on" } else { "not on" },
                if holds { "holds" } else { "does not hold" }
            )
        });
        done.insert(story);
    }
    done
}

/// The stories `on_story_done` was called for; each call must have found
/// the story's work on the branch and the story done in state.json.
fn hooks_done(w: &mut World, moment: &str) -> Ids {
    let calls = w.hook_calls();
    let judged = std::mem::replace(&mut w.judged.0, calls.len());
    let mut done = Ids::new();
    for (n, call) in calls.iter().enumerate() {
        let id = call.story.clone();
        let again = !done.insert(id.clone());
        if n < judged {
            continue;
        }
        let on_branch = call.on_branch.contains(&format!("story-{id}.txt"));
        let recorded = call.json["stories"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|story| story["id"] == id.as_str() && story["done"] == true);
        w.check(on_branch && recorded, || {
            format!(
                "{moment}: on_story_done was called for story {id} while its work was {} ralph/greet \
                 and state.json {} it done (state.json then: {})",
                if on_branch { "on" } else { "not on" },
                if recorded { "said" } else { "did not say" },
                summary(&call.json)
            )
        });
        w.check(!again, || {
            format!("{moment}: on_story_done was called twice for story {id}")
        });
    }
    done
}

/// The stories whose `on_story_done` ran, and those whose hook a loop that
/// was killed owes: queued in the saved state (`hooks_due`), to run when
/// the run goes on. A kill -9 cannot be outrun; what is owed is never lost.
fn hooks_told(w: &mut World, moment: &str) -> Ids {
    let mut told = hooks_done(w, moment);
    let state = w.repo.run_state(CHANGE);
    for due in state["hooks_due"].as_array().into_iter().flatten() {
        let record = &due["record"];
        if record["type"] == "attempt_finished"
            && record["outcome"] == "complete"
            && let Some(id) = record["story_id"].as_str()
        {
            told.insert(id.to_owned());
        }
    }
    told
}

/// The stories the last pull-request description marks done, if one was
/// written.
fn pull_request_done(w: &World) -> Option<Ids> {
    let body = w
        .forge
        .calls()
        .into_iter()
        .rfind(|call| {
            call.args
                .get(2)
                .is_some_and(|verb| verb == "create" || verb == "edit")
        })?
        .stdin;
    Some(
        body.lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                (cells.len() > 4 && cells[3] == "done").then(|| cells[1].to_string())
            })
            .filter(|id| w.mode.stories().contains(&id.as_str()))
            .collect(),
    )
}

/// Each webhook call counted the stories whose work the branch held when
/// it arrived. A story the user did by hand may be counted or not, as the
/// other accounts leave it out.
fn webhook_agrees(w: &mut World, moment: &str) {
    let received = w.webhook.received.lock().unwrap().clone();
    let judged = std::mem::replace(&mut w.judged.1, received.len());
    for told in received.into_iter().skip(judged) {
        let on_branch = stories_in(w.mode, &told.on_branch);
        let theirs = on_branch.intersection(&w.by_hand).count() as u64;
        let held = on_branch.len() as u64;
        let said = told.json["stories_done"].as_u64().unwrap_or(u64::MAX);
        w.check(said <= held && said + theirs >= held, || {
            format!(
                "{moment}: the webhook was told {said} stories done ({}), while ralph/greet held the work of {held}",
                told.json["reason"]
            )
        });
    }
}

/// What git says the run left, and what the user has back.
pub fn assert_repo_sound(w: &mut World, moment: &str, shape: Shape) {
    let now = user_state(&w.repo);
    let mut found = git_is_content(&w.repo);
    found.extend(nothing_of_the_user_moved(&w.before, &now));
    found.extend(the_user_has_their_work(w, &now, shape));
    for finding in found {
        w.find(format!("{moment}: {finding}"));
    }
}

/// git fsck and git worktree are content, and nothing of the run's
/// worktrees is left: no story branch, no directory beside the user's.
fn git_is_content(repo: &TestRepo) -> Vec<String> {
    let mut found = Vec::new();
    let fsck = repo.git_output(&["fsck", "--strict"]);
    let complaints = format!("{}{}", stdout(&fsck), stderr(&fsck)).to_lowercase();
    if !fsck.status.success() || complaints.contains("error") || complaints.contains("warning") {
        found.push(format!("git fsck --strict: {complaints}"));
    }
    let worktrees = repo.git(&["worktree", "list", "--porcelain"]);
    let count = worktrees
        .lines()
        .filter(|l| l.starts_with("worktree "))
        .count();
    if count != 1 {
        found.push(format!(
            "git worktree list shows {count} worktrees:\n{worktrees}"
        ));
    }
    let prune = repo.git_output(&["worktree", "prune", "-n", "-v"]);
    let prunable = format!("{}{}", stdout(&prune), stderr(&prune));
    if !prunable.is_empty() {
        found.push(format!("git worktree prune would remove: {prunable}"));
    }
    let story_branches = repo.git(&["branch", "--list", "ralph/greet.*"]);
    if !story_branches.trim().is_empty() {
        found.push(format!("story branches are left: {story_branches}"));
    }
    let beside = repo.root.parent().unwrap().join("repo.ralph");
    if let Ok(left) = std::fs::read_dir(&beside) {
        let left: Vec<String> = left
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        if !left.is_empty() {
            found.push(format!(
                "the run's worktrees are left in {}: {left:?}",
                beside.display()
            ));
        }
    }
    found
}

/// The user's stashes, refs (the run's aside) and hooks are as before.
fn nothing_of_the_user_moved(before: &UserState, now: &UserState) -> Vec<String> {
    let mut found = Vec::new();
    if now.stashes != before.stashes {
        found.push(format!(
            "the user's stashes changed: before\n{}now\n{}",
            before.stashes, now.stashes
        ));
    }
    if now.refs != before.refs {
        found.push(format!(
            "the user's refs changed: before\n{}now\n{}",
            before.refs, now.refs
        ));
    }
    if now.hooks != before.hooks {
        found.push(format!(
            ".git/hooks changed: {:?}",
            snapshot_diff(&before.hooks, &now.hooks)
        ));
    }
    found
}

/// Where HEAD is, the run's branch kept or not as `shape` says, and the
/// user's work: exactly as before after an abort or beside a kept run,
/// each of the user's files byte for byte otherwise.
fn the_user_has_their_work(w: &World, now: &UserState, shape: Shape) -> Vec<String> {
    let (repo, before) = (&w.repo, &w.before);
    let mut found = Vec::new();
    let beside = matches!(w.mode, Mode::Worktree | Mode::Parallel);
    let branch_kept = has_ref(repo, &format!("refs/heads/{BRANCH}"));
    match shape {
        Shape::Kept if !branch_kept => found.push(format!("{BRANCH} is gone")),
        Shape::Cleaned | Shape::Aborted if branch_kept => {
            found.push(format!("{BRANCH} is left"));
        }
        _ => {}
    }
    if shape == Shape::Aborted || (shape == Shape::Kept && beside) {
        if now.work != before.work {
            found.push(format!(
                "the user's HEAD, index or work changed:\nbefore {:?}\nnow {:?}",
                before.work, now.work
            ));
        }
        let diff = snapshot_diff(&before.files, &now.files);
        if !diff.is_empty() {
            found.push(format!("the user's files changed: {diff:?}"));
        }
        return found;
    }
    let head = repo.head_symbolic();
    let expected = match shape {
        Shape::Kept => format!("refs/heads/{BRANCH}"),
        _ => "refs/heads/main".to_string(),
    };
    if head.as_deref() != Some(expected.as_str()) {
        found.push(format!("HEAD is {head:?}, not {expected}"));
    }
    for (path, content) in USER_FILES {
        let now = std::fs::read_to_string(repo.path(path)).unwrap_or_default();
        if now != *content {
            found.push(format!("the user's {path} is {now:?}, not {content:?}"));
        }
    }
    if shape == Shape::Kept && !repo.status_porcelain().is_empty() {
        found.push(format!(
            "the kept branch leaves uncommitted changes:\n{}",
            repo.status_porcelain()
        ));
    }
    found
}

/// state.json in brief: its status and each story's done and attempts.
fn summary(state: &Value) -> String {
    let stories: Vec<String> = state["stories"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|story| {
            let outcomes: Vec<&str> = story["attempts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a["outcome"].as_str())
                .collect();
            format!("{}: done {} {outcomes:?}", story["id"], story["done"])
        })
        .collect();
    format!("{} · {}", state["status"], stories.join(", "))
}
