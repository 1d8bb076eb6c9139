//! Issue 44: generated scenarios. The matrix names the places someone
//! thought of; these sequences go where nobody did. A seed draws a
//! repository shape ([`shapes`]) and a sequence of steps ([`steps`]): the
//! user's acts (edits, staging, stashes, branches, tags, commits, switches,
//! the task file), commands of `git ralph` (starts in every mode, with an
//! agent that succeeds, fails, commits, clears stashes, rewinds, plants a
//! hook, writes outside its story, asks a question or leaves a child in a
//! session of its own; held at work while the user acts beside it, runs
//! `git gc` or `git repack`, or fills the disk; stopped by SIGTERM, kill -9
//! or `abort`; two starts at once; `finish`, `abort`, `answer`, `plan`
//! (killed -9 too) and `plan --refine`; the reads, `watch` on a terminal
//! and the web view among them). [`play`] runs them through the real
//! binary; after every command [`invariants`] ask git whether anything
//! the user had is lost, whether a refused command changed anything,
//! whether `fsck` is content, and the matrix's oracle whether the record
//! agrees with the branch; each new step brings its own judge (a plan's
//! agent's meddling undone, a killed plan put back by the next, exactly
//! one of two starts at work, no child outliving its attempt, the user's
//! `.git/info/refs` kept, the web page showing what `status` reads).
//!
//! A failing sequence is shrunk ([`shrink`]) and printed with the command
//! that replays it:
//! `GIT_RALPH_SCENARIO='shape=plain edit:1 …' cargo test --locked --test
//! integration scenarios::replay -- --nocapture`.
//!
//! The budget run draws [`BUDGET`] sequences from fixed seeds on two
//! threads; `GIT_RALPH_SCENARIOS=5000` (and `GIT_RALPH_SCENARIO_SEED` for
//! other seeds, `GIT_RALPH_SCENARIO_THREADS` for fewer threads) makes it a
//! soak that prints sequences per minute; `GIT_RALPH_SCENARIO_KEEP_GOING=1`
//! plays on past a failure, printing each with its seed. The failures known on `main`
//! are kept out by [`gates`].

mod disk;
mod gates;
mod invariants;
mod play;
mod shapes;
mod shrink;
mod steps;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use shapes::Shape;
use shrink::{Rng, shrink};
use steps::Step;

/// Sequences in the budget run.
pub const BUDGET: usize = 150;
/// Plays a shrink may take.
const SHRINK_PLAYS: usize = 60;

/// A shape and the steps played on it.
#[derive(Debug, Clone)]
pub struct Sequence {
    pub shape: Shape,
    pub steps: Vec<Step>,
}

impl Sequence {
    /// The sequence seed `seed` draws.
    pub fn drawn(seed: u64) -> Sequence {
        let mut rng = Rng::new(seed);
        let shapes = Shape::drawable();
        let shape = shapes[rng.below(shapes.len())];
        let commands = 2 + rng.below(4);
        Sequence {
            shape,
            steps: steps::generate(&mut rng, commands, shape == Shape::Full),
        }
    }

    /// The written form: `shape=<name> <step> <step>…`.
    pub fn text(&self) -> String {
        format!("shape={} {}", self.shape.name(), steps::write(&self.steps))
    }

    pub fn read(text: &str) -> Result<Sequence, String> {
        let text = text.trim();
        let (first, rest) = text.split_once(' ').unwrap_or((text, ""));
        let shape = first
            .strip_prefix("shape=")
            .and_then(Shape::parse)
            .ok_or_else(|| format!("a sequence starts with shape=<name>, not {first:?}"))?;
        Ok(Sequence {
            shape,
            steps: steps::read(rest)?,
        })
    }

    /// Plays the sequence; what went wrong, with the transcript, if
    /// anything did.
    pub fn play(&self) -> Result<(), String> {
        let transcript = Mutex::new(Vec::new());
        let played = catch_unwind(AssertUnwindSafe(|| {
            let mut scenario = play::Scenario::new(self.shape);
            let mut findings = Vec::new();
            for step in &self.steps {
                scenario.play(*step);
                if !scenario.w.findings.is_empty() {
                    break;
                }
            }
            if scenario.w.findings.is_empty() {
                scenario.end();
            }
            findings.append(&mut scenario.w.findings);
            *transcript.lock().unwrap() = std::mem::take(&mut scenario.transcript);
            findings
        }));
        let transcript = transcript.into_inner().unwrap().join("\n");
        if std::env::var_os("GIT_RALPH_SCENARIO_VERBOSE").is_some() {
            eprintln!("what happened:\n{transcript}");
        }
        let findings = match played {
            Ok(findings) => findings,
            Err(panic) => vec![format!("a panic: {}", panic_text(&panic))],
        };
        if findings.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{} finding(s):\n- {}\nwhat happened:\n{transcript}",
            findings.len(),
            findings.join("\n- ")
        ))
    }

    /// The shortest sequence found that still fails, and its failure.
    pub fn shrunk(&self) -> (Sequence, String) {
        let shape = self.shape;
        let steps = shrink(self.steps.clone(), SHRINK_PLAYS, |steps| {
            Sequence {
                shape,
                steps: steps.to_vec(),
            }
            .play()
            .is_err()
        });
        let shortest = Sequence { shape, steps };
        let failure = shortest
            .play()
            .err()
            .unwrap_or_else(|| "(the shortest sequence passed when played again)".into());
        (shortest, failure)
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// The command that replays `sequence`.
pub fn replay_command(sequence: &Sequence) -> String {
    format!(
        "GIT_RALPH_SCENARIO='{}' cargo test --locked --test integration scenarios::replay -- --nocapture",
        sequence.text()
    )
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|text| text.trim().parse().ok())
}

