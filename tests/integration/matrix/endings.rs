//! How each ending is played: the scripts its agents follow, the runs of
//! `git ralph` it takes, and where the oracle looks on the way and at the
//! end.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::oracle::{Shape, Shelf, assert_record_agrees_with_branch, assert_repo_sound};
use super::world::World;
use super::{Ending, Mode};
use crate::harness::forge::PR_URL;
use crate::harness::story_run::*;
use crate::harness::*;

const PATIENCE: Duration = Duration::from_secs(60);

pub fn play(w: &mut World) {
    match w.ending {
        Ending::Keep => complete(w, "keep"),
        Ending::Cleanup => complete(w, "cleanup"),
        Ending::OnFinishPush => complete(w, "push"),
        Ending::FinishPush => finish_by_hand(w, "--push"),
        Ending::FinishPr => finish_by_hand(w, "--pr"),
        Ending::AbortLive => abort_live(w),
        Ending::AbortStopped => abort_stopped(w),
        Ending::OutOfRetries => out_of_retries(w),
        Ending::HookStop => hook_stop(w),
        Ending::CtrlC => interrupted(w, Signal::SIGINT),
        Ending::Kill9 => interrupted(w, Signal::SIGKILL),
        Ending::StashClear
        | Ending::StashDrop
        | Ending::PlantHook
        | Ending::AgentCommits
        | Ending::MovesMain
        | Ending::Rewind => fault(w),
    }
}

/// Every story done at once.
fn all_done(w: &World) -> String {
    w.mode.script(&[])
}

/// The faulty story's every attempt fails, having changed something: it
/// says why, and exits non-zero as wrapper scripts do.
fn faulty_fails(w: &World) -> String {
    let id = w.mode.faulty();
    w.mode.script(&[(
        format!("[story={id}]"),
        format!("append wip-{id}.txt try\\n\npromise FAILED: {FAILED_BECAUSE}\nexit 1\n"),
    )])
}

/// Why the faulty story's agent says it failed.
const FAILED_BECAUSE: &str = "the parser is missing";

/// The faulty story's last attempt is recorded with the reason its agent
/// gave, not with its exit code.
fn assert_reason_kept(w: &mut World, moment: &str) {
    let log = w.ralph(&["log", CHANGE, "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&log.stdout).unwrap_or_default();
    let id = w.mode.faulty();
    let last = json["stories"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|story| story["id"] == id)
        .and_then(|story| story["attempts"].as_array()?.last().cloned())
        .unwrap_or_default();
    let said = last["reason"].as_str().unwrap_or_default();
    w.check(said.contains(FAILED_BECAUSE), || {
        format!(
            "{moment}: story {id}'s agent said FAILED: {FAILED_BECAUSE} and exited 1, \
             but its attempt is recorded {} with the reason {said:?}",
            last["outcome"]
        )
    });
}

/// The faulty story's first attempt writes a file and waits to be
/// stopped; every other attempt does its story.
fn faulty_hangs(w: &World) -> String {
    let id = w.mode.faulty();
    w.mode.script(&[(
        format!("[story={id} attempt=1]"),
        format!("write wip-{id}.txt half done\nsleep 30\n"),
    )])
}

/// The kept run, judged.
fn after_kept(w: &mut World, moment: &str) {
    assert_record_agrees_with_branch(w, moment, Shelf::Branch);
    assert_repo_sound(w, moment, Shape::Kept);
}

/// The whole run, then the ending `--on-finish` asks for.
fn complete(w: &mut World, on_finish: &str) {
    let output = w.start(&all_done(w), &["--on-finish", on_finish]);
    w.expect_exit(&format!("start --on-finish {on_finish}"), &output, 0);
    match on_finish {
        "cleanup" => {
            assert_record_agrees_with_branch(w, "after cleanup", Shelf::Finished);
            assert_repo_sound(w, "after cleanup", Shape::Cleaned);
        }
        "push" => {
            assert_pushed(w, "after --on-finish push");
            after_kept(w, "after --on-finish push");
        }
        _ => after_kept(w, "after keep"),
    }
}

/// The remote's `ralph/greet` is the local one.
fn assert_pushed(w: &mut World, moment: &str) {
    let remote = w.remote.clone().expect("a remote");
    let there = run(w.repo.command("git", &remote).args([
        "rev-parse",
        "--verify",
        "-q",
        "refs/heads/ralph/greet",
    ]));
    let here = w.repo.git_output(&["rev-parse", "--verify", "-q", BRANCH]);
    let (there, here) = (stdout(&there), stdout(&here));
    w.check(!here.is_empty() && there == here, || {
        format!(
            "{moment}: the remote's ralph/greet ({}) is not the local one ({})",
            there.trim(),
            here.trim()
        )
    });
}

/// The whole run left for the user to finish (no terminal to ask), then
/// `finish --push` or `finish --pr` from the user's own worktree.
fn finish_by_hand(w: &mut World, how: &str) {
    let output = w.start(&all_done(w), &[]);
    w.expect_exit("start, left to finish", &output, 0);
    assert_record_agrees_with_branch(w, "before finish", Shelf::Branch);
    let output = w.ralph(&["finish", CHANGE, how]);
    w.expect_exit(&format!("finish {how}"), &output, 0);
    let moment = format!("after finish {how}");
    if how == "--pr" {
        w.check(stdout(&output) == format!("{PR_URL}\n"), || {
            format!(
                "{moment}: the pull request's address is not printed: {}",
                describe(&output)
            )
        });
    }
    assert_pushed(w, &moment);
    after_kept(w, &moment);
}

/// Waits until the faulty story's agent is at work and, when it is not
/// story 1, story 1 was said complete (at once, in a parallel run): what
/// is interrupted then is the same in every mode.
fn at_work_after_story_1(w: &World, id: &str) {
    agent_at_work(&w.repo, &w.workdir_of(id), id, 1, &format!("wip-{id}.txt"));
    if id == "1" {
        return;
    }
    wait_until("story 1 is said complete", PATIENCE, || {
        let path = w.repo.run_dir(CHANGE).join("events.jsonl");
        // A line the loop is still writing is skipped.
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .any(|event| {
                    event["type"] == "attempt_finished"
                        && event["story_id"] == "1"
                        && event["outcome"] == "complete"
                })
        })
    });
}

