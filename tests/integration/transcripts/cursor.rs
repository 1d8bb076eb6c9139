//! The fixtures are documentation-based: built from Cursor's documented
//! stream-json format, not recorded from the CLI.

use super::*;

super::parser_tests!("cursor", "cursor");

#[test]
fn the_whole_run_text_in_result_cannot_smuggle_in_an_earlier_promise() {
    let (transcript, _) = fixture("intermediate-promise");
    assert!(
        transcript.contains(
            r#""result":"Plan: when all is done I will say <promise>COMPLETE</promise>."#
        )
    );
    let (_, done) = parse(&transcript);
    assert_eq!(
        done.expect("result seen").final_text,
        "I wrote the file but the tests still fail; stopping here."
    );
}

#[test]
fn tool_calls_become_tool_uses_and_results() {
    let (transcript, _) = fixture("multi-message");
    let (events, done) = parse(&transcript);
    let done = done.expect("result seen");
    assert_eq!(done.duration_ms, Some(2180));
    assert_eq!(done.usage.total(), 0, "Cursor reports no tokens");
    assert_eq!(done.cost_usd, None);
    assert_eq!(done.subtype.as_deref(), Some("success"));
    assert_eq!(super::kinds(&events), super::TWO_TOOL_ROUNDS);
    let tool = super::assert_tool_round(&events, 4, "toolu_0d0c0002", "cat hello.txt", "hi\n");
    assert_eq!(tool.name, "shellToolCall");
}

#[test]
fn an_error_result_is_an_agent_error_with_its_text() {
    let line = r#"{"type":"result","subtype":"error","is_error":true,"result":"API Error: 400 scripted bad request"}"#;
    assert_eq!(
        conclusion_of(line, "0"),
        Conclusion::AgentError {
            message: "API Error: 400 scripted bad request".into()
        }
    );
    let line = r#"{"type":"result","subtype":"error","is_error":true,"result":"You've hit your usage limit"}"#;
    let (_, done) = parse(line);
    assert!(done.and_then(|done| done.rate_limit).is_some());
}

#[test]
fn a_result_without_assistant_events_supplies_the_text() {
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"done <promise>COMPLETE</promise>"}"#;
    assert_eq!(conclusion_of(line, "0"), Conclusion::Complete);
}

#[test]
fn a_rejected_tool_is_an_error_and_unknown_events_are_ignored() {
    let transcript = concat!(
        "warning: something\n",
        r#"{"type":"thinking","subtype":"delta","text":"hmm"}"#,
        "\n",
        r#"{"type":"tool_call","subtype":"completed","call_id":"w","tool_call":{"writeToolCall":{"args":{"path":"a"},"result":{"rejected":{"message":"not allowed"}}}}}"#,
        "\n",
    );
    let (events, done) = parse(transcript);
    assert_eq!(
        events,
        [AgentEvent::ToolResult {
            tool_use_id: Some("w".into()),
            output: "not allowed".into(),
            is_error: true
        }]
    );
    assert!(!done.expect("events seen").is_error);
    assert_eq!(parse("").1, None);
}
