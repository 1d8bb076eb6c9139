//! The fixtures were recorded from Qwen Code 0.24.4 and, as `v0.15.10-*`,
//! from 0.15.10 (see the README beside them); their conclusions are
//! checked with every other format's.

use super::*;

super::parser_tests!("qwen", "qwen");

#[test]
fn a_tool_round_then_the_result_fill_the_done() {
    let (_, done, tool) = super::standin_round(parse(&fixture("complete").0));
    assert_eq!(done.usage.output_tokens, 100);
    assert_eq!(tool.name, "run_shell_command");
    assert_eq!(tool.input["command"], "echo hello > hello.txt");
}

/// Qwen Code's failed `result` has no text; its reason is `error.message`.
#[test]
fn a_429_is_a_rate_limit_with_qwens_own_words() {
    let (transcript, exit) = fixture("rate-limit");
    assert_eq!(exit.trim(), "1");
    let (_, done) = parse(&transcript);
    let done = done.expect("a result");
    assert!(done.is_error);
    assert_eq!(done.subtype.as_deref(), Some("error_during_execution"));
    let error = done.error.expect("the reason");
    assert!(
        error.starts_with("[API Error: 429 This request would exceed the rate limit"),
        "{error}"
    );
    assert!(done.rate_limit.is_some());
}

#[test]
fn qwens_stream_is_told_from_claude_codes_by_its_first_event() {
    let (transcript, _) = fixture("complete");
    let first = transcript.lines().next().expect("a line");
    assert_eq!(sniff_format(first), super::format_of("qwen"));
}

/// Issue 35: Qwen Code 0.15.10 ends a run its 429s stopped with a
/// `result` of subtype `success` and exit 0; the text is its own notice,
/// so it is a usage limit all the same, in Qwen Code's words.
#[test]
fn issue_35_an_older_releases_successful_429_is_a_rate_limit() {
    let (transcript, exit) = fixture("v0.15.10-rate-limit");
    assert_eq!(exit.trim(), "0");
    let (_, done) = parse(&transcript);
    let done = done.expect("a result");
    assert_eq!(done.subtype.as_deref(), Some("success"));
    assert!(done.is_error);
    let limit = done.rate_limit.expect("a usage limit");
    assert!(
        limit.message.starts_with("[API Error: 429"),
        "{}",
        limit.message
    );
    assert!(matches!(
        conclusion_of(&transcript, &exit),
        Conclusion::AgentError { .. }
    ));
    // The same release's completion is read as one.
    let (complete, exit) = fixture("v0.15.10-complete");
    assert_eq!(conclusion_of(&complete, &exit), Conclusion::Complete);
}
