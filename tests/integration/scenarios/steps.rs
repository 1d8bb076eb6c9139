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
    /// Asks a question at its first attempt (the story parks until
    /// answered), does its story at the next.
    Asks,
    /// Leaves a child in a session of its own that writes a file into
    /// the worktree later, then does its story.
    Escapes,
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
    /// `watch` on a terminal, left with q.
    Watch,
    /// `serve` on a free port, its pages read over HTTP.
    Web,
}

/// `git ralph plan` of the change `extra`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Plans it anew; its agent also rewrites and stages a file of the
    /// user's and leaves a stray file, which the plan undoes.
    New,
    /// The same plan, killed -9 while its agent is at work.
    Killed,
    /// `plan --refine`.
    Refine,
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
    /// `git repack -a -d -k`.
    Repack,
    /// Fills the disk the repository is on (the `full` shape), leaving a
    /// few kilobytes.
    FillDisk,
    FreeDisk,
    Start(Start),
    /// Two starts launched at the same moment: exactly one runs.
    StartTwice,
    Plan(Plan),
    /// Answers the question a story waits on.
    Answer,
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
                | Step::StartTwice
                | Step::Plan(_)
                | Step::Answer
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
    (Agent::Asks, "asks"),
    (Agent::Escapes, "escapes"),
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
    (Read::Watch, "watch"),
    (Read::Web, "web"),
];

const PLANS: &[(Plan, &str)] = &[
    (Plan::New, "plan"),
    (Plan::Killed, "plan-kill"),
    (Plan::Refine, "plan-refine"),
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
    (Step::Repack, "repack"),
    (Step::FillDisk, "fill-disk"),
    (Step::FreeDisk, "free-disk"),
    (Step::StartTwice, "start-twice"),
    (Step::Answer, "answer"),
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
            Step::Plan(plan) => write!(f, "{}", name_of(PLANS, *plan)),
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
        .or_else(|| value_of(PLANS, word).map(Step::Plan))
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

/// A user's act between commands; on a small disk (`disk`), one in four
/// fills or frees it.
fn users_act(rng: &mut Rng, disk: bool) -> Step {
    let n = rng.below(8) as u8;
    if disk && rng.below(4) == 0 {
        return [Step::FillDisk, Step::FreeDisk][rng.below(2)];
    }
    match rng.below(21) {
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
        19 => Step::Gc,
        _ => Step::Repack,
    }
}

/// What the user may do in their own worktree while an agent works in
/// another one: anything but a switch to the run's branch.
fn while_beside(rng: &mut Rng, disk: bool) -> Step {
    loop {
        let step = users_act(rng, disk);
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

/// A read: the quick ones mostly, `watch` and the web view (a terminal,
/// a server) seldom.
fn a_read(rng: &mut Rng) -> Read {
    match rng.below(20) {
        0..=17 => READS[rng.below(4)].0,
        18 => Read::Watch,
        _ => Read::Web,
    }
}

/// What may happen while an agent works in the user's own worktree: a
/// read, the user's `git gc` or `git repack`, the disk filling.
fn while_in_place(rng: &mut Rng, disk: bool) -> Step {
    match rng.below(if disk { 8 } else { 6 }) {
        0..=3 => Step::Read(a_read(rng)),
        4 => Step::Gc,
        5 => Step::Repack,
        _ => [Step::FillDisk, Step::FreeDisk][rng.below(2)],
    }
}

/// A command between the user's acts: one in ten a `plan`, an `answer`
/// or two starts at once, the others as before those were drawn.
fn command(rng: &mut Rng, disk: bool, into: &mut Vec<Step>) {
    let drawn = rng.below(40);
    let bucket = match drawn {
        0..=35 => drawn / 3,
        36 | 37 => 12,
        38 => 13,
        _ => 14,
    };
    match bucket {
        0..=4 => {
            let start = start(rng);
            into.push(Step::Start(start));
            if start.live == Live::No {
                if start.agent == Agent::Asks && rng.below(2) == 0 {
                    into.push(Step::Answer);
                }
                return;
            }
            let beside = matches!(start.mode, RunMode::Worktree | RunMode::Parallel);
            for _ in 0..rng.below(3) {
                into.push(if beside && rng.below(4) != 0 {
                    while_beside(rng, disk)
                } else {
                    while_in_place(rng, disk)
                });
            }
            let stop = STOPS[rng.below(STOPS.len())].0;
            into.push(Step::Stop(stop));
        }
        5 => into.push(Step::Kill9(rng.below(1500) as u16)),
        6 | 7 => into.push(Step::Finish(FINISHES[rng.below(FINISHES.len())].0)),
        8 | 9 => into.push(Step::Abort),
        10 | 11 => into.push(Step::Read(a_read(rng))),
        12 => into.push(Step::Plan(
            [Plan::New, Plan::New, Plan::Killed, Plan::Refine][rng.below(4)],
        )),
        13 => into.push(Step::Answer),
        _ => into.push(Step::StartTwice),
    }
}

/// A sequence of `commands` commands, each after a few of the user's
/// acts; `disk`: the repository is on a small disk the user may fill.
pub fn generate(rng: &mut Rng, commands: usize, disk: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    for _ in 0..commands {
        for _ in 0..rng.below(3) {
            steps.push(users_act(rng, disk));
        }
        command(rng, disk, &mut steps);
    }
    steps
}
