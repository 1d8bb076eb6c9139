//! Reading an agent's output: the [`StreamParser`] every format implements,
//! the [`StreamFormat`] an invocation names, and what the JSON-lines
//! parsers share.
//!
//! Each preset brings its own parser (see [`presets`](super::presets)); a
//! user's command is read as plain text unless its first line reveals a
//! preset's format. The items at the end hold what every JSON-lines parser
//! would otherwise repeat: reading a typed event, the closing report of a
//! stream cut short, and telling a rate limit from another error.

use serde_json::Value;

use super::events::{AgentEvent, Done, RateLimit};
use super::plain::{PlainParser, TextTail};
use super::presets::{self, Preset};
use super::promise::PromiseScope;

/// Turns an agent's output, line by line, into [`AgentEvent`]s.
///
/// Parsers never fail: a line they do not understand is skipped, because
/// agent CLIs add event types and print stray warnings. They keep only what
/// the final message needs, so memory stays bounded however much the agent
/// prints.
pub trait StreamParser: Send {
    /// Consumes one line (without its newline) and returns the messages and
    /// tool results it holds. Never returns [`AgentEvent::Done`].
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent>;

    /// Ends the stream: the agent's closing report if it gave one, otherwise
    /// what could be gathered from the stream, or `None` if nothing was seen.
    fn finish(&mut self) -> Option<Done>;

    /// Events held back to be reported together, called after every read
    /// of the agent's output and before [`finish`](Self::finish). Plain
    /// text is reported per read rather than per line, so a flood of short
    /// lines does not turn into a flood of events.
    fn flush(&mut self) -> Vec<AgentEvent> {
        Vec::new()
    }

    /// Where in [`Done::final_text`] a promise may be read from.
    fn promise_scope(&self) -> PromiseScope {
        PromiseScope::FinalMessage
    }
}

/// What a JSON-lines format's parser knows: what each event holds and how
/// the stream closes. Reading the lines is [`Json`]'s, once for all.
pub(super) trait JsonEvents: Send {
    /// What one event of the stream, of type `kind`, holds.
    fn on_event(&mut self, event: Value, kind: String) -> Vec<AgentEvent>;

    /// The closing report (see [`StreamParser::finish`]), from what was
    /// gathered and the `lines` read.
    fn close(&mut self, lines: &JsonLines) -> Option<Done>;
}

/// A JSON-lines stream, one event a line with its `type`, read for the
/// format's [`JsonEvents`].
pub(super) struct Json<P> {
    lines: JsonLines,
    events: P,
}

impl<P: JsonEvents> Json<P> {
    pub(super) fn new(events: P) -> Self {
        Json {
            lines: JsonLines::default(),
            events,
        }
    }
}

impl<P: JsonEvents> StreamParser for Json<P> {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        match self.lines.event(line) {
            Some((event, kind)) => self.events.on_event(event, kind),
            None => Vec::new(),
        }
    }

    fn finish(&mut self) -> Option<Done> {
        self.events.close(&self.lines)
    }
}

/// The output format an agent CLI is run with.
///
/// Spelled in JSON as the preset's name, `plain` or `auto`.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum StreamFormat {
    /// What this preset's CLI prints.
    Preset(&'static Preset),
    /// Unstructured text.
    Plain,
    /// Decided from the first non-empty line.
    #[default]
    Auto,
}

impl StreamFormat {
    fn name(self) -> &'static str {
        match self {
            StreamFormat::Preset(preset) => preset.name,
            StreamFormat::Plain => "plain",
            StreamFormat::Auto => "auto",
        }
    }
}

impl PartialEq for StreamFormat {
    fn eq(&self, other: &StreamFormat) -> bool {
        self.name() == other.name()
    }
}

impl Eq for StreamFormat {}

impl From<StreamFormat> for String {
    fn from(format: StreamFormat) -> String {
        format.name().to_owned()
    }
}

/// A format name that is neither a preset's, `plain` nor `auto`.
#[derive(Debug, thiserror::Error)]
#[error("no stream format is named '{0}'")]
pub struct UnknownFormat(String);

impl TryFrom<String> for StreamFormat {
    type Error = UnknownFormat;

    fn try_from(name: String) -> Result<StreamFormat, UnknownFormat> {
        match name.as_str() {
            "plain" => Ok(StreamFormat::Plain),
            "auto" => Ok(StreamFormat::Auto),
            _ => presets::lookup(&name)
                .map(StreamFormat::Preset)
                .ok_or(UnknownFormat(name)),
        }
    }
}