/// `abort` from the user's worktree while the faulty story's agent works.
fn abort_live(w: &mut World) {
    let _reaper = Reaper(w.repo.record_dir());
    let id = w.mode.faulty();
    let cmd = w.start_command(&faulty_hangs(w), true, &["--on-finish", "keep"]);
    let running = Background::spawn(&w.repo, cmd);
    at_work_after_story_1(w, id);
    let mut abort = ralph(&w.repo);
    abort.args(["abort", CHANGE]);
    let aborting = std::thread::spawn(move || run(&mut abort));
    let ended = running.wait(PATIENCE);
    let output = aborting.join().expect("abort ran");
    if !output.status.success() {
        w.find(format!(
            "abort of a live run: {}\nthe loop said:\n{}{}",
            describe(&output),
            ended.stdout,
            ended.stderr
        ));
        w.fail_now();
    }
    assert_record_agrees_with_branch(w, "after abort", Shelf::Aborted);
    assert_repo_sound(w, "after abort", Shape::Aborted);
}

/// Out of retries, left stopped (no terminal to ask), then `abort`.
fn abort_stopped(w: &mut World) {
    let output = w.start(&faulty_fails(w), &["--max-retries", "0"]);
    w.expect_exit("start, out of retries", &output, 3);
    assert_record_agrees_with_branch(w, "out of retries", Shelf::Branch);
    assert_reason_kept(w, "out of retries");
    let output = w.ralph(&["abort", CHANGE]);
    w.expect_exit("abort", &output, 0);
    assert_record_agrees_with_branch(w, "after abort", Shelf::Aborted);
    assert_repo_sound(w, "after abort", Shape::Aborted);
}

/// Out of retries with `--on-finish keep`, then more retries.
fn out_of_retries(w: &mut World) {
    let output = w.start(
        &faulty_fails(w),
        &["--on-finish", "keep", "--max-retries", "0"],
    );
    w.expect_exit("start, out of retries", &output, 3);
    assert_record_agrees_with_branch(w, "out of retries", Shelf::Branch);
    assert_reason_kept(w, "out of retries");
    let output = w.resume(&all_done(w), &["--max-retries", "2"]);
    w.expect_exit("start --max-retries 2 (resume)", &output, 0);
    after_kept(w, "after the resume");
}

/// `on_story_done` fails once with `on_error = "stop"`; then resume. In
/// prompt mode the one story's hook runs once the run has ended: there is
/// nothing left to stop, and the run completes.
fn hook_stop(w: &mut World) {
    let output = w.start(&all_done(w), &["--on-finish", "keep"]);
    if w.mode == Mode::Prompt {
        w.expect_exit("start, its hook failing at the end", &output, 0);
        after_kept(w, "after the run");
        return;
    }
    w.expect_exit("start, stopped by a hook", &output, 130);
    assert_record_agrees_with_branch(w, "stopped by the hook", Shelf::Branch);
    let output = w.resume(&all_done(w), &[]);
    w.expect_exit("resume", &output, 0);
    after_kept(w, "after the resume");
}

