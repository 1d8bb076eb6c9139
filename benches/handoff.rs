//! A run across machines: what travels, and what taking it up costs.
//!
//! 1. A ten-story run with `--push-each` to a bare remote: every ref the
//!    remote then holds for the run, and the size of the record (each of
//!    its files) and of the remote's objects before and after.
//! 2. A run of a 100,000-file repository stopped after its first story,
//!    pushed with its record: `git clone` of the remote alone against
//!    `git clone` then `git ralph start <change> --from origin` (which
//!    fetches, compares, checks the branch out and opens the run, then
//!    stops at once on `--max-iterations`), printed as a ratio.
//!
//! ```sh
//! cargo bench --bench handoff
//! RALPH_BENCH_FILES=10000 RALPH_BENCH_REPS=3 cargo bench --bench handoff
//! ```

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "support/measure.rs"]
mod measure;
use measure::{git, git_output, median, ms, story_project};

/// An agent that does its story: writes its file, ticks its box, promises.
const AGENT: &str = "cat >/dev/null; echo \"work of $RALPH_STORY\" > \"story-$RALPH_STORY.txt\"; \
     sed -i \"s/^- \\[ \\] $RALPH_STORY\\./- [x] $RALPH_STORY./\" openspec/changes/bench/tasks.md; \
     echo '<promise>COMPLETE</promise>'";

fn ralph(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_git-ralph"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("git-ralph runs")
}

fn main() {
    let root = tempfile::tempdir().expect("a temporary directory");
    refs_of_ten_stories(root.path());
    take_up_against_clone(root.path());
}

/// Part 1: the refs and sizes a ten-story run pushes.
fn refs_of_ten_stories(root: &Path) {
    let dir = root.join("ten");
    let remote = root.join("ten.git");
    story_project(&dir, 10, None);
    git(
        root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().expect("a path"),
        ],
    );
    git(
        &dir,
        &["remote", "add", "origin", remote.to_str().expect("a path")],
    );
    git(&dir, &["push", "-q", "origin", "main"]);
    let before = objects_size(&remote);
    let output = ralph(
        &dir,
        &[
            "start",
            "bench",
            "--agent-command",
            AGENT,
            "--on-finish",
            "push",
            "--push-each",
        ],
    );
    assert!(output.status.success(), "{output:?}");
    let after = objects_size(&remote);
    println!("ten stories, --push-each then --on-finish push:");
    let refs = git_output(
        &remote,
        &["for-each-ref", "--format=%(refname) %(objectname:short)"],
    );
    for line in refs.lines() {
        println!("  {line}");
    }
    let record = git_output(&remote, &["ls-tree", "-l", "refs/ralph/bench/record"]);
    let mut total = 0u64;
    println!("  the record's files:");
    for line in record.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let size: u64 = fields[3].parse().unwrap_or(0);
        total += size;
        println!("    {:>8} B  {}", size, fields[4]);
    }
    let records = git_output(&remote, &["rev-list", "--count", "refs/ralph/bench/record"]);
    println!("  record: {total} B in its last commit, {records} commits in its history");
    println!("  the remote's objects: {before} KiB with main alone, {after} KiB after the run");
}

/// `git count-objects -v`: loose and packed, in KiB.
fn objects_size(repo: &Path) -> u64 {
    let text = git_output(repo, &["count-objects", "-v"]);
    text.lines()
        .filter_map(|line| line.split_once(": "))
        .filter(|(key, _)| *key == "size" || *key == "size-pack")
        .filter_map(|(_, value)| value.parse::<u64>().ok())
        .sum()
}

/// Part 2: taking a run up in a fresh clone against cloning alone.
fn take_up_against_clone(root: &Path) {
    let files = env_number("RALPH_BENCH_FILES", 100_000);
    let reps = env_number("RALPH_BENCH_REPS", 3).max(1);
    let dir = root.join("large");
    let remote = root.join("large.git");
    build_repo(&dir, files);
    git(
        root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().expect("a path"),
        ],
    );
    git(
        &dir,
        &["remote", "add", "origin", remote.to_str().expect("a path")],
    );
    git(&dir, &["push", "-q", "origin", "main"]);
    // Story 1 done and pushed with the record; story 2 fails and stops it.
    let agent = format!("if [ \"$RALPH_STORY\" = 1 ]; then {AGENT}; else cat >/dev/null; fi");
    let output = ralph(
        &dir,
        &[
            "start",
            "bench",
            "--agent-command",
            &agent,
            "--max-retries",
            "0",
            "--on-finish",
            "keep",
            "--push-each",
        ],
    );
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let mut clone_only = Vec::new();
    let mut taken_up = Vec::new();
    for rep in 0..reps {
        let plain = root.join(format!("clone-{rep}"));
        let started = Instant::now();
        git(
            root,
            &[
                "clone",
                "-q",
                remote.to_str().expect("a path"),
                plain.to_str().expect("a path"),
            ],
        );
        clone_only.push(started.elapsed());
        let machine = root.join(format!("machine-{rep}"));
        let started = Instant::now();
        git(
            root,
            &[
                "clone",
                "-q",
                remote.to_str().expect("a path"),
                machine.to_str().expect("a path"),
            ],
        );
        git(&machine, &["config", "user.name", "Bench"]);
        git(&machine, &["config", "user.email", "bench@example.com"]);
        let output = ralph(
            &machine,
            &[
                "start",
                "bench",
                "--from",
                "origin",
                "--agent-command",
                "cat >/dev/null",
                "--max-iterations",
                "1",
                "--on-finish",
                "keep",
            ],
        );
        taken_up.push(started.elapsed());
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("error"),
            "{output:?}"
        );
        std::fs::remove_dir_all(&plain).ok();
        std::fs::remove_dir_all(&machine).ok();
    }
    let clone = median(&mut clone_only);
    let take = median(&mut taken_up);
    println!("{files} files, median of {reps}:");
    println!("  git clone alone:                  {} ms", ms(clone));
    println!("  git clone + start --from origin:  {} ms", ms(take));
    println!(
        "  ratio: {:.2}",
        take.as_secs_f64() / clone.as_secs_f64().max(f64::EPSILON)
    );
}

/// `files` small files a hundred to a directory and the change's two
/// stories, committed once through `git fast-import`.
fn build_repo(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).expect("a directory");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Bench"]);
    git(dir, &["config", "user.email", "bench@example.com"]);
    let mut import = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import runs");
    {
        let mut input = std::io::BufWriter::new(import.stdin.take().expect("its input"));
        write!(
            input,
            "commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 15\nA large project\n"
        )
        .expect("write");
        let mut blob = |path: &str, content: &[u8]| {
            write!(input, "M 100644 inline {path}\ndata {}\n", content.len()).expect("write");
            input.write_all(content).expect("write");
            input.write_all(b"\n").expect("write");
        };
        let tasks = "# Tasks\n\n## 1. Story 1\n\n- [ ] 1.1 Write story-1.txt\n\n## 2. Story 2\n\n- [ ] 2.1 Write story-2.txt\n";
        blob("openspec/changes/bench/tasks.md", tasks.as_bytes());
        for k in 0..files {
            let path = format!("d{}/d{}/f{k}.rs", k / 10_000, (k / 100) % 100);
            blob(&path, format!("// file {k}\n").as_bytes());
        }
    }
    assert!(import.wait().expect("fast-import ends").success());
    git(dir, &["reset", "-q", "--hard", "main"]);
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(default)
}
