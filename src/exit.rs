//! The exit statuses git-ralph documents, and the command error that maps to
//! them. Library modules return their own errors; commands turn them into a
//! [`CommandError`] with a kind and hints, printed as `error: …`, `caused
//! by: …`, `hint: …`.

use std::process::ExitCode;

use crate::state::StopReason;

/// The documented exit statuses; [`Exit::ALL`] and [`Exit::meaning`] are
/// the table the man page and README print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The command did what was asked; a run completed every story.
    Success = 0,
    /// Bad input or a refused repository state: fixable by the user.
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
    /// The run stopped: the agent could not work at all; no retry was
    /// spent.
    Setup = 8,
    /// The run stopped: only stories waiting for an answer are left;
    /// `git ralph answer`, then `git ralph start` resumes.
    Questions = 9,
    /// A failure of git-ralph itself or of the machine (a bug, a full disk,
    /// an unreadable state file), as sysexits' EX_SOFTWARE.
    Internal = 70,
    /// The user stopped the run (Ctrl-C, `q`, `git ralph abort`, or one of
    /// their hooks with `on_error = "stop"`).
    Interrupted = 130,
}

impl Exit {
    /// Every status, in the documented order.
    pub const ALL: [Exit; 12] = [
        Exit::Success,
        Exit::Error,
        Exit::Usage,
        Exit::MaxRetries,
        Exit::MaxIters,
        Exit::NoProgress,
        Exit::Timeout,
        Exit::Budget,
        Exit::Setup,
        Exit::Questions,
        Exit::Internal,
        Exit::Interrupted,
    ];

    /// What the status means, as documented.
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Success => "success: the command did what was asked; a run completed every story",
            Exit::Error => "error: bad input or a refused repository state (run reason 'error')",
            Exit::Usage => "usage: the command line could not be parsed",
            Exit::MaxRetries => {
                "max_retries: a story failed, or a plan was sent back, more often than --max-retries allows"
            }
            Exit::MaxIters => "max_iters: the run used up --max-iterations attempts",
            Exit::NoProgress => {
                "no_progress: --no-progress-limit attempts in a row changed nothing"
            }
            Exit::Timeout => "timeout: --max-runtime passed",
            Exit::Budget => "budget: --max-cost or --max-tokens was reached",
            Exit::Setup => {
                "setup: the agent could not work at all (missing, not logged in, no API key, refusing to run); no retry was spent, and 'git ralph start' resumes once it is fixed"
            }
            Exit::Questions => {
                "questions: only stories waiting for an answer are left; answer them with 'git ralph answer', then 'git ralph start' resumes"
            }
            Exit::Internal => {
                "internal: a failure of git-ralph itself or of the machine (an I/O or git error, a damaged state file)"
            }
            Exit::Interrupted => {
                "interrupted: the user stopped the run (Ctrl-C, q, git ralph abort, or a hook with on_error = \"stop\"); it resumes"
            }
        }
    }

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
            StopReason::Setup => Exit::Setup,
            StopReason::Questions => Exit::Questions,
        }
    }
}

/// The exit-status table as documented in the man page and README.
pub fn table() -> impl Iterator<Item = (u8, &'static str)> {
    Exit::ALL
        .into_iter()
        .map(|exit| (exit as u8, exit.meaning()))
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
    /// The agent could not work at all; the run is stopped, resumable.
    Setup,
    /// A bug or an environment failure.
    Internal,
    /// Stdout was closed by its reader (`git ralph status | head -1`): not
    /// an error, and nothing is printed.
    BrokenPipe,
}

/// The one error type commands return: a kind, a message, the error it
/// came from (whose chain is printed as `caused by:` lines), and hints.
#[derive(Debug)]
pub struct CommandError {
    pub kind: ErrorKind,
    pub message: String,
    pub source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    pub hints: Vec<String>,
}

impl CommandError {
    pub fn user(message: impl Into<String>) -> Self {
        CommandError {
            kind: ErrorKind::User,
            message: message.into(),
            source: None,
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

    /// A bug in git-ralph (a panic caught at the top, or in a run), with
    /// where it happened, how to report it, and `then`: what became of
    /// the run and how to go on.
    pub fn bug(bug: &crate::bug::Bug, then: Option<String>) -> Self {
        let mut message = format!(
            "this is a bug in git-ralph, not a problem with your repository or your agent: {} (at {}).\n\
             git-ralph {}.\n\
             Please report it to git-ralph's issue tracker with this message and the command you ran.",
            bug.message,
            bug.location,
            crate::version::LONG
        );
        if let Some(backtrace) = &bug.backtrace {
            message.push_str(&format!("\nbacktrace:\n{backtrace}"));
        }
        CommandError::internal(message).maybe_hint(then)
    }

    /// Build from any error: its message, and its source chain kept for
    /// the `caused by:` lines.
    pub fn from_error(
        kind: ErrorKind,
        err: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        CommandError {
            kind,
            message: err.to_string(),
            source: err.source().is_some().then(|| Box::new(err) as _),
            hints: Vec::new(),
        }
    }

    /// The causes below the message, outermost first, each said once.
    /// A cause that is one bare word (`NotFound`: a library's
    /// classification of the error above it, not a sentence) says nothing
    /// to a person and is left out.
    pub fn causes(&self) -> Vec<String> {
        let mut causes: Vec<String> = Vec::new();
        let mut next = self.source.as_deref().and_then(|err| err.source());
        while let Some(cause) = next {
            let text = cause.to_string();
            let marker = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric());
            // A cause its error already quotes says nothing new.
            let said = self.message.contains(&text) || causes.iter().any(|c| c.contains(&text));
            if !said && !marker {
                causes.push(text);
            }
            next = cause.source();
        }
        causes
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
            ErrorKind::User => Exit::Error,
            ErrorKind::Internal => Exit::Internal,
            ErrorKind::Usage => Exit::Usage,
            ErrorKind::Interrupted => Exit::Interrupted,
            ErrorKind::Setup => Exit::Setup,
            ErrorKind::BrokenPipe => Exit::Success,
        }
    }
}

