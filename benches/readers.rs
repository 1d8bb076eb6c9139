//! Every reader of stories at 1,000 and 10,000 stories, against the
//! checklist reader.
//!
//! A dry run reads the task file, orders its stories as the run would take
//! them and builds the first prompt; a big file must not make that wait.
//! For each reader this times exactly that (`preview`, as `start --dry-run`
//! does it) on a generated file of N open stories, one task each, and
//! prints the median time and its ratio to the checklist reader's at the
//! same N:
//!
//! - checklist: `PLAN.md`, one `## N. Story` section per story;
//! - openspec: the same text as `openspec/changes/bench/tasks.md`;
//! - prd: `prd.json` with priorities and a dependency every tenth story;
//! - beads: `.beads/issues.jsonl`, priorities 0-3, a `blocks` every tenth
//!   issue, creation times from three zones.
//!
//! ```sh
//! cargo bench --bench readers
//! RALPH_BENCH_REPS=3 cargo bench --bench readers
//! ```

use std::path::Path;
use std::time::{Duration, Instant};

use git_ralph::preview::{PreviewOptions, preview, preview_source};
use git_ralph::stories::{self, IssueSource};

#[path = "support/measure.rs"]
mod measure;

/// Story counts timed.
const SIZES: &[usize] = &[1_000, 10_000];

fn main() {
    let reps: usize = std::env::var("RALPH_BENCH_REPS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    println!("readers: median of {reps} dry-run readings; ratio to the checklist reader");
    for &n in SIZES {
        let dir = tempfile::tempdir().expect("temp dir");
        write_files(dir.path(), n);
        let mut base = None;
        for reader in ["checklist", "openspec", "prd", "beads"] {
            let mut samples: Vec<Duration> = (0..reps).map(|_| time(reader, dir.path())).collect();
            let median = measure::median(&mut samples);
            let base = *base.get_or_insert(median);
            println!(
                "{n:>6} stories  {reader:<9} {:>9} ms  {:>6.2}x",
                measure::ms(median),
                median.as_secs_f64() / base.as_secs_f64()
            );
        }
    }
}

/// One dry-run reading with `reader`, checked to list every story.
fn time(reader: &str, dir: &Path) -> Duration {
    let options = PreviewOptions::default();
    let start = Instant::now();
    let preview = match reader {
        "checklist" => preview(
            dir,
            "bench",
            None,
            None,
            Some(Path::new("PLAN.md")),
            options,
        ),
        "openspec" => preview(dir, "bench", None, None, None, options),
        "prd" => preview(
            dir,
            "bench",
            None,
            Some(Path::new("prd.json")),
            None,
            options,
        ),
        _ => {
            let snapshot = stories::beads::read(dir, None).expect("beads");
            let run_dir = tempfile::tempdir().expect("run dir");
            let source = IssueSource::new("bench", run_dir.path(), snapshot).expect("issues");
            preview_source(&source, "bench", options)
        }
    }
    .unwrap_or_else(|error| panic!("{reader}: {error}"));
    let elapsed = start.elapsed();
    assert!(preview.prompt.is_some(), "{reader}: no first prompt");
    assert!(
        preview.stories.len() >= 1_000,
        "{reader}: {} stories",
        preview.stories.len()
    );
    elapsed
}

/// Every reader's file, each of `n` open stories.
fn write_files(dir: &Path, n: usize) {
    let mut plan = String::from("# Bench\n\n");
    for i in 1..=n {
        plan.push_str(&format!(
            "## {i}. Story {i}\n\nWhat story {i} is about.\n\n- [ ] {i}.1 Do story {i}\n\n"
        ));
    }
    std::fs::write(dir.join("PLAN.md"), &plan).expect("plan");
    let change = dir.join("openspec/changes/bench");
    std::fs::create_dir_all(&change).expect("change");
    std::fs::write(change.join("tasks.md"), &plan).expect("tasks");

    let prd: Vec<serde_json::Value> = (1..=n)
        .map(|i| {
            let depends: Vec<String> = match i % 10 == 0 {
                true => vec![format!("US-{}", i - 1)],
                false => Vec::new(),
            };
            serde_json::json!({"id": format!("US-{i}"), "title": format!("Story {i}"),
                "description": format!("What story {i} is about."), "priority": i % 4 + 1,
                "acceptanceCriteria": ["It works"], "passes": false, "dependsOn": depends})
        })
        .collect();
    let prd = serde_json::json!({"project": "bench", "userStories": prd});
    std::fs::write(dir.join("prd.json"), prd.to_string()).expect("prd");

    let zones = ["Z", "+02:00", "-05:00"];
    let mut beads = String::new();
    for i in 1..=n {
        let mut issue = serde_json::json!({"id": format!("bd-{i}"), "title": format!("Issue {i}"),
            "description": format!("What issue {i} is about.\n\n- [ ] Do issue {i}"),
            "status": "open", "priority": i % 4, "issue_type": "task",
            "created_at": format!("2025-01-01T{:02}:{:02}:{:02}{}", (i / 3600) % 24, (i / 60) % 60, i % 60, zones[i % 3])});
        if i % 10 == 0 {
            issue["dependencies"] = serde_json::json!([{"issue_id": format!("bd-{i}"),
                "depends_on_id": format!("bd-{}", i - 1), "type": "blocks"}]);
        }
        beads.push_str(&issue.to_string());
        beads.push('\n');
    }
    std::fs::create_dir_all(dir.join(".beads")).expect("beads dir");
    std::fs::write(dir.join(".beads/issues.jsonl"), beads).expect("beads");

    measure::git(dir, &["init", "-q"]);
}