/// A fresh parser for `format`.
pub fn parser_for(format: StreamFormat) -> Box<dyn StreamParser> {
    match format {
        StreamFormat::Preset(preset) => (preset.parser)(),
        StreamFormat::Plain => Box::new(PlainParser::new()),
        StreamFormat::Auto => Box::new(SniffingParser { chosen: None }),
    }
}

/// The format a stream's first non-empty line reveals: the last preset
/// of [`presets::TABLE`] that knows its first event (a later preset's test
/// is the narrower one where two CLIs start alike), so that no preset's
/// JSON is mistaken for plain text; anything else is plain.
pub fn sniff_format(first_line: &str) -> StreamFormat {
    let Ok(Value::Object(event)) = serde_json::from_str(first_line) else {
        return StreamFormat::Plain;
    };
    let Some(kind) = event.get("type").and_then(Value::as_str) else {
        return StreamFormat::Plain;
    };
    presets::TABLE
        .iter()
        .rev()
        .find(|preset| {
            preset
                .first_event
                .is_some_and(|is_first| is_first(kind, &event))
        })
        .map_or(StreamFormat::Plain, StreamFormat::Preset)
}

/// Waits for the first non-empty line, then hands everything to the parser
/// for the format that line reveals.
struct SniffingParser {
    chosen: Option<Box<dyn StreamParser>>,
}

impl StreamParser for SniffingParser {
    fn feed_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if self.chosen.is_none() && line.trim().is_empty() {
            return Vec::new();
        }
        self.chosen
            .get_or_insert_with(|| parser_for(sniff_format(line)))
            .feed_line(line)
    }

    fn flush(&mut self) -> Vec<AgentEvent> {
        self.chosen
            .as_mut()
            .map(|parser| parser.flush())
            .unwrap_or_default()
    }

    fn finish(&mut self) -> Option<Done> {
        self.chosen.as_mut().and_then(|parser| parser.finish())
    }

    fn promise_scope(&self) -> PromiseScope {
        match &self.chosen {
            Some(parser) => parser.promise_scope(),
            None => PromiseScope::LastLine,
        }
    }
}

/// The most of a final message a JSON-lines parser keeps for the promise
/// check.
pub(super) const FINAL_MESSAGE_BYTES: usize = 1024 * 1024;

/// What every JSON-lines parser notes about its stream as a whole: whether
/// it held any event at all.
#[derive(Debug, Default)]
pub(super) struct JsonLines {
    saw_event: bool,
}

impl JsonLines {
    /// The event on `line` and its type. Any other line (a warning, a cut
    /// oversized line) is noise, not a failure.
    pub(super) fn event(&mut self, line: &str) -> Option<(Value, String)> {
        let event: Value = serde_json::from_str(line).ok()?;
        let kind = event["type"].as_str()?.to_owned();
        self.saw_event = true;
        Some((event, kind))
    }

    /// Whether any event was read.
    pub(super) fn saw_event(&self) -> bool {
        self.saw_event
    }

    /// The report of a stream that ended before its closing event: what was
    /// said last, with the exit status left to decide; `None` when nothing
    /// was seen.
    pub(super) fn cut_short(&self, final_message: &TextTail) -> Option<Done> {
        self.saw_event.then(|| Done {
            final_text: final_message.as_str().to_owned(),
            ..Done::default()
        })
    }
}

