//! One supervised child process, the only place git-ralph starts programs.
//!
//! The agent, the contract's checks, the optional `openspec` CLI, and at the
//! hand-off `git push` (gitoxide cannot push) and `gh` or `glab` are all
//! programs git-ralph does not control: they may hang, print gigabytes,
//! ignore SIGTERM, or leave a background job holding the pipes open. So
//! every child runs here the same way: in its own process group (killed
//! when the supervisor is dropped, so nothing outlives an abandoned run),
//! marked so that what it starts outside that group ends with it too
//! (`escapees`),
//! with its stdin written concurrently and then closed, with its output
//! handed to the caller chunk by chunk as it arrives (never collected in
//! memory here), and ended by a timeout or a stop request with SIGTERM,
//! then SIGKILL after a grace period. Callers decide what the output means.
//!
//! A program that runs beside git-ralph rather than to an end (the server
//! of `start --serve`) is a [`Companion`], supervised the same way.
//!
//! [`Tail`] and [`tail_str`] (in `tail`) keep the end of an output within a
//! bound, for error messages and prompts.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, getpgrp};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

mod companion;
mod escapees;
mod orphan;
mod tail;

pub use companion::{Companion, CompanionError};
use orphan::PidFile;
pub use orphan::end_orphaned_group;
pub use tail::{Tail, report_tail, tail_str};

/// How much output is read at once.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// How long a child gets to exit after SIGTERM before it is killed.
const TERMINATE_GRACE: Duration = Duration::from_secs(2);
/// How long output is still read after the child exited, in case something
/// it started keeps the pipes open.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A program to run, and how.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Written to the child's stdin, which is then closed; `None` gives it
    /// an empty stdin.
    pub stdin: Option<String>,
    /// Where to record the child's process group while it runs, so that a
    /// later git-ralph can end a child whose supervisor was killed.
    pub pid_file: Option<PathBuf>,
}

impl Spec {
    /// `sh -c <script>` in `cwd`.
    pub fn shell(script: &str, cwd: &Path) -> Spec {
        Spec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: cwd.to_owned(),
            ..Spec::default()
        }
    }

    /// `sh -c <script>` in `cwd`, whose shell first creates `started`
    /// (quietly, best effort), then runs `script`: the file says the script
    /// began even when the caller died the instant after starting it. The
    /// caller removes it once it has recorded the script's end.
    pub fn shell_marking_start(script: &str, cwd: &Path, started: &Path) -> Spec {
        let mark = format!(
            "{{ true > {}; }} 2>/dev/null\n",
            shell_quote(&started.to_string_lossy())
        );
        Spec::shell(&format!("{mark}{script}"), cwd)
    }
}

/// `arg` as one word of a POSIX shell command line.
pub fn shell_quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Is `program` runnable: a path that exists, or an executable found on
/// `PATH`?
pub fn is_runnable(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Which output stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "code", rename_all = "snake_case")]
pub enum ExitStatusKind {
    /// It exited on its own with this code.
    Exited(i32),
    /// It was killed by this signal, not by git-ralph.
    Signaled(i32),
    /// git-ralph killed it because it ran out of time.
    TimedOut,
    /// git-ralph killed it because the user asked to stop.
    Stopped,
    /// git-ralph killed it because it printed nothing for its idle timeout.
    Idle,
}

impl ExitStatusKind {
    /// True only for a clean exit with code 0.
    pub fn is_success(&self) -> bool {
        matches!(self, ExitStatusKind::Exited(0))
    }

    /// The exit code, when it exited on its own.
    pub fn code(&self) -> Option<i32> {
        match self {
            ExitStatusKind::Exited(code) => Some(*code),
            _ => None,
        }
    }
}

impl std::fmt::Display for ExitStatusKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitStatusKind::Exited(code) => write!(f, "exited with code {code}"),
            ExitStatusKind::Signaled(signal) => write!(f, "was killed by signal {signal}"),
            ExitStatusKind::TimedOut => f.write_str("timed out"),
            ExitStatusKind::Stopped => f.write_str("was stopped"),
            ExitStatusKind::Idle => f.write_str("went idle"),
        }
    }
}

