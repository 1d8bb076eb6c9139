//! The verdict on a finished attempt, decided from its evidence alone. No
//! I/O happens here: `evidence` gathers the facts, this module weighs them,
//! so every gate and the order of the gates are tested in-process.
//!
//! First one classification of how the agent ended (stopped, timed out,
//! failed, errored, silent, asking a question instead of working, or
//! claiming completion); then, for a claim, the gates in order: nothing in
//! the git directory that could run code was changed, no submodule was
//! changed, the task list kept
//! its shape, the story is marked done in its own file, no protected path
//! was touched, something besides the boxes changed (only when the
//! contract or `--require-change` asks; otherwise a tick-only claim is
//! flagged, not refused), the verification method agrees, and every
//! objective check passes. The first
//! gate that fails names the reason the next prompt will carry, and the
//! mode decides whether that failure is reverted or built on.
//!
//! Verification and checks are expensive, so they are gathered only when
//! every gate before them has passed: the judge says what it still needs
//! ([`Judgement::Needs`]) instead of a verdict. A new rule is one more gate
//! in [`GATES`], and one more field of [`Evidence`] if it weighs a fact not
//! gathered yet.

use std::time::Duration;

use super::mode::{Failed, Standard};
use crate::agent::{Conclusion, ExitStatusKind};
use crate::contract::{CheckOutcome, Role, StoryRules, Verdict as Verification};
use crate::git::{GitDirChange, Risk};
use crate::state::{AttemptOutcome, Flag};
use crate::stories::changes::ListChanges;

/// Why an attempt did not complete.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Failure {
    pub outcome: AttemptOutcome,
    pub reason: String,
    /// Failed checks as (name, output tail), for the next prompt.
    pub checks: Vec<(String, String)>,
}

impl Failure {
    fn new(outcome: AttemptOutcome, reason: impl Into<String>) -> Failure {
        Failure {
            outcome,
            reason: reason.into(),
            checks: Vec::new(),
        }
    }

    fn rejected(reason: impl Into<String>) -> Failure {
        Failure::new(AttemptOutcome::Rejected, reason)
    }
}

/// Everything known about a finished attempt that the verdict weighs.
pub(super) struct Evidence {
    pub story_id: String,
    pub agent: AgentEnding,
    /// The file that marks stories done, as the user names it.
    pub tracking_file: String,
    pub marked: Marked,
    pub changes: Changes,
    /// The verification method's verdict; gathered once every gate before
    /// it has passed.
    pub verification: Option<Verification>,
    /// Every check's outcome; gathered once every gate before them has
    /// passed.
    pub checks: Option<Vec<CheckOutcome>>,
}

/// How the agent's process ended and what it concluded.
pub(super) struct AgentEnding {
    pub exit: ExitStatusKind,
    pub conclusion: Conclusion,
    /// The question it ended with instead of a promise, if any.
    pub question: Option<String>,
    /// The promise it ended with in words the attempt does not take, if
    /// any (`COMPLETE` from a coder).
    pub other_promise: Option<String>,
    /// The time limit it ran under.
    pub timeout: Duration,
    /// How long it could stay silent.
    pub idle: Option<Duration>,
}

/// The story as its own file reads after the attempt.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Marked {
    Done,
    NotDone,
    /// The file could not be read or parsed, for this reason.
    Unreadable(String),
    /// Prompt mode: no file marks a story done.
    Untracked,
}

/// What the attempt changed, as far as the gates care.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Changes {
    /// What an acceptance would be flagged for: nothing changed at all, or
    /// nothing but the boxes of the tracking file.
    pub flag: Option<Flag>,
    /// The first changed path the contract protects, with why.
    pub violation: Option<String>,
    /// What the attempt did to the task list beyond its own boxes.
    pub list: ListChanges,
    /// What it changed in the git directory (already undone).
    pub git_dir: Vec<GitDirChange>,
    /// The submodules it changed, in words that say where that work is
    /// kept (already set aside).
    pub submodules: Vec<String>,
}

/// What the verdict is weighed against: the story's contract and what the
/// run's mode asks of the judge.
pub(super) struct Rules {
    pub story: StoryRules,
    /// `--require-change` (or `ralph.requireChange`), for a story whose
    /// contract does not say.
    pub require_change: bool,
    /// A single pass, a role of a pipeline, or a story on its own (with
    /// what becomes of its failed work, and whether it may ask).
    pub standard: Standard,
}

