//! Offsets into `events.jsonl`, so that a run whose agents wrote gigabytes
//! opens in about a second with bounded memory: lines are found with memchr
//! in fixed-size chunks, classified from their first bytes (a record's type,
//! story and attempt come before its payload), and only the lines wanted are
//! ever parsed. Memory grows with the number of attempts and milestones,
//! never with the agents' output.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::agent::AgentEvent;
use crate::events::{Event, Record};

/// How much of each line is kept to classify it.
const HEAD_BYTES: usize = 512;
/// How much is read at a time.
const CHUNK: usize = 1 << 20;

/// What the first bytes of a record say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineHead {
    /// The event's `type` tag, e.g. `story_event`.
    pub kind: String,
    pub story: Option<String>,
    pub attempt: Option<u32>,
}

impl LineHead {
    /// Agent output, as opposed to the few milestones of a run.
    pub fn is_output(&self) -> bool {
        self.kind == "story_event"
    }
}

/// Classify a record from its first bytes. Records are written as
/// `{"ts_ms":…,"change":"…","type":"…","story_id":"…","attempt":…,…}`:
/// the change name holds no quote, so the first `"type":"` is the tag.
pub fn line_head(prefix: &[u8]) -> Option<LineHead> {
    let text = String::from_utf8_lossy(prefix);
    let after_type = text.split_once(",\"type\":\"")?.1;
    let (kind, rest) = after_type.split_once('"')?;
    let mut head = LineHead {
        kind: kind.to_owned(),
        story: None,
        attempt: None,
    };
    if let Some(rest) = rest.strip_prefix(",\"story_id\":") {
        // A JSON string: let serde unescape it.
        let mut de = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        if let Some(Ok(story)) = de.next() {
            let consumed = de.byte_offset();
            head.story = Some(story);
            if let Some(rest) = rest[consumed..].strip_prefix(",\"attempt\":") {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                head.attempt = digits.parse().ok();
            }
        }
    }
    Some(head)
}

/// Walk the complete lines of `file` from `from` (which must start a line),
/// handing each one's offset, length (without the newline) and first bytes
/// to `on_line`. Returns where the last complete line ends: a line still
/// being written is left for the next call.
pub fn scan_lines(
    file: &File,
    from: u64,
    mut on_line: impl FnMut(u64, u64, &[u8]),
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut pos = from;
    let mut line_start = from;
    let mut head: Vec<u8> = Vec::with_capacity(HEAD_BYTES);
    loop {
        let n = file.read_at(&mut buf, pos)?;
        if n == 0 {
            return Ok(line_start);
        }
        let chunk = &buf[..n];
        let mut at = 0;
        while at < n {
            match memchr::memchr(b'\n', &chunk[at..]) {
                Some(i) => {
                    let end = at + i;
                    if head.len() < HEAD_BYTES {
                        let take = (end - at).min(HEAD_BYTES - head.len());
                        head.extend_from_slice(&chunk[at..at + take]);
                    }
                    let line_end = pos + end as u64;
                    on_line(line_start, line_end - line_start, &head);
                    head.clear();
                    at = end + 1;
                    line_start = line_end + 1;
                }
                None => {
                    if head.len() < HEAD_BYTES {
                        let take = (n - at).min(HEAD_BYTES - head.len());
                        head.extend_from_slice(&chunk[at..at + take]);
                    }
                    at = n;
                }
            }
        }
        pos += n as u64;
    }
}

/// Where `offset` lands on a line start: itself if it starts one, else the
/// start of the next line.
pub fn next_line_start(file: &File, offset: u64) -> std::io::Result<u64> {
    if offset == 0 {
        return Ok(0);
    }
    let mut byte = [0u8; 1];
    if file.read_at(&mut byte, offset - 1)? == 1 && byte[0] == b'\n' {
        return Ok(offset);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut pos = offset;
    loop {
        let n = file.read_at(&mut buf, pos)?;
        if n == 0 {
            return Ok(pos);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(pos + i as u64 + 1);
        }
        pos += n as u64;
    }
}

/// Read one line at `offset` and parse it as a record.
pub fn read_record(file: &File, offset: u64, len: u64) -> Option<Record> {
    let mut line = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut line, offset).ok()?;
    serde_json::from_slice(&line).ok()
}

/// Parse the records of `path` between `from` and `to` whose head `want`
/// accepts, in order. Lines not wanted are never parsed.
pub fn read_events_where(
    path: &Path,
    from: u64,
    to: u64,
    want: impl Fn(&LineHead) -> bool,
    mut on_record: impl FnMut(Record),
) -> std::io::Result<()> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    let start = next_line_start(&file, from)?;
    // Each wanted line is read and handed on as soon as it is found, so
    // memory holds one line at a time.
    scan_lines(&file, start, |offset, len, head| {
        if offset >= to {
            return;
        }
        if line_head(head).is_some_and(|head| want(&head))
            && let Some(record) = read_record(&file, offset, len)
        {
            on_record(record);
        }
    })?;
    Ok(())
}

/// Every record of `path` between `from` and `to`, in order.
pub fn read_events(
    path: &Path,
    from: u64,
    to: u64,
    on_record: impl FnMut(Record),
) -> std::io::Result<()> {
    read_events_where(path, from, to, |_| true, on_record)
}

/// Where one attempt's agent output lies in `events.jsonl`. Attempts run one
/// after another, so their output is one stretch of the file, interleaved
/// only with a few milestones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSpan {
    pub story: String,
    pub attempt: u32,
    /// The first byte of its first output line.
    pub start: u64,
    /// Just past its last output line.
    pub end: u64,
    pub lines: u64,
    pub bytes: u64,
}

