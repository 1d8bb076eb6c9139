//! A tmux server of a test's own, for the loop screen in a real terminal:
//! panes started with a command, keys sent to them, and their screens read
//! until they show what a test waits for.

use super::{TestRepo, stderr, stdout};

/// A tmux server of the test's own, driving its panes.
pub struct Tmux {
    socket: String,
    /// The first pane's id.
    pub first: String,
}

impl Tmux {
    /// `None` (and a message) when tmux is not installed.
    pub fn start(repo: &TestRepo, command: &str) -> Option<Tmux> {
        Tmux::start_sized(repo, command, (100, 30))
    }

    pub fn start_sized(
        repo: &TestRepo,
        command: &str,
        (width, height): (u16, u16),
    ) -> Option<Tmux> {
        if std::process::Command::new("tmux")
            .arg("-V")
            .output()
            .is_err()
        {
            eprintln!("tmux is not installed: skipping the terminal test");
            return None;
        }
        let socket = format!(
            "git-ralph-test-{}-{}",
            std::process::id(),
            repo.dir.path().file_name().unwrap().to_string_lossy()
        );
        let mut tmux = Tmux {
            socket,
            first: String::new(),
        };
        let mut cmd = tmux.command();
        repo.lock(&mut cmd);
        cmd.env("LC_ALL", "C.UTF-8").env_remove("NO_COLOR");
        cmd.args(["new-session", "-d", "-P", "-F", "#{pane_id}", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .arg("-c")
            .arg(&repo.root)
            .arg(command);
        let output = cmd.output().expect("tmux runs");
        assert!(output.status.success(), "{}", stderr(&output));
        tmux.first = stdout(&output).trim().to_owned();
        Some(tmux)
    }

    /// Open a second pane below the first, running `command`; its id.
    pub fn split(&self, repo: &TestRepo, command: &str) -> String {
        let mut cmd = self.command();
        repo.lock(&mut cmd);
        cmd.args(["split-window", "-v", "-P", "-F", "#{pane_id}", "-t"])
            .arg(&self.first)
            .arg("-c")
            .arg(&repo.root)
            .arg(command);
        let output = cmd.output().expect("tmux split-window");
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output).trim().to_owned()
    }

    pub fn command(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new("tmux");
        cmd.args(["-u", "-L", &self.socket]);
        cmd
    }

    pub fn keys(&self, keys: &[&str]) {
        self.keys_in(&self.first, keys);
    }

    pub fn keys_in(&self, pane: &str, keys: &[&str]) {
        let status = self
            .command()
            .args(["send-keys", "-t", pane])
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    pub fn screen(&self) -> String {
        self.screen_of(&self.first)
    }

    pub fn screen_of(&self, pane: &str) -> String {
        let output = self
            .command()
            .args(["capture-pane", "-p", "-t", pane])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Press `key` in the first pane until it shows `text`: for what a
    /// pane holds below its fold, wherever this machine's paths (in the
    /// agent's command line) put it.
    pub fn scroll_to(&self, key: &str, text: &str) -> String {
        for _ in 0..60 {
            let screen = self.screen();
            if screen.contains(text) {
                return self.settled(&self.first, screen, text);
            }
            self.keys(&[key]);
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("scrolling never showed {text:?}:\n{}", self.screen());
    }

    /// Wait until the first pane shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_in(&self.first, text)
    }

    /// Wait until `pane` shows `text`, and the frame that shows it is
    /// drawn whole.
    pub fn wait_in(&self, pane: &str, text: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let screen = self.screen_of(pane);
            if screen.contains(text) {
                return self.settled(pane, screen, text);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the screen never showed {text:?}:\n{screen}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Tmux {
    /// `screen`, or a later capture of `pane` that still shows `text`, once
    /// two captures in a row agree: a capture can land while the terminal
    /// is still being drawn, with the top of a frame over the bottom of
    /// the one before. A screen that keeps moving (a clock, streaming
    /// output) is taken as it is after a second.
    fn settled(&self, pane: &str, mut screen: String, text: &str) -> String {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(40));
            let again = self.screen_of(pane);
            if again == screen || !again.contains(text) {
                return screen;
            }
            screen = again;
        }
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}