/// What becomes of the attempt.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Verdict {
    /// Accepted as it stands: a checkpoint, flagged when worth a second
    /// look.
    Accepted { flag: Option<Flag> },
    /// Not accepted: preserved under its attempt ref and reverted.
    Failed(Failure),
    /// Not accepted, yet its work is kept as a checkpoint under its own
    /// outcome (a single pass, a prompt-mode iteration).
    KeptDespite(Failure),
}

impl Verdict {
    pub(super) fn failure(&self) -> Option<&Failure> {
        match self {
            Verdict::Accepted { .. } => None,
            Verdict::Failed(failure) | Verdict::KeptDespite(failure) => Some(failure),
        }
    }
}

/// Evidence the judge needs before it can decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    Verification,
    Checks,
}

/// The judge's answer: a verdict, or the evidence to gather first.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Judgement {
    Verdict(Verdict),
    Needs(Need),
}

/// What one gate makes of the evidence.
enum Gate {
    Pass,
    Fail(Failure),
    Needs(Need),
}

type GateFn = fn(&Evidence, &Rules) -> Gate;

/// The gates of the loop, in order: the first that does not pass decides.
const GATES: &[GateFn] = &[
    ending,
    git_dir,
    submodules,
    list_shape,
    marked_done,
    protected_paths,
    real_change,
    verification,
    checks,
];

/// `--once`: the plain flow, which only names what happened.
const SINGLE_PASS_GATES: &[GateFn] = &[ending, submodules, marked_done];

/// A reviewer or qa: it only looks (its edits are already undone), so its
/// verdict, its verification and, as its fallback, the story's checks.
const LOOKING_GATES: &[GateFn] = &[ending, git_dir, submodules, verification, checks];

/// A tester: its tests are files the story keeps, within the contract;
/// the story's mark is the coder's.
const TESTING_GATES: &[GateFn] = &[
    ending,
    git_dir,
    submodules,
    list_shape,
    protected_paths,
    verification,
    checks,
];

/// The verdict on an attempt, or the evidence still needed to reach one.
pub(super) fn judge(evidence: &Evidence, rules: &Rules) -> Judgement {
    let gates = match rules.standard {
        Standard::SinglePass => SINGLE_PASS_GATES,
        Standard::Role(Role::Reviewer | Role::Qa) => LOOKING_GATES,
        Standard::Role(Role::Tester) => TESTING_GATES,
        Standard::Role(Role::Coder) | Standard::Story { .. } => GATES,
    };
    for gate in gates {
        match gate(evidence, rules) {
            Gate::Pass => {}
            Gate::Needs(need) => return Judgement::Needs(need),
            Gate::Fail(failure) => return Judgement::Verdict(failed(failure, rules)),
        }
    }
    Judgement::Verdict(Verdict::Accepted {
        flag: evidence.changes.flag,
    })
}

/// A failed attempt is reverted, unless the mode builds on it: a single
/// pass intercepts nothing, and the classic loop builds on each
/// iteration's work unless asked to revert it. A user's stop in the loop is
/// always set aside.
fn failed(failure: Failure, rules: &Rules) -> Verdict {
    match (rules.standard, failure.outcome) {
        (Standard::SinglePass, _) => Verdict::KeptDespite(failure),
        (_, AttemptOutcome::Interrupted) => Verdict::Failed(failure),
        (
            Standard::Story {
                failed: Failed::BuiltOn,
                ..
            },
            _,
        ) => Verdict::KeptDespite(failure),
        _ => Verdict::Failed(failure),
    }
}

/// How the agent ended, before any gate is looked at.
enum Ending {
    /// It ended without the promise; whether that fails depends on the
    /// contract.
    Silent,
    /// It ended without the promise, asking a question: a silence with a
    /// name, or, when questions reach a person, a question to park.
    Asked(String),
    /// It claimed completion (or the contract does not rely on a promise).
    Claimed,
    /// It ended in a way that is never a completion.
    Failed(Failure),
}