/// Plays `count` sequences from `first_seed` on, on two threads (or
/// `GIT_RALPH_SCENARIO_THREADS`); the first failure is shrunk and reported.
/// With `GIT_RALPH_SCENARIO_KEEP_GOING=1` (a soak), every sequence is
/// played, each failure printed as it comes with its seed, and the first
/// one shrunk at the end.
fn run_many(first_seed: u64, count: usize) {
    let threads = env_number("GIT_RALPH_SCENARIO_THREADS").map_or(2, |n| n.max(1));
    let keep_going = env_number("GIT_RALPH_SCENARIO_KEEP_GOING") == Some(1);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failures = AtomicUsize::new(0);
    let failed: Mutex<Option<(u64, Sequence, String)>> = Mutex::new(None);
    let began = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= count || (!keep_going && failed.lock().unwrap().is_some()) {
                        return;
                    }
                    let seed = first_seed + n as u64;
                    let sequence = Sequence::drawn(seed);
                    let played = sequence.play();
                    let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                    if keep_going && finished.is_multiple_of(50) {
                        eprintln!(
                            "scenarios: {finished} played, {} failed, {:.0} s",
                            failures.load(Ordering::SeqCst),
                            began.elapsed().as_secs_f64()
                        );
                    }
                    if let Err(failure) = played {
                        failures.fetch_add(1, Ordering::SeqCst);
                        if keep_going {
                            let first = failure.lines().take(3).collect::<Vec<_>>().join(" | ");
                            eprintln!("seed {seed} FAILED: {}\n  {first}", sequence.text());
                        }
                        failed
                            .lock()
                            .unwrap()
                            .get_or_insert((seed, sequence, failure));
                        if !keep_going {
                            return;
                        }
                    }
                }
            });
        }
    });
    let played = done.load(Ordering::SeqCst);
    if keep_going {
        eprintln!(
            "scenarios: {} of {played} sequences failed",
            failures.load(Ordering::SeqCst)
        );
    }
    let minutes = began.elapsed().as_secs_f64() / 60.0;
    eprintln!(
        "scenarios: {played} sequences in {:.1} s, {:.0} sequences/minute",
        began.elapsed().as_secs_f64(),
        played as f64 / minutes.max(1e-9)
    );
    if let Some((seed, sequence, failure)) = failed.into_inner().unwrap() {
        eprintln!(
            "seed {seed} failed:\n{}\n{failure}\nshrinking…",
            sequence.text()
        );
        let (shortest, failure) = sequence.shrunk();
        panic!(
            "seed {seed} fails; its shortest sequence ({} steps):\n  {}\nreplay:\n  {}\n{failure}",
            shortest.steps.len(),
            shortest.text(),
            replay_command(&shortest)
        );
    }
}

/// The budget run: [`BUDGET`] sequences from fixed seeds, or
/// `GIT_RALPH_SCENARIOS` of them from `GIT_RALPH_SCENARIO_SEED`.
#[test]
fn generated_sequences_lose_nothing_and_agree_with_git() {
    let count = env_number("GIT_RALPH_SCENARIOS").map_or(BUDGET, |n| n as usize);
    let seed = env_number("GIT_RALPH_SCENARIO_SEED").unwrap_or(1);
    run_many(seed, count);
}

/// Replays the sequence `GIT_RALPH_SCENARIO` holds (as a failure prints
/// it), or the seed `GIT_RALPH_SCENARIO_SEED` draws; without either, one
/// sequence that meets every kind of command, read back from its text.
#[test]
fn replay() {
    let sequence = match (
        std::env::var("GIT_RALPH_SCENARIO"),
        env_number("GIT_RALPH_SCENARIO_SEED"),
    ) {
        (Ok(text), _) => Sequence::read(&text).unwrap_or_else(|err| panic!("{err}")),
        (_, Some(seed)) => Sequence::drawn(seed),
        _ => Sequence::read(EVERY_KIND).unwrap(),
    };
    assert_eq!(
        Sequence::read(&sequence.text()).unwrap().text(),
        sequence.text()
    );
    eprintln!("replaying {}", sequence.text());
    if let Err(failure) = sequence.play() {
        panic!("{}\n{failure}", sequence.text());
    }
}

/// A sequence with a command of every kind.
const EVERY_KIND: &str = "shape=plain edit:0 stage-part:1 start/worktree/fails/keep/live \
     edit:2 stash-push term status-json start/bare/succeeds/keep log show finish-push \
     kill9:300 tick:3 start/roles/commits/cleanup abort plan-kill plan plan-refine \
     start/here/asks/keep answer start/here/escapes/keep/live gc repack watch web release \
     start-twice abort";