/// Why a child could not be run or supervised.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("could not start `{program}`: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("the working directory {} is not a directory", path.display())]
    Workdir { path: PathBuf },
    #[error("could not read the output of `{program}`: {source}")]
    Read { program: String, source: io::Error },
    #[error("could not wait for `{program}`: {source}")]
    Wait { program: String, source: io::Error },
    #[error("could not send {signal} to process group {pgid}: {source}")]
    Signal {
        pgid: u32,
        signal: Signal,
        source: Errno,
    },
    #[error("refusing to signal process group {0}: it is not a child's group")]
    NotAChildGroup(u32),
    /// The caller's output handler failed (a log that could not be written).
    #[error(transparent)]
    Output(io::Error),
    #[error("could not start the async runtime: {0}")]
    Runtime(io::Error),
}

impl ProcessError {
    /// A set-up error: the program is missing, not executable, or cannot be
    /// run in its directory. Retrying cannot help.
    pub fn is_setup(&self) -> bool {
        matches!(
            self,
            ProcessError::Spawn { .. } | ProcessError::Workdir { .. }
        )
    }

    /// What the user can do about the error, when there is something to do.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProcessError::Spawn { program, source } if source.kind() == io::ErrorKind::NotFound => {
                Some(format!(
                    "install `{program}` or configure a command that is on PATH"
                ))
            }
            ProcessError::Spawn { program, source }
                if source.kind() == io::ErrorKind::PermissionDenied =>
            {
                Some(format!("make `{program}` executable"))
            }
            ProcessError::Workdir { path } => Some(format!(
                "create {} or run git-ralph from the repository it belongs to",
                path.display()
            )),
            _ => None,
        }
    }
}

/// What a caller may set besides the program: how long it may run, how
/// long it may stay silent, and a stop request it must honour.
#[derive(Debug, Clone)]
pub struct Limits {
    pub timeout: Duration,
    /// Printing nothing (on stdout or stderr) for this long ends the child
    /// as [`ExitStatusKind::Idle`]; `None` lets it be silent.
    pub idle: Option<Duration>,
    /// Turning true ends the child as [`ExitStatusKind::Stopped`].
    pub stop: Option<watch::Receiver<bool>>,
    /// A child that exits with a code of its own once a stop was asked is
    /// reported by that code: for a child whose word counts, as a hook's.
    pub stop_keeps_exit: bool,
}

impl Limits {
    pub fn timeout(timeout: Duration) -> Limits {
        Limits {
            timeout,
            idle: None,
            stop: None,
            stop_keeps_exit: false,
        }
    }
}

