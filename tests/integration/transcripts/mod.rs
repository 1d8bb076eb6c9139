//! Every agent's stream parser, read through the public parser API on the
//! transcripts in `tests/fixtures/<agent>/`: the one test that holds every
//! transcript to its expected conclusion, and one module per agent for the
//! rest of what its parser reports.
//!
//! Each transcript (`NAME.jsonl`, or `NAME.txt` for plain text) comes with
//! `NAME.exit`, the exit code the CLI returned, and `NAME.expect`, what
//! git-ralph must conclude from the two: `complete`, `failed: <reason>`,
//! `no_signal`, `asked: <question>` (no signal, ending with that question),
//! `agent_error` or `agent_error: <message>`, `rate_limited` or
//! `rate_limited: <message>`. Transcripts named `NAME.doc.*` were written from
//! a CLI's documentation rather than recorded from it.

use std::path::{Path, PathBuf};

pub(crate) use git_ralph::agent::{
    AgentEvent, Conclusion, DEFAULT_TOKEN, Done, ExitStatusKind, PromiseScope, RateLimit,
    StreamFormat, StreamParser, ToolUse, Usage, conclude, parser_for, presets, sniff_format,
    trailing_question,
};

/// A parser's test helpers: `parse`, `conclusion_of` and `fixture`, for
/// the preset `$preset` and the fixtures in `tests/fixtures/$dir/`.
macro_rules! parser_tests {
    ($preset:literal, $dir:literal) => {
        #[allow(dead_code)]
        fn parse(transcript: &str) -> (Vec<AgentEvent>, Option<Done>) {
            super::parse(super::parser_of($preset).as_mut(), transcript)
        }

        #[allow(dead_code)]
        fn conclusion_of(transcript: &str, exit_file: &str) -> Conclusion {
            super::conclusion(super::parser_of($preset).as_mut(), transcript, exit_file)
        }

        #[allow(dead_code)]
        fn fixture(name: &str) -> (String, String) {
            super::fixture($dir, name)
        }
    };
}
use parser_tests;

mod aider;
mod amp;
mod claude;
mod codex;
mod copilot;
mod cursor;
mod droid;
mod gemini;
mod kilo;
mod opencode;
mod pi;
mod qwen;

/// The format of the preset `name`.
fn format_of(name: &str) -> StreamFormat {
    presets::lookup(name)
        .unwrap_or_else(|| panic!("no preset '{name}'"))
        .format()
}

/// A fresh parser for the preset `name`.
fn parser_of(name: &str) -> Box<dyn StreamParser> {
    parser_for(format_of(name))
}

/// Checks what every CLI recorded against the stand-in reports of its
/// `complete` conversation: one shell command run as a tool, then the
/// promise, over two turns and 2,000 input tokens. Returns the events, the
/// closing report and the tool use, for what each CLI adds.
fn standin_round(parsed: (Vec<AgentEvent>, Option<Done>)) -> (Vec<AgentEvent>, Done, ToolUse) {
    let (events, done) = parsed;
    let done = done.expect("a closing report");
    assert_eq!(
        done.final_text,
        "Created hello.txt.\n\n<promise>COMPLETE</promise>"
    );
    assert_eq!(done.turns, Some(2));
    assert_eq!(done.usage.input_tokens, 2000);
    assert!(!done.is_error);
    assert_eq!(kinds(&events), ["tool_use", "tool_result", "message"]);
    let AgentEvent::Message { tool_uses, .. } = &events[0] else {
        panic!("a tool use first");
    };
    let tool = tool_uses[0].clone();
    (events, done, tool)
}

/// The shape of `events`, one word an event.
fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events
        .iter()
        .map(|event| match event {
            AgentEvent::Message { tool_uses, .. } if tool_uses.is_empty() => "message",
            AgentEvent::Message { .. } => "tool_use",
            AgentEvent::ToolResult { .. } => "tool_result",
            AgentEvent::Done(_) => "done",
        })
        .collect()
}

/// The shape of the recorded two-step scenario: a message, two tool round
/// trips with a message between them, and a last message.
pub(crate) const TWO_TOOL_ROUNDS: [&str; 7] = [
    "message",
    "tool_use",
    "tool_result",
    "message",
    "tool_use",
    "tool_result",
    "message",
];

/// Event `at` is a tool use `id` running `command`, and the next event is
/// its result `output`. Returns the tool use, for more checks.
fn assert_tool_round<'a>(
    events: &'a [AgentEvent],
    at: usize,
    id: &str,
    command: &str,
    output: &str,
) -> &'a ToolUse {
    let AgentEvent::Message { tool_uses, .. } = &events[at] else {
        panic!("expected a tool use, got {:?}", events[at]);
    };
    assert_eq!(tool_uses[0].id, id);
    assert_eq!(tool_uses[0].input["command"], command);
    assert_eq!(
        events[at + 1],
        AgentEvent::ToolResult {
            tool_use_id: Some(id.into()),
            output: output.into(),
            is_error: false
        }
    );
    &tool_uses[0]
}

