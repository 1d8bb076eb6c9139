//! How the checkpoint engine compares with the git CLI on a large repository.
//!
//! The loop checkpoints or reverts after every attempt, and squashes once at
//! the end, so these three operations must never cost more than running git
//! itself would. This benchmark builds a 100,000-file repository, applies an
//! attempt-sized change and times each operation against the git commands it
//! mirrors, in the same run and from the same starting state, with
//! `git status` as the floor nothing that looks at every file can beat.
//!
//! Both sides run in a sealed environment: the benchmark re-executes itself
//! with no system or global git config (and a `HOME` of its own, since the
//! engine reads `~/.gitconfig` whatever `GIT_CONFIG_GLOBAL` says), so a
//! developer's settings (fsmonitor, untracked cache, hooks) cannot favour
//! either side.
//!
//! With the worktree watched, as the loop runs it, a checkpoint and a revert
//! look only at what the attempt touched: the `-watched` lines time those,
//! and `growth` times the watched checkpoint for ever more touched files.
//! `memory` has a child process snapshot, preserve, revert and diff a big
//! file an agent wrote, and reports its peak resident set.
//!
//! Environment: `RALPH_BENCH_FILES` (default 100000), `RALPH_BENCH_REPS`
//! (default 7, at least 5), `RALPH_BENCH_KEEP=1` keeps the generated
//! repository, `RALPH_BENCH_REUSE=<repo>` times a kept one instead of
//! building a new one, `RALPH_BENCH_BIG_MB` (default 700; 0 skips the
//! memory figure), `RALPH_BENCH_GROWTH=0` skips the growth figures.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use git_ralph::git::{ChangeName, Original, Repo, SPLIT_INDEX_FROM, Scan};

#[path = "support/measure.rs"]
mod measure;
/// Set in the re-executed process to the sealed directory it runs in.
#[path = "support/sealed.rs"]
mod sealed;
use measure::{git, git_output, median, ms};
use sealed::{EMAIL, NAME, SEALED};
const BRANCH: &str = "main";
/// The commit every repetition starts from.
const BASE_TAG: &str = "refs/tags/bench-base";
/// Where a kept repository remembers how many files it was built with.
const FILES_KEY: &str = "bench.files";
const FILES_PER_DIR: usize = 100;
const SYMLINKS: usize = 20;
const IGNORED_FILES: usize = 2_000;
const CHANGE: &str = "bench";

/// Set in the child that measures memory, to the repository it works in.
const BIG_CHILD: &str = "RALPH_BENCH_BIG_CHILD";

fn main() {
    if let Some(dir) = std::env::var_os(BIG_CHILD) {
        return big_file_child(Path::new(&dir));
    }
    match std::env::var_os(SEALED) {
        None => std::process::exit(run_sealed()),
        Some(dir) => run(Path::new(&dir)),
    }
}

/// Re-execute this benchmark in a locked-down environment, then clean up.
fn run_sealed() -> i32 {
    sealed::rerun(
        "ralph-bench-",
        &[
            "RALPH_BENCH_FILES",
            "RALPH_BENCH_REPS",
            "RALPH_BENCH_REUSE",
            "RALPH_BENCH_KEEP",
            "RALPH_BENCH_BIG_MB",
            "RALPH_BENCH_GROWTH",
        ],
        &[],
    )
}

