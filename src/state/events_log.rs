//! `events.jsonl`: every event of a run, one JSON object per line, appended
//! as it happens so `status` and other tools can follow a run live.

use std::io::Write;
use std::path::{Path, PathBuf};

pub struct EventsLog {
    path: PathBuf,
    file: std::fs::File,
}

impl EventsLog {
    pub fn open(path: &Path) -> std::io::Result<EventsLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(EventsLog {
            path: path.to_owned(),
            file,
        })
    }

    /// Append one event as a single line (one write, so lines never interleave).
    pub fn append<T: serde::Serialize>(&mut self, event: &T) -> std::io::Result<()> {
        let _timed = crate::timings::phase("event");
        let mut line = serde_json::to_vec(event).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}
