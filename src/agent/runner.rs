//! Running one agent attempt to its end, whatever the agent does.
//!
//! Agents are long-running, chatty and occasionally stuck, so they run under
//! the one supervisor ([`crate::process`]): their own process group, a
//! timeout and a stop request, SIGTERM then SIGKILL. This module adds what
//! is particular to agents: stdout streams straight to a log file and
//! through the format's parser line by line, in bounded pieces, so a runaway
//! agent printing gigabytes costs disk, not memory; and the run is reduced
//! to a [`Conclusion`] through the promise protocol.
//!
//! Stdout goes to the log file given to [`run`], byte for byte, so a
//! stream-json log stays valid JSONL. Stderr goes to a sibling file named
//! after it with `.stderr` appended (created only if the agent writes to
//! stderr), and its tail is kept for error messages.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::events::{AgentEvent, Done, ExitStatusKind};
use super::promise::{Conclusion, conclude};
use super::{StreamFormat, parser_for};
use crate::process::{self, Limits, ProcessError, Spec, Stream, Tail};

/// The longest line a parser is shown; the rest of a longer line only goes to the log.
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// How much of stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// Where the agent's stdin comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinSource {
    /// Written to the agent's stdin, which is then closed.
    Prompt(String),
    /// The agent reads end-of-file at once.
    Null,
}

/// Everything needed to start one agent attempt.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub stdin: StdinSource,
    pub format: StreamFormat,
    /// The word that means completion in `<promise>…</promise>`.
    pub promise_token: String,
    /// Where to record the agent's process group while it runs, so that a
    /// later git-ralph can end an agent whose loop was killed.
    pub pid_file: Option<PathBuf>,
    /// An agent that prints nothing for this long is stopped, as
    /// [`ExitStatusKind::Idle`]; `None` lets it be silent.
    pub idle: Option<Duration>,
}

/// How an attempt ended and what it amounted to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    pub exit: ExitStatusKind,
    /// The agent's closing report, if its output had one or yielded one.
    pub done: Option<Done>,
    pub conclusion: Conclusion,
    /// Bytes of stdout written to the log.
    pub log_bytes: u64,
    /// The last few KiB of stderr, lossily decoded.
    pub stderr_tail: String,
}

impl AgentRun {
    /// Whether the agent exited on its own and failed: an error status, or
    /// an error it reported. A run stopped, timed out or killed by a signal
    /// did not end on its own, so it is never taken for a set-up error.
    pub fn failed_on_its_own(&self) -> bool {
        let ExitStatusKind::Exited(code) = self.exit else {
            return false;
        };
        code != 0
            || matches!(self.conclusion, Conclusion::AgentError { .. })
            || self.done.as_ref().is_some_and(|done| done.is_error)
    }
}

/// Why an agent could not be run or supervised.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("could not run the agent: {0}")]
    Process(#[from] ProcessError),
    #[error("could not write the agent log {}: {source}", path.display())]
    Log { path: PathBuf, source: io::Error },
}

impl RunnerError {
    /// A set-up error (the agent is missing or cannot be started), which no
    /// retry can fix.
    pub fn is_setup(&self) -> bool {
        matches!(self, RunnerError::Process(err) if err.is_setup())
    }

    /// What the user can do about the error, when there is something to do.
    pub fn hint(&self) -> Option<String> {
        match self {
            RunnerError::Process(err) => err.hint(),
            RunnerError::Log { path, .. } => Some(format!(
                "check that {} is writable and the disk is not full",
                path.display()
            )),
        }
    }
}