fn run(sealed: &Path) {
    let reps = env_number("RALPH_BENCH_REPS", 7);
    let reps = if reps < 5 {
        eprintln!("RALPH_BENCH_REPS={reps} is too few for a median; using 5");
        5
    } else {
        reps
    };
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
    let mut bench = Bench {
        layout: Layout { files },
        dir,
        change: ChangeName::parse(CHANGE).expect("the change name is valid"),
        seed: 0,
    };
    // The first open in a process does one-time setup that no later open
    // repeats; keep it out of the first repetition.
    Repo::open(&bench.dir).expect("could not open the benchmark repository");

    let operations: [(&str, OursSide, GitSide); 8] = [
        ("checkpoint", Bench::ours_checkpoint, Bench::git_checkpoint),
        ("revert", Bench::ours_revert, Bench::git_revert),
        ("squash", Bench::ours_squash, Bench::git_squash),
        // As inside a run: the repository is already open and the index was
        // last written by the engine, not by git (see `ours_*_in_loop`).
        (
            "checkpoint-in-loop",
            Bench::ours_checkpoint_in_loop,
            Bench::git_checkpoint,
        ),
        (
            "revert-in-loop",
            Bench::ours_revert_in_loop,
            Bench::git_revert,
        ),
        // The loop screen's Diff view of a running attempt.
        ("live-diff", Bench::ours_live_diff, Bench::git_live_diff),
        // As inside a run with the worktree watched.
        (
            "checkpoint-watched",
            Bench::ours_checkpoint_watched,
            Bench::git_checkpoint,
        ),
        (
            "revert-watched",
            Bench::ours_revert_watched,
            Bench::git_revert,
        ),
    ];
    let mut sides: Vec<Sides> = operations.iter().map(|_| Sides::default()).collect();
    let mut opens = Vec::new();
    let mut floor = Vec::new();
    for rep in 0..reps {
        eprintln!("repetition {}/{reps}", rep + 1);
        // Each operation's two sides run back to back, so that load from
        // elsewhere on the machine tends to hit both; which goes first
        // alternates, so neither always inherits the other's warm caches.
        let ours_first = rep % 2 == 0;
        for ((_, ours, git), sides) in operations.iter().zip(&mut sides) {
            for ours_turn in [ours_first, !ours_first] {
                if ours_turn {
                    let (open, total) = ours(&mut bench);
                    if !open.is_zero() {
                        opens.push(open);
                    }
                    sides.ours.push(total);
                } else {
                    sides.git.push(git(&mut bench));
                }
            }
        }
        floor.push(bench.git_status_floor());
    }
    bench.verify();

    let floor = median(&mut floor);
    let ours_checkpoint = median(&mut sides[0].ours);
    let ours_checkpoint_in_loop = median(&mut sides[3].ours);
    for ((name, _, _), sides) in operations.iter().zip(&mut sides) {
        println!("{}", sides.line(name));
    }
    println!("status-floor git={}", ms(floor));
    println!(
        "checkpoint-vs-status ratio={:.2}",
        ours_checkpoint.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "checkpoint-in-loop-vs-status ratio={:.2}",
        ours_checkpoint_in_loop.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "open ours={} (included in checkpoint, revert and squash; a run keeps the repository open)",
        ms(median(&mut opens))
    );
    println!("peak_rss_mib={}", peak_rss_mib());
    println!("files={files} reps={reps}");
    println!("verified=yes");
    if env_number("RALPH_BENCH_GROWTH", 1) != 0 {
        bench.growth();
    }
    let big_mb = env_number("RALPH_BENCH_BIG_MB", 700);
    if big_mb > 0 {
        big_file_memory(sealed, big_mb);
    }
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

/// Runs our side of an operation: (time to open, total time).
type OursSide = fn(&mut Bench) -> (Duration, Duration);
/// Runs git's side of an operation.
type GitSide = fn(&mut Bench) -> Duration;

/// The timings of one operation, ours and git's.
#[derive(Default)]
struct Sides {
    ours: Vec<Duration>,
    git: Vec<Duration>,
}

impl Sides {
    fn line(&mut self, op: &str) -> String {
        let ours = median(&mut self.ours);
        let git = median(&mut self.git);
        format!(
            "{op} ours={} git={} ratio={:.2}",
            ms(ours),
            ms(git),
            ours.as_secs_f64() / git.as_secs_f64()
        )
    }
}

/// The high-water mark of this process's resident set.
fn peak_rss_mib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").expect("could not read /proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("/proc/self/status has no VmHWM line");
    kib.div_ceil(1024)
}

/// A xorshift generator: deterministic content without a dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64, so that nearby seeds give unrelated streams and the
        // state is never zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// A size between 200 B and 16 KiB.
    fn file_size(&mut self) -> usize {
        200 + self.below(16 * 1024 - 200 + 1) as usize
    }
}

const WORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "match",
    "impl",
    "struct",
    "return",
    "Some(value)",
    "None",
    "Ok(())",
    "Err(err)",
    "=>",
    "{",
    "}",
    "self.index",
    "entry.path",
    "tree",
    "commit",
    "if",
    "else",
    "for",
    "in",
    "while",
    "&mut",
    "0",
    "42",
    "usize",
    "String",
    "Vec::new()",
    "// why",
    "?;",
    "+",
    "==",
    "!=",
    "as",
    "pub",
    "use",
    "mod",
];

/// Source-like text of exactly `size` bytes, ending in a newline.
fn text(rng: &mut Rng, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 16);
    let mut line = 0;
    while out.len() < size {
        if line == 0 {
            let indent = 4 * rng.below(4) as usize;
            out.resize(out.len() + indent, b' ');
        }
        let word = WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes();
        out.extend_from_slice(word);
        line += word.len() + 1;
        if line > 72 {
            out.push(b'\n');
            line = 0;
        } else {
            out.push(b' ');
        }
    }
    out.truncate(size);
    if let Some(last) = out.last_mut() {
        *last = b'\n';
    }
    out
}