/// Runs `spec` until it exits, its time is up, it has been silent for its
/// idle limit, or a stop is requested,
/// handing every chunk of output to `on_output` as it arrives. An error
/// from `on_output` ends the child and is returned as
/// [`ProcessError::Output`].
pub async fn run(
    spec: &Spec,
    limits: Limits,
    on_output: &mut (dyn FnMut(Stream, &[u8]) -> io::Result<()> + Send),
) -> Result<ExitStatusKind, ProcessError> {
    let Spawned {
        mut child,
        group,
        _pid_file,
        mut stdout,
        mut stderr,
        stdin_writer,
    } = spawn(spec)?;
    let program = &spec.program;
    let mut stop = limits.stop;
    let mut out_buf = vec![0u8; READ_CHUNK_BYTES];
    let mut err_buf = vec![0u8; READ_CHUNK_BYTES];
    let mut watch = Watch::new(limits.timeout, limits.idle);
    watch.stop_keeps_exit = limits.stop_keeps_exit;
    if stop.as_mut().is_some_and(|stop| *stop.borrow_and_update()) {
        watch.ending = Some(Ending::begin(&group, ExitStatusKind::Stopped)?);
    }
    let read_error = |source| ProcessError::Read {
        program: program.clone(),
        source,
    };
    while !watch.over() {
        let running = watch.status.is_none();
        let ending = watch.ending.is_none();
        let kill_at = watch
            .ending
            .as_ref()
            .map_or(watch.deadline, |ending| ending.kill_at);
        let stop_live = stop.is_some();
        tokio::select! {
            read = stdout.read(&mut out_buf), if watch.stdout_open => {
                let n = read.map_err(read_error)?;
                watch.output(Stream::Stdout, &out_buf[..n], on_output);
            }
            read = stderr.read(&mut err_buf), if watch.stderr_open => {
                let n = read.map_err(read_error)?;
                watch.output(Stream::Stderr, &err_buf[..n], on_output);
            }
            exited = child.wait(), if running => {
                watch.status = Some(exited.map_err(|source| ProcessError::Wait { program: program.clone(), source })?);
                watch.drain_until = Some(Instant::now() + DRAIN_GRACE);
            }
            _ = sleep_until(watch.deadline), if running && ending => {
                watch.ending = Some(Ending::begin(&group, ExitStatusKind::TimedOut)?);
            }
            _ = sleep_until(watch.idle_at.unwrap_or(watch.deadline)), if running && ending && watch.idle_at.is_some() => {
                watch.ending = Some(Ending::begin(&group, ExitStatusKind::Idle)?);
            }
            changed = async { stop.as_mut().expect("checked").changed().await }, if running && ending && stop_live => {
                if stop_asked(&mut stop, changed) {
                    watch.ending = Some(Ending::begin(&group, ExitStatusKind::Stopped)?);
                }
            }
            _ = sleep_until(kill_at), if running && watch.ending.as_ref().is_some_and(|e| !e.killed) => {
                group.signal(Signal::SIGKILL)?;
                if let Some(ending) = watch.ending.as_mut() {
                    ending.killed = true;
                }
            }
            _ = sleep_until(watch.drain_until.unwrap_or(watch.deadline)), if watch.drain_until.is_some() => {
                // Something the child started holds its output open: end it.
                // Best effort, as the child itself is done.
                let _ = group.signal(Signal::SIGKILL);
                watch.stdout_open = false;
                watch.stderr_open = false;
            }
        }
    }
    if let Some(writer) = stdin_writer {
        writer.abort();
    }
    // Best effort: the child has ended, leftovers only get a parting shot.
    let _ = group.signal(Signal::SIGKILL);
    watch.result()
}

/// A child just spawned, in a process group of its own, with its output
/// pipes and the task writing its stdin.
struct Spawned {
    child: tokio::process::Child,
    group: GroupGuard,
    _pid_file: Option<PidFile>,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    stdin_writer: Option<tokio::task::JoinHandle<()>>,
}

fn spawn(spec: &Spec) -> Result<Spawned, ProcessError> {
    check_workdir(&spec.cwd)?;
    let mark = escapees::new_mark();
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .env(escapees::MARK_VARIABLE, &mark)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let program = spec.program.clone();
    let mut child = command.spawn().map_err(|source| ProcessError::Spawn {
        program: program.clone(),
        source,
    })?;
    let group = GroupGuard {
        pgid: child.id(),
        mark: mark.clone(),
    };
    let pid_file = match (&spec.pid_file, child.id()) {
        (Some(path), Some(pid)) => PidFile::write(path, pid, &mark),
        _ => None,
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ProcessError::Read {
            program,
            source: io::Error::other("the output pipes were not set up"),
        });
    };
    // Written concurrently: a child that does not read its stdin must not
    // block the reading of its output.
    let stdin_writer = match (&spec.stdin, child.stdin.take()) {
        (Some(input), Some(mut stdin)) => {
            let input = input.clone();
            Some(tokio::spawn(async move {
                // The child may exit without reading its stdin (EPIPE); what
                // it did instead shows in its output and exit status.
                let _ = stdin.write_all(input.as_bytes()).await;
                let _ = stdin.shutdown().await;
            }))
        }
        _ => None,
    };
    Ok(Spawned {
        child,
        group,
        _pid_file: pid_file,
        stdout,
        stderr,
        stdin_writer,
    })
}

