//! Raw text output, for agent CLIs without a structured stream.
//!
//! Without structure there is no way to tell the model's last message from
//! an echoed prompt or a tool's output, so every line is reported as output
//! and the promise only counts on the last non-empty line. Only a bounded
//! tail is kept: an agent may print gigabytes, and the end is all that
//! matters for the promise.

use super::StreamParser;
use super::events::{AgentEvent, Done};
use super::promise::PromiseScope;

/// How much trailing output a plain run keeps as its final text.
const PLAIN_TAIL_BYTES: usize = 64 * 1024;

/// The most text one message event holds before it is reported.
const MESSAGE_BYTES: usize = 64 * 1024;

/// Parses plain text output: the lines of each read are one message, the
/// tail is the final text.
pub(super) struct PlainParser {
    tail: TextTail,
    /// Non-blank lines since the last report.
    pending: String,
}

impl PlainParser {
    pub(super) fn new() -> Self {
        PlainParser {
            tail: TextTail::new(PLAIN_TAIL_BYTES),
            pending: String::new(),
        }
    }

    fn take_message(&mut self) -> Vec<AgentEvent> {
        if self.pending.is_empty() {
            return Vec::new();
        }
        let text = std::mem::take(&mut self.pending);
        vec![AgentEvent::Message {
            text: text.trim_end_matches('\n').to_owned(),
            tool_uses: Vec::new(),
        }]
    }
}

impl StreamParser for PlainParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        self.tail.push_str(line);
        self.tail.push_str("\n");
        if line.trim().is_empty() {
            return Vec::new();
        }
        self.pending.push_str(line);
        self.pending.push('\n');
        if self.pending.len() >= MESSAGE_BYTES {
            return self.take_message();
        }
        Vec::new()
    }

    fn flush(&mut self) -> Vec<AgentEvent> {
        self.take_message()
    }

    fn finish(&mut self) -> Option<Done> {
        Some(Done {
            final_text: self.tail.as_str().trim_end().to_owned(),
            ..Done::default()
        })
    }

    fn promise_scope(&self) -> PromiseScope {
        PromiseScope::LastLine
    }
}

/// The last `limit` bytes of a growing text, cut on a character boundary.
///
/// Appending is amortised O(1): the front is only dropped once the buffer
/// holds twice the limit, so memory stays below `2 * limit` plus one push.
#[derive(Debug, Clone)]
pub(super) struct TextTail {
    text: String,
    limit: usize,
}

impl TextTail {
    pub(super) fn new(limit: usize) -> Self {
        TextTail {
            text: String::new(),
            limit,
        }
    }

    pub(super) fn push_str(&mut self, s: &str) {
        if s.len() >= self.limit {
            self.text.clear();
            self.text.push_str(crate::process::tail_str(s, self.limit));
            return;
        }
        self.text.push_str(s);
        if self.text.len() > self.limit.saturating_mul(2) {
            let keep_from =
                self.text.len() - crate::process::tail_str(&self.text, self.limit).len();
            self.text.drain(..keep_from);
        }
    }

    pub(super) fn clear(&mut self) {
        self.text.clear();
    }

    pub(super) fn as_str(&self) -> &str {
        crate::process::tail_str(&self.text, self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::promise::{Conclusion, DEFAULT_TOKEN, conclude};
    use crate::agent::{ExitStatusKind, StreamParser};

    fn run_lines(lines: &[&str]) -> (Vec<AgentEvent>, Done) {
        let mut parser = PlainParser::new();
        let mut events = Vec::new();
        for line in lines {
            events.extend(parser.feed_line(line));
        }
        events.extend(parser.flush());
        let done = parser.finish().expect("plain output always yields a done");
        (events, done)
    }

    #[test]
    fn the_lines_of_one_read_are_one_message_without_blank_lines() {
        let (events, done) = run_lines(&["hello", "", "world"]);
        let texts: Vec<_> = events
            .iter()
            .map(|event| match event {
                AgentEvent::Message { text, .. } => text.as_str(),
                other => panic!("unexpected event {other:?}"),
            })
            .collect();
        assert_eq!(texts, ["hello\nworld"]);
        assert_eq!(done.final_text, "hello\n\nworld");
        assert!(!done.is_error);
    }

    #[test]
    fn a_promise_only_counts_on_the_last_line() {
        let parser = PlainParser::new();
        let ok = ExitStatusKind::Exited(0);
        let (_, echoed) = run_lines(&[
            "Prompt: when done, print <promise>COMPLETE</promise>",
            "working on it",
        ]);
        assert_eq!(
            conclude(Some(&echoed), ok, DEFAULT_TOKEN, parser.promise_scope()),
            Conclusion::NoSignal
        );
        let (_, finished) = run_lines(&[
            "Prompt: when done, print <promise>COMPLETE</promise>",
            "working on it",
            "<promise>COMPLETE</promise>",
            "",
        ]);
        assert_eq!(
            conclude(Some(&finished), ok, DEFAULT_TOKEN, parser.promise_scope()),
            Conclusion::Complete
        );
    }

    #[test]
    fn the_tail_stays_bounded() {
        let mut parser = PlainParser::new();
        let line = "x".repeat(1000);
        for _ in 0..1000 {
            parser.feed_line(&line);
        }
        parser.feed_line("<promise>COMPLETE</promise>");
        assert!(parser.tail.text.len() <= 2 * PLAIN_TAIL_BYTES + line.len() + 1);
        let done = parser.finish().expect("done");
        assert!(done.final_text.len() <= PLAIN_TAIL_BYTES);
        assert!(done.final_text.ends_with("<promise>COMPLETE</promise>"));
    }

    #[test]
    fn text_tail_cuts_on_char_boundaries() {
        let mut tail = TextTail::new(5);
        tail.push_str("ab");
        tail.push_str("cdé");
        assert_eq!(tail.as_str(), "bcdé");
        tail.push_str("ééééé");
        assert_eq!(tail.as_str(), "éé");
        tail.push_str("0123456789");
        assert_eq!(tail.as_str(), "56789");
        tail.clear();
        assert_eq!(tail.as_str(), "");
    }
}