/// Random bytes of exactly `size`, with NULs so that git sees binary data.
fn binary(rng: &mut Rng, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        out.extend_from_slice(&rng.next().to_le_bytes());
    }
    out.truncate(size);
    for byte in out.iter_mut().step_by(61) {
        *byte = 0;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Binary,
    Executable,
}

/// Where the generated files live: `dA/dB/dC/fNN.ext`, a hundred to a
/// directory, ten directories to a level.
struct Layout {
    files: usize,
}

impl Layout {
    fn kind(&self, k: usize) -> Kind {
        if k % 50 == 7 {
            Kind::Binary
        } else if k % 100 == 3 {
            Kind::Executable
        } else {
            Kind::Text
        }
    }

    fn dir(&self, leaf: usize) -> String {
        format!("d{}/d{}/d{}", leaf / 100, (leaf / 10) % 10, leaf % 10)
    }

    fn path(&self, k: usize) -> String {
        let ext = match self.kind(k) {
            Kind::Text => "rs",
            Kind::Binary => "bin",
            Kind::Executable => "sh",
        };
        format!(
            "{}/f{:02}.{ext}",
            self.dir(k / FILES_PER_DIR),
            k % FILES_PER_DIR
        )
    }

    fn leaves(&self) -> usize {
        self.files.div_ceil(FILES_PER_DIR)
    }

    /// The first text file at or after `k`.
    fn text_at(&self, mut k: usize) -> usize {
        while self.kind(k) != Kind::Text {
            k += 1;
        }
        assert!(k < self.files, "no text file at or after {k}");
        k
    }

    fn symlink_target(&self, i: usize) -> usize {
        i * self.files / SYMLINKS + FILES_PER_DIR / 4
    }

    fn modified(&self) -> Vec<usize> {
        (0..10)
            .map(|i| self.text_at(i * self.files / 10 + 11))
            .collect()
    }

    fn deleted(&self) -> Vec<usize> {
        (0..2)
            .map(|i| self.text_at(i * self.files / 2 + self.files / 4 + 21))
            .collect()
    }
}

/// Write the repository and commit it once.
fn build_repo(dir: &Path, files: usize) {
    let started = Instant::now();
    let layout = Layout { files };
    fs::create_dir_all(dir).expect("could not create the repository directory");
    eprintln!("building a {files}-file repository in {}", dir.display());

    let written = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (layout, written) = (&layout, &written);
            scope.spawn(move || {
                for leaf in (worker..layout.leaves()).step_by(workers) {
                    write_leaf(dir, layout, leaf);
                    let done = written.fetch_add(1, Ordering::Relaxed) + 1;
                    if done % (10_000 / FILES_PER_DIR) == 0 {
                        eprintln!("  wrote {} files", done * FILES_PER_DIR);
                    }
                }
            });
        }
    });
    for i in 0..SYMLINKS {
        let link = dir.join(format!("links/l{i:02}"));
        fs::create_dir_all(dir.join("links")).expect("could not create links/");
        let target = format!("../{}", layout.path(layout.symlink_target(i)));
        std::os::unix::fs::symlink(target, &link).expect("could not create a symlink");
    }
    fs::write(dir.join(".gitignore"), "/target/\n*.log\n").expect("could not write .gitignore");
    for i in 0..IGNORED_FILES {
        let sub = dir.join(format!("target/debug/deps/u{:02}", i % 20));
        fs::create_dir_all(&sub).expect("could not create target/");
        let mut rng = Rng::new(1_000_000 + i as u64);
        let size = 1024 + rng.below(3 * 1024) as usize;
        fs::write(sub.join(format!("o{i:04}.o")), binary(&mut rng, size))
            .expect("could not write under target/");
    }
    eprintln!("  files written in {:.1}s", started.elapsed().as_secs_f64());

    git(dir, &["init", "-q", "-b", BRANCH]);
    for (key, value) in [
        ("user.name", NAME),
        ("user.email", EMAIL),
        // Background repacks would land in whichever repetition triggers them.
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        (FILES_KEY, &files.to_string()),
    ] {
        git(dir, &["config", key, value]);
    }
    eprintln!("  git add -A (the longest step)");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
    git(dir, &["update-ref", BASE_TAG, "HEAD"]);
    eprintln!("  built in {:.1}s", started.elapsed().as_secs_f64());
}

