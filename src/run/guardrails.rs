//! The limits every run ends within: retries per story, attempts that
//! change nothing, iterations, runtime, and money and tokens (run-wide and
//! per story). Pure functions of the run's state, so each rule is tested
//! on its own.

use crate::state::{
    AttemptOutcome, AttemptRecord, Guardrails, RunState, StopReason, StoryRecord, Totals,
};

/// The first limit that stops the run before another attempt at the story
/// of `record`: retries, no progress, iterations, runtime, then budgets
/// (run-wide, then the story's own from its contract).
pub(super) fn hit(
    limits: &Guardrails,
    state: &RunState,
    record: &StoryRecord,
    story_limits: (Option<f64>, Option<u64>),
    max_retries: u32,
    runtime_ms: u64,
) -> Option<(StopReason, String)> {
    retries(record, max_retries)
        .or_else(|| no_progress(limits, state))
        .or_else(|| iterations(limits, state))
        .or_else(|| runtime(limits, runtime_ms))
        .or_else(|| run_budget(limits, state.totals()))
        .or_else(|| story_budget(record, story_limits))
}

/// The story failed more often than `--max-retries` allows.
fn retries(record: &StoryRecord, max_retries: u32) -> Option<(StopReason, String)> {
    let failures = record
        .attempts
        .iter()
        .filter(|a| counts_as_failure(a.outcome))
        .count() as u32;
    if failures <= max_retries {
        return None;
    }
    let last = record
        .attempts
        .iter()
        .rev()
        .find_map(|a| a.reason.clone())
        .unwrap_or_default();
    Some((
        StopReason::MaxRetries,
        format!(
            "story {} failed {}, more than --max-retries {max_retries} allows; last reason: {last}",
            record.id,
            times(failures)
        ),
    ))
}

/// Too many attempts in a row changed nothing.
fn no_progress(limits: &Guardrails, state: &RunState) -> Option<(StopReason, String)> {
    let limit = limits.no_progress_limit;
    (limit > 0 && state.no_progress_streak() >= limit).then(|| {
        (
            StopReason::NoProgress,
            format!(
                "{} attempts in a row changed nothing (--no-progress-limit {limit})",
                state.no_progress_streak()
            ),
        )
    })
}

/// The run made `--max-iterations` attempts.
fn iterations(limits: &Guardrails, state: &RunState) -> Option<(StopReason, String)> {
    let max = limits.max_iterations?;
    (state.totals().attempts >= max).then(|| {
        (
            StopReason::MaxIters,
            format!(
                "{} attempts made, the --max-iterations limit",
                state.totals().attempts
            ),
        )
    })
}

/// The run used its `--max-runtime`.
fn runtime(limits: &Guardrails, runtime_ms: u64) -> Option<(StopReason, String)> {
    let max = limits.max_runtime_secs?;
    (runtime_ms / 1000 >= max).then(|| {
        (
            StopReason::Timeout,
            format!("the run has used its --max-runtime of {max}s"),
        )
    })
}

/// The run reached `--max-cost` or `--max-tokens`.
fn run_budget(limits: &Guardrails, totals: &Totals) -> Option<(StopReason, String)> {
    if let Some(max) = limits.max_cost
        && totals.cost_usd >= max
    {
        return Some((
            StopReason::Budget,
            format!(
                "${:.2} spent{}, the --max-cost limit is ${max:.2}",
                totals.cost_usd,
                if totals.cost_estimated {
                    " (estimated from the tokens by [prices])"
                } else {
                    ""
                }
            ),
        ));
    }
    let max = limits.max_tokens?;
    (totals.tokens() >= max).then(|| {
        (
            StopReason::Budget,
            format!(
                "{} tokens used, the --max-tokens limit is {max}",
                totals.tokens()
            ),
        )
    })
}

