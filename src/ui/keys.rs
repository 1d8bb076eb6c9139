//! `q` to stop, read from a terminal stdin without line buffering. The
//! terminal keeps generating SIGINT for Ctrl-C (ISIG stays on), and its
//! settings are restored when the listener is dropped, before anything else
//! (such as the finish menu) reads stdin.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::termios::{LocalFlags, SetArg, Termios, tcgetattr, tcsetattr};
use tokio::sync::mpsc;

use crate::run::Control;

pub struct KeyListener {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    saved: Termios,
}

impl KeyListener {
    /// Listen for `q` on stdin when it is a terminal; each press is sent.
    pub fn start(presses: mpsc::UnboundedSender<Control>) -> Option<KeyListener> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let saved = tcgetattr(stdin.as_fd()).ok()?;
        let mut raw = saved.clone();
        raw.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO);
        tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw).ok()?;
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let thread = std::thread::spawn(move || {
            use std::io::Read;
            let stdin = std::io::stdin();
            let mut byte = [0u8; 1];
            while !flag.load(Ordering::Relaxed) {
                let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::from(100u16)) {
                    Ok(n) if n > 0 => match stdin.lock().read(&mut byte) {
                        Ok(1) if byte[0] == b'q' || byte[0] == b'Q' => {
                            let _ = presses.send(Control::Stop);
                        }
                        Ok(0) | Err(_) => break,
                        _ => {}
                    },
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
        Some(KeyListener {
            done,
            thread: Some(thread),
            saved,
        })
    }
}

impl Drop for KeyListener {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &self.saved);
    }
}
