//! The Gemini CLI parser, on the transcripts in `tests/fixtures/gemini/`
//! and on lines written to test one case each.

use super::*;

super::parser_tests!("gemini", "gemini");

#[test]
fn final_message_is_the_chunks_after_the_last_tool_event() {
    let transcript = concat!(
        r#"{"type":"message","role":"user","content":"say <promise>COMPLETE</promise> when done"}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":"Plan: ","delta":true}"#,
        "\n",
        r#"{"type":"tool_use","tool_name":"shell","tool_id":"t1","parameters":{"command":"ls"}}"#,
        "\n",
        r#"{"type":"tool_result","tool_id":"t1","status":"error","error":{"message":"denied"}}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":"All good.\n<prom","delta":true}"#,
        "\n",
        r#"{"type":"message","role":"assistant","content":"ise>COMPLETE</promise>","delta":true}"#,
        "\n",
        r#"{"type":"result","status":"success","stats":{"input_tokens":100,"cached":40,"output_tokens":7,"duration_ms":5}}"#,
        "\n",
    );
    let (events, done) = parse(transcript);
    assert_eq!(
        events[2],
        AgentEvent::ToolResult {
            tool_use_id: Some("t1".into()),
            output: "denied".into(),
            is_error: true
        }
    );
    let done = done.expect("result seen");
    assert_eq!(done.final_text, "All good.\n<promise>COMPLETE</promise>");
    assert_eq!(done.usage.input_tokens, 60);
    assert_eq!(done.usage.cache_read_input_tokens, 40);
    assert_eq!(done.usage.output_tokens, 7);
    assert_eq!(done.duration_ms, Some(5));
    assert_eq!(done.turns, None);
    assert_eq!(
        conclude(
            Some(&done),
            ExitStatusKind::Exited(0),
            DEFAULT_TOKEN,
            PromiseScope::FinalMessage
        ),
        Conclusion::Complete
    );
}

#[test]
fn stats_fill_usage() {
    let (transcript, _) = fixture("multi-message");
    let (_, done) = parse(&transcript);
    let done = done.expect("result seen");
    assert_eq!(done.usage.input_tokens, 4003);
    assert_eq!(done.usage.output_tokens, 203);
    assert_eq!(done.usage.total(), 4206);
    assert_eq!(done.duration_ms, Some(168));
    assert_eq!(done.cost_usd, None);
}

#[test]
fn quota_errors_are_rate_limits() {
    for message in [
        "[API Error: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted\",\"status\":\"RESOURCE_EXHAUSTED\"}}]",
        "Quota exceeded for quota metric 'Generate Content API requests per minute'",
    ] {
        let line = serde_json::json!({
            "type": "result",
            "status": "error",
            "error": {"type": "unknown", "message": message},
            "stats": {}
        });
        let (_, done) = parse(&line.to_string());
        let done = done.expect("result seen");
        assert_eq!(
            done.rate_limit.map(|limit| limit.message),
            Some(message.to_owned())
        );
    }
}
