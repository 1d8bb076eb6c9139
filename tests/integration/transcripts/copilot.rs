//! The fixtures were recorded from Copilot CLI 1.0.102 (see the README
//! beside them).

use super::*;

super::parser_tests!("copilot", "copilot");

#[test]
fn a_session_error_fails_the_run_even_with_a_clean_exit() {
    let (transcript, _) = &fixture("api-error");
    assert!(matches!(
        conclusion_of(transcript, "0"),
        Conclusion::AgentError { .. }
    ));
    let (_, done) = parse(transcript);
    assert_eq!(done.expect("events seen").rate_limit, None);
}

#[test]
fn a_rate_limit_error_is_a_rate_limit() {
    let (transcript, exit) = &fixture("rate-limit");
    assert_eq!(exit.trim(), "1");
    let (_, done) = parse(transcript);
    let done = done.expect("events seen");
    assert!(done.is_error);
    let limit = done.rate_limit.expect("rate limited");
    assert!(limit.message.contains("429"), "{}", limit.message);
}

#[test]
fn replies_tools_and_the_result_fill_the_done() {
    let (transcript, _) = fixture("multi-message");
    let (events, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert_eq!(done.final_text, "All done.\n\n<promise>COMPLETE</promise>");
    assert_eq!(done.turns, Some(3));
    // Copilot 1.0.102 prints no token counts: unknown, not 0.
    assert!(done.tokens_unknown);
    assert_eq!(done.usage, Usage::default());
    assert_eq!(done.duration_ms, Some(2315));
    assert_eq!(done.cost_usd, None);
    assert!(!done.is_error);

    let summary: Vec<(String, usize)> = events
        .iter()
        .filter(|event| !matches!(event, AgentEvent::Message { text, tool_uses } if text.is_empty() && tool_uses.is_empty()))
        .map(|event| match event {
            AgentEvent::Message { text, tool_uses } => (text.clone(), tool_uses.len()),
            AgentEvent::ToolResult { output, .. } => (format!("result: {output}"), 0),
            AgentEvent::Done(_) => ("done".into(), 0),
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("First, the file.".to_owned(), 1),
            (
                "result: \n<shellId: 0 completed with exit code 0>".to_owned(),
                0
            ),
            ("Now I check it.".to_owned(), 1),
            (
                "result: hello\n<shellId: 1 completed with exit code 0>".to_owned(),
                0
            ),
            ("All done.\n\n<promise>COMPLETE</promise>".to_owned(), 0),
        ]
    );
    let AgentEvent::Message { tool_uses, .. } = &events[2] else {
        panic!("expected a reply, got {:?}", events[2]);
    };
    assert_eq!(tool_uses[0].id, "toolu_standin_1");
    assert_eq!(tool_uses[0].name, "bash");
    assert_eq!(tool_uses[0].input["command"], "cat hello.txt");
}

#[test]
fn usage_events_give_the_full_split() {
    let transcript = concat!(
        r#"{"type":"assistant.usage","data":{"model":"m","inputTokens":1000,"outputTokens":30,"cacheReadTokens":600,"cacheWriteTokens":100}}"#,
        "\n",
        r#"{"type":"assistant.message","data":{"messageId":"a","content":"done","outputTokens":30}}"#,
        "\n",
    );
    let (_, done) = parse(transcript);
    let usage = done.expect("events seen").usage;
    assert_eq!(usage.input_tokens, 300);
    assert_eq!(usage.cache_read_input_tokens, 600);
    assert_eq!(usage.cache_creation_input_tokens, 100);
    assert_eq!(usage.output_tokens, 30);
    assert!(!done_of(transcript).tokens_unknown);
}

fn done_of(transcript: &str) -> Done {
    parse(transcript).1.expect("events seen")
}

#[test]
fn a_tool_started_without_a_request_is_still_reported() {
    let transcript = concat!(
        r#"{"type":"tool.execution_start","data":{"toolCallId":"t","toolName":"grep","arguments":{"pattern":"x"}}}"#,
        "\n",
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"t","success":false,"error":{"message":"no such file"}}}"#,
        "\n",
    );
    let (events, _) = parse(transcript);
    assert!(
        matches!(&events[0], AgentEvent::Message { tool_uses, .. } if tool_uses[0].name == "grep")
    );
    assert_eq!(
        events[1],
        AgentEvent::ToolResult {
            tool_use_id: Some("t".into()),
            output: "no such file".into(),
            is_error: true
        }
    );
}

#[test]
fn sub_agent_replies_and_unknown_events_never_give_the_final_word() {
    let transcript = concat!(
        "not json\n",
        r#"{"type":"session.info","data":{"infoType":"model","message":"Using m"}}"#,
        "\n",
        r#"{"type":"assistant.message","data":{"messageId":"a","content":"<promise>COMPLETE</promise>"}}"#,
        "\n",
        r#"{"type":"assistant.message","agentId":"sub-1","data":{"messageId":"b","content":"sub-agent chatter"}}"#,
        "\n",
        r#"{"type":"assistant.message_delta","data":{"messageId":"c","deltaContent":"late"}}"#,
        "\n",
        r#"{"type":"result","exitCode":0,"usage":{"premiumRequests":1}}"#,
        "\n",
    );
    assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
}

#[test]
fn a_reply_after_an_error_means_it_was_overcome_but_a_failed_exit_code_is_not() {
    let recovered = concat!(
        r#"{"type":"session.error","data":{"errorType":"network","message":"socket hang up"}}"#,
        "\n",
        r#"{"type":"assistant.message","data":{"messageId":"a","content":"<promise>COMPLETE</promise>"}}"#,
        "\n",
        r#"{"type":"result","exitCode":0}"#,
        "\n",
    );
    assert_eq!(conclusion_of(recovered, "0"), Conclusion::Complete);
    let failed = recovered.replace(r#""exitCode":0"#, r#""exitCode":2"#);
    assert_eq!(
        conclusion_of(&failed, "0"),
        Conclusion::AgentError {
            message: "copilot reported exit code 2".into()
        }
    );
}

#[test]
fn empty_output_yields_no_done() {
    assert_eq!(parse("").1, None);
}
