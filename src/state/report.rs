//! What `git ralph status` says about a run, as data: built from
//! `state.json` and the lock alone, so it is safe to read while a loop
//! runs. The ui module renders it for people or as JSON.

use serde::Serialize;

use super::{FinishChoice, RunState, RunStatus, StopReason, StoryRecord, Totals, now};

/// What `status --json` prints.
#[derive(Serialize)]
pub struct Report<'a> {
    pub change: &'a str,
    pub branch: &'a str,
    /// As a reader should see it ([`RunStatus::seen`]).
    pub state: RunStatus,
    pub reason: Option<StopReason>,
    pub alive: bool,
    pub pid: Option<u32>,
    pub source: &'a str,
    pub agent: &'a str,
    pub stories_done: usize,
    pub stories_total: usize,
    pub current_story: Option<&'a str>,
    pub current_attempt: u32,
    pub last_failure: Option<&'a str>,
    pub original: String,
    pub finished_with: Option<FinishChoice>,
    /// A usage-limit pause in force until then (unix seconds).
    pub paused_until: Option<u64>,
    pub pause_reason: Option<&'a str>,
    /// The run's totals, with the attempts a parallel run's stories have
    /// under way counted in.
    pub totals: Totals,
    /// The learnings file, when the run keeps one.
    pub learnings: Option<LearningsReport>,
    /// The run's own worktree, for a run beside the user's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// That worktree was removed when the run was finished or aborted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub worktree_removed: bool,
    /// How many stories a parallel run does at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<u32>,
    /// The stories of a parallel run at work now, each in its worktree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerReport>,
    /// The stories whose last attempt ended with a question, and whether
    /// an answer was given that the run has yet to take up.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<WaitingReport>,
    /// The stories, a parallel run's stories at work as their own loops
    /// have them.
    pub stories: Vec<StoryRecord>,
}

/// A story waiting for an answer, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WaitingReport {
    pub story: String,
    /// The attempt that asked.
    pub attempt: u32,
    pub question: String,
    /// An answer was given; the run takes it up at its next turn, or when
    /// it resumes.
    pub answered: bool,
}

/// The stories of `state` that wait for an answer, or got one the run
/// has not taken up yet (`given`).
fn waiting(state: &RunState, given: &[super::answers::Answer]) -> Vec<WaitingReport> {
    state
        .stories
        .iter()
        .filter(|story| !story.done)
        .filter_map(|story| {
            let last = story.attempts.last()?;
            (last.outcome == super::AttemptOutcome::Question && last.answer.is_none()).then(|| {
                WaitingReport {
                    story: story.id.clone(),
                    attempt: last.attempt,
                    question: last.asked.clone().unwrap_or_default(),
                    answered: super::answers::waiting(story, given).is_none(),
                }
            })
        })
        .collect()
}

/// One story at work in a parallel run, as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerReport {
    pub story: String,
    pub worktree: String,
    /// Its attempt under way, as its own state says.
    pub attempt: u32,
}

/// The stories at work in `state`, each with its own loop's state while
/// that loop runs (once it ended, the run's record holds its story).
fn workers(state: &RunState) -> Vec<(WorkerReport, Option<RunState>)> {
    state
        .parallel
        .iter()
        .flat_map(|parallel| &parallel.workers)
        .map(|worker| {
            let own = super::RunDir {
                dir: worker.run_dir.clone(),
            }
            .load()
            .ok();
            let report = WorkerReport {
                story: worker.story.clone(),
                worktree: worker.linked.path.display().to_string(),
                attempt: own.as_ref().map_or(0, |own| own.current_attempt),
            };
            (report, own.filter(|_| !worker.ended))
        })
        .collect()
}

/// The stories and totals of `state` with what the loops of its stories at
/// work have recorded so far: their attempts, running ones included.
fn with_workers(
    state: &RunState,
    workers: &[(WorkerReport, Option<RunState>)],
) -> (Vec<StoryRecord>, Totals) {
    let mut stories = state.stories.clone();
    let mut totals = state.totals.clone();
    for (worker, own) in workers {
        let Some(own) = own else { continue };
        let (Some(mine), Some(theirs)) = (
            stories.iter_mut().find(|s| s.id == worker.story),
            own.stories.iter().find(|s| s.id == worker.story),
        ) else {
            continue;
        };
        *mine = theirs.clone();
        totals.attempts = totals.attempts.saturating_add(own.totals.attempts);
        totals.add_tokens(
            own.totals.input_tokens,
            own.totals.output_tokens,
            own.totals.cache_read_tokens,
            own.totals.cache_creation_tokens,
        );
        totals.cost_usd += own.totals.cost_usd;
        totals.tokens_unknown |= own.totals.tokens_unknown;
    }
    (stories, totals)
}

/// The learnings file as `status` and `log` report it.
#[derive(Debug, Clone, Serialize)]
pub struct LearningsReport {
    pub path: String,
    pub bytes: u64,
}

impl<'a> Report<'a> {
    /// The report on `state`; `holder` is the pid of the loop holding the
    /// lock for this change, if one does.
    pub fn new(state: &'a RunState, holder: Option<u32>) -> Report<'a> {
        let alive = holder.is_some();
        let workers = workers(state);
        let (stories, totals) = with_workers(state, &workers);
        Report {
            change: &state.change,
            branch: &state.branch,
            state: state.status.seen(alive),
            reason: state.reason,
            alive,
            pid: holder,
            source: state.settings.source_name(),
            agent: state
                .settings
                .agent_command
                .as_deref()
                .unwrap_or(&state.settings.agent),
            stories_done: state.stories_done(),
            stories_total: state.stories.len(),
            current_story: state.current_story.as_deref(),
            current_attempt: state.current_attempt,
            last_failure: state.last_failure.as_deref(),
            original: state.original.head.describe(),
            finished_with: state.finished_with,
            paused_until: state.paused_until.filter(|until| *until > now()),
            pause_reason: state.pause_reason.as_deref(),
            totals,
            learnings: None,
            worktree: state
                .worktree
                .as_ref()
                .map(|record| record.linked.path.display().to_string()),
            worktree_removed: state.worktree.as_ref().is_some_and(|record| record.removed),
            parallel: state.settings.parallel,
            workers: workers.into_iter().map(|(report, _)| report).collect(),
            waiting: waiting(state, &[]),
            stories,
        }
    }

    /// Note the answers given in `path` that the run has yet to take up.
    pub fn with_answers(mut self, state: &RunState, path: &std::path::Path) -> Report<'a> {
        let given = super::answers::read(path).unwrap_or_default();
        self.waiting = waiting(state, &given);
        self
    }

    /// Add the learnings file at `path` (unless the run keeps none).
    pub fn with_learnings(mut self, state: &RunState, path: &std::path::Path) -> Report<'a> {
        if !state.settings.no_learnings {
            self.learnings = Some(LearningsReport {
                path: path.to_string_lossy().into_owned(),
                bytes: super::learnings::len(path),
            });
        }
        self
    }
}

/// Tokens and cost in a few words, saying `unknown` for what the agent did
/// not report (a count of zero): `1234 tokens · $0.05`, `1234 tokens ·
/// cost unknown`, `usage unknown`. Zero is never shown as free.
pub fn usage_words(tokens: u64, cost: f64) -> String {
    match (tokens, cost > 0.0) {
        (0, false) => "usage unknown".to_owned(),
        (0, true) => format!("tokens unknown · ${cost:.2}"),
        (tokens, false) => format!("{tokens} tokens · cost unknown"),
        (tokens, true) => format!("{tokens} tokens · ${cost:.2}"),
    }
}
