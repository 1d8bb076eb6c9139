//! A whole run against the same git work done with the git CLI, in the same
//! run, on a large repository.
//!
//! The user waits for the whole run, not for one checkpoint. On a
//! generated 100,000-file repository with a little uncommitted work, the
//! real binary runs `git ralph start bench` on a change of three stories
//! whose agent (a shell script) appends a line to ten files spread over the
//! repository and ticks its story. Git's side does the same git work by
//! hand: `git checkout -b ralph/bench`, `git add -A && git commit` of the
//! uncommitted start, then, after the same agent script for each story,
//! `git add -A && git commit`. The ratio of the two wall times is what
//! git-ralph costs beyond what the agent touched; each of our runs also
//! writes its phase table (`RALPH_TIMINGS`), and the median run's is
//! printed.
//!
//! Both sides run sealed (no system or global git config, a `HOME` of their
//! own), start from the same state (reset untimed, then `git status` to
//! warm the index) and alternate which goes first. Every repetition starts
//! cold for git-ralph: `.git/ralph` is removed, as before a first run.
//!
//! ```sh
//! cargo bench --bench run                                  # 100,000 files
//! RALPH_BENCH_FILES=1000000 RALPH_BENCH_REPS=3 cargo bench --bench run
//! ```
//!
//! Environment: `RALPH_BENCH_FILES` (default 100000), `RALPH_BENCH_REPS`
//! (default 5), `RALPH_BENCH_KEEP=1` keeps the generated repository,
//! `RALPH_BENCH_REUSE=<repo>` times a kept one instead of building one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/measure.rs"]
mod measure;
/// Set in the re-executed process to the sealed directory it runs in.
#[path = "support/sealed.rs"]
mod sealed;
use measure::{git, git_output, median, ms};
use sealed::{EMAIL, NAME, SEALED};
/// The commit every repetition starts from.
const BASE_TAG: &str = "refs/tags/run-bench-base";
const FILES_KEY: &str = "bench.files";
const FILES_PER_DIR: usize = 100;
const STORIES: usize = 3;
const EDITS_PER_STORY: usize = 10;
const TASKS: &str = "openspec/changes/bench/tasks.md";

fn main() {
    match std::env::var_os(SEALED) {
        None => std::process::exit(run_sealed()),
        Some(dir) => run(Path::new(&dir)),
    }
}

/// Re-execute this benchmark in a locked-down environment, then clean up.
fn run_sealed() -> i32 {
    sealed::rerun(
        "ralph-run-bench-",
        &[
            "RALPH_BENCH_FILES",
            "RALPH_BENCH_REPS",
            "RALPH_BENCH_REUSE",
            "RALPH_BENCH_KEEP",
        ],
        &[("NO_COLOR", "1")],
    )
}

fn run(sealed: &Path) {
    let reps = env_number("RALPH_BENCH_REPS", 5).max(3);
    let dir = match std::env::var_os("RALPH_BENCH_REUSE") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let files = env_number("RALPH_BENCH_FILES", 100_000);
            assert!(files >= 1_000, "RALPH_BENCH_FILES must be at least 1000");
            let dir = sealed.join("repo");
            build_repo(&dir, files);
            dir
        }
    };
    let files: usize = git_output(&dir, &["config", FILES_KEY])
        .parse()
        .expect("the repository does not say how many files it was built with");
    let bench = Bench {
        agent: agent_script(files),
        dir,
        files,
        timings: sealed.join("timings"),
    };
    let (mut ours, mut theirs, mut tables) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        eprintln!("repetition {}/{reps}", rep + 1);
        for ours_turn in [rep % 2 == 0, rep % 2 != 0] {
            if ours_turn {
                let (elapsed, table) = bench.ours();
                ours.push(elapsed);
                tables.push((elapsed, table));
            } else {
                theirs.push(bench.git());
            }
        }
    }
    bench.verify();
    tables.sort_by_key(|(elapsed, _)| *elapsed);
    println!("phases of the median run (RALPH_TIMINGS):");
    print!("{}", tables[tables.len() / 2].1);
    let (best_ours, best_git) = (min(&ours), min(&theirs));
    let (median_ours, median_git) = (median(&mut ours), median(&mut theirs));
    println!(
        "run-best ours={} git={} ratio={:.2}",
        ms(best_ours),
        ms(best_git),
        best_ours.as_secs_f64() / best_git.as_secs_f64()
    );
    println!(
        "run ours={} git={} ratio={:.2}",
        ms(median_ours),
        ms(median_git),
        median_ours.as_secs_f64() / median_git.as_secs_f64()
    );
    println!("files={files} reps={reps} stories={STORIES} edits-per-story={EDITS_PER_STORY}");
}

