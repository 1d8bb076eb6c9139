//! One attempt at a story, as a value: which story, which attempt, which
//! role and agent, where its prompt, output and verifier log are kept, and
//! the refs its work goes to. It is made once, before its agent starts;
//! every later step (evidence, judgement, settling, the role pipeline)
//! takes it by reference instead of a story, a number and a key apart.

use std::path::PathBuf;

use crate::agent::AgentSpec;
use crate::contract::{Role, RoleRules};
use crate::git::{RunRefs, ref_key};
use crate::state::{Findings, RunDir};
use crate::stories::Story;

/// What became of an attempt, for the loop to go on from: returned by
/// the attempt, never read back from the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tried {
    /// A hook stopped the run before the agent started: the attempt was
    /// taken back, as if it had never begun.
    NotStarted,
    /// The attempt ran and ended so.
    Ended(crate::state::AttemptOutcome),
}

/// One attempt at a story.
#[derive(Debug, Clone)]
pub(super) struct Attempt {
    /// The story as it stood when the attempt began.
    pub story: Story,
    /// 1-based, across every role of the story.
    pub number: u32,
    /// The story's id, safe as a ref and path component.
    pub key: String,
    /// The role it plays, in a role pipeline.
    pub turn: Option<Turn>,
    /// The agent that runs it.
    pub agent: AttemptAgent,
    /// The promise its agent is asked for, when the contract names one.
    pub token: Option<String>,
    /// The prompt, and where it is kept.
    pub prompt: String,
    pub prompt_path: PathBuf,
    /// Where the agent's raw output goes.
    pub log_path: PathBuf,
    /// Where a verifier agent's output goes.
    pub verifier_log: PathBuf,
    /// The run's (or the story's) refs.
    pub refs: RunRefs,
}

/// What an attempt is made of before its prompt is rendered.
pub(super) struct Parts {
    pub story: Story,
    pub number: u32,
    pub turn: Option<Turn>,
    pub agent: AttemptAgent,
    pub token: Option<String>,
    pub refs: RunRefs,
}

impl Attempt {
    /// The attempt of `parts` with `prompt`, its files in `run_dir`.
    pub fn new(parts: Parts, prompt: String, run_dir: &RunDir) -> Attempt {
        let key = ref_key(&parts.story.id);
        Attempt {
            prompt_path: run_dir.attempt_prompt(&key, parts.number),
            log_path: run_dir.attempt_log(&key, parts.number),
            verifier_log: run_dir.attempt_verifier_log(&key, parts.number),
            key,
            story: parts.story,
            number: parts.number,
            turn: parts.turn,
            agent: parts.agent,
            token: parts.token,
            prompt,
            refs: parts.refs,
        }
    }

    /// The story's id.
    pub fn id(&self) -> &str {
        &self.story.id
    }

    /// The role it plays, in a role pipeline.
    pub fn role(&self) -> Option<Role> {
        self.turn.as_ref().map(Turn::role)
    }

    /// Where its work is kept when it is not a checkpoint.
    pub fn work_ref(&self) -> String {
        self.refs.attempt(&self.key, self.number)
    }

    /// Where what its agent left on the user's refs is kept.
    pub fn refs_kept_at(&self) -> String {
        self.refs.attempt_refs(&self.key, self.number)
    }
}

/// One iteration of one role at a story.
#[derive(Debug, Clone)]
pub(super) struct Turn {
    pub rules: RoleRules,
    /// Every role of the story's pipeline, in order.
    pub pipeline: Vec<RoleRules>,
    /// This role's iteration (1-based).
    pub iteration: u32,
    /// What the role that sent the story back found, for the coder.
    pub findings: Option<Findings>,
}

impl Turn {
    pub fn role(&self) -> Role {
        self.rules.role
    }
}

/// The agent an attempt runs.
#[derive(Debug, Clone)]
pub(super) struct AttemptAgent {
    pub spec: AgentSpec,
    /// The run's own agent or one of its fallbacks, which hands the story
    /// on at a usage limit; not a role's agent of its own.
    pub falls_back: bool,
}

impl AttemptAgent {
    /// The agent as status, log and the trailers name it.
    pub fn label(&self) -> String {
        label(&self.spec)
    }
}

/// What the agent's run left for the rest of the attempt to weigh.
pub(super) struct Ran {
    pub run: crate::agent::AgentRun,
    pub activity: Activity,
    /// What it changed in the git directory, already undone.
    pub git_dir: Vec<crate::git::GitDirChange>,
    /// The submodules it changed, each in words that say where that work
    /// is kept (already set aside).
    pub submodules: Vec<String>,
    /// The time it was given.
    pub timeout: std::time::Duration,
}

/// What the agent said while it ran, as far as telling a set-up error
/// from work goes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Activity {
    /// Events its output held.
    pub events: usize,
    /// It said something as the model (an assistant message).
    pub model_turned: bool,
}

/// How an agent is named in records: its preset, or its command.
pub(super) fn label(spec: &AgentSpec) -> String {
    match (spec.name.as_str(), spec.args.last()) {
        ("command", Some(command)) => command.clone(),
        (name, _) => name.to_owned(),
    }
}
