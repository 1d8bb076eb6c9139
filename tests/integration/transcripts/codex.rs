//! The Codex parser, on the transcripts in `tests/fixtures/codex/` and on
//! lines written to test one case each.

use super::*;

super::parser_tests!("codex", "codex");

#[test]
fn an_error_item_in_a_healthy_run_is_only_a_warning() {
    let (transcript, _) = fixture("complete");
    assert!(transcript.contains(r#""type":"error""#));
    let (_, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert!(!done.is_error);
    assert_eq!(done.error, None);
}

#[test]
fn commands_become_tool_uses_and_results() {
    let (transcript, _) = fixture("multi-message");
    let (events, done) = parse(&transcript);
    assert_eq!(super::kinds(&events), super::TWO_TOOL_ROUNDS);
    super::assert_tool_round(
        &events,
        4,
        "item_4",
        "/bin/bash -lc 'cat hello.txt'",
        "hi\n",
    );

    let done = done.expect("events seen");
    assert_eq!(
        done.final_text,
        "Both steps are done.\n<promise>COMPLETE</promise>"
    );
    assert_eq!(done.usage.input_tokens, 3003);
    assert_eq!(done.usage.output_tokens, 153);
    assert_eq!(done.cost_usd, None);
    assert_eq!(done.turns, None);
}

#[test]
fn cached_input_is_not_counted_twice() {
    let line = r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":50,"reasoning_output_tokens":20}}"#;
    let (_, done) = parse(line);
    let usage = done.expect("events seen").usage;
    assert_eq!(usage.input_tokens, 400);
    assert_eq!(usage.cache_read_input_tokens, 600);
    assert_eq!(usage.output_tokens, 50);
    assert_eq!(usage.total(), 1050);
}

#[test]
fn a_retried_stream_error_does_not_fail_the_run() {
    let transcript = concat!(
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"error","message":"Reconnecting... 1/5"}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"<promise>COMPLETE</promise>"}}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
        "\n",
    );
    assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
}

#[test]
fn an_error_without_recovery_fails_the_run() {
    let transcript = concat!(
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"<promise>COMPLETE</promise>"}}"#,
        "\n",
        r#"{"type":"error","message":"stream disconnected"}"#,
        "\n",
    );
    assert_eq!(
        conclusion_of(transcript, "0"),
        Conclusion::AgentError {
            message: "stream disconnected".into()
        }
    );
}

#[test]
fn usage_limit_errors_are_rate_limits() {
    for message in [
        "You've hit your usage limit. Try again later.",
        "exceeded retry limit, last status: 429 Too Many Requests",
        "Rate limit reached for gpt-5",
    ] {
        let line = serde_json::json!({"type": "turn.failed", "error": {"message": message}});
        let (_, done) = parse(&line.to_string());
        let done = done.expect("events seen");
        assert!(done.is_error);
        assert_eq!(
            done.rate_limit.map(|limit| limit.message),
            Some(message.to_owned())
        );
    }
}

#[test]
fn a_completed_command_without_start_still_reports_its_use() {
    let line = r#"{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}"#;
    let (events, _) = parse(line);
    assert_eq!(events.len(), 2);
    assert!(matches!(&events[0], AgentEvent::Message { tool_uses, .. } if tool_uses.len() == 1));
    assert!(matches!(
        &events[1],
        AgentEvent::ToolResult { is_error: true, .. }
    ));
}
