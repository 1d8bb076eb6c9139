//! Issue 28: every agent stream parser on generated output. Each parser
//! is fed lines the way the runner feeds it (bytes decoded lossily, one
//! carriage return taken off, `flush` after every read, `finish` at the
//! end): the real events of its recorded transcripts under
//! `tests/fixtures/<agent>/`, those events with fields replaced by values
//! of the wrong type (numbers at their limits included), lines cut at any
//! byte (inside a character too), and awkward text. Whatever it is fed,
//! a parser reports messages and tool results but never the end, and what
//! it finishes with can be concluded, searched for a promise and for a
//! trailing question.

use std::path::{Path, PathBuf};

use git_ralph::agent::{
    AgentEvent, DEFAULT_TOKEN, ExitStatusKind, PromiseScope, StreamFormat, conclude, parse_promise,
    parse_promise_on_last_line, parser_for, trailing_question,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

use crate::harness::fuzz::{awkward_line, cases, replace_nodes};

/// The lines of every transcript in `tests/fixtures/<dir>/`.
fn fixture_lines(dir: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", root.display()))
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|ext| ext == "jsonl" || ext == "txt")
        })
        .collect();
    files.sort();
    let lines: Vec<String> = files
        .iter()
        .flat_map(|path| {
            std::fs::read_to_string(path)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        !lines.is_empty(),
        "no transcript lines in {}",
        root.display()
    );
    lines
}