/// One classification of the agent's ending, for every mode.
fn classify(agent: &AgentEnding) -> Ending {
    let failed = |outcome, reason: String| Ending::Failed(Failure::new(outcome, reason));
    match (&agent.exit, &agent.conclusion) {
        (ExitStatusKind::Stopped, _) => {
            failed(AttemptOutcome::Interrupted, "stopped by the user".into())
        }
        (ExitStatusKind::Idle, _) => failed(
            AttemptOutcome::TimedOut,
            format!(
                "idle for {}: the agent printed nothing for that long and was stopped",
                crate::config::format_duration(agent.idle.unwrap_or_default().as_secs())
            ),
        ),
        (ExitStatusKind::TimedOut, _) => failed(
            AttemptOutcome::TimedOut,
            format!(
                "the agent ran past its time limit ({}s) and was stopped",
                agent.timeout.as_secs()
            ),
        ),
        (_, Conclusion::Failed { reason }) => failed(AttemptOutcome::Failed, reason.clone()),
        (_, Conclusion::AgentError { message }) => failed(
            AttemptOutcome::AgentError,
            format!("the agent failed: {message}"),
        ),
        (_, Conclusion::NoSignal) => match &agent.question {
            Some(question) => Ending::Asked(question.clone()),
            None => Ending::Silent,
        },
        (_, Conclusion::Complete) => Ending::Claimed,
    }
}

/// Gate 0: the agent's ending. Silence fails when the contract relies on
/// the promise alone, and always in a single pass.
fn ending(evidence: &Evidence, rules: &Rules) -> Gate {
    // A role passes only by its own promise, whatever else verifies it.
    let promise_needed = matches!(rules.standard, Standard::SinglePass | Standard::Role(_))
        || (rules.story.promise.is_some() && rules.story.verify.is_none());
    let asks = matches!(
        rules.standard,
        Standard::Story {
            questions: true,
            ..
        }
    );
    let silence = |reason: String| Gate::Fail(Failure::new(AttemptOutcome::NoSignal, reason));
    match classify(&evidence.agent) {
        Ending::Failed(failure) => Gate::Fail(failure),
        Ending::Silent if promise_needed => silence(match &evidence.agent.other_promise {
            Some(said) => {
                let whose = match rules.standard {
                    Standard::Role(role) => format!("the {role}'s"),
                    Standard::SinglePass | Standard::Story { .. } => "this story's".to_owned(),
                };
                let token = rules
                    .story
                    .promise
                    .as_deref()
                    .unwrap_or(crate::agent::DEFAULT_TOKEN);
                format!(
                    "{whose} promise is <promise>{token}</promise>, but the agent ended with <promise>{said}</promise>"
                )
            }
            None => "the agent ended without a promise".into(),
        }),
        Ending::Asked(question) if promise_needed && asks => Gate::Fail(Failure::new(
            AttemptOutcome::Question,
            format!("the agent asked a question: {question}"),
        )),
        Ending::Asked(question) if promise_needed => {
            silence(format!("the agent asked instead of working: {question}"))
        }
        Ending::Silent | Ending::Asked(_) | Ending::Claimed => Gate::Pass,
    }
}

/// Gate 1: nothing in the git directory that could run code as the user,
/// or rewrite the run's own rules, was changed (the change itself is
/// already undone; this fails the attempt that made it).
fn git_dir(evidence: &Evidence, _: &Rules) -> Gate {
    let named = |risk: Risk| {
        evidence
            .changes
            .git_dir
            .iter()
            .filter(|change| change.risk == risk)
            .map(GitDirChange::what)
            .collect::<Vec<_>>()
    };
    let (code, rules) = (named(Risk::RunsCode), named(Risk::RunRules));
    let reason = match (code.is_empty(), rules.is_empty()) {
        (true, true) => return Gate::Pass,
        (false, _) => format!(
            "the agent changed {}, which could run code as you; it is undone",
            code.join(", ")
        ),
        (true, false) => format!(
            "the agent changed the run's own rules ({}); they are put back",
            rules.join(", ")
        ),
    };
    Gate::Fail(Failure::rejected(reason))
}

/// Gate 1b: no submodule was changed (its work is already set aside in
/// the submodule's own repository; this fails the attempt that made it).
fn submodules(evidence: &Evidence, _: &Rules) -> Gate {
    let changed = &evidence.changes.submodules;
    if changed.is_empty() {
        return Gate::Pass;
    }
    Gate::Fail(Failure::rejected(format!(
        "the agent changed {}; a run changes no submodule",
        changed.join(", ")
    )))
}