fn write_leaf(root: &Path, layout: &Layout, leaf: usize) {
    let dir = root.join(layout.dir(leaf));
    fs::create_dir_all(&dir).expect("could not create a directory");
    let first = leaf * FILES_PER_DIR;
    for k in first..(first + FILES_PER_DIR).min(layout.files) {
        let mut rng = Rng::new(k as u64);
        let size = rng.file_size();
        let path = root.join(layout.path(k));
        let content = match layout.kind(k) {
            Kind::Binary => binary(&mut rng, size),
            Kind::Text | Kind::Executable => text(&mut rng, size),
        };
        fs::write(&path, content)
            .unwrap_or_else(|err| panic!("could not write {}: {err}", path.display()));
        if layout.kind(k) == Kind::Executable {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|err| panic!("could not chmod {}: {err}", path.display()));
        }
    }
}

/// Time a sequence of git commands run one after the other.
fn time_git(dir: &Path, commands: &[&[&str]]) -> Duration {
    let started = Instant::now();
    for args in commands {
        git(dir, args);
    }
    started.elapsed()
}

/// How long a checkpoint of the change just made takes; it must see it.
fn timed_checkpoint(repo: &mut Repo) -> Duration {
    let started = Instant::now();
    let checkpoint = repo
        .checkpoint("bench: checkpoint")
        .expect("checkpoint failed");
    let elapsed = started.elapsed();
    assert!(checkpoint.changed, "the checkpoint did not see the change");
    elapsed
}

/// How long a revert of the change just made takes; it must restore the
/// 10 modified and 2 deleted files.
fn timed_revert(repo: &mut Repo) -> Duration {
    let started = Instant::now();
    let stats = repo.revert().expect("revert failed");
    let elapsed = started.elapsed();
    assert_eq!(
        stats.restored, 12,
        "revert should restore 10 modified and 2 deleted files"
    );
    elapsed
}

struct Bench {
    dir: PathBuf,
    layout: Layout,
    change: ChangeName,
    /// Every applied change gets fresh content, so no side finds its blobs
    /// already written by the other.
    seed: u64,
}