/// The story reached the cost or tokens its contract allows.
fn story_budget(
    record: &StoryRecord,
    (max_cost, max_tokens): (Option<f64>, Option<u64>),
) -> Option<(StopReason, String)> {
    let cost: f64 = record.attempts.iter().map(|a| a.cost_usd).sum();
    let tokens: u64 = record
        .attempts
        .iter()
        .map(AttemptRecord::tokens)
        .fold(0, u64::saturating_add);
    if let Some(max) = max_cost
        && cost >= max
    {
        return Some((
            StopReason::Budget,
            format!(
                "story {} has cost ${cost:.2}, its contract allows ${max:.2}",
                record.id
            ),
        ));
    }
    let max = max_tokens?;
    (tokens >= max).then(|| {
        (
            StopReason::Budget,
            format!(
                "story {} has used {tokens} tokens, its contract allows {max}",
                record.id
            ),
        )
    })
}

/// "once", "twice", "3 times".
fn times(n: u32) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// The no-progress streak after an attempt: an accepted attempt or one that
/// changed the worktree resets it; a user's stop leaves it as it was.
pub(super) fn next_streak(streak: u32, progress: bool, accepted: bool, interrupted: bool) -> u32 {
    if interrupted {
        streak
    } else if progress || accepted {
        0
    } else {
        streak + 1
    }
}

