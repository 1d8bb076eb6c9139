//! The steps of a scenario and their one written form. A step is what a
//! user does to the repository (edit, stage, stash, branch, tick a box…),
//! a `git ralph` command (a start in one of its modes with an agent that
//! behaves one way, a stop, a kill, an ending, a read), or the end of an
//! attempt the test held open. Every step is written as one word
//! (`edit:2`, `start/worktree/commits/cleanup/live`), so that a failing
//! sequence prints as a line the replay reads back.
//!
//! [`generate`] draws a sequence from a seed. What a step does depends on
//! the repository when it runs (a `finish` with no run is refused, which
//! is judged too), so the generator keeps no model of the product: it only
//! makes sure a live start is followed by what may happen while an agent
//! works, and ended.

use std::fmt;

use super::gates::{Known, gated};
use super::shrink::Rng;

/// Where a run works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    Here,
    Worktree,
    Parallel,
    Roles,
    /// A bare resume: no mode option at all.
    Bare,
}

/// What the agent of the first story still to do does; the others do
/// their story properly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Succeeds,
    /// Says FAILED and exits 1, every attempt (the run has no retry left).
    Fails,
    /// Does its story and commits it itself.
    Commits,
    /// Clears the user's stashes, then does its story.
    Stash,
    /// Resets its branch one commit back, then does its story.
    Rewinds,
    /// Plants an executable `post-checkout` hook, then does its story.
    PlantsHook,
    /// Overwrites a file of the user's, then does its story.
    Outside,
}

/// Whether the start is held open for the steps that follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Live {
    /// Runs to its end.
    No,
    /// The first story's agent waits, after writing a file, until the
    /// attempt is released or stopped.
    Agent,
    /// The agent succeeds; the `--check` that follows waits.
    Check,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    pub mode: RunMode,
    pub agent: Agent,
    /// `--on-finish cleanup` rather than keep.
    pub cleanup: bool,
    pub once: bool,
    pub live: Live,
}

/// How a live start ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The held attempt goes on to its end.
    Release,
    Term,
    Kill,
    Abort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Keep,
    Cleanup,
    Push,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Status,
    StatusJson,
    Log,
    Show,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Overwrites a file of the user's pool (by index, wrapping).
    Edit(u8),
    /// Writes a new untracked file.
    Add,
    Delete(u8),
    Rename(u8),
    Chmod(u8),
    StageAll,
    /// Stages one version of a file and leaves another on disk.
    StagePart(u8),
    StashPush,
    StashPop,
    StashDrop,
    Branch,
    DeleteBranch,
    Tag,
    DeleteTag,
    Commit,
    /// 0: `main`, 1: `ralph/greet`, 2: the newest topic branch.
    Switch(u8),
    /// The user does story 1..=3 by hand: its file, its boxes ticked.
    Tick(u8),
    AddStory,
    DeleteStory,
    Gc,
    Start(Start),
    Stop(Stop),
    /// A start killed -9 after so many milliseconds.
    Kill9(u16),
    Finish(Finish),
    Abort,
    Read(Read),
}

impl Step {
    /// A step of the user's own, as opposed to a command.
    pub fn is_users(self) -> bool {
        !matches!(
            self,
            Step::Start(_)
                | Step::Stop(_)
                | Step::Kill9(_)
                | Step::Finish(_)
                | Step::Abort
                | Step::Read(_)
        )
    }
}

const MODES: &[(RunMode, &str)] = &[
    (RunMode::Here, "here"),
    (RunMode::Worktree, "worktree"),
    (RunMode::Parallel, "parallel"),
    (RunMode::Roles, "roles"),
    (RunMode::Bare, "bare"),
];

const AGENTS: &[(Agent, &str)] = &[
    (Agent::Succeeds, "succeeds"),
    (Agent::Fails, "fails"),
    (Agent::Commits, "commits"),
    (Agent::Stash, "stash"),
    (Agent::Rewinds, "rewinds"),
    (Agent::PlantsHook, "hook"),
    (Agent::Outside, "outside"),
];

const STOPS: &[(Stop, &str)] = &[
    (Stop::Release, "release"),
    (Stop::Term, "term"),
    (Stop::Kill, "kill"),
    (Stop::Abort, "abort-live"),
];