struct Bench {
    dir: PathBuf,
    files: usize,
    agent: String,
    timings: PathBuf,
}

impl Bench {
    /// Back to the base commit on `main`, no run and no run refs, then the
    /// user's uncommitted work: five files changed, two new ones. Untimed,
    /// and ended by a `git status` that refreshes the index as any git
    /// command would.
    fn prepare(&self) {
        let dir = &self.dir;
        git(dir, &["symbolic-ref", "HEAD", "refs/heads/main"]);
        git(dir, &["reset", "-q", "--hard", BASE_TAG]);
        git(dir, &["clean", "-fdq"]);
        let _ = fs::remove_dir_all(dir.join(".git/ralph"));
        let refs = git_output(
            dir,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/ralph/",
                "refs/heads/ralph/",
            ],
        );
        for name in refs.lines() {
            git(dir, &["update-ref", "-d", name]);
        }
        for i in 0..5 {
            let path = dir.join(file_path(i * self.files / 5 + 7));
            append(&path, "uncommitted\n");
        }
        fs::create_dir_all(dir.join("notes")).expect("could not create notes/");
        fs::write(dir.join("notes/todo.md"), "- the user's own note\n").expect("a note");
        fs::write(dir.join("scratch.txt"), "untracked\n").expect("a scratch file");
        git(dir, &["status", "--porcelain"]);
    }

    /// Our whole run, through the real binary; its wall time and phase
    /// table.
    fn ours(&self) -> (Duration, String) {
        self.prepare();
        let _ = fs::remove_file(&self.timings);
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_git-ralph"))
            .args(["start", "bench", "--agent-command", &self.agent])
            .args(["--on-finish", "keep", "--plain"])
            .current_dir(&self.dir)
            .env("RALPH_TIMINGS", &self.timings)
            .stdin(Stdio::null())
            .output()
            .expect("git-ralph runs");
        let elapsed = started.elapsed();
        assert!(
            output.status.success(),
            "the run failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let subjects = git_output(&self.dir, &["log", "--format=%s", "main..ralph/bench"]);
        let stories = subjects
            .lines()
            .filter(|subject| subject.contains(": story "))
            .count();
        assert_eq!(stories, STORIES, "every story is checkpointed:\n{subjects}");
        assert_eq!(git_output(&self.dir, &["status", "--porcelain"]), "");
        let table = fs::read_to_string(&self.timings).unwrap_or_default();
        (elapsed, table)
    }

    /// The same git work by hand, with the same agent script.
    fn git(&self) -> Duration {
        self.prepare();
        let dir = &self.dir;
        let started = Instant::now();
        git(dir, &["checkout", "-q", "-b", "ralph/bench"]);
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "initial state"]);
        for story in 1..=STORIES {
            let status = Command::new("sh")
                .args(["-c", &self.agent])
                .current_dir(dir)
                .env("RALPH_STORY", story.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .expect("the agent script runs");
            assert!(status.success(), "the agent script failed");
            git(dir, &["add", "-A"]);
            git(dir, &["commit", "-q", "-m", &format!("story {story}")]);
        }
        started.elapsed()
    }

    /// Both sides end with the same trees at every step.
    fn verify(&self) {
        let trees = |bench: &Bench| -> String {
            git_output(
                &bench.dir,
                &[
                    "log",
                    "--format=%T",
                    "-n",
                    &(STORIES + 1).to_string(),
                    "ralph/bench",
                ],
            )
        };
        self.ours();
        let ours = trees(self);
        self.git();
        let theirs = trees(self);
        assert_eq!(
            ours, theirs,
            "git-ralph's commits hold other trees than git's"
        );
        println!(
            "verified=yes (the same {} trees on both sides)",
            STORIES + 1
        );
    }
}

