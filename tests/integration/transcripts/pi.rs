//! The fixtures were recorded from pi 0.73.1 (see the README beside them);
//! their conclusions are checked with every other format's.

use super::*;

super::parser_tests!("pi", "pi");

#[test]
fn message_ends_and_tool_runs_fill_the_done() {
    let (events, done, tool) = super::standin_round(parse(&fixture("complete").0));
    assert_eq!(done.usage.output_tokens, 100);
    assert_eq!(done.cost_usd, Some(0.0));
    assert_eq!(tool.name, "bash");
    assert_eq!(
        events[1],
        AgentEvent::ToolResult {
            tool_use_id: Some("call_standin_0".into()),
            output: "(no output)".into(),
            is_error: false
        }
    );
}

/// pi exits 0 after giving up on a 429: only the stream tells.
#[test]
fn a_rate_limit_is_read_from_the_stream_whatever_the_exit() {
    let (transcript, exit) = fixture("rate-limit");
    assert_eq!(exit.trim(), "0");
    assert!(transcript.contains(r#""type":"auto_retry_start""#));
    let (_, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert!(done.is_error);
    assert_eq!(done.final_text, "");
    assert_eq!(
        done.rate_limit.map(|limit| limit.message),
        Some("429 This request would exceed the rate limit for your organization".to_owned())
    );
}

#[test]
fn a_retry_that_succeeds_leaves_no_error() {
    let (transcript, _) = fixture("complete");
    let failed_call = r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"500 upstream"}}"#;
    let retried = format!("{failed_call}\n{transcript}");
    let (_, done) = parse(&retried);
    let done = done.expect("events seen");
    assert!(!done.is_error, "{done:?}");
    assert_eq!(done.error, None);
}

#[test]
fn updates_are_skipped_unread() {
    let update = r#"{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":"<promise>COMPLETE</promise>"}]}}"#;
    let (events, done) = parse(update);
    assert!(events.is_empty());
    assert_eq!(done, None, "an update alone is no event");
}