/// The offsets of a run's `events.jsonl`: one span per attempt and every
/// milestone line, kept up to date as the file grows.
#[derive(Debug, Default, Clone)]
pub struct EventsIndex {
    pub spans: Vec<AttemptSpan>,
    /// Offset and length of each line that is not agent output.
    pub milestones: Vec<(u64, u64)>,
    /// Where indexing stopped: the end of the last complete line.
    pub indexed: u64,
}

impl EventsIndex {
    /// Index the lines appended since the last call. Returns the milestones
    /// found, as offsets into `milestones`.
    pub fn update(&mut self, file: &File) -> std::io::Result<std::ops::Range<usize>> {
        self.update_until(file, u64::MAX)
    }

    /// [`EventsIndex::update`], for the lines that start before `limit`.
    pub fn update_until(
        &mut self,
        file: &File,
        limit: u64,
    ) -> std::io::Result<std::ops::Range<usize>> {
        let first_new = self.milestones.len();
        let spans = &mut self.spans;
        let milestones = &mut self.milestones;
        let end = scan_lines(file, self.indexed, |offset, len, head| {
            if offset >= limit {
                return;
            }
            let Some(head) = line_head(head) else {
                return;
            };
            if !head.is_output() {
                milestones.push((offset, len));
                return;
            }
            let (Some(story), Some(attempt)) = (head.story, head.attempt) else {
                return;
            };
            let end = offset + len + 1;
            match spans.last_mut() {
                Some(span) if span.story == story && span.attempt == attempt => {
                    span.end = end;
                    span.lines += 1;
                    span.bytes += len + 1;
                }
                _ => spans.push(AttemptSpan {
                    story,
                    attempt,
                    start: offset,
                    end,
                    lines: 1,
                    bytes: len + 1,
                }),
            }
        })?;
        self.indexed = end.min(limit.max(self.indexed));
        Ok(first_new..self.milestones.len())
    }

    /// The span of one attempt (the last, if output of an attempt was ever
    /// split by another's).
    pub fn span(&self, story: &str, attempt: u32) -> Option<&AttemptSpan> {
        self.spans
            .iter()
            .rev()
            .find(|span| span.story == story && span.attempt == attempt)
    }
}

/// The agent events of `span` within its last `max_bytes`, and how many
/// bytes before them were left out.
pub fn read_transcript_tail(
    path: &Path,
    span: &AttemptSpan,
    max_bytes: u64,
) -> std::io::Result<(Vec<AgentEvent>, u64)> {
    let from = span.end.saturating_sub(max_bytes).max(span.start);
    let file = File::open(path)?;
    let from = next_line_start(&file, from)?;
    let mut events = Vec::new();
    read_events_where(
        path,
        from,
        span.end,
        |head| {
            head.is_output()
                && head.story.as_deref() == Some(span.story.as_str())
                && head.attempt == Some(span.attempt)
        },
        |record| {
            if let Event::StoryEvent { event, .. } = record.event {
                events.push(event);
            }
        },
    )?;
    Ok((events, from - span.start))
}

/// The size of `path`, 0 when it is missing.
pub fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentEvent;

    fn record(event: Event) -> String {
        serde_json::to_string(&Record {
            ts_ms: 1,
            change: "greet".into(),
            event,
        })
        .unwrap()
    }

    fn output(story: &str, attempt: u32, text: &str) -> String {
        record(Event::StoryEvent {
            story_id: story.into(),
            attempt,
            event: AgentEvent::Message {
                text: text.into(),
                tool_uses: vec![],
            },
        })
    }

    #[test]
    fn heads_name_type_story_and_attempt() {
        let line = output("1\"x", 2, &"a".repeat(2000));
        let head = line_head(&line.as_bytes()[..HEAD_BYTES]).unwrap();
        assert_eq!(
            head,
            LineHead {
                kind: "story_event".into(),
                story: Some("1\"x".into()),
                attempt: Some(2)
            }
        );
        let warning = record(Event::Warning {
            message: "\"type\":\"story_event\"".into(),
        });
        assert_eq!(line_head(warning.as_bytes()).unwrap().kind, "warning");
    }

    #[test]
    fn the_index_keeps_one_span_per_attempt_and_skips_a_partial_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut text = String::new();
        text.push_str(&record(Event::Warning {
            message: "w".into(),
        }));
        text.push('\n');
        for i in 0..5 {
            text.push_str(&output(
                "1",
                1,
                &format!("line {i} {}", "x".repeat(300_000)),
            ));
            text.push('\n');
        }
        text.push_str(&output("2", 1, "other"));
        text.push('\n');
        let complete = text.len() as u64;
        text.push_str("{\"ts_ms\":1,\"change\":\"greet\",\"type\":\"warn");
        std::fs::write(&path, &text).unwrap();

        let mut index = EventsIndex::default();
        let new = index.update(&File::open(&path).unwrap()).unwrap();
        assert_eq!(new, 0..1);
        assert_eq!(index.indexed, complete);
        assert_eq!(index.spans.len(), 2);
        assert_eq!(index.spans[0].lines, 5);

        let (tail, skipped) = read_transcript_tail(&path, &index.spans[0], 400_000).unwrap();
        assert_eq!(tail.len(), 1, "only the last line fits");
        assert!(skipped > 0);
        let AgentEvent::Message { text, .. } = &tail[0] else {
            panic!("a message")
        };
        assert!(text.starts_with("line 4 "));
    }
}