/// The string at `key` of `value`, or empty.
pub(super) fn string_at(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

/// A string's text without its surrounding blanks; `None` when the value
/// is no string or holds nothing but blanks.
pub(super) fn nonblank(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// An error the agent reported and nothing since has overcome.
#[derive(Debug)]
pub(super) struct ErrorReport {
    pub message: String,
    pub rate_limited: bool,
}

impl ErrorReport {
    /// The rate limit this error is, if it is one.
    pub(super) fn rate_limit(&self) -> Option<RateLimit> {
        self.rate_limited.then(|| reset_from_words(&self.message))
    }

    /// `done` failed with the error left unresolved, if one was.
    pub(super) fn settle(unresolved: Option<ErrorReport>, done: Done) -> Done {
        match unresolved {
            None => done,
            Some(error) => Done {
                is_error: true,
                rate_limit: error.rate_limit(),
                error: Some(error.message),
                ..done
            },
        }
    }
}

/// The rate limit an error message names, if it names one (see
/// [`mentions_rate_limit`]).
pub(super) fn rate_limit_in(error: Option<&str>) -> Option<RateLimit> {
    error
        .filter(|error| mentions_rate_limit(error))
        .map(reset_from_words)
}

/// A rate limit whose reset time is read from the agent's words where they
/// give one (Gemini CLI's `Suggested retry after 891s.`), else unknown.
pub(super) fn reset_from_words(message: &str) -> RateLimit {
    RateLimit {
        reset_at_unix: retry_after_in(message).map(|secs| now_unix().saturating_add(secs)),
        message: message.to_owned(),
    }
}

/// The seconds of a `retry after Ns` in `message`, as Gemini CLI words the
/// provider's `RetryInfo` delay.
fn retry_after_in(message: &str) -> Option<u64> {
    let lower = message.to_lowercase();
    let (_, after) = lower.split_once("retry after ")?;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    let rest = &after[digits.len()..];
    if !rest.starts_with('s') {
        return None;
    }
    digits.parse().ok()
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Whether a provider error message means "rate or quota limited".
pub(super) fn mentions_rate_limit(message: &str) -> bool {
    let message = message.to_lowercase();
    [
        "429",
        "rate limit",
        "rate_limit",
        "usage limit",
        "too many requests",
        "resource_exhausted",
        "quota",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Conclusion, DEFAULT_TOKEN, ExitStatusKind, conclude};

    fn conclude_with(format: StreamFormat, transcript: &str, exit: i32) -> Conclusion {
        let mut parser = parser_for(format);
        for line in transcript.lines() {
            parser.feed_line(line);
        }
        let done = parser.finish();
        conclude(
            done.as_ref(),
            ExitStatusKind::Exited(exit),
            DEFAULT_TOKEN,
            parser.promise_scope(),
        )
    }

    #[test]
    fn auto_falls_back_to_plain_text_rules() {
        let transcript = "Prompt: finish with <promise>COMPLETE</promise>\nthinking\n";
        assert_eq!(
            conclude_with(StreamFormat::Auto, transcript, 0),
            Conclusion::NoSignal
        );
        let transcript =
            "Prompt: finish with <promise>COMPLETE</promise>\n<promise>COMPLETE</promise>\n";
        assert_eq!(
            conclude_with(StreamFormat::Auto, transcript, 0),
            Conclusion::Complete
        );
    }

    #[test]
    fn auto_with_no_output_has_no_done() {
        let mut parser = parser_for(StreamFormat::Auto);
        parser.feed_line("");
        assert_eq!(parser.finish(), None);
    }

    #[test]
    fn formats_serialise_as_snake_case_names() {
        let json = serde_json::to_string(&StreamFormat::Preset(&presets::claude::PRESET))
            .expect("serialisable");
        assert_eq!(json, "\"claude\"");
        let back: StreamFormat = serde_json::from_str("\"auto\"").expect("parsable");
        assert_eq!(back, StreamFormat::Auto);
    }

    /// What the real CLIs printed when the model stand-in answered with
    /// their provider's own limit error, read as usage limits.
    #[test]
    fn the_real_clis_usage_limit_transcripts_read_as_usage_limits() {
        let cases = [
            (
                "claude",
                include_str!("../../tests/fixtures/usage-limits/claude-2.1.332-spend-limit.jsonl"),
                "API Error: Request rejected (429) · You have reached your spend limit.",
            ),
            (
                "codex",
                include_str!(
                    "../../tests/fixtures/usage-limits/codex-0.169.0-insufficient-quota.jsonl"
                ),
                "Quota exceeded. Check your plan and billing details.",
            ),
        ];
        for (name, transcript, words) in cases {
            let preset = presets::lookup(name).expect("a preset");
            let mut parser = parser_for(StreamFormat::Preset(preset));
            for line in transcript.lines() {
                parser.feed_line(line);
            }
            let done = parser.finish().expect("a done event");
            let limit = done.rate_limit.expect("a usage limit");
            assert_eq!(limit.message, words, "{name}");
            assert_eq!(limit.reset_at_unix, None, "{name} prints no reset time");
        }
    }

    #[test]
    fn a_suggested_retry_after_is_read_as_the_reset() {
        assert_eq!(
            retry_after_in(
                "[API Error: Resource has been exhausted.\nSuggested retry after 891s.]"
            ),
            Some(891)
        );
        assert_eq!(retry_after_in("retry after 5 minutes"), None);
        assert_eq!(retry_after_in("Quota exceeded."), None);
        let limit = reset_from_words("Suggested retry after 30s.");
        let reset = limit.reset_at_unix.expect("a reset");
        assert!(
            reset >= now_unix() + 29 && reset <= now_unix() + 30,
            "{reset}"
        );
    }
}
