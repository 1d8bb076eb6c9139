//! A program that runs beside git-ralph for as long as git-ralph keeps it,
//! rather than to an end: the server `start --serve` starts. It gets a
//! process group of its own (a Ctrl-C at the terminal is the run's, not
//! its), a standard input git-ralph holds open (so it ends when git-ralph
//! does, however git-ralph ends), and its output is read on threads of its
//! own until it closes, so that it never blocks on a full pipe and nothing
//! of git-ralph ever waits on it. Dropping it kills its group.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Why a companion did not say it was ready.
#[derive(Debug, thiserror::Error)]
pub enum CompanionError {
    #[error("could not start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("it ended before it was ready{}", said(.stderr))]
    Ended { stderr: String },
    #[error("it said nothing within {0:?}")]
    Silent(Duration),
}

fn said(stderr: &str) -> String {
    match stderr.trim() {
        "" => String::new(),
        text => format!(": {text}"),
    }
}

/// What a companion printed, line by line.
enum Said {
    Out(String),
    Err(String),
    /// Its stdout closed.
    Closed,
}

pub struct Companion {
    child: Child,
    /// Held open: the companion ends when it closes.
    _stdin: Option<ChildStdin>,
    said: Receiver<Said>,
}

impl Companion {
    /// Start `program` with `args` in `cwd`.
    pub fn spawn(program: &Path, args: &[&str], cwd: &Path) -> Result<Companion, CompanionError> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|source| CompanionError::Spawn {
                program: program.display().to_string(),
                source,
            })?;
        let (tell, said) = channel();
        if let Some(stdout) = child.stdout.take() {
            drain(stdout, tell.clone(), Said::Out, true);
        }
        if let Some(stderr) = child.stderr.take() {
            drain(stderr, tell, Said::Err, false);
        }
        Ok(Companion {
            _stdin: child.stdin.take(),
            child,
            said,
        })
    }

    /// Its first line on stdout, within `timeout`: what it says once
    /// ready. What it said on stderr before comes with a refusal.
    pub fn first_line(&mut self, timeout: Duration) -> Result<String, CompanionError> {
        let deadline = Instant::now() + timeout;
        let mut stderr = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.said.recv_timeout(left) {
                Ok(Said::Out(line)) => return Ok(line),
                Ok(Said::Err(line)) => {
                    stderr.push_str(&line);
                    stderr.push('\n');
                }
                Ok(Said::Closed) | Err(RecvTimeoutError::Disconnected) => {
                    // Its stderr may still hold why.
                    while let Ok(Said::Err(line)) =
                        self.said.recv_timeout(Duration::from_millis(200))
                    {
                        stderr.push_str(&line);
                        stderr.push('\n');
                    }
                    return Err(CompanionError::Ended { stderr });
                }
                Err(RecvTimeoutError::Timeout) => return Err(CompanionError::Silent(timeout)),
            }
        }
    }
}

/// Read `stream` to its end on a thread of its own, passing lines on until
/// nobody listens (then only reading, so that the writer never blocks).
fn drain<R: Read + Send + 'static>(
    stream: R,
    tell: Sender<Said>,
    wrap: fn(String) -> Said,
    closing: bool,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        let mut listened = true;
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            if listened {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                listened = tell.send(wrap(text)).is_ok();
            }
            line.clear();
        }
        if closing {
            let _ = tell.send(Said::Closed);
        }
    });
}

impl Drop for Companion {
    fn drop(&mut self) {
        // It keeps nothing that a kill could lose.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_companion_says_its_first_line_and_ends_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut companion = Companion::spawn(
            Path::new("sh"),
            &["-c", "echo ready; echo more; exec sleep 600"],
            dir.path(),
        )
        .unwrap();
        assert_eq!(
            companion.first_line(Duration::from_secs(10)).unwrap(),
            "ready"
        );
        let pid = companion.child.id();
        drop(companion);
        assert!(!crate::state::process_alive(pid));
    }

    #[test]
    fn one_that_ends_at_once_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let mut companion = Companion::spawn(
            Path::new("sh"),
            &["-c", "echo no port >&2; exit 1"],
            dir.path(),
        )
        .unwrap();
        let err = companion.first_line(Duration::from_secs(10)).unwrap_err();
        assert!(err.to_string().contains("no port"), "{err}");
    }
}
