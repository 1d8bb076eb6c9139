//! Following a run's `events.jsonl` from another process, without touching
//! it: open by reading the file's end only, then, off the screen's path,
//! one memchr pass that indexes offsets, after which only the milestones and
//! the last stretch of each attempt's output are read; afterwards read what
//! is appended. An agent flooding faster than a watcher reads costs the
//! watcher skipped output, never the loop.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::index::{AttemptSpan, EventsIndex, line_head, next_line_start, read_record, scan_lines};
use crate::agent::AgentEvent;
use crate::events::{Event, Record};

/// How much of each attempt's output is read when a run is opened.
pub const TAIL_BYTES: u64 = 1 << 20;
/// New output beyond this much since the last look is skipped to its end.
pub const CATCH_UP_BYTES: u64 = 8 << 20;

pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    pos: u64,
    /// Where the first look began: older lines are left to [`Follower::backfill`].
    opened_at: u64,
}

/// What opening a run's events log gave.
pub struct Opened {
    pub follower: Follower,
    /// The records of the file's last stretch, in order.
    pub records: Vec<Record>,
    /// Whether output before that stretch was left out.
    pub cut: bool,
}

impl Follower {
    /// Open `events.jsonl` (it may not exist yet) reading only its end: the
    /// last [`TAIL_BYTES`], which hold the latest attempt's recent output.
    /// The rest is for [`Follower::backfill`], off the screen's path.
    pub fn open(path: &Path) -> std::io::Result<Opened> {
        let Ok(file) = File::open(path) else {
            let follower = Follower {
                path: path.to_owned(),
                file: None,
                pos: 0,
                opened_at: 0,
            };
            return Ok(Opened {
                follower,
                records: Vec::new(),
                cut: false,
            });
        };
        let len = file.metadata()?.len();
        let start = next_line_start(&file, len.saturating_sub(TAIL_BYTES))?;
        let mut wanted = Vec::new();
        let end = scan_lines(&file, start, |offset, len, _| wanted.push((offset, len)))?;
        let records = wanted
            .into_iter()
            .filter_map(|(offset, len)| read_record(&file, offset, len))
            .collect();
        Ok(Opened {
            follower: Follower {
                path: path.to_owned(),
                file: Some(file),
                pos: end,
                opened_at: start,
            },
            records,
            cut: start > 0,
        })
    }

    /// What lies before the stretch [`Follower::open`] read, found with one
    /// memchr pass that keeps offsets only: the milestones that say how
    /// attempts went (not those that move the run along: the screen already
    /// shows where it is) and the last [`TAIL_BYTES`] of each attempt's output
    /// that ended before that stretch. Where output was left out, a note
    /// says so in its place.
    pub fn backfill(&self) -> std::io::Result<Vec<Record>> {
        let Some(file) = self.file.as_ref() else {
            return Ok(Vec::new());
        };
        let limit = self.opened_at;
        let mut index = EventsIndex::default();
        index.update_until(file, limit)?;
        let mut wanted: Vec<(u64, u64)> = index.milestones.clone();
        let mut notes = Vec::new();
        for span in index.spans.iter().filter(|span| span.end <= limit) {
            let from = next_line_start(file, span.end.saturating_sub(TAIL_BYTES).max(span.start))?;
            if from > span.start {
                notes.push((from, left_out(span, from - span.start)));
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
            })?;
            wanted.extend(stretch);
        }
        wanted.sort_unstable();
        let mut notes = notes.into_iter().peekable();
        let mut records = Vec::with_capacity(wanted.len());
        for (offset, len) in wanted {
            while let Some((_, note)) = notes.next_if(|(at, _)| *at <= offset) {
                records.push(note);
            }
            records.extend(read_record(file, offset, len));
        }
        let records = records
            .into_iter()
            .filter(|record| {
                !matches!(
                    record.event,
                    Event::RunStarted { .. }
                        | Event::StoryProgress { .. }
                        | Event::Complete { .. }
                        | Event::Error { .. }
                )
            })
            .collect();
        Ok(records)
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

/// A note in place of output left out, shown as the attempt's first line.
fn left_out(span: &AttemptSpan, bytes: u64) -> Record {
    Record {
        ts_ms: 0,
        change: String::new(),
        event: Event::StoryEvent {
            story_id: span.story.clone(),
            attempt: span.attempt,
            event: AgentEvent::Message {
                text: format!(
                    "… {:.1} MiB of earlier output not shown; see 'git ralph show {}/{} --transcript'",
                    bytes as f64 / 1048576.0,
                    span.story,
                    span.attempt
                ),
                tool_uses: Vec::new(),
            },
        },
    }
}
