//! The fixtures are documentation-based: built from Amp's documented
//! stream-json output, not recorded from the CLI.

use super::*;

super::parser_tests!("amp", "amp");

#[test]
fn usage_is_summed_over_assistant_messages() {
    let (transcript, _) = fixture("multi-message");
    let (events, done) = parse(&transcript);
    let done = done.expect("result seen");
    assert_eq!(done.usage.input_tokens, 2200);
    assert_eq!(done.usage.output_tokens, 105);
    assert_eq!(done.usage.cache_read_input_tokens, 1000);
    assert_eq!(done.turns, Some(3));
    assert_eq!(done.duration_ms, Some(2906));
    let tool_results = events
        .iter()
        .filter(|event| matches!(event, AgentEvent::ToolResult { .. }))
        .count();
    assert_eq!(tool_results, 2);
}

#[test]
fn usage_on_the_result_wins_when_amp_gives_it() {
    let transcript = concat!(
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"x"}],"usage":{"input_tokens":5,"output_tokens":5}},"parent_tool_use_id":null}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"x","usage":{"input_tokens":70,"output_tokens":7}}"#,
        "\n",
    );
    let (_, done) = parse(transcript);
    let usage = done.expect("result seen").usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (70, 7));
}

#[test]
fn a_rate_limit_error_is_a_rate_limit() {
    let line = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"error":"429 Too Many Requests: rate limit exceeded"}"#;
    let (_, done) = parse(line);
    let done = done.expect("result seen");
    assert!(done.is_error);
    assert_eq!(
        done.rate_limit.map(|limit| limit.message),
        Some("429 Too Many Requests: rate limit exceeded".to_owned())
    );
}

#[test]
fn an_error_string_on_a_successful_result_changes_nothing() {
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"<promise>COMPLETE</promise>","error":"stale"}"#;
    assert_eq!(conclusion_of(line, "0"), Conclusion::Complete);
}
