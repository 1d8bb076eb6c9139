//! Following a run's `events.jsonl` from another process, without touching
//! it: open with one memchr pass that indexes offsets, then read only the
//! milestones and the last stretch of each attempt's output; afterwards read
//! what is appended. An agent flooding faster than a watcher reads costs the
//! watcher skipped output, never the loop.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::index::{EventsIndex, line_head, next_line_start, read_record, scan_lines};
use crate::events::Record;

/// How much of each attempt's output is read when a run is opened.
pub const TAIL_BYTES: u64 = 1 << 20;
/// New output beyond this much since the last look is skipped to its end.
pub const CATCH_UP_BYTES: u64 = 8 << 20;

/// Output skipped when opening, per attempt: (story, attempt, bytes).
pub type Skipped = Vec<(String, u32, u64)>;

pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    pos: u64,
}

impl Follower {
    /// Open `events.jsonl` (it may not exist yet) and read what a screen
    /// needs to show the run so far: every milestone and each attempt's
    /// output tail, in file order.
    pub fn open(path: &Path) -> std::io::Result<(Follower, Vec<Record>, Skipped)> {
        let Ok(file) = File::open(path) else {
            let follower = Follower {
                path: path.to_owned(),
                file: None,
                pos: 0,
            };
            return Ok((follower, Vec::new(), Vec::new()));
        };
        let file = &file;
        let mut index = EventsIndex::default();
        index.update(file)?;
        let mut wanted: Vec<(u64, u64)> = index.milestones.clone();
        let mut skipped = Vec::new();
        for span in &index.spans {
            let from = next_line_start(file, span.end.saturating_sub(TAIL_BYTES).max(span.start))?;
            if from > span.start {
                skipped.push((span.story.clone(), span.attempt, from - span.start));
            }
            let mut stretch = Vec::new();
            scan_lines(file, from, |offset, len, head| {
                if offset < span.end
                    && line_head(head).is_some_and(|head| {
                        head.is_output()
                            && head.story.as_deref() == Some(span.story.as_str())
                            && head.attempt == Some(span.attempt)
                    })
                {
                    stretch.push((offset, len));
                }
            })
            .map(|_| ())?;
            wanted.extend(stretch);
        }
        wanted.sort_unstable();
        let records = wanted
            .into_iter()
            .filter_map(|(offset, len)| read_record(file, offset, len))
            .collect();
        let follower = Follower {
            path: path.to_owned(),
            file: File::open(path).ok(),
            pos: index.indexed,
        };
        Ok((follower, records, skipped))
    }

    fn file(&mut self) -> Option<&File> {
        if self.file.is_none() {
            self.file = File::open(&self.path).ok();
        }
        self.file.as_ref()
    }

    /// The records appended since the last look. When more output than
    /// [`CATCH_UP_BYTES`] came in, only its last stretch is read; milestones
    /// are always read.
    pub fn poll(&mut self) -> std::io::Result<Vec<Record>> {
        let pos = self.pos;
        let Some(file) = self.file() else {
            return Ok(Vec::new());
        };
        let len = file.metadata()?.len();
        if len <= pos {
            return Ok(Vec::new());
        }
        let cut = len.saturating_sub(CATCH_UP_BYTES);
        let mut wanted = Vec::new();
        let end = scan_lines(file, pos, |offset, len, head| {
            let Some(head) = line_head(head) else {
                return;
            };
            if !head.is_output() || offset >= cut {
                wanted.push((offset, len));
            }
        })?;
        let records = wanted
            .into_iter()
            .filter_map(|(offset, len)| read_record(file, offset, len))
            .collect();
        self.pos = end;
        Ok(records)
    }
}
