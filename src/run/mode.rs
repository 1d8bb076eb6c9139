//! The run's mode, chosen once. `--once`, `--prompt`, `--revert-failed`,
//! a role pipeline and a story of a parallel run are flags and settings
//! when the run is asked for; here they become one [`Mode`], matched in
//! one place, [`Mode::policy`], into the policies the steps work by:
//! which story comes next, how many attempts a story may have, how the
//! judge weighs an attempt (and whether a failed one is kept), and where
//! a story's "done" is read. No step asks which mode the run is in.

use crate::contract::{Contract, Role};
use crate::settings::Settings;

/// What kind of run this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Story by story, each retried until it is done (the default).
    Stories,
    /// Story by story, each through its pipeline of roles.
    Roles,
    /// `--once`: one attempt per story, nothing intercepted, every
    /// attempt's work kept.
    SinglePass,
    /// `--prompt`: one prompt, iterated until its contract is met, each
    /// iteration built on unless `--revert-failed`.
    Prompt { revert_failed: bool },
    /// `--prompt` with `--once`: one iteration of the prompt, kept.
    PromptOnce,
}

impl Mode {
    /// The mode of a run with `settings`, whose pipeline is `roles`.
    pub fn of(settings: &Settings, roles: &[Role]) -> Mode {
        match (settings.prompt_file.is_some(), settings.once) {
            (true, true) => Mode::PromptOnce,
            (true, false) => Mode::Prompt {
                revert_failed: settings.revert_failed,
            },
            (false, true) => Mode::SinglePass,
            (false, false) if roles.is_empty() => Mode::Stories,
            (false, false) => Mode::Roles,
        }
    }

    /// The policies a loop of this mode works by; `only` is the one story
    /// of a parallel run the loop is given.
    pub(super) fn policy(self, settings: &Settings, only: Option<&str>) -> Policy {
        let retried = Attempts::Retried(settings.max_retries);
        let pick = |each: Pick| match only {
            Some(story) => Pick::Only(story.to_owned()),
            None => each,
        };
        let story = |failed| Standard::Story {
            questions: !settings.no_questions,
            failed,
        };
        let (pick, attempts, standard, marks) = match self {
            Mode::Stories | Mode::Roles => (
                pick(Pick::InOrder),
                retried,
                story(Failed::Reverted),
                Marks::File,
            ),
            Mode::SinglePass => (
                pick(Pick::EachOnce),
                Attempts::One,
                Standard::SinglePass,
                Marks::File,
            ),
            Mode::Prompt { revert_failed } => (
                Pick::InOrder,
                retried,
                Standard::Story {
                    questions: false,
                    failed: if revert_failed {
                        Failed::Reverted
                    } else {
                        Failed::BuiltOn
                    },
                },
                Marks::Contract,
            ),
            Mode::PromptOnce => (
                Pick::EachOnce,
                Attempts::One,
                Standard::SinglePass,
                Marks::Contract,
            ),
        };
        Policy {
            pick,
            attempts,
            standard,
            marks,
        }
    }

    /// A role pipeline needs stories taken one by one, until each is done.
    pub fn takes_roles(self) -> bool {
        matches!(self, Mode::Stories | Mode::Roles)
    }

    /// Stories run side by side only when each is worked until done, or
    /// why not.
    pub fn side_by_side(self) -> Result<(), &'static str> {
        match self {
            Mode::Stories | Mode::Roles => Ok(()),
            Mode::SinglePass => Err("--once makes a single pass, one story after another"),
            Mode::Prompt { .. } | Mode::PromptOnce => {
                Err("prompt mode has one prompt, not stories")
            }
        }
    }

    /// How the plan names the mode, if it is not the default.
    pub fn shown(self) -> Option<&'static str> {
        match self {
            Mode::SinglePass | Mode::PromptOnce => {
                Some("once: one attempt per story, no checks, no retries")
            }
            Mode::Stories | Mode::Roles | Mode::Prompt { .. } => None,
        }
    }
}

/// The role pipeline every story of a run goes through, in order: the
/// command line's or git config's, else the contract's; empty for one
/// agent per story.
pub fn roles_of(settings: &Settings, contract: &Contract) -> Vec<Role> {
    settings
        .roles
        .clone()
        .or_else(|| contract.pipeline())
        .unwrap_or_default()
}

/// The policies a run's steps work by, from its [`Mode`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Policy {
    /// Which story comes next.
    pub pick: Pick,
    /// How many attempts a story outside a pipeline may have.
    pub attempts: Attempts,
    /// How an attempt outside a pipeline is judged.
    pub standard: Standard,
    /// Where a story's "done" is read.
    pub marks: Marks,
}

impl Policy {
    /// The words a checkpoint's subject ends with when it keeps the work
    /// of attempt `attempt`, which failed with `outcome`.
    pub fn kept_suffix(&self, attempt: u32, outcome: &str) -> String {
        match self.standard {
            Standard::SinglePass => " (single pass)".to_owned(),
            Standard::Story { .. } | Standard::Role(_) => {
                format!(" (iteration {attempt}, kept: {outcome})")
            }
        }
    }
}

/// Which story a loop takes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pick {
    /// The source's next story not done, stories waiting for an answer
    /// stepped over.
    InOrder,
    /// Each story not done that has had no attempt yet: a single pass.
    EachOnce,
    /// This story alone, while it is not done (a story of a parallel run).
    Only(String),
}

/// How many attempts a story may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempts {
    /// One, whatever becomes of it.
    One,
    /// One plus this many retries (and the attempts that spend none).
    Retried(u32),
}

/// What the judge must know of the run to weigh an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standard {
    /// A single pass: the promise is needed, nothing is intercepted, and
    /// the work is kept whatever the verdict.
    SinglePass,
    /// A role of a pipeline: the role's own gates and promise.
    Role(Role),
    /// A story on its own.
    Story {
        /// A question for a person parks the story instead of failing
        /// the attempt.
        questions: bool,
        /// What becomes of the work of an attempt not accepted.
        failed: Failed,
    },
}

/// What becomes of a failed attempt's work outside a single pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failed {
    /// Preserved under its attempt ref, and the worktree reverted.
    Reverted,
    /// Kept as a checkpoint, for the next iteration to build on (a user's
    /// stop is set aside all the same).
    BuiltOn,
}

/// Where a story's "done" is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marks {
    /// Its mark in the tracking file (or the tracker).
    File,
    /// Nowhere but the contract: a prompt is done when its contract is
    /// met, and the run ends then.
    Contract,
}
