//! The cells that cannot be: a combination of modes no run can honour is
//! refused before anything is written (no `.git/ralph`, no branch, no
//! worktree, not a byte of the repository changed), with the reason and
//! what to do instead.

use super::Mode;
use super::world::World;
use crate::harness::*;

/// `start` with `args` on a busy user's project, and with `stopped_first`
/// a run already stopped in the user's worktree: refused, saying `why`,
/// nothing changed.
fn refused(args: &[&str], why: &str, stopped_first: bool) {
    let mut w = World::new(Mode::Here, super::Ending::Keep);
    if stopped_first {
        let script = Mode::Here.script(&[("[story=2]".into(), "promise FAILED: not yet\n".into())]);
        let output = w.start(&script, &["--max-retries", "0"]);
        w.expect_exit("a run stopped in the user's worktree", &output, 3);
    } else {
        assert!(!w.repo.path(".git/ralph").exists());
    }
    let untouched = Untouched::take(&w.repo);
    let prompt = w.repo.dir.path().join("PROMPT.md");
    std::fs::write(&prompt, "Greet.\n").unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|arg| arg.replace("PROMPT", &prompt.display().to_string()))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = w.resume(&Mode::Here.script(&[]), &args);
    w.check(
        output.status.code() == Some(1) || output.status.code() == Some(2),
        || format!("start {args:?} is not refused: {}", describe(&output)),
    );
    let err = stderr(&output);
    w.check(err.contains(why), || {
        format!("start {args:?} does not say {why:?}:\n{err}")
    });
    w.check(err.contains("hint:") || err.contains("Usage"), || {
        format!("start {args:?} does not say what to do instead:\n{err}")
    });
    let still = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        untouched.assert_still(&w.repo, &format!("a refused start {args:?}"))
    }));
    if let Err(panic) = still {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "the repository changed".into());
        w.find(text);
    }
    w.finish();
}

#[test]
fn parallel_with_prompt() {
    refused(
        &["--parallel", "2", "--prompt", "PROMPT"],
        "prompt mode",
        false,
    );
}

#[test]
fn roles_with_prompt() {
    refused(
        &["--roles", "coder,reviewer", "--prompt", "PROMPT"],
        "--prompt",
        false,
    );
}

#[test]
fn parallel_with_once() {
    refused(&["--parallel", "2", "--once"], "--once", false);
}

#[test]
fn worktree_on_resume_of_a_run_in_the_users_worktree() {
    refused(&["--worktree"], "worktree", true);
}

#[test]
fn parallel_on_resume_of_a_run_in_the_users_worktree() {
    refused(&["--parallel", "2"], "works in your worktree", true);
}