/// Values of the wrong type for any field, numbers at their limits first:
/// usage counters summed across events must not overflow.
fn wrong_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        3 => select(&[u64::MAX, u64::MAX / 2 + 1, u64::MAX - 1, 1 << 63][..]).prop_map(Value::from),
        1 => select(&[i64::MIN, -1, 0, 429, 529, 1_750_000_000][..]).prop_map(Value::from),
        1 => select(&[1e308, -1e308, 0.5, -0.0][..]).prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        2 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => awkward_line(24).prop_map(Value::String),
        2 => select(
            &[
                "<promise>COMPLETE</promise>",
                "<promise>FAILED: no</promise>",
                "</promise>",
                "<promise>",
                "Should I?",
                "```",
                "success",
                "error",
                "assistant",
                "text",
                "tool_result",
                "rate limit",
                "Claude AI usage limit reached|1750000000",
                "{\"error\":{\"message\":\"x\"}}",
                "Tokens: 1e400 sent, inf received.",
            ][..]
        )
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map(
                select(
                    &[
                        "type",
                        "text",
                        "content",
                        "message",
                        "id",
                        "success",
                        "input_tokens"
                    ][..]
                ),
                inner,
                0..3
            )
            .prop_map(|map| Value::Object(
                map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

/// One line of generated output.
#[derive(Debug, Clone)]
enum Line {
    /// A line of a recorded transcript, as it was.
    Real(usize),
    /// A recorded event with fields replaced: (where, by what).
    WrongTypes(usize, Vec<(f64, Value)>),
    /// A recorded line, its text made multi-byte, cut at a fraction of its bytes.
    Cut(usize, f64),
    /// Awkward text.
    Awkward(String),
}

fn line() -> impl Strategy<Value = Line> {
    let index = any::<usize>();
    prop_oneof![
        3 => index.prop_map(Line::Real),
        5 => (index, proptest::collection::vec((0.0..1.0f64, wrong_value()), 1..4))
            .prop_map(|(index, changes)| Line::WrongTypes(index, changes)),
        2 => (index, 0.0..1.0f64).prop_map(|(index, at)| Line::Cut(index, at)),
        1 => awkward_line(64).prop_map(Line::Awkward),
    ]
}

/// The bytes of `line`, drawn from `real`.
fn render(line: &Line, real: &[String]) -> Vec<u8> {
    let pick = |index: usize| &real[index % real.len()];
    match line {
        Line::Real(index) => pick(*index).clone().into_bytes(),
        Line::WrongTypes(index, changes) => {
            let Ok(mut event) = serde_json::from_str::<Value>(pick(*index)) else {
                return pick(*index).clone().into_bytes();
            };
            // The event's type decides whether a parser reads it at all.
            replace_nodes(&mut event, changes, &["/type"]);
            serde_json::to_vec(&event).expect("JSON")
        }
        Line::Cut(index, at) => {
            let text = pick(*index).replace('e', "é").replace('o', "日");
            let end = ((text.len() as f64) * at) as usize;
            text.as_bytes()[..end].to_vec()
        }
        Line::Awkward(text) => text.clone().into_bytes(),
    }
}

/// Feeds `lines` to a fresh parser for `format` as the runner does, then
/// checks what it finished with.
fn check_stream(format: StreamFormat, lines: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let mut parser = parser_for(format);
    let mut events = Vec::new();
    for bytes in lines {
        let line = String::from_utf8_lossy(bytes);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        events.extend(parser.feed_line(line));
        events.extend(parser.flush());
    }
    events.extend(parser.flush());
    for event in &events {
        prop_assert!(
            !matches!(event, AgentEvent::Done(_)),
            "feed_line reported the end"
        );
        // Events go to events.jsonl as they are.
        serde_json::to_string(event).expect("an event serialises");
    }
    let scope = parser.promise_scope();
    let done = parser.finish();
    if let Some(done) = &done {
        serde_json::to_string(done).expect("the end serialises");
        let _ = done.usage.total();
        let _ = trailing_question(&done.final_text);
        let _ = parse_promise(&done.final_text, DEFAULT_TOKEN);
        let _ = parse_promise_on_last_line(&done.final_text, "");
    }
    for exit in [
        ExitStatusKind::Exited(0),
        ExitStatusKind::Exited(1),
        ExitStatusKind::Signaled(9),
        ExitStatusKind::TimedOut,
        ExitStatusKind::Stopped,
    ] {
        for scope in [scope, PromiseScope::LastLine, PromiseScope::FinalMessage] {
            let _ = conclude(done.as_ref(), exit, DEFAULT_TOKEN, scope);
        }
    }
    Ok(())
}

/// The transcripts each format is fuzzed from.
fn format_dirs(format: StreamFormat) -> Vec<&'static str> {
    match format {
        StreamFormat::Preset(preset) => vec![fixture_dir(preset.name)],
        StreamFormat::Plain => vec!["aider", "claude-code"],
        StreamFormat::Auto => git_ralph::agent::presets::TABLE
            .iter()
            .map(|preset| fixture_dir(preset.name))
            .collect(),
    }
}

/// Where a preset's transcripts are.
fn fixture_dir(name: &'static str) -> &'static str {
    match name {
        "claude" => "claude-code",
        other => other,
    }
}

/// The format of the preset `name`.
fn preset(name: &str) -> StreamFormat {
    StreamFormat::Preset(git_ralph::agent::presets::lookup(name).expect("a preset"))
}

fn fuzz_format(format: StreamFormat, generated: &[Line]) -> Result<(), TestCaseError> {
    thread_local! {
        static REAL: std::cell::RefCell<std::collections::HashMap<String, Vec<String>>> =
            Default::default();
    }
    let key = format!("{format:?}");
    let real = REAL.with(|cache| {
        cache
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| {
                format_dirs(format)
                    .iter()
                    .flat_map(|dir| fixture_lines(dir))
                    .collect()
            })
            .clone()
    });
    let lines: Vec<Vec<u8>> = generated.iter().map(|line| render(line, &real)).collect();
    check_stream(format, &lines)
}

fn stream() -> impl Strategy<Value = Vec<Line>> {
    proptest::collection::vec(line(), 0..32)
}

proptest! {
    #![proptest_config(cases(96))]

    /// 96 cases of up to 32 lines: Claude Code's stream-json.
    #[test]
    fn fuzz_agent_stream_claude(lines in stream()) {
        fuzz_format(preset("claude"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Codex's exec JSON.
    #[test]
    fn fuzz_agent_stream_codex(lines in stream()) {
        fuzz_format(preset("codex"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Gemini CLI's stream-json.
    #[test]
    fn fuzz_agent_stream_gemini(lines in stream()) {
        fuzz_format(preset("gemini"), &lines)?;
    }

    /// 96 cases of up to 32 lines: opencode's JSON events.
    #[test]
    fn fuzz_agent_stream_opencode(lines in stream()) {
        fuzz_format(preset("opencode"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Amp's stream-json.
    #[test]
    fn fuzz_agent_stream_amp(lines in stream()) {
        fuzz_format(preset("amp"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Cursor CLI's stream-json.
    #[test]
    fn fuzz_agent_stream_cursor(lines in stream()) {
        fuzz_format(preset("cursor"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Copilot CLI's JSON events.
    #[test]
    fn fuzz_agent_stream_copilot(lines in stream()) {
        fuzz_format(preset("copilot"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Aider's console output.
    #[test]
    fn fuzz_agent_stream_aider(lines in stream()) {
        fuzz_format(preset("aider"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Qwen Code's stream-json.
    #[test]
    fn fuzz_agent_stream_qwen(lines in stream()) {
        fuzz_format(preset("qwen"), &lines)?;
    }

    /// 96 cases of up to 32 lines: pi's JSON events.
    #[test]
    fn fuzz_agent_stream_pi(lines in stream()) {
        fuzz_format(preset("pi"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Kilo's JSON events (opencode's).
    #[test]
    fn fuzz_agent_stream_kilo(lines in stream()) {
        fuzz_format(preset("kilo"), &lines)?;
    }

    /// 96 cases of up to 32 lines: Factory Droid's stream-json.
    #[test]
    fn fuzz_agent_stream_droid(lines in stream()) {
        fuzz_format(preset("droid"), &lines)?;
    }

    /// 96 cases of up to 32 lines: plain text.
    #[test]
    fn fuzz_agent_stream_plain(lines in stream()) {
        fuzz_format(StreamFormat::Plain, &lines)?;
    }

    /// 96 cases of up to 32 lines: the format sniffed from the first
    /// line, fed every agent's events.
    #[test]
    fn fuzz_agent_stream_auto(lines in stream()) {
        fuzz_format(StreamFormat::Auto, &lines)?;
    }
}

proptest! {
    #![proptest_config(cases(512))]

    /// 512 cases: the promise and question readers on awkward text.
    #[test]
    fn fuzz_agent_final_text_readers(text in crate::harness::fuzz::awkward_text(200), token in awkward_line(8)) {
        let _ = parse_promise(&text, &token);
        let _ = parse_promise_on_last_line(&text, &token);
        let _ = trailing_question(&text);
    }
}

/// Found by the tests above: usage counters summed over an agent's events
/// overflowed (a panic in a debug build, nonsense in a release build) when
/// the agent printed counts near the largest number. They saturate now.
#[test]
fn issue_28_token_counts_at_their_limit_saturate_in_every_parser() {
    const MAX: u64 = u64::MAX;
    let streams: [(StreamFormat, String); 6] = [
        (
            preset("codex"),
            format!(
                "{{\"type\":\"thread.started\"}}\n\
                 {{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{MAX},\"cached_input_tokens\":{MAX},\"output_tokens\":{MAX}}}}}\n"
            ),
        ),
        (
            preset("opencode"),
            format!(
                "{{\"type\":\"step_finish\",\"part\":{{\"tokens\":{{\"input\":{MAX},\"output\":{MAX},\"reasoning\":{MAX},\"cache\":{{\"read\":{MAX},\"write\":{MAX}}}}}}}}}\n"
            ),
        ),
        (
            preset("copilot"),
            format!(
                "{{\"type\":\"assistant.message\",\"data\":{{\"content\":\"hi\",\"outputTokens\":{MAX}}}}}\n\
                 {{\"type\":\"assistant.usage\",\"data\":{{\"inputTokens\":{MAX},\"outputTokens\":{MAX},\"cacheReadTokens\":{MAX},\"cacheWriteTokens\":{MAX}}}}}\n"
            ),
        ),
        (
            preset("amp"),
            format!(
                "{{\"type\":\"assistant\",\"message\":{{\"content\":[],\"usage\":{{\"input_tokens\":{MAX},\"output_tokens\":{MAX},\"cache_creation_input_tokens\":{MAX},\"cache_read_input_tokens\":{MAX}}}}}}}\n\
                 {{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"done\"}}\n"
            ),
        ),
        (
            preset("aider"),
            "Tokens: 1e400 sent, 1e400 cache write, 1e400 cache hit, 1e400 received.\n".to_owned(),
        ),
        (
            preset("pi"),
            format!(
                "{{\"type\":\"message_end\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"usage\":{{\"input\":{MAX},\"output\":{MAX},\"cacheRead\":{MAX},\"cacheWrite\":{MAX},\"cost\":{{\"total\":1e308}}}}}}}}\n"
            ),
        ),
    ];
    for (format, once) in streams {
        let mut parser = parser_for(format);
        for _ in 0..2 {
            for line in once.lines() {
                parser.feed_line(line);
            }
        }
        let done = parser.finish().expect("an end");
        assert_eq!(done.usage.output_tokens, MAX, "{format:?}: {done:?}");
        assert_eq!(done.usage.total(), MAX, "{format:?}: {done:?}");
    }
}

/// Every format the runner can be set to.
fn formats() -> Vec<StreamFormat> {
    let mut formats: Vec<StreamFormat> = git_ralph::agent::presets::TABLE
        .iter()
        .map(StreamFormat::Preset)
        .collect();
    formats.extend([StreamFormat::Plain, StreamFormat::Auto]);
    formats
}

/// A recorded line whose longest text is `unit` repeated `count` times:
/// long enough to pass the tails parsers keep (64 KiB of plain text, 1 MiB
/// of a final message), cut on a character of up to four bytes.
fn long_line(real: &[String], index: usize, unit: &str, count: usize) -> Vec<u8> {
    let line = &real[index % real.len()];
    let long = unit.repeat(count);
    let Ok(mut event) = serde_json::from_str::<Value>(line) else {
        return format!("{line}{long}").into_bytes();
    };
    let longest = crate::harness::fuzz::json_pointers(&event, &["/type"])
        .into_iter()
        .filter_map(|pointer| Some((event.pointer(&pointer)?.as_str()?.len(), pointer)))
        .max();
    if let Some((_, pointer)) = longest
        && let Some(text) = event.pointer_mut(&pointer)
    {
        *text = Value::String(long);
    }
    serde_json::to_vec(&event).expect("JSON")
}

proptest! {
    #![proptest_config(cases(16))]

    /// 16 cases: a few recorded lines of each format, their texts made
    /// longer than what the parsers keep (up to 1.2 MB a line).
    #[test]
    fn fuzz_agent_stream_long_lines(
        format in select(formats()),
        lines in proptest::collection::vec(
            (any::<usize>(), select(&["é", "日", "😀", "a\u{301}", "x"][..]), 20_000usize..300_000),
            1..4,
        ),
    ) {
        let real: Vec<String> = format_dirs(format).iter().flat_map(|dir| fixture_lines(dir)).collect();
        let lines: Vec<Vec<u8>> = lines
            .iter()
            .map(|(index, unit, count)| long_line(&real, *index, unit, *count))
            .collect();
        check_stream(format, &lines)?;
    }
}
