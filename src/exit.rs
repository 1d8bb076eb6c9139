//! The exit statuses git-ralph documents, and the command error that maps to
//! them. Library modules return their own errors; commands turn them into a
//! [`CommandError`] with a kind and hints, printed as `error: …`, `caused
//! by: …`, `hint: …`.

use std::process::ExitCode;

use crate::state::StopReason;

/// The documented exit statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The command did what was asked; a run completed every story.
    Success = 0,
    /// Something went wrong (bad input, a refused repository state, an
    /// internal failure).
    Error = 1,
    /// The command line could not be parsed.
    Usage = 2,
    /// The run stopped: a story used up `--max-retries`.
    MaxRetries = 3,
    /// The run stopped: `--max-iterations` attempts were used.
    MaxIters = 4,
    /// The run stopped: attempts kept changing nothing.
    NoProgress = 5,
    /// The run stopped: `--max-runtime` passed.
    Timeout = 6,
    /// The run stopped: `--max-cost` or `--max-tokens` was reached.
    Budget = 7,
    /// The user stopped the run (Ctrl-C, `q`, or `git ralph abort`).
    Interrupted = 130,
}

/// The exit-status table as documented in the man page and README.
pub const TABLE: &[(u8, &str)] = &[
    (
        0,
        "success: the command did what was asked; a run completed every story",
    ),
    (
        1,
        "error: bad input, a refused repository state, or an internal failure (run reason 'error')",
    ),
    (2, "usage: the command line could not be parsed"),
    (
        3,
        "max_retries: a story failed more often than --max-retries allows",
    ),
    (4, "max_iters: the run used up --max-iterations attempts"),
    (
        5,
        "no_progress: --no-progress-limit attempts in a row changed nothing",
    ),
    (6, "timeout: --max-runtime passed"),
    (7, "budget: --max-cost or --max-tokens was reached"),
    (
        130,
        "interrupted: the user stopped the run (Ctrl-C, q, or git ralph abort)",
    ),
];

impl Exit {
    pub fn code(self) -> ExitCode {
        ExitCode::from(self as u8)
    }

    pub fn for_reason(reason: StopReason) -> Exit {
        match reason {
            StopReason::Completed => Exit::Success,
            StopReason::MaxRetries => Exit::MaxRetries,
            StopReason::MaxIters => Exit::MaxIters,
            StopReason::NoProgress => Exit::NoProgress,
            StopReason::Timeout => Exit::Timeout,
            StopReason::Budget => Exit::Budget,
            StopReason::Stopped => Exit::Interrupted,
            StopReason::Error => Exit::Error,
        }
    }
}

/// What kind of failure a command hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The user's input or repository state: fixable by them.
    User,
    /// The command line itself.
    Usage,
    /// Stopped by the user.
    Interrupted,
    /// A bug or an environment failure.
    Internal,
}

/// The one error type commands return.
#[derive(Debug)]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
    pub causes: Vec<String>,
    pub hints: Vec<String>,
}

impl CommandError {
    pub fn user(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::User,
            message: message.into(),
            causes: Vec::new(),
            hints: Vec::new(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::Usage,
            ..CommandError::user(message)
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::Internal,
            ..CommandError::user(message)
        }
    }

    /// Build from any error: its message, then its source chain as causes.
    pub fn from_error(kind: ErrorKind, err: &(dyn std::error::Error + 'static)) -> Self {
        let mut causes = Vec::new();
        let mut source = err.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !causes.contains(&text) {
                causes.push(text);
            }
            source = cause.source();
        }
        CommandError {
            kind,
            message: err.to_string(),
            causes,
            hints: Vec::new(),
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    pub fn maybe_hint(self, hint: Option<String>) -> Self {
        match hint {
            Some(hint) => self.hint(hint),
            None => self,
        }
    }

    pub fn exit(&self) -> Exit {
        match self.kind {
            ErrorKind::User | ErrorKind::Internal => Exit::Error,
            ErrorKind::Usage => Exit::Usage,
            ErrorKind::Interrupted => Exit::Interrupted,
        }
    }
}

macro_rules! user_error_with_hint {
    ($($ty:ty),* $(,)?) => {$(
        impl From<$ty> for CommandError {
            fn from(err: $ty) -> Self {
                let hint = err.hint();
                CommandError::from_error(ErrorKind::User, &err).maybe_hint(hint.into())
            }
        }
    )*};
}

user_error_with_hint!(
    crate::git::OpenError,
    crate::git::OpError,
    crate::git::BeginError,
    crate::stories::StoriesError,
    crate::prompt::PromptError,
    crate::state::LockError,
    crate::contract::ContractError,
);

impl From<crate::git::NameError> for CommandError {
    fn from(err: crate::git::NameError) -> Self {
        let hint = err.hint();
        CommandError::from_error(ErrorKind::Usage, &err).hint(hint)
    }
}

impl From<crate::presets::PresetError> for CommandError {
    fn from(err: crate::presets::PresetError) -> Self {
        let hint = err.hint();
        CommandError::from_error(ErrorKind::User, &err).hint(hint)
    }
}

impl From<crate::git::GitFailure> for CommandError {
    fn from(err: crate::git::GitFailure) -> Self {
        CommandError::from_error(ErrorKind::Internal, &err)
    }
}

impl From<crate::state::StateError> for CommandError {
    fn from(err: crate::state::StateError) -> Self {
        CommandError::from_error(ErrorKind::Internal, &err)
    }
}

impl From<std::io::Error> for CommandError {
    fn from(err: std::io::Error) -> Self {
        CommandError::from_error(ErrorKind::Internal, &err)
    }
}

impl From<crate::audit::AuditError> for CommandError {
    fn from(err: crate::audit::AuditError) -> Self {
        use crate::audit::AuditError;
        let kind = match err {
            AuditError::Ambiguous(_) => ErrorKind::Usage,
            AuditError::State(_) | AuditError::Io { .. } => ErrorKind::Internal,
            _ => ErrorKind::User,
        };
        let hint = err.hint();
        CommandError::from_error(kind, &err).maybe_hint(hint)
    }
}