/// Attempts that spend the retry budget. A user's stop does not, nor a
/// question for a person.
pub(super) fn counts_as_failure(outcome: AttemptOutcome) -> bool {
    !matches!(
        outcome,
        AttemptOutcome::Complete
            | AttemptOutcome::Interrupted
            | AttemptOutcome::RateLimited
            | AttemptOutcome::Running
            | AttemptOutcome::Question
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::AttemptRecord;

    fn attempt(outcome: AttemptOutcome, cost: f64, tokens: u64) -> AttemptRecord {
        AttemptRecord {
            reason: Some("why".into()),
            input_tokens: tokens,
            cost_usd: cost,
            ..AttemptRecord::new(1, outcome, 0)
        }
    }

    fn state_with(totals: crate::state::Totals, streak: u32) -> RunState {
        let json = serde_json::json!({
            "version": 1, "change": "c", "branch": "ralph/c", "status": "running",
            "original": {"head": {"kind": "unborn", "name": "refs/heads/main"}, "index_tree": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"},
            "initial_commit": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "checkpoint": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "stories": [], "settings": {"agent": "claude", "max_retries": 3, "command_timeout_secs": 30,
            "agent_timeout_secs": 60, "on_finish": "keep", "source": "openspec"},
            "started_at": 0, "updated_at": 0,
            "totals": totals, "no_progress_streak": streak
        });
        serde_json::from_value(json).unwrap()
    }

    fn record(attempts: Vec<AttemptRecord>) -> StoryRecord {
        StoryRecord {
            id: "2".into(),
            title: "t".into(),
            done: false,
            tasks_done: 0,
            tasks_total: 1,
            attempts,
        }
    }

    #[test]
    fn retries_count_failures_but_not_stops_or_usage_limits() {
        let limits = Guardrails::default();
        let state = state_with(Default::default(), 0);
        let two_failures = record(vec![
            attempt(AttemptOutcome::Failed, 0.0, 0),
            attempt(AttemptOutcome::Interrupted, 0.0, 0),
            attempt(AttemptOutcome::RateLimited, 0.0, 0),
            attempt(AttemptOutcome::Rejected, 0.0, 0),
        ]);
        assert_eq!(
            super::hit(&limits, &state, &two_failures, (None, None), 2, 0),
            None
        );
        let hit = super::hit(&limits, &state, &two_failures, (None, None), 1, 0).unwrap();
        assert_eq!(hit.0, StopReason::MaxRetries);
    }

    fn spent(cost: f64, tokens: u64) -> Totals {
        Totals {
            cost_usd: cost,
            input_tokens: tokens,
            ..Default::default()
        }
    }

    #[test]
    fn budgets_are_reached_at_the_limit_globally() {
        let limits = Guardrails {
            max_cost: Some(1.0),
            max_tokens: Some(1000),
            ..Guardrails::default()
        };
        let empty = record(Vec::new());
        assert_eq!(
            super::hit(
                &limits,
                &state_with(spent(0.99, 999), 0),
                &empty,
                (None, None),
                3,
                0
            ),
            None
        );
        let cost = super::hit(
            &limits,
            &state_with(spent(1.0, 0), 0),
            &empty,
            (None, None),
            3,
            0,
        )
        .unwrap();
        assert_eq!(cost.0, StopReason::Budget);
        assert!(cost.1.contains("--max-cost"), "{}", cost.1);
        let tokens = super::hit(
            &limits,
            &state_with(spent(0.0, 1000), 0),
            &empty,
            (None, None),
            3,
            0,
        )
        .unwrap();
        assert!(tokens.1.contains("--max-tokens"), "{}", tokens.1);
    }

    #[test]
    fn budgets_are_reached_at_the_limit_per_story() {
        let story = record(vec![
            attempt(AttemptOutcome::Failed, 0.3, 40),
            attempt(AttemptOutcome::Failed, 0.3, 70),
        ]);
        let free = Guardrails::default();
        assert_eq!(
            super::hit(
                &free,
                &state_with(spent(0.6, 110), 0),
                &story,
                (Some(0.7), Some(111)),
                5,
                0
            ),
            None
        );
        let hit = super::hit(
            &free,
            &state_with(spent(0.6, 110), 0),
            &story,
            (Some(0.6), None),
            5,
            0,
        )
        .unwrap();
        assert!(hit.1.contains("story 2"), "{}", hit.1);
        let hit = super::hit(
            &free,
            &state_with(spent(0.6, 110), 0),
            &story,
            (None, Some(110)),
            5,
            0,
        )
        .unwrap();
        assert_eq!(hit.0, StopReason::Budget);
    }

    #[test]
    fn iterations_runtime_and_no_progress_limits() {
        let limits = Guardrails {
            max_iterations: Some(4),
            max_runtime_secs: Some(60),
            no_progress_limit: 3,
            ..Guardrails::default()
        };
        let empty = record(Vec::new());
        let attempts = |n| crate::state::Totals {
            attempts: n,
            ..Default::default()
        };
        assert_eq!(
            super::hit(
                &limits,
                &state_with(attempts(3), 2),
                &empty,
                (None, None),
                9,
                59_999
            ),
            None
        );
        assert_eq!(
            super::hit(
                &limits,
                &state_with(attempts(4), 0),
                &empty,
                (None, None),
                9,
                0
            )
            .unwrap()
            .0,
            StopReason::MaxIters
        );
        assert_eq!(
            super::hit(
                &limits,
                &state_with(attempts(0), 0),
                &empty,
                (None, None),
                9,
                60_000
            )
            .unwrap()
            .0,
            StopReason::Timeout
        );
        assert_eq!(
            super::hit(
                &limits,
                &state_with(attempts(0), 3),
                &empty,
                (None, None),
                9,
                0
            )
            .unwrap()
            .0,
            StopReason::NoProgress
        );
        let off = Guardrails::default();
        assert_eq!(
            super::hit(
                &off,
                &state_with(attempts(0), 50),
                &empty,
                (None, None),
                9,
                0
            ),
            None
        );
    }

    #[test]
    fn the_no_progress_streak_survives_a_stop_and_a_resume() {
        // Two empty attempts, a user stop (the state is saved and the run
        // resumed), then a third empty attempt reaches a limit of 3.
        let mut streak = next_streak(0, false, false, false);
        streak = next_streak(streak, false, false, false);
        streak = next_streak(streak, false, false, true);
        let resumed: RunState = serde_json::from_value(
            serde_json::to_value(state_with(Default::default(), streak)).unwrap(),
        )
        .unwrap();
        assert_eq!(resumed.no_progress_streak(), 2);
        assert_eq!(
            next_streak(resumed.no_progress_streak(), false, false, false),
            3
        );
        assert_eq!(next_streak(2, true, false, false), 0, "a change resets it");
        assert_eq!(
            next_streak(2, false, true, false),
            0,
            "an accepted attempt resets it"
        );
    }

    #[test]
    fn a_user_stop_does_not_spend_a_retry() {
        assert!(!counts_as_failure(AttemptOutcome::Interrupted));
        assert!(counts_as_failure(AttemptOutcome::NoSignal));
        assert!(counts_as_failure(AttemptOutcome::TimedOut));
    }
}