/// Every event of `transcript`, line by line, and the closing report.
fn parse(parser: &mut dyn StreamParser, transcript: &str) -> (Vec<AgentEvent>, Option<Done>) {
    let mut events = Vec::new();
    for line in transcript.lines() {
        events.extend(parser.feed_line(line));
    }
    (events, parser.finish())
}

/// What git-ralph concludes from `transcript` and the exit code in
/// `exit_file`, reading the promise where this parser's format keeps it.
fn conclusion(parser: &mut dyn StreamParser, transcript: &str, exit_file: &str) -> Conclusion {
    conclude_with_done(parser, transcript, exit_file).0
}

fn conclude_with_done(
    parser: &mut dyn StreamParser,
    transcript: &str,
    exit_file: &str,
) -> (Conclusion, Option<Done>) {
    let code: i32 = exit_file.trim().parse().expect("exit file holds a code");
    let scope = parser.promise_scope();
    let (_, done) = parse(parser, transcript);
    let conclusion = conclude(
        done.as_ref(),
        ExitStatusKind::Exited(code),
        DEFAULT_TOKEN,
        scope,
    );
    (conclusion, done)
}

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The transcript `name` of `tests/fixtures/<dir>/`, recorded or
/// documentation-based, whichever is there, and its exit file.
fn fixture(dir: &str, name: &str) -> (String, String) {
    let dir = fixtures_root().join(dir);
    for stem in [name.to_owned(), format!("{name}.doc")] {
        for extension in ["jsonl", "txt"] {
            let path = dir.join(format!("{stem}.{extension}"));
            if let Ok(transcript) = std::fs::read_to_string(&path) {
                let exit = read(&dir.join(format!("{stem}.exit")));
                return (transcript, exit);
            }
        }
    }
    panic!("no transcript '{name}' in {}", dir.display());
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// Each preset's fixture directory and the preset whose CLI printed it:
/// the directory is named after the preset, but Claude Code's transcripts
/// keep the tool's full name.
fn formats() -> Vec<(&'static str, &'static str)> {
    presets::PRESETS
        .iter()
        .map(|preset| match *preset {
            "claude" => ("claude-code", "claude"),
            other => (other, other),
        })
        .collect()
}

/// Fixture directories that hold something else than transcripts, by the
/// start of their names: task files, state directories, and the usage
/// limits the real CLIs printed (read by the agent module's own tests).
const NOT_TRANSCRIPTS: &[&str] = &["openspec", "realworld", "state", "trackers", "usage-limits"];

/// What a `.expect` file asks for.
#[derive(Debug)]
enum Expected {
    Exactly(Conclusion),
    /// No signal, and the final message ends with this question.
    Asked(String),
    AnyAgentError,
    RateLimited(Option<String>),
}

fn expected(text: &str, path: &Path) -> Expected {
    let text = text.trim();
    let (kind, detail) = match text.split_once(':') {
        Some((kind, detail)) => (kind.trim(), Some(detail.trim().to_owned())),
        None => (text, None),
    };
    match (kind, detail) {
        ("complete", None) => Expected::Exactly(Conclusion::Complete),
        ("no_signal", None) => Expected::Exactly(Conclusion::NoSignal),
        ("asked", Some(question)) => Expected::Asked(question),
        ("failed", reason) => Expected::Exactly(Conclusion::Failed {
            reason: reason.unwrap_or_default(),
        }),
        ("agent_error", None) => Expected::AnyAgentError,
        ("agent_error", Some(message)) => Expected::Exactly(Conclusion::AgentError { message }),
        ("rate_limited", message) => Expected::RateLimited(message),
        _ => panic!("{}: cannot read '{text}'", path.display()),
    }
}

/// Checks one transcript; `None` when it reached its conclusion, else
/// what went wrong.
fn check(format: StreamFormat, transcript: &str, exit: &str, want: &Expected) -> Option<String> {
    let (got, done) = conclude_with_done(parser_for(format).as_mut(), transcript, exit);
    let limit = done.as_ref().and_then(|done| done.rate_limit.as_ref());
    let asked = done
        .as_ref()
        .filter(|_| got == Conclusion::NoSignal)
        .and_then(|done| trailing_question(&done.final_text));
    let ok = match want {
        Expected::Exactly(conclusion) => {
            *conclusion == got
                && (limit.is_none() || !matches!(got, Conclusion::AgentError { .. }))
                && asked.is_none()
        }
        Expected::Asked(question) => asked.as_ref() == Some(question),
        Expected::AnyAgentError => matches!(got, Conclusion::AgentError { .. }) && limit.is_none(),
        Expected::RateLimited(message) => {
            matches!(got, Conclusion::AgentError { .. })
                && limit.is_some_and(|limit| {
                    message
                        .as_ref()
                        .is_none_or(|message| *message == limit.message)
                })
        }
    };
    (!ok).then(|| {
        format!("expected {want:?}, got {got:?} (rate limit: {limit:?}, question: {asked:?})")
    })
}

/// An agent error that the transcript itself reports, not only the
/// exit code.
fn reported_error(want: &Expected) -> bool {
    match want {
        Expected::AnyAgentError | Expected::RateLimited(_) => true,
        Expected::Exactly(Conclusion::AgentError { message }) => {
            !message.starts_with("the agent exited")
        }
        Expected::Exactly(_) | Expected::Asked(_) => false,
    }
}

fn transcripts_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl" || extension == "txt")
        })
        .collect();
    found.sort();
    found
}