impl Bench {
    /// Back to the base commit on `main` with a clean worktree, no ignored
    /// `build.log` and no run refs. Untimed.
    fn reset_to_start(&self) {
        let dir = &self.dir;
        git(
            dir,
            &["symbolic-ref", "HEAD", &format!("refs/heads/{BRANCH}")],
        );
        git(dir, &["reset", "-q", "--hard", BASE_TAG]);
        git(dir, &["clean", "-fdq"]);
        match fs::remove_file(dir.join("build.log")) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                panic!("could not remove build.log: {err}")
            }
            _ => {}
        }
        let refs = git_output(
            dir,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/ralph/",
                &self.change.branch_ref(),
            ],
        );
        for name in refs.lines() {
            git(dir, &["update-ref", "-d", name]);
        }
    }

    /// The attempt: 10 files rewritten, 5 added in a new directory, 2
    /// deleted, and an ignored build log.
    fn apply_change(&mut self, seed: u64) {
        let dir = &self.dir;
        for (i, k) in self.layout.modified().into_iter().enumerate() {
            let mut rng = Rng::new(seed << 8 | i as u64);
            let size = rng.file_size();
            write(&dir.join(self.layout.path(k)), &text(&mut rng, size));
        }
        let added = dir.join("feature");
        fs::create_dir_all(&added).expect("could not create feature/");
        for i in 0..5 {
            let mut rng = Rng::new(seed << 8 | (100 + i));
            let size = rng.file_size();
            write(&added.join(format!("new{i}.rs")), &text(&mut rng, size));
        }
        for k in self.layout.deleted() {
            let path = dir.join(self.layout.path(k));
            fs::remove_file(&path)
                .unwrap_or_else(|err| panic!("could not delete {}: {err}", path.display()));
        }
        let mut log = Rng::new(seed << 8 | 200);
        write(&dir.join("build.log"), &text(&mut log, 4096));
    }

    fn next_seed(&mut self) -> u64 {
        self.seed += 1;
        self.seed
    }

    /// Refresh the index's stat cache the way git does before any command,
    /// so neither side pays for the other's writes.
    fn warm(&self) {
        git(&self.dir, &["status", "--porcelain"]);
    }

    /// Start state plus a fresh change.
    fn prepare_change(&mut self) {
        self.reset_to_start();
        let seed = self.next_seed();
        self.apply_change(seed);
    }

    /// Start state, then (as the engine) `begin` and one checkpointed
    /// story: the state a run is squashed from. Returns what `begin` kept.
    fn prepare_squash(&mut self, seed: u64) -> Original {
        self.reset_to_start();
        let mut repo = self.open();
        let begin = repo.begin(&self.change).expect("begin failed");
        self.apply_change(seed);
        repo.checkpoint("story")
            .expect("the story checkpoint failed");
        begin.original
    }

    fn open(&self) -> Repo {
        Repo::open(&self.dir).expect("could not open the benchmark repository")
    }

    /// The repository as the loop holds it: it writes the index split.
    fn open_in_loop(&self) -> Repo {
        let mut repo = self.open();
        repo.write_index_split(SPLIT_INDEX_FROM);
        repo
    }

    // Ours opens the repository inside the timed region, every repetition:
    // git's numbers include each process finding and configuring the
    // repository too. The open alone is reported on its own line.

    fn ours_checkpoint(&mut self) -> (Duration, Duration) {
        self.prepare_change();
        self.warm();
        let started = Instant::now();
        let mut repo = self.open();
        let opened = started.elapsed();
        let total = opened + timed_checkpoint(&mut repo);
        (opened, total)
    }

    /// A checkpoint as the loop makes one: the repository is open already,
    /// and the index was last written by the engine itself (here by an
    /// untimed revert to the start), so the engine knows which tree it
    /// describes and edits that tree along the changed paths.
    fn ours_checkpoint_in_loop(&mut self) -> (Duration, Duration) {
        self.reset_to_start();
        let mut repo = self.open_in_loop();
        repo.revert().expect("the untimed revert failed");
        let seed = self.next_seed();
        self.apply_change(seed);
        let total = timed_checkpoint(&mut repo);
        loop_ends(repo);
        (Duration::ZERO, total)
    }

    /// A revert as the loop makes one: open already, the index last written
    /// by the engine (an untimed revert), so it is known to describe HEAD.
    fn ours_revert_in_loop(&mut self) -> (Duration, Duration) {
        self.reset_to_start();
        let mut repo = self.open_in_loop();
        repo.revert().expect("the untimed revert failed");
        let seed = self.next_seed();
        self.apply_change(seed);
        let total = timed_revert(&mut repo);
        loop_ends(repo);
        (Duration::ZERO, total)
    }

    /// The loop's repository with the worktree watched, after an untimed
    /// revert to the start: the full scan every watched one builds on.
    fn open_watched(&mut self) -> Repo {
        self.reset_to_start();
        let mut repo = self.open_in_loop();
        repo.watch_worktree()
            .expect("could not watch the benchmark worktree");
        repo.revert().expect("the untimed revert failed");
        repo
    }

    /// A checkpoint as the loop makes one with the worktree watched.
    fn ours_checkpoint_watched(&mut self) -> (Duration, Duration) {
        let mut repo = self.open_watched();
        let seed = self.next_seed();
        self.apply_change(seed);
        let total = timed_checkpoint(&mut repo);
        assert_watched(&repo);
        loop_ends(repo);
        (Duration::ZERO, total)
    }

    /// A revert as the loop makes one with the worktree watched.
    fn ours_revert_watched(&mut self) -> (Duration, Duration) {
        let mut repo = self.open_watched();
        let seed = self.next_seed();
        self.apply_change(seed);
        let total = timed_revert(&mut repo);
        assert_watched(&repo);
        loop_ends(repo);
        (Duration::ZERO, total)
    }

    /// Append a line to `count` files spread over the repository.
    fn touch_files(&self, count: usize, seed: u64) {
        use std::io::Write;
        let step = (self.layout.files / count).max(1);
        for k in (0..self.layout.files).step_by(step).take(count) {
            let path = self.dir.join(self.layout.path(k));
            let mut file = fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap_or_else(|err| panic!("could not open {}: {err}", path.display()));
            writeln!(file, "// touched {seed}").expect("could not append");
        }
    }

    /// How the watched checkpoint grows with the files an attempt touched,
    /// against `git add -A && git commit` for the same change.
    fn growth(&mut self) {
        let files = self.layout.files;
        for touched in [10, 1_000, files] {
            let (mut ours, mut theirs, mut scans) = (Vec::new(), Vec::new(), Vec::new());
            // Rewriting every file writes as many objects on each side:
            // once is enough, and they are pruned after.
            let reps = if touched == files { 1 } else { 3 };
            for _ in 0..reps {
                eprintln!("growth: {touched} files touched");
                let mut repo = self.open_watched();
                let seed = self.next_seed();
                self.touch_files(touched, seed);
                let started = Instant::now();
                repo.checkpoint("bench: growth").expect("checkpoint failed");
                ours.push(started.elapsed());
                scans.push(match repo.last_scan() {
                    Some(Scan::Watched { .. }) => "watched".to_owned(),
                    Some(Scan::Full { why }) => format!("full ({why})"),
                    None => "none".to_owned(),
                });
                loop_ends(repo);
                self.reset_to_start();
                // Content of its own: git does not write an object that
                // exists, and ours just wrote these.
                let seed = self.next_seed();
                self.touch_files(touched, seed);
                self.warm();
                theirs.push(time_git(
                    &self.dir,
                    &[&["add", "-A"], &["commit", "-q", "-m", "bench: growth"]],
                ));
            }
            if touched == files {
                self.reset_to_start();
                git(&self.dir, &["prune", "--expire=now"]);
            }
            let (ours, theirs) = (median(&mut ours), median(&mut theirs));
            scans.dedup();
            println!(
                "growth touched={touched} ours-watched={} git={} ratio={:.2} scan={}",
                ms(ours),
                ms(theirs),
                ours.as_secs_f64() / theirs.as_secs_f64(),
                scans.join("/")
            );
        }
        self.reset_to_start();
    }

    fn git_checkpoint(&mut self) -> Duration {
        self.prepare_change();
        self.warm();
        time_git(
            &self.dir,
            &[&["add", "-A"], &["commit", "-q", "-m", "bench: checkpoint"]],
        )
    }

    fn ours_revert(&mut self) -> (Duration, Duration) {
        self.prepare_change();
        self.warm();
        let started = Instant::now();
        let mut repo = self.open();
        let opened = started.elapsed();
        let total = opened + timed_revert(&mut repo);
        (opened, total)
    }

    fn git_revert(&mut self) -> Duration {
        self.prepare_change();
        self.warm();
        time_git(&self.dir, &[&["reset", "-q", "--hard"], &["clean", "-fdq"]])
    }

    fn ours_squash(&mut self) -> (Duration, Duration) {
        let seed = self.next_seed();
        let original = self.prepare_squash(seed);
        self.warm();
        let started = Instant::now();
        let mut repo = self.open();
        let opened = started.elapsed();
        repo.finish_cleanup(&self.change, &original)
            .expect("finish failed");
        (opened, started.elapsed())
    }

    /// git has no single squash-to-uncommitted command. `git checkout main`
    /// refuses (or tries to merge) with the run's work in the worktree, and
    /// `git reset --soft main` would leave HEAD on the run's branch. The
    /// fairest equivalent does the same three things ours does: point HEAD
    /// back at the original branch without touching files, rewrite the index
    /// to that branch's tree (a mixed reset, which also refreshes the stat
    /// cache of the whole worktree) and delete the run's branch.
    fn git_squash(&mut self) -> Duration {
        let seed = self.next_seed();
        self.prepare_squash(seed);
        self.warm();
        let head = format!("refs/heads/{BRANCH}");
        let branch = self.change.branch_short();
        time_git(
            &self.dir,
            &[
                &["symbolic-ref", "HEAD", &head],
                &["reset", "-q"],
                &["branch", "-q", "-D", &branch],
            ],
        )
    }

    /// The Diff view of a running attempt: the worktree against HEAD,
    /// untracked files included, hashed in memory.
    fn ours_live_diff(&mut self) -> (Duration, Duration) {
        self.prepare_change();
        self.warm();
        let started = Instant::now();
        let repo = self.open();
        let opened = started.elapsed();
        let head = repo
            .head()
            .expect("HEAD")
            .commit()
            .expect("HEAD has a commit");
        let patch = repo.worktree_patch(head).expect("live diff failed");
        let total = started.elapsed();
        assert!(patch.contains("feature/new0.rs"), "the diff missed a file");
        (opened, total)
    }

    /// git's nearest read-only equivalent: the tracked changes as a patch,
    /// and the untracked files listed (git shows no content for them).
    fn git_live_diff(&mut self) -> Duration {
        self.prepare_change();
        self.warm();
        time_git(
            &self.dir,
            &[
                &["diff", "HEAD"],
                &["ls-files", "--others", "--exclude-standard"],
            ],
        )
    }

    fn git_status_floor(&mut self) -> Duration {
        self.prepare_change();
        self.warm();
        time_git(&self.dir, &[&["status", "--porcelain", "-uall"]])
    }

    /// Check once, on identical states, that ours does what git does.
    fn verify(&mut self) {
        eprintln!("verifying");
        let dir = self.dir.clone();
        let status = |dir: &Path| git_output(dir, &["status", "--porcelain", "-uall"]);

        // Checkpoint: the tree git would write for `git add -A`, and an
        // index that leaves nothing to add afterwards.
        self.prepare_change();
        git(&dir, &["add", "-A"]);
        let expected = git_output(&dir, &["write-tree"]);
        git(&dir, &["reset", "-q"]);
        let checkpoint = self
            .open()
            .checkpoint("bench: verify")
            .expect("checkpoint failed");
        assert_eq!(
            checkpoint.tree.to_string(),
            expected,
            "our checkpoint tree differs from git's"
        );
        assert_eq!(git_output(&dir, &["rev-parse", "HEAD^{tree}"]), expected);
        assert_eq!(
            status(&dir),
            "",
            "the worktree is not clean after our checkpoint"
        );

        // Revert: back to the base tree, the ignored log untouched.
        self.prepare_change();
        self.open().revert().expect("revert failed");
        assert_eq!(
            status(&dir),
            "",
            "the worktree is not clean after our revert"
        );
        assert!(
            dir.join("build.log").exists(),
            "our revert removed an ignored file"
        );
        assert!(dir.join("target").exists(), "our revert removed target/");
        assert_eq!(
            git_output(&dir, &["rev-parse", "HEAD"]),
            git_output(&dir, &["rev-parse", BASE_TAG])
        );

        // Squash: same HEAD, index, worktree status and branches as git's
        // equivalent, from the same change.
        let seed = self.next_seed();
        let original = self.prepare_squash(seed);
        self.open()
            .finish_cleanup(&self.change, &original)
            .expect("finish failed");
        let ours = self.squash_outcome();
        self.prepare_squash(seed);
        git(
            &dir,
            &["symbolic-ref", "HEAD", &format!("refs/heads/{BRANCH}")],
        );
        git(&dir, &["reset", "-q"]);
        git(&dir, &["branch", "-q", "-D", &self.change.branch_short()]);
        let theirs = self.squash_outcome();
        assert_eq!(ours, theirs, "our squash left a different state than git's");
        assert!(
            ours.contains("?? feature/new0.rs"),
            "the squash lost the run's work"
        );
        // Live diff: every path git sees changed, and nothing written.
        self.prepare_change();
        let objects = git_output(&dir, &["count-objects", "-v"]);
        let index = fs::read(dir.join(".git/index")).expect("the index");
        let repo = self.open();
        let head = repo.head().expect("HEAD").commit().expect("a commit");
        let patch = repo.worktree_patch(head).expect("live diff failed");
        for line in status(&dir).lines() {
            // `XY path`; the output's first space may have been trimmed.
            let (_, path) = line.trim_start().split_once(' ').expect("a status line");
            let path = path.trim_start();
            assert!(
                patch.contains(&format!("diff --git a/{path} b/{path}")),
                "the live diff misses {line:?}; it names:\n{}",
                patch
                    .lines()
                    .filter(|l| l.starts_with("diff --git"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        assert!(
            !patch.contains("build.log"),
            "the live diff shows an ignored file"
        );
        assert_eq!(
            git_output(&dir, &["count-objects", "-v"]),
            objects,
            "the live diff wrote objects"
        );
        assert_eq!(fs::read(dir.join(".git/index")).expect("the index"), index);
        self.reset_to_start();
    }

    fn squash_outcome(&self) -> String {
        let dir = &self.dir;
        [
            git_output(dir, &["symbolic-ref", "HEAD"]),
            git_output(dir, &["write-tree"]),
            git_output(dir, &["branch", "--list"]),
            git_output(dir, &["status", "--porcelain", "-uall"]),
        ]
        .join("\n")
    }
}

/// What a loop does as it ends, untimed: the index handed back whole, so
/// that the next repetition starts from an index git wrote.
fn loop_ends(mut repo: Repo) {
    repo.settle_index()
        .expect("could not write the index whole");
}

/// A watched operation must have been watched, or the figure means nothing.
fn assert_watched(repo: &Repo) {
    assert!(
        matches!(repo.last_scan(), Some(Scan::Watched { .. })),
        "the operation was not watched: {:?}",
        repo.last_scan()
    );
}

/// Peak memory when an agent writes a big file: a child process goes
/// through what the loop does with it, and says how much memory that took.
/// git's own `git add` of the same file is measured with `/usr/bin/time`
/// when there is one.
fn big_file_memory(sealed: &Path, mb: usize) {
    let dir = sealed.join("big");
    fs::create_dir_all(&dir).expect("could not create the big-file repository");
    git(&dir, &["init", "-q", "-b", BRANCH]);
    git(&dir, &["config", "user.name", NAME]);
    git(&dir, &["config", "user.email", EMAIL]);
    write(&dir.join("README.md"), b"big files\n");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "base"]);
    eprintln!("memory: an agent writes a {mb} MB file");
    let output = Command::new(std::env::current_exe().expect("the benchmark executable"))
        .env(BIG_CHILD, &dir)
        .env("RALPH_BENCH_BIG_MB", mb.to_string())
        .stderr(Stdio::inherit())
        .output()
        .expect("could not run the memory child");
    assert!(output.status.success(), "the memory child failed");
    print!("{}", String::from_utf8_lossy(&output.stdout));

    let time = Path::new("/usr/bin/time");
    if time.exists() {
        write_big(&dir.join("theirs.bin"), mb);
        let output = Command::new(time)
            .args(["-f", "%M", "git", "-C"])
            .arg(&dir)
            .args(["add", "theirs.bin"])
            .output()
            .expect("could not run git under /usr/bin/time");
        let kib: u64 = String::from_utf8_lossy(&output.stderr)
            .lines()
            .last()
            .and_then(|line| line.trim().parse().ok())
            .expect("/usr/bin/time printed no peak");
        println!(
            "memory-git-add big_mb={mb} peak_rss_mib={}",
            kib.div_ceil(1024)
        );
    }
}

/// `mb` megabytes of binary data, written a mebibyte at a time.
fn write_big(path: &Path, mb: usize) {
    use std::io::Write;
    let mut file = fs::File::create(path).expect("could not create the big file");
    let mut rng = Rng::new(mb as u64);
    let chunk = binary(&mut rng, 1_000_000);
    for _ in 0..mb {
        file.write_all(&chunk)
            .expect("could not write the big file");
    }
}

/// The loop's work on a big file, in this process alone: the judge's
/// fingerprint, a failed attempt preserved and reverted, an accepted one
/// checkpointed, the Diff view, and a revert that restores the committed
/// big file.
fn big_file_child(dir: &Path) {
    let mb = env_number("RALPH_BENCH_BIG_MB", 700);
    let path = dir.join("big.bin");
    let mut repo = Repo::open(dir).expect("could not open the big-file repository");
    repo.watch_worktree().expect("could not watch");
    repo.fingerprint().expect("the first fingerprint failed");
    println!("memory-start peak_rss_mib={}", peak_rss_mib());

    write_big(&path, mb);
    repo.fingerprint().expect("fingerprint failed");
    repo.preserve("refs/ralph/bench/attempts/1/1", "attempt")
        .expect("preserve failed");
    repo.revert().expect("revert failed");
    assert!(!path.exists(), "the revert left the big file");
    println!(
        "memory-failed-attempt big_mb={mb} peak_rss_mib={}",
        peak_rss_mib()
    );

    write_big(&path, mb);
    let head = repo.head().expect("HEAD").commit().expect("a commit");
    repo.fingerprint().expect("fingerprint failed");
    let checkpoint = repo.checkpoint("big").expect("checkpoint failed");
    assert!(checkpoint.changed);
    println!(
        "memory-checkpoint big_mb={mb} peak_rss_mib={}",
        peak_rss_mib()
    );

    let patch = repo.worktree_patch(head).expect("live diff failed");
    assert!(
        patch.contains("binary, "),
        "the diff does not name the file: {patch}"
    );
    write(&path, b"rewritten\n");
    let patch = repo
        .worktree_patch(checkpoint.commit)
        .expect("live diff failed");
    assert!(
        patch.contains("binary, "),
        "the diff does not name the file: {patch}"
    );
    println!(
        "memory-live-diff big_mb={mb} peak_rss_mib={}",
        peak_rss_mib()
    );

    repo.revert().expect("revert failed");
    assert_eq!(
        fs::metadata(&path).expect("the big file is back").len(),
        mb as u64 * 1_000_000
    );
    println!("memory-restore big_mb={mb} peak_rss_mib={}", peak_rss_mib());
}

fn write(path: &Path, content: &[u8]) {
    fs::write(path, content)
        .unwrap_or_else(|err| panic!("could not write {}: {err}", path.display()));
}