macro_rules! user_error_with_hint {
    ($($ty:ty),* $(,)?) => {$(
        impl From<$ty> for CommandError {
            fn from(err: $ty) -> Self {
                let hint = err.hint();
                CommandError::from_error(ErrorKind::User, err).maybe_hint(hint.into())
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
    crate::serve::ServeError,
);

impl From<crate::run::RunError> for CommandError {
    fn from(err: crate::run::RunError) -> Self {
        if let crate::run::RunError::Bug(bug) = &err {
            return CommandError::bug(bug, None);
        }
        let kind = if matches!(err, crate::run::RunError::AgentSetup { .. }) {
            ErrorKind::Setup
        } else if err.is_usage() {
            ErrorKind::Usage
        } else if err.is_user_error() {
            ErrorKind::User
        } else {
            ErrorKind::Internal
        };
        let hint = err.hint();
        CommandError::from_error(kind, err).maybe_hint(hint)
    }
}

impl From<crate::run::ending::EndingError> for CommandError {
    fn from(err: crate::run::ending::EndingError) -> Self {
        use crate::run::ending::EndingError;
        match err {
            EndingError::Lock(err) => err.into(),
            EndingError::State(err) => err.into(),
            EndingError::Op(err) => err.into(),
            EndingError::Git(err) => err.into(),
            EndingError::Config(err) => err.into(),
            EndingError::Handoff(err) => {
                let hints = err.hints();
                let mut error = CommandError::from_error(ErrorKind::User, *err);
                error.hints = hints;
                error
            }
            err => {
                let hint = err.hint();
                CommandError::from_error(ErrorKind::User, err).maybe_hint(hint)
            }
        }
    }
}

impl From<crate::settings::SettingsError> for CommandError {
    fn from(err: crate::settings::SettingsError) -> Self {
        crate::run::RunError::from(err).into()
    }
}

impl From<crate::config::ConfigError> for CommandError {
    fn from(err: crate::config::ConfigError) -> Self {
        let hint = err.hint();
        CommandError::from_error(ErrorKind::User, err).maybe_hint(hint)
    }
}

impl From<crate::remote::RemoteError> for CommandError {
    fn from(err: crate::remote::RemoteError) -> Self {
        use crate::remote::RemoteError;
        match err {
            RemoteError::State(err) => err.into(),
            RemoteError::Op(err) => err.into(),
            RemoteError::Failure(err) => err.into(),
            err => {
                let hints = err.hints();
                let mut error = CommandError::from_error(ErrorKind::User, err);
                error.hints = hints;
                error
            }
        }
    }
}

impl From<crate::git::NameError> for CommandError {
    fn from(err: crate::git::NameError) -> Self {
        let hint = err.hint();
        CommandError::from_error(ErrorKind::Usage, err).hint(hint)
    }
}

impl From<crate::agent::PresetError> for CommandError {
    fn from(err: crate::agent::PresetError) -> Self {
        let hint = err.hint();
        CommandError::from_error(ErrorKind::User, err).hint(hint)
    }
}

impl From<crate::git::GitFailure> for CommandError {
    fn from(err: crate::git::GitFailure) -> Self {
        CommandError::from_error(ErrorKind::Internal, err)
    }
}

impl From<crate::state::RunDirError> for CommandError {
    fn from(err: crate::state::RunDirError) -> Self {
        let hint = err.hint();
        let kind = match err {
            crate::state::RunDirError::Reserved { .. } => ErrorKind::User,
            crate::state::RunDirError::NotWritable { .. } => ErrorKind::Internal,
        };
        CommandError::from_error(kind, err).hint(hint)
    }
}

impl From<crate::state::StateError> for CommandError {
    fn from(err: crate::state::StateError) -> Self {
        let hint = err.hint();
        CommandError::from_error(ErrorKind::Internal, err).maybe_hint(hint)
    }
}

impl From<std::io::Error> for CommandError {
    fn from(err: std::io::Error) -> Self {
        let kind = if err.kind() == std::io::ErrorKind::BrokenPipe {
            ErrorKind::BrokenPipe
        } else {
            ErrorKind::Internal
        };
        CommandError::from_error(kind, err)
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
        CommandError::from_error(kind, err).maybe_hint(hint)
    }
}