/// The loop gets `signal` while the faulty story's agent works; then
/// resume.
fn interrupted(w: &mut World, signal: Signal) {
    let _reaper = Reaper(w.repo.record_dir());
    let id = w.mode.faulty();
    let cmd = w.start_command(&faulty_hangs(w), true, &["--on-finish", "keep"]);
    let running = Background::spawn(&w.repo, cmd);
    at_work_after_story_1(w, id);
    running.signal(signal);
    let ended = running.wait(PATIENCE);
    let moment = format!("after {signal}");
    if signal == Signal::SIGKILL {
        kill_agents(&w.repo.record_dir());
    } else if ended.status.code() != Some(130) {
        w.find(format!(
            "{moment}: expected exit 130, got {:?}:\n{}{}",
            ended.status, ended.stdout, ended.stderr
        ));
        w.fail_now();
    }
    assert_record_agrees_with_branch(w, &moment, Shelf::Branch);
    let output = w.resume(&all_done(w), &[]);
    w.expect_exit("resume", &output, 0);
    after_kept(w, "after the resume");
}

/// The agent of the faulty story (the last story, for a rewind) does its
/// story and misbehaves on the way; every story must end done, and what it
/// did must be undone and said.
fn fault(w: &mut World) {
    let output = w.start(&fault_script(w), &["--on-finish", "keep"]);
    w.expect_exit("start", &output, 0);
    after_kept(w, "after the run");
    let said = recorded_for_the_user(w);
    let what = match w.ending {
        Ending::StashClear | Ending::StashDrop => Some("stash"),
        Ending::PlantHook => Some("hooks/post-checkout"),
        Ending::MovesMain => Some("refs/heads/main"),
        _ => None,
    };
    if let Some(what) = what
        && !said.contains(what)
    {
        let ending = w.ending;
        w.find(format!(
            "{ending:?} is not reported ({what:?} is said nowhere in the events or state.json)"
        ));
    }
    if w.ending == Ending::AgentCommits {
        // Nothing is lost: the agent's own commit is kept somewhere.
        let kept = w
            .repo
            .git(&["log", "--all", "--format=%s"])
            .contains("the agent's own commit");
        w.check(kept, || {
            "the agent's own commit is reachable from no ref".into()
        });
    }
}

/// What the run recorded for the user: its events but the agents' own,
/// and state.json.
fn recorded_for_the_user(w: &World) -> String {
    let events: String = w
        .repo
        .run_events(CHANGE)
        .iter()
        .filter(|event| event["type"] != "story_event")
        .map(|event| format!("{event}\n"))
        .collect();
    let state =
        std::fs::read_to_string(w.repo.run_dir(CHANGE).join("state.json")).unwrap_or_default();
    format!("{events}{state}")
}

/// The script of a fault cell.
fn fault_script(w: &World) -> String {
    let mode = w.mode;
    let id = mode.faulty();
    let does = mode.does(id);
    let common = w.repo.path(".git");
    let (story, attempt, lines) = match w.ending {
        Ending::StashClear => (id, 1, format!("git stash clear\n{does}")),
        Ending::StashDrop => (id, 1, format!("git stash drop -q\n{does}")),
        Ending::PlantHook => {
            let hook = common.join("hooks/post-checkout");
            let hook = hook.display();
            (
                id,
                1,
                format!("write {hook} #!/bin/sh\\necho planted\\n\nchmod +x {hook}\n{does}"),
            )
        }
        Ending::AgentCommits => (
            id,
            1,
            format!("{does}git add -A\ngit commit -q -m \"the agent's own commit\"\n"),
        ),
        Ending::MovesMain => (
            id,
            1,
            format!("git update-ref refs/heads/main HEAD\n{does}"),
        ),
        Ending::Rewind => return rewind_script(w),
        other => unreachable!("{other:?} is no fault"),
    };
    mode.script(&[(format!("[story={story} attempt={attempt}]"), lines)])
}

/// Every agent of the last story rewinds `ralph/<change>` by two commits
/// (the checkpoints of the two stories before it), then does its story
/// right. In prompt mode, every iteration after the first (which fails)
/// rewinds.
fn rewind_script(w: &World) -> String {
    let mode = w.mode;
    match mode {
        Mode::Prompt => mode.script(&[
            (
                "[story=1 attempt=1]".into(),
                "write progress.txt iteration 1\\n\npromise FAILED: not yet\n".into(),
            ),
            (
                "[story=1]".into(),
                format!("git reset -q --hard HEAD~2\n{}", mode.does("1")),
            ),
        ]),
        // The story's own worktree is on a branch of its own: the run's
        // branch is moved by name.
        Mode::Parallel => mode.script(&[(
            "[story=3]".into(),
            format!(
                "git update-ref refs/heads/{BRANCH} refs/heads/{BRANCH}~2\n{}",
                mode.does("3")
            ),
        )]),
        _ => mode.script(&[(
            "[story=3]".into(),
            format!("git reset -q --hard HEAD~2\n{}", mode.does("3")),
        )]),
    }
}