const FINISHES: &[(Finish, &str)] = &[
    (Finish::Keep, "finish-keep"),
    (Finish::Cleanup, "finish-cleanup"),
    (Finish::Push, "finish-push"),
];

const READS: &[(Read, &str)] = &[
    (Read::Status, "status"),
    (Read::StatusJson, "status-json"),
    (Read::Log, "log"),
    (Read::Show, "show"),
];

const PLAIN: &[(Step, &str)] = &[
    (Step::Add, "add"),
    (Step::StageAll, "stage-all"),
    (Step::StashPush, "stash-push"),
    (Step::StashPop, "stash-pop"),
    (Step::StashDrop, "stash-drop"),
    (Step::Branch, "branch"),
    (Step::DeleteBranch, "delete-branch"),
    (Step::Tag, "tag"),
    (Step::DeleteTag, "delete-tag"),
    (Step::Commit, "commit"),
    (Step::AddStory, "add-story"),
    (Step::DeleteStory, "delete-story"),
    (Step::Gc, "gc"),
    (Step::Abort, "abort"),
];

/// A step that takes a number, and its name.
type Numbered = (fn(u8) -> Step, &'static str);

const NUMBERED: &[Numbered] = &[
    (Step::Edit, "edit"),
    (Step::Delete, "delete"),
    (Step::Rename, "rename"),
    (Step::Chmod, "chmod"),
    (Step::StagePart, "stage-part"),
    (Step::Switch, "switch"),
    (Step::Tick, "tick"),
];

fn name_of<T: PartialEq + Copy>(table: &[(T, &'static str)], value: T) -> &'static str {
    table
        .iter()
        .find(|(v, _)| *v == value)
        .map(|(_, name)| *name)
        .expect("every value is named")
}

fn value_of<T: Copy>(table: &[(T, &str)], name: &str) -> Option<T> {
    table.iter().find(|(_, n)| *n == name).map(|(v, _)| *v)
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let numbered = |n: &u8| {
            NUMBERED
                .iter()
                .find(|(make, _)| make(*n) == *self)
                .map(|(_, name)| format!("{name}:{n}"))
        };
        match self {
            Step::Edit(n)
            | Step::Delete(n)
            | Step::Rename(n)
            | Step::Chmod(n)
            | Step::StagePart(n)
            | Step::Switch(n)
            | Step::Tick(n) => write!(f, "{}", numbered(n).expect("named")),
            Step::Start(start) => {
                write!(
                    f,
                    "start/{}/{}/{}",
                    name_of(MODES, start.mode),
                    name_of(AGENTS, start.agent),
                    if start.cleanup { "cleanup" } else { "keep" }
                )?;
                if start.once {
                    write!(f, "/once")?;
                }
                match start.live {
                    Live::No => Ok(()),
                    Live::Agent => write!(f, "/live"),
                    Live::Check => write!(f, "/check"),
                }
            }
            Step::Stop(stop) => write!(f, "{}", name_of(STOPS, *stop)),
            Step::Kill9(ms) => write!(f, "kill9:{ms}"),
            Step::Finish(finish) => write!(f, "{}", name_of(FINISHES, *finish)),
            Step::Read(read) => write!(f, "{}", name_of(READS, *read)),
            plain => write!(f, "{}", name_of(PLAIN, *plain)),
        }
    }
}

/// A step read back from its written form.
pub fn parse(word: &str) -> Result<Step, String> {
    if let Some(rest) = word.strip_prefix("start/") {
        return parse_start(rest).ok_or_else(|| format!("not a start: {word}"));
    }
    if let Some((name, n)) = word.split_once(':') {
        let n = n
            .parse::<u16>()
            .map_err(|_| format!("not a number: {word}"))?;
        if name == "kill9" {
            return Ok(Step::Kill9(n));
        }
        return NUMBERED
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(make, _)| make(n as u8))
            .ok_or_else(|| format!("no such step: {word}"));
    }
    value_of(PLAIN, word)
        .or_else(|| value_of(STOPS, word).map(Step::Stop))
        .or_else(|| value_of(FINISHES, word).map(Step::Finish))
        .or_else(|| value_of(READS, word).map(Step::Read))
        .ok_or_else(|| format!("no such step: {word}"))
}

fn parse_start(rest: &str) -> Option<Step> {
    let mut parts = rest.split('/');
    let mode = value_of(MODES, parts.next()?)?;
    let agent = value_of(AGENTS, parts.next()?)?;
    let cleanup = match parts.next()? {
        "cleanup" => true,
        "keep" => false,
        _ => return None,
    };
    let mut start = Start {
        mode,
        agent,
        cleanup,
        once: false,
        live: Live::No,
    };
    for part in parts {
        match part {
            "once" => start.once = true,
            "live" => start.live = Live::Agent,
            "check" => start.live = Live::Check,
            _ => return None,
        }
    }
    Some(Step::Start(start))
}

/// A sequence in its written form.
pub fn write(steps: &[Step]) -> String {
    steps
        .iter()
        .map(Step::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A sequence read back.
pub fn read(text: &str) -> Result<Vec<Step>, String> {
    text.split_whitespace().map(parse).collect()
}

/// A user's act between commands.
fn users_act(rng: &mut Rng) -> Step {
    let n = rng.below(8) as u8;
    match rng.below(20) {
        0..=3 => Step::Edit(n),
        4 => Step::Add,
        5 => Step::Delete(n),
        6 => Step::Rename(n),
        7 => Step::Chmod(n),
        8 => Step::StageAll,
        9 => Step::StagePart(n),
        10 => Step::StashPush,
        11 => Step::StashPop,
        12 => Step::StashDrop,
        13 => [Step::Branch, Step::DeleteBranch][rng.below(2)],
        14 => [Step::Tag, Step::DeleteTag][rng.below(2)],
        15 => Step::Commit,
        16 => Step::Switch(rng.below(3) as u8),
        17 => Step::Tick(1 + rng.below(3) as u8),
        18 => [Step::AddStory, Step::DeleteStory][rng.below(2)],
        _ => Step::Gc,
    }
}

/// What the user may do in their own worktree while an agent works in
/// another one: anything but a switch to the run's branch.
fn while_beside(rng: &mut Rng) -> Step {
    loop {
        let step = users_act(rng);
        match step {
            Step::Switch(1) | Step::Tick(_) | Step::AddStory | Step::DeleteStory => continue,
            Step::Gc if gated(Known::GcDuringAttempt) => continue,
            _ => return step,
        }
    }
}

fn start(rng: &mut Rng) -> Start {
    let mode = [
        RunMode::Here,
        RunMode::Here,
        RunMode::Worktree,
        RunMode::Worktree,
        RunMode::Parallel,
        RunMode::Roles,
        RunMode::Bare,
    ][rng.below(7)];
    let agent = AGENTS[rng.below(AGENTS.len())].0;
    let live = match rng.below(10) {
        0..=3 => Live::Agent,
        4 if !gated(Known::StopDuringCheck) => Live::Check,
        _ => Live::No,
    };
    Start {
        mode,
        agent,
        cleanup: rng.below(4) == 0,
        once: mode == RunMode::Here && rng.below(6) == 0,
        live,
    }
}

/// A command between the user's acts.
fn command(rng: &mut Rng, into: &mut Vec<Step>) {
    match rng.below(12) {
        0..=4 => {
            let start = start(rng);
            into.push(Step::Start(start));
            if start.live == Live::No {
                return;
            }
            let beside = matches!(start.mode, RunMode::Worktree | RunMode::Parallel);
            for _ in 0..rng.below(3) {
                into.push(if beside {
                    while_beside(rng)
                } else {
                    Step::Read(READS[rng.below(READS.len())].0)
                });
            }
            let stop = STOPS[rng.below(STOPS.len())].0;
            into.push(Step::Stop(stop));
        }
        5 => into.push(Step::Kill9(rng.below(1500) as u16)),
        6 | 7 => into.push(Step::Finish(FINISHES[rng.below(FINISHES.len())].0)),
        8 | 9 => into.push(Step::Abort),
        _ => into.push(Step::Read(READS[rng.below(READS.len())].0)),
    }
}

/// A sequence of `commands` commands, each after a few of the user's acts.
pub fn generate(rng: &mut Rng, commands: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for _ in 0..commands {
        for _ in 0..rng.below(3) {
            steps.push(users_act(rng));
        }
        command(rng, &mut steps);
    }
    steps
}
