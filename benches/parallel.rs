//! Stories at once: the same six independent stories, whose agent takes a
//! fixed time, run with `--parallel 1` and `--parallel 3`, and the wall
//! time of each. The ideal ratio is 3.0; what it falls short by is what
//! each story's worktree, its merge and its checks cost.
//!
//! ```sh
//! cargo bench --bench parallel                      # 6 stories, 3 s each
//! RALPH_BENCH_AGENT_SECS=1 cargo bench --bench parallel
//! ```

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/measure.rs"]
mod measure;
use measure::story_project;

const STORIES: usize = 6;

/// The agent: waits its fixed time, writes its file, ticks its box, and
/// keeps its promise.
fn agent(secs: f64) -> String {
    format!(
        "cat >/dev/null; sleep {secs}; echo \"work of $RALPH_STORY\" > \"story-$RALPH_STORY.txt\"; \
         sed -i \"s/^- \\[ \\] $RALPH_STORY\\./- [x] $RALPH_STORY./\" openspec/changes/bench/tasks.md; \
         echo '<promise>COMPLETE</promise>'"
    )
}

/// One run at `width` stories at once, timed from start to end.
fn timed_run(root: &Path, width: usize, secs: f64) -> Duration {
    let dir = root.join(format!("parallel-{width}"));
    story_project(&dir, STORIES, Some("[stories]\nindependent = true\n"));
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_git-ralph"))
        .args(["start", "bench", "--agent-command", &agent(secs)])
        .args(["--parallel", &width.to_string(), "--on-finish", "keep"])
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("git-ralph runs");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "the run at --parallel {width} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let log = Command::new("git")
        .args(["log", "--format=%s", "main..ralph/bench"])
        .current_dir(&dir)
        .output()
        .expect("git log runs");
    let stories = String::from_utf8_lossy(&log.stdout)
        .lines()
        .filter(|subject| subject.contains(": story "))
        .count();
    assert_eq!(stories, STORIES, "every story is merged");
    elapsed
}

fn main() {
    let secs: f64 = std::env::var("RALPH_BENCH_AGENT_SECS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3.0);
    let root = std::env::temp_dir().join(format!("ralph-bench-parallel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("a scratch directory");
    println!("{STORIES} independent stories, the agent taking {secs} s each");
    let one = timed_run(&root, 1, secs);
    println!("--parallel 1: {:.2} s", one.as_secs_f64());
    let three = timed_run(&root, 3, secs);
    println!("--parallel 3: {:.2} s", three.as_secs_f64());
    println!(
        "wall time ratio --parallel 1 / --parallel 3: {:.2} (ideal 3.00)",
        one.as_secs_f64() / three.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&root);
}