/// Gate 2: the task list keeps its shape: no story or task removed or
/// rewritten, no done task of another story opened again.
fn list_shape(evidence: &Evidence, _: &Rules) -> Gate {
    let broken = &evidence.changes.list.broken;
    if broken.is_empty() {
        return Gate::Pass;
    }
    let said: Vec<String> = broken.iter().map(ToString::to_string).collect();
    Gate::Fail(Failure::rejected(format!(
        "the attempt {} in {}; only ticking the story's own boxes and adding tasks are allowed",
        said.join(", "),
        evidence.tracking_file
    )))
}

/// Gate 3: the story must be marked done in its own file. A single pass
/// refuses nothing: an unmarked story there merely failed.
fn marked_done(evidence: &Evidence, rules: &Rules) -> Gate {
    let reason = match &evidence.marked {
        Marked::Done | Marked::Untracked => return Gate::Pass,
        Marked::Unreadable(err) => format!(
            "{} could not be read after the attempt: {err}",
            evidence.tracking_file
        ),
        Marked::NotDone => format!(
            "story {} is not marked done in {}",
            evidence.story_id, evidence.tracking_file
        ),
    };
    let outcome = match rules.standard {
        Standard::SinglePass => AttemptOutcome::Failed,
        Standard::Role(_) | Standard::Story { .. } => AttemptOutcome::Rejected,
    };
    Gate::Fail(Failure::new(outcome, reason))
}

/// Gate 4: the contract itself, and the paths it protects, are off limits.
fn protected_paths(evidence: &Evidence, _: &Rules) -> Gate {
    match &evidence.changes.violation {
        Some(violation) => Gate::Fail(Failure::rejected(violation.clone())),
        None => Gate::Pass,
    }
}

/// Gate 5: a claim that only ticks boxes is refused when the story's
/// contract, or else the run, requires a change.
fn real_change(evidence: &Evidence, rules: &Rules) -> Gate {
    let required = rules.story.require_change.unwrap_or(rules.require_change);
    if required && evidence.changes.flag == Some(Flag::TickOnly) {
        return Gate::Fail(Failure::rejected(format!(
            "{} in {}",
            Flag::TickOnly,
            evidence.tracking_file
        )));
    }
    Gate::Pass
}

/// Gate 6: the verification method (a promise, a verifier agent, a
/// multi-stage pipeline) agrees.
fn verification(evidence: &Evidence, _: &Rules) -> Gate {
    match &evidence.verification {
        None => Gate::Needs(Need::Verification),
        Some(Verification::Pass { .. }) => Gate::Pass,
        Some(Verification::Fail {
            stage,
            reason,
            output_tail,
            ..
        }) => Gate::Fail(Failure {
            outcome: AttemptOutcome::Rejected,
            reason: format!("verification failed at {stage}: {reason}"),
            checks: output_tail
                .iter()
                .map(|tail| (stage.clone(), tail.clone()))
                .collect(),
        }),
    }
}

/// Gate 7: every objective check passes.
fn checks(evidence: &Evidence, _: &Rules) -> Gate {
    match &evidence.checks {
        None => Gate::Needs(Need::Checks),
        Some(outcomes) => failed_checks(outcomes).map_or(Gate::Pass, Gate::Fail),
    }
}

/// The failure that checks' outcomes amount to, naming every failed check
/// at once; `None` when all passed.
pub(super) fn failed_checks(outcomes: &[CheckOutcome]) -> Option<Failure> {
    // A check the user's stop ended decided nothing: the attempt was
    // interrupted, as if its agent had been.
    if let Some(stopped) = outcomes.iter().find(|o| o.stopped) {
        return Some(Failure::new(
            AttemptOutcome::Interrupted,
            format!("stopped by the user while check {} ran", stopped.name),
        ));
    }
    let failed: Vec<&CheckOutcome> = outcomes.iter().filter(|o| !o.passed).collect();
    if failed.is_empty() {
        return None;
    }
    let names: Vec<String> = failed
        .iter()
        .map(|o| format!("{} ({})", o.name, o.why.clone().unwrap_or_default()))
        .collect();
    Some(Failure {
        outcome: AttemptOutcome::Rejected,
        reason: format!("checks failed: {}", names.join(", ")),
        checks: failed
            .into_iter()
            .map(|o| (o.name.clone(), o.output_tail.clone()))
            .collect(),
    })
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
