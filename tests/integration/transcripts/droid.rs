//! The fixtures were recorded from Factory Droid 0.225.2 (see the README
//! beside them); their conclusions are checked with every other format's.

use super::*;

super::parser_tests!("droid", "droid");

#[test]
fn tool_calls_and_the_completion_fill_the_done() {
    let (_, done, tool) = super::standin_round(parse(&fixture("complete").0));
    assert_eq!(done.usage.output_tokens, 100);
    assert!(done.duration_ms.is_some());
    assert_eq!(tool.name, "Execute");
    assert_eq!(tool.input["command"], "echo hello > hello.txt");
}

/// The agent loop's words, not the CLI's generic `Exec failed`.
#[test]
fn a_429_is_a_rate_limit_in_the_agent_loops_words() {
    let (transcript, exit) = fixture("rate-limit");
    assert_eq!(exit.trim(), "1");
    assert!(transcript.contains("Exec failed"));
    let (_, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert!(done.is_error);
    assert_eq!(
        done.error.as_deref(),
        Some("429 This request would exceed the rate limit for your organization")
    );
    assert!(done.rate_limit.is_some());
}

#[test]
fn an_echoed_promise_is_a_tool_result_not_the_final_message() {
    let (transcript, _) = fixture("echoed-promise");
    let (events, done) = parse(&transcript);
    assert!(events.iter().any(|event| matches!(event,
        AgentEvent::ToolResult { output, .. } if output.starts_with("<promise>COMPLETE</promise>"))));
    assert_eq!(
        done.expect("a completion").final_text,
        "The command printed a tag; the story is not done yet."
    );
}

#[test]
fn droids_stream_is_told_from_claude_codes_by_its_first_event() {
    let (transcript, _) = fixture("complete");
    let first = transcript.lines().next().expect("a line");
    assert_eq!(sniff_format(first), super::format_of("droid"));
}