/// Runs the agent described by `inv` until it exits, `timeout` passes, it
/// is silent for its idle limit, or `stop` turns true, reporting each event
/// to `on_event` as it is parsed.
///
/// Stdout is appended to `log_path` (parent directories are created) and
/// stderr to the same path with `.stderr` appended. The final
/// [`AgentEvent::Done`], if any, is reported last.
pub async fn run(
    inv: &Invocation,
    log_path: &Path,
    timeout: Duration,
    stop: watch::Receiver<bool>,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<AgentRun, RunnerError> {
    let _timed = crate::timings::top_phase("agent");
    // Nothing is logged for an agent that cannot be started in its directory.
    process::check_workdir(&inv.cwd)?;
    let mut log = LogFile::open(log_path)?;
    let mut stderr_sink = StderrSink::new(stderr_path(log_path));
    let spec = spec_of(inv);
    let mut parser = parser_for(inv.format);
    let mut lines = LineSplitter::new(MAX_LINE_BYTES);
    let mut sink_error: Option<RunnerError> = None;
    let limits = Limits {
        timeout,
        idle: inv.idle,
        stop: Some(stop),
        // An agent stopped mid-attempt is interrupted, whatever it exits
        // with: its attempt is set aside, never judged.
        stop_keeps_exit: false,
    };
    let exit = {
        let mut on_output = |stream: Stream, chunk: &[u8]| -> io::Result<()> {
            let written = match stream {
                Stream::Stdout => {
                    let written = log.write(chunk);
                    lines.push(chunk, &mut |line| {
                        feed(parser.as_mut(), &mut *on_event, line)
                    });
                    for event in parser.flush() {
                        on_event(event);
                    }
                    written
                }
                Stream::Stderr => stderr_sink.write(chunk),
            };
            written.map_err(|err| {
                let message = err.to_string();
                sink_error = Some(err);
                io::Error::other(message)
            })
        };
        process::run(&spec, limits, &mut on_output).await
    };
    let exit = match (exit, sink_error) {
        (_, Some(err)) => return Err(err),
        (exit, None) => exit?,
    };

    lines.finish(&mut |line| feed(parser.as_mut(), &mut *on_event, line));
    for event in parser.flush() {
        on_event(event);
    }
    log.flush()?;
    stderr_sink.flush()?;

    let done = parser.finish();
    if let Some(done) = &done {
        on_event(AgentEvent::Done(done.clone()));
    }
    let stderr_tail = stderr_sink.tail.text();
    let conclusion = conclusion_of(inv, done.as_ref(), exit, parser.as_ref(), &stderr_tail);
    Ok(AgentRun {
        exit,
        done,
        conclusion,
        log_bytes: log.bytes,
        stderr_tail,
    })
}

/// The child process of `inv`.
fn spec_of(inv: &Invocation) -> Spec {
    Spec {
        program: inv.program.clone(),
        args: inv.args.clone(),
        env: inv.env.clone(),
        cwd: inv.cwd.clone(),
        stdin: match &inv.stdin {
            StdinSource::Prompt(prompt) => Some(prompt.clone()),
            StdinSource::Null => None,
        },
        pid_file: inv.pid_file.clone(),
    }
}

/// How the run ended, as its output and exit say. The agent's own error
/// report is the better explanation; without one, its last words on stderr
/// usually say what went wrong.
fn conclusion_of(
    inv: &Invocation,
    done: Option<&Done>,
    exit: ExitStatusKind,
    parser: &dyn super::StreamParser,
    stderr_tail: &str,
) -> Conclusion {
    let mut conclusion = conclude(done, exit, &inv.promise_token, parser.promise_scope());
    if let Conclusion::AgentError { message } = &mut conclusion
        && done.is_none_or(|done| done.error.is_none())
        && let Some(last) = stderr_tail.lines().rev().find(|l| !l.trim().is_empty())
    {
        message.push_str(": ");
        message.push_str(last.trim());
    }
    conclusion
}

/// One line of output through the parser, its events out.
fn feed(
    parser: &mut dyn super::StreamParser,
    on_event: &mut (dyn FnMut(AgentEvent) + Send),
    line: &[u8],
) {
    let line = String::from_utf8_lossy(line);
    let line: &str = &line;
    for event in parser.feed_line(line.strip_suffix('\r').unwrap_or(line)) {
        on_event(event);
    }
}

/// Opened unbuffered: what the agent printed is on disk as soon as it is
/// read, for `status` and other readers while the attempt runs.
fn open_append(path: &Path) -> Result<File, RunnerError> {
    let log_error = |source| RunnerError::Log {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(log_error)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(log_error)?;
    Ok(file)
}

/// Stdout's log file and how much went into it.
struct LogFile {
    path: PathBuf,
    file: File,
    bytes: u64,
}

impl LogFile {
    fn open(path: &Path) -> Result<LogFile, RunnerError> {
        Ok(LogFile {
            path: path.to_owned(),
            file: open_append(path)?,
            bytes: 0,
        })
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), RunnerError> {
        self.bytes += chunk.len() as u64;
        self.file
            .write_all(chunk)
            .map_err(|source| RunnerError::Log {
                path: self.path.clone(),
                source,
            })
    }

    fn flush(&mut self) -> Result<(), RunnerError> {
        self.file.flush().map_err(|source| RunnerError::Log {
            path: self.path.clone(),
            source,
        })
    }
}

fn stderr_path(log_path: &Path) -> PathBuf {
    let mut name = OsString::from(log_path.as_os_str());
    name.push(".stderr");
    PathBuf::from(name)
}

/// Stderr's file, opened on first use, and its tail.
struct StderrSink {
    path: PathBuf,
    file: Option<File>,
    tail: Tail,
}

impl StderrSink {
    fn new(path: PathBuf) -> Self {
        StderrSink {
            path,
            file: None,
            tail: Tail::new(STDERR_TAIL_BYTES),
        }
    }

    fn write(&mut self, chunk: &[u8]) -> Result<(), RunnerError> {
        self.tail.push(chunk);
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(open_append(&self.path)?),
        };
        file.write_all(chunk).map_err(|source| RunnerError::Log {
            path: self.path.clone(),
            source,
        })
    }

    fn flush(&mut self) -> Result<(), RunnerError> {
        match &mut self.file {
            Some(file) => file.flush().map_err(|source| RunnerError::Log {
                path: self.path.clone(),
                source,
            }),
            None => Ok(()),
        }
    }
}

/// Splits a byte stream into lines without ever holding more than `max`
/// bytes of one line: the rest of an overlong line is dropped, so the
/// parser sees a truncated view (which a JSON parser simply skips).
struct LineSplitter {
    pending: Vec<u8>,
    max: usize,
}

impl LineSplitter {
    fn new(max: usize) -> Self {
        LineSplitter {
            pending: Vec::new(),
            max,
        }
    }

    fn push(&mut self, mut chunk: &[u8], emit: &mut impl FnMut(&[u8])) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            let (line, rest) = (&chunk[..newline], &chunk[newline + 1..]);
            if self.pending.is_empty() {
                emit(&line[..line.len().min(self.max)]);
            } else {
                self.append(line);
                emit(&self.pending);
                self.pending.clear();
            }
            chunk = rest;
        }
        self.append(chunk);
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = self.max.saturating_sub(self.pending.len());
        self.pending
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Emits a last line that had no newline.
    fn finish(&mut self, emit: &mut impl FnMut(&[u8])) {
        if !self.pending.is_empty() {
            emit(&self.pending);
            self.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests;