/// What is known of a running child: its pipes, its exit, its deadlines,
/// and how it is being ended.
struct Watch {
    idle: Option<Duration>,
    deadline: Instant,
    /// Every chunk of output pushes it back.
    idle_at: Option<Instant>,
    stdout_open: bool,
    stderr_open: bool,
    status: Option<ExitStatus>,
    ending: Option<Ending>,
    drain_until: Option<Instant>,
    output_error: Option<io::Error>,
    stop_keeps_exit: bool,
}

impl Watch {
    fn new(timeout: Duration, idle: Option<Duration>) -> Watch {
        Watch {
            idle,
            deadline: far(Instant::now(), timeout),
            idle_at: idle.map(|idle| far(Instant::now(), idle)),
            stdout_open: true,
            stderr_open: true,
            status: None,
            ending: None,
            drain_until: None,
            output_error: None,
            stop_keeps_exit: false,
        }
    }

    /// The child has exited and its pipes are closed, or its output could
    /// not be taken.
    fn over(&self) -> bool {
        self.output_error.is_some()
            || (self.status.is_some() && !self.stdout_open && !self.stderr_open)
    }

    /// A chunk read from `stream`: none closes it.
    fn output(
        &mut self,
        stream: Stream,
        chunk: &[u8],
        on_output: &mut (dyn FnMut(Stream, &[u8]) -> io::Result<()> + Send),
    ) {
        if chunk.is_empty() {
            match stream {
                Stream::Stdout => self.stdout_open = false,
                Stream::Stderr => self.stderr_open = false,
            }
            return;
        }
        self.idle_at = self.idle.map(|idle| far(Instant::now(), idle));
        if let Err(err) = on_output(stream, chunk) {
            self.output_error = Some(err);
        }
    }

    fn result(self) -> Result<ExitStatusKind, ProcessError> {
        if let Some(err) = self.output_error {
            return Err(ProcessError::Output(err));
        }
        Ok(match (self.ending, self.status) {
            (Some(ending), Some(status))
                if ending.kind == ExitStatusKind::Stopped
                    && self.stop_keeps_exit
                    && status.code().is_some() =>
            {
                exit_kind(status)
            }
            (Some(ending), _) => ending.kind,
            (None, Some(status)) => exit_kind(status),
            (None, None) => ExitStatusKind::Stopped,
        })
    }
}

/// Whether a change of the stop flag asks the child to stop; a flag
/// nobody can set any more is dropped.
fn stop_asked(
    stop: &mut Option<watch::Receiver<bool>>,
    changed: Result<(), watch::error::RecvError>,
) -> bool {
    match changed {
        Ok(()) => stop.as_mut().is_some_and(|stop| *stop.borrow_and_update()),
        Err(_) => {
            *stop = None;
            false
        }
    }
}

