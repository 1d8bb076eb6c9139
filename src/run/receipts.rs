//! Receipts: the trailers each checkpoint commit carries, so that `git log`
//! alone is an audit trail of who did what for how much
//! (`git interpret-trailers --parse` reads them). A cleanup squashes the
//! checkpoints away, so every receipt is also appended to the run's
//! `receipts.txt`, which moves to history with the rest of the run.

use std::io::Write;

use super::story_loop::{AgentVersion, StoryLoop};

impl StoryLoop {
    /// The agent CLI's version, waiting for the question asked at the
    /// start if it is still out.
    async fn agent_version(&mut self) -> Option<String> {
        if let AgentVersion::Asking(task) = &mut self.agent_version {
            self.agent_version = AgentVersion::Known(task.await.ok().flatten());
        }
        match &self.agent_version {
            AgentVersion::Known(version) => version.clone(),
            AgentVersion::Asking(_) => None,
        }
    }

    /// The trailer block of the checkpoint for `attempt` at `story`.
    pub(super) async fn receipt(&mut self, story: &str, attempt: u32) -> String {
        let version = self.agent_version().await;
        let max = if self.settings.once {
            1
        } else {
            self.settings.max_retries.saturating_add(1)
        };
        let settings = &self.state.settings;
        let agent = match (&settings.agent_command, &version) {
            (Some(command), _) => format!("command {command}"),
            (None, Some(version)) => format!("{} {version}", settings.agent),
            (None, None) => settings.agent.clone(),
        };
        let model = settings.model.as_deref().unwrap_or("default model");
        let change = self.settings.change.to_string();
        let mut trailers = vec![
            ("Ralph-Change", change),
            ("Ralph-Story", story.to_owned()),
            ("Ralph-Attempt", format!("{attempt} of {max}")),
            ("Ralph-Agent", format!("{agent} ({model})")),
        ];
        if let Some(record) = self.attempt_record(story, attempt) {
            let record = record.clone();
            trailers.push(("Ralph-Tokens", record.tokens().to_string()));
            if record.cost_usd > 0.0 {
                trailers.push(("Ralph-Cost", format!("{:.4}", record.cost_usd)));
            }
            if !record.passed_checks.is_empty() {
                let passed: Vec<String> = record
                    .passed_checks
                    .iter()
                    .map(|name| format!("{name} passed"))
                    .collect();
                trailers.push(("Ralph-Checks", passed.join(", ")));
            }
            if let Some(flag) = record.flag {
                trailers.push(("Ralph-Flag", flag.to_string()));
            }
        }
        trailers
            .into_iter()
            .map(|(key, value)| format!("{key}: {}\n", one_line(&value)))
            .collect()
    }

    /// Keep `receipt` of `commit` in the run's directory.
    pub(super) fn keep_receipt(&mut self, commit: &str, subject: &str, receipt: &str) {
        let path = self.run_dir.receipts_path();
        let entry = format!("commit {commit}\n{subject}\n\n{receipt}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(entry.as_bytes()));
        if let Err(err) = written {
            self.warn(format!(
                "could not keep the receipt in {}: {err}",
                path.display()
            ));
        }
    }
}

/// A trailer value is one line: commands and flags may hold newlines.
fn one_line(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn trailer_values_are_one_line() {
        assert_eq!(one_line("sh -c 'a\n  b'"), "sh -c 'a b'");
    }
}