/// The agent: reads its prompt, appends a line to ten files spread over
/// the repository (other ones for each story), ticks its story and keeps
/// its promise.
fn agent_script(files: usize) -> String {
    let mut script = String::from("cat >/dev/null\ncase \"$RALPH_STORY\" in\n");
    for story in 1..=STORIES {
        let paths: Vec<String> = (0..EDITS_PER_STORY)
            .map(|i| file_path(i * files / EDITS_PER_STORY + story * 31 + 3))
            .collect();
        script.push_str(&format!("{story}) files='{}' ;;\n", paths.join(" ")));
    }
    script.push_str(
        "esac\nfor f in $files; do echo \"story $RALPH_STORY\" >> \"$f\"; done\n\
         sed -i \"s/^- \\[ \\] $RALPH_STORY\\./- [x] $RALPH_STORY./\" ",
    );
    script.push_str(TASKS);
    script.push_str("\necho '<promise>COMPLETE</promise>'\n");
    script
}

fn file_path(k: usize) -> String {
    let leaf = k / FILES_PER_DIR;
    format!(
        "d{}/d{}/d{}/f{:02}.rs",
        leaf / 100,
        (leaf / 10) % 10,
        leaf % 10,
        k % FILES_PER_DIR
    )
}

/// The repository, committed once: `files` small files a hundred to a
/// directory, and the change's three stories. Objects go straight into a
/// pack through `git fast-import`, then git checks everything out.
fn build_repo(dir: &Path, files: usize) {
    let started = Instant::now();
    eprintln!("building a {files}-file repository in {}", dir.display());
    fs::create_dir_all(dir).expect("could not create the repository directory");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", FILES_KEY, &files.to_string()]);
    let mut import = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import runs");
    {
        let mut input = std::io::BufWriter::new(import.stdin.take().expect("fast-import's input"));
        write!(
            input,
            "commit refs/heads/main\ncommitter {NAME} <{EMAIL}> 1700000000 +0000\ndata 15\nA large project\n"
        )
        .expect("write");
        let mut blob = |path: &str, content: &[u8]| {
            write!(input, "M 100644 inline {path}\ndata {}\n", content.len()).expect("write");
            input.write_all(content).expect("write");
            input.write_all(b"\n").expect("write");
        };
        let mut tasks = String::from("# Tasks\n");
        for n in 1..=STORIES {
            tasks.push_str(&format!(
                "\n## {n}. Story {n}\n\n- [ ] {n}.1 Edit ten files\n"
            ));
        }
        blob(TASKS, tasks.as_bytes());
        blob(".gitignore", b"target/\n*.log\n");
        for k in 0..files {
            let content = format!("// file {k}\nfn f{k}() -> usize {{ {k} }}\n");
            blob(&file_path(k), content.as_bytes());
            if (k + 1) % 100_000 == 0 {
                eprintln!("  {} files", k + 1);
            }
        }
    }
    assert!(
        import.wait().expect("fast-import ends").success(),
        "git fast-import failed"
    );
    git(dir, &["reset", "-q", "--hard", "main"]);
    git(dir, &["update-ref", BASE_TAG, "main"]);
    eprintln!("built in {:.1}s", started.elapsed().as_secs_f64());
}

fn append(path: &Path, line: &str) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .unwrap_or_else(|err| panic!("could not append to {}: {err}", path.display()));
}

fn env_number(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a whole number")),
        Err(_) => default,
    }
}

fn min(samples: &[Duration]) -> Duration {
    samples.iter().copied().min().expect("samples")
}