/// `after` from `from`; a timeout too large to represent means "no
/// timeout".
fn far(from: Instant, after: Duration) -> Instant {
    from.checked_add(after)
        .unwrap_or_else(|| from + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// Checked before spawning: spawning in a missing directory fails with the
/// same "not found" as a missing program, which would mislead.
pub fn check_workdir(path: &Path) -> Result<(), ProcessError> {
    if std::fs::metadata(path).is_ok_and(|meta| meta.is_dir()) {
        Ok(())
    } else {
        Err(ProcessError::Workdir {
            path: path.to_owned(),
        })
    }
}

/// Runs `spec` and collects a bounded tail of its output, stdout and stderr
/// interleaved as they arrived.
pub async fn run_collecting(
    spec: &Spec,
    limits: Limits,
    max_output: usize,
) -> Result<(ExitStatusKind, Tail), ProcessError> {
    let mut output = Tail::new(max_output);
    let exit = run(spec, limits, &mut |_, chunk| {
        output.push(chunk);
        Ok(())
    })
    .await?;
    Ok((exit, output))
}

/// Runs `spec` and keeps stdout and stderr apart, each bounded.
pub async fn run_split(
    spec: &Spec,
    limits: Limits,
    max_output: usize,
) -> Result<(ExitStatusKind, Tail, Tail), ProcessError> {
    let (mut stdout, mut stderr) = (Tail::new(max_output), Tail::new(max_output));
    let exit = run(spec, limits, &mut |stream, chunk| {
        match stream {
            Stream::Stdout => stdout.push(chunk),
            Stream::Stderr => stderr.push(chunk),
        }
        Ok(())
    })
    .await?;
    Ok((exit, stdout, stderr))
}

/// [`run_split`] for code that is not async (a run being set up): the
/// child is supervised on a runtime of its own, on a thread of its own, so
/// this works whether or not the caller is itself on a runtime.
pub fn run_split_blocking(
    spec: &Spec,
    limits: Limits,
    max_output: usize,
) -> Result<(ExitStatusKind, Tail, Tail), ProcessError> {
    let spec = spec.clone();
    let supervise = move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| ProcessError::Spawn {
                program: spec.program.clone(),
                source,
            })?;
        runtime.block_on(run_split(&spec, limits, max_output))
    };
    match std::thread::spawn(supervise).join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

fn exit_kind(status: ExitStatus) -> ExitStatusKind {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatusKind::Exited(code),
        (None, Some(signal)) => ExitStatusKind::Signaled(signal),
        // Neither code nor signal does not happen for a reaped child on Unix.
        (None, None) => ExitStatusKind::Exited(-1),
    }
}

/// `pid` as the group of a child this supervisor spawned: never 0 or
/// 1, never a number that wraps below 0, never git-ralph's own group.
fn child_group(pid: u32) -> Option<Pid> {
    i32::try_from(pid)
        .ok()
        .filter(|&raw| raw > 1 && Pid::from_raw(raw) != getpgrp())
        .map(Pid::from_raw)
}

/// Sends `signal` to the process group led by `pid`, as started by [`run`].
///
/// A group that no longer exists is not an error. Refuses pid 0 and 1 and
/// git-ralph's own group, which would otherwise be signalled instead.
pub fn signal_group(pid: u32, signal: Signal) -> Result<(), ProcessError> {
    let group = child_group(pid).ok_or(ProcessError::NotAChildGroup(pid))?;
    match killpg(group, signal) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(source) => Err(ProcessError::Signal {
            pgid: pid,
            signal,
            source,
        }),
    }
}

/// The child's process group; whatever is left of it, and whatever it
/// started outside it, dies with the guard (before [`run`] returns, so
/// before the caller weighs what the child did), also when the run is
/// abandoned half-way.
struct GroupGuard {
    pgid: Option<u32>,
    /// The mark in the environment of the child and of all it started.
    mark: String,
}

impl GroupGuard {
    fn signal(&self, signal: Signal) -> Result<(), ProcessError> {
        match self.pgid {
            Some(pgid) => signal_group(pgid, signal),
            None => Ok(()),
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // Best effort: there is no one left to report a failure to.
        let _ = self.signal(Signal::SIGKILL);
        escapees::end_marked(&self.mark);
    }
}

/// A termination git-ralph started: why, and when SIGTERM turns into SIGKILL.
struct Ending {
    kind: ExitStatusKind,
    kill_at: Instant,
    killed: bool,
}

impl Ending {
    fn begin(group: &GroupGuard, kind: ExitStatusKind) -> Result<Ending, ProcessError> {
        group.signal(Signal::SIGTERM)?;
        Ok(Ending {
            kind,
            kill_at: Instant::now() + TERMINATE_GRACE,
            killed: false,
        })
    }
}

#[cfg(test)]
mod tests;