/// Every transcript, recorded or documentation-based, reaches the
/// conclusion written beside it; a rate limit is told apart from any
/// other agent error, since one pauses the run and the other spends a
/// retry.
#[test]
fn every_transcript_reaches_the_conclusion_beside_it() {
    let root = fixtures_root();
    let mut dirs: Vec<String> = std::fs::read_dir(&root)
        .expect("tests/fixtures is listed")
        .map(|entry| entry.expect("a directory entry"))
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !NOT_TRANSCRIPTS.iter().any(|other| name.starts_with(other)))
        .collect();
    dirs.sort();
    let formats = formats();
    let mut known: Vec<&str> = formats.iter().map(|(dir, _)| *dir).collect();
    known.sort();
    assert_eq!(dirs, known, "every fixture directory names its format");

    let mut failures = Vec::new();
    let mut checked = 0;
    for (dir, preset) in &formats {
        let format = format_of(preset);
        let transcripts = transcripts_in(&root.join(dir));
        assert!(!transcripts.is_empty(), "{dir} holds no transcripts");
        for path in transcripts {
            let stem = path.with_extension("");
            let name = stem.strip_prefix(&root).unwrap_or(&stem).display();
            let beside = |extension: &str| {
                let mut name = stem.clone().into_os_string();
                name.push(format!(".{extension}"));
                PathBuf::from(name)
            };
            let transcript = read(&path);
            let exit = read(&beside("exit"));
            let expect_path = beside("expect");
            let want = expected(&read(&expect_path), &expect_path);
            checked += 1;
            if let Some(failure) = check(format, &transcript, &exit, &want) {
                failures.push(format!("{name}: {failure}"));
            }
            // An error the agent reported stands on its own: a clean
            // exit cannot hide it, unless the exit code was its only sign.
            if reported_error(&want)
                && !matches!(
                    conclusion(parser_for(format).as_mut(), &transcript, "0"),
                    Conclusion::AgentError { .. }
                )
            {
                failures.push(format!("{name}: exit 0 hides the error"));
            }
            // Auto-detection reaches the same conclusion whenever it
            // recognises the format from the first non-blank line.
            let first = transcript.lines().find(|line| !line.trim().is_empty());
            let padded = format!("\n  \n{transcript}");
            if first.is_some_and(|line| sniff_format(line) == format)
                && let Some(failure) = check(StreamFormat::Auto, &padded, &exit, &want)
            {
                failures.push(format!("{name} as auto: {failure}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 60, "only {checked} transcripts were found");
}

#[test]
fn expect_files_are_read_strictly() {
    let path = Path::new("x.expect");
    assert!(matches!(
        expected("failed: no db\n", path),
        Expected::Exactly(Conclusion::Failed { reason }) if reason == "no db"
    ));
    assert!(matches!(
        expected("agent_error", path),
        Expected::AnyAgentError
    ));
    assert!(matches!(
        expected("rate_limited: slow: down", path),
        Expected::RateLimited(Some(message)) if message == "slow: down"
    ));
    let refused = std::panic::catch_unwind(|| expected("completed", path));
    assert!(refused.is_err());
}

#[test]
fn sniffing_recognises_each_format() {
    let complete = |dir: &str| fixture(dir, "complete").0;
    let (claude, codex, gemini) = (
        complete("claude-code"),
        complete("codex"),
        complete("gemini"),
    );
    let (opencode, copilot, amp) = (complete("opencode"), complete("copilot"), complete("amp"));
    let first = |text: &str| text.lines().next().unwrap_or_default().to_owned();
    assert_eq!(sniff_format(&first(&claude)), format_of("claude"));
    assert_eq!(sniff_format(&first(&codex)), format_of("codex"));
    assert_eq!(sniff_format(&first(&gemini)), format_of("gemini"));
    assert_eq!(sniff_format(&first(&opencode)), format_of("opencode"));
    assert_eq!(sniff_format(&first(&copilot)), format_of("copilot"));
    // Amp speaks Claude Code's format.
    assert_eq!(sniff_format(&first(&amp)), format_of("claude"));
    assert_eq!(sniff_format(&first(&complete("pi"))), format_of("pi"));
    assert_eq!(sniff_format("Hello there"), StreamFormat::Plain);
    assert_eq!(
        sniff_format(r#"{"type":"unheard_of"}"#),
        StreamFormat::Plain
    );
    assert_eq!(sniff_format(r#"["type"]"#), StreamFormat::Plain);
}
