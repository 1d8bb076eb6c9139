//! Claude Code's parser, on the transcripts in `tests/fixtures/claude-code/`
//! and on lines written to test one case each.

use super::*;

super::parser_tests!("claude", "claude-code");

#[test]
fn an_echoed_promise_is_reported_as_a_tool_result() {
    let (transcript, _) = fixture("echoed-promise");
    let (events, _) = parse(&transcript);
    let echoed = events.iter().any(|event| {
        matches!(event, AgentEvent::ToolResult { output, .. }
            if output.contains("<promise>COMPLETE</promise>"))
    });
    assert!(echoed, "the echo is reported as a tool result");
}

#[test]
fn an_api_error_is_flagged_despite_its_success_subtype() {
    let (transcript, _) = fixture("api-error");
    let (_, done) = parse(&transcript);
    let done = done.expect("result seen");
    assert_eq!(done.subtype.as_deref(), Some("success"));
    assert!(done.is_error, "is_error wins over a success subtype");
    assert_eq!(done.rate_limit, None, "a 400 is not a rate limit");
}

#[test]
fn result_event_fills_usage_cost_and_turns() {
    let (transcript, _) = fixture("multi-message");
    let (events, done) = parse(&transcript);
    let done = done.expect("result seen");
    assert_eq!(
        done.final_text,
        "Both steps are done.\n<promise>COMPLETE</promise>"
    );
    assert_eq!(done.turns, Some(3));
    assert_eq!(done.duration_ms, Some(208));
    assert_eq!(done.cost_usd, Some(0.01884));
    assert_eq!(done.usage.input_tokens, 3003);
    assert_eq!(done.usage.output_tokens, 153);
    assert_eq!(done.usage.total(), 3156);
    assert!(!done.is_error);
    assert_eq!(done.error, None);

    let messages: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Message { text, tool_uses } => Some((text.as_str(), tool_uses.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        messages,
        [
            ("Step one: write the file.", 0),
            ("", 1),
            ("The file is written; checking it.", 0),
            ("", 1),
            ("Both steps are done.\n<promise>COMPLETE</promise>", 0),
        ]
    );
    let outputs: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ToolResult {
                tool_use_id,
                output,
                is_error,
            } => Some((tool_use_id.as_deref(), output.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        outputs,
        [
            (
                Some("toolu_0_1795262605930"),
                "(Bash completed with no output)",
                false
            ),
            (Some("toolu_1_1795262605990"), "hi", false),
        ]
    );
}

#[test]
fn tool_use_carries_its_input() {
    let (transcript, _) = fixture("complete");
    let (events, _) = parse(&transcript);
    let tool_use = events
        .iter()
        .find_map(|event| match event {
            AgentEvent::Message { tool_uses, .. } => tool_uses.first(),
            _ => None,
        })
        .expect("a tool use");
    assert_eq!(tool_use.name, "Bash");
    assert_eq!(tool_use.id, "toolu_0_1795262602517");
    assert_eq!(tool_use.input["command"], "echo hello > hello.txt");
}

#[test]
fn unknown_events_and_garbage_lines_are_ignored() {
    let transcript = concat!(
        "not json at all\n",
        "{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"allowed\"}}\n",
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\"}}\n",
        "{\"type\":\"system\",\"subtype\":\"compact_boundary\"}\n",
        "[1,2,3]\n",
        "{\"type\":\"assistant\",\"message\":{\"id\":\"m\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\"},{\"type\":\"text\",\"text\":\"done <promise>COMPLETE</promise>\"}]},\"parent_tool_use_id\":null}\n",
        "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done <promise>COMPLETE</promise>\"}\n",
    );
    let (events, done) = parse(transcript);
    assert_eq!(
        events,
        [AgentEvent::Message {
            text: "done <promise>COMPLETE</promise>".into(),
            tool_uses: Vec::new()
        }]
    );
    assert_eq!(
        conclude(
            done.as_ref(),
            ExitStatusKind::Exited(0),
            DEFAULT_TOKEN,
            PromiseScope::FinalMessage
        ),
        Conclusion::Complete
    );
}

#[test]
fn tool_result_content_may_be_a_block_list() {
    let line = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"one"},{"type":"image"},{"type":"text","text":"two"}]}]}}"#;
    let (events, _) = parse(line);
    assert_eq!(
        events,
        [AgentEvent::ToolResult {
            tool_use_id: Some("t".into()),
            output: "one\ntwo".into(),
            is_error: true
        }]
    );
}

#[test]
fn a_cut_stream_falls_back_to_the_last_top_level_message() {
    let transcript = concat!(
        r#"{"type":"assistant","message":{"id":"a","content":[{"type":"text","text":"first"}]},"parent_tool_use_id":null}"#,
        "\n",
        r#"{"type":"assistant","message":{"id":"b","content":[{"type":"text","text":"part one"}]},"parent_tool_use_id":null}"#,
        "\n",
        r#"{"type":"assistant","message":{"id":"b","content":[{"type":"text","text":"<promise>COMPLETE</promise>"}]},"parent_tool_use_id":null}"#,
        "\n",
        r#"{"type":"assistant","message":{"id":"c","content":[{"type":"text","text":"sub-agent chatter"}]},"parent_tool_use_id":"toolu_9"}"#,
        "\n",
    );
    let (events, done) = parse(transcript);
    assert_eq!(events.len(), 4);
    let done = done.expect("events were seen");
    assert_eq!(done.final_text, "part one\n<promise>COMPLETE</promise>");
    assert!(!done.is_error);
    assert_eq!(
        conclude(
            Some(&done),
            ExitStatusKind::TimedOut,
            DEFAULT_TOKEN,
            PromiseScope::FinalMessage
        ),
        Conclusion::AgentError {
            message: "the agent timed out".into()
        }
    );
}

#[test]
fn an_error_result_without_text_is_explained_by_its_subtype() {
    let transcript = concat!(
        r#"{"type":"assistant","message":{"id":"a","content":[{"type":"text","text":"Running the tests now."}]},"parent_tool_use_id":null}"#,
        "\n",
        r#"{"type":"result","subtype":"error_during_execution","is_error":false,"num_turns":4}"#,
        "\n",
    );
    let (_, done) = parse(transcript);
    let done = done.expect("result seen");
    assert!(done.is_error, "an error subtype fails the run");
    assert_eq!(done.final_text, "Running the tests now.");
    assert_eq!(
        done.error.as_deref(),
        Some("the run ended with error_during_execution")
    );
}

#[test]
fn empty_output_yields_no_done() {
    let (events, done) = parse("");
    assert!(events.is_empty());
    assert_eq!(done, None);
}

#[test]
fn usage_limit_result_is_a_rate_limit_with_its_reset_time() {
    let line = r#"{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1750000000"}"#;
    let (_, done) = parse(line);
    let done = done.expect("result seen");
    assert!(done.is_error);
    assert_eq!(
        done.rate_limit,
        Some(RateLimit {
            reset_at_unix: Some(1_750_000_000),
            message: "Claude AI usage limit reached|1750000000".into()
        })
    );

    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"5-hour limit reached ∙ resets 3pm"}"#;
    let (_, done) = parse(line);
    let done = done.expect("result seen");
    assert!(done.is_error, "a usage-limit notice is never a success");
    let limit = done.rate_limit.expect("rate limited");
    assert_eq!(limit.reset_at_unix, None);
    assert_eq!(limit.message, "5-hour limit reached ∙ resets 3pm");
}

#[test]
fn overload_and_429_statuses_are_rate_limits() {
    for status in [429, 529] {
        let line = format!(
            r#"{{"type":"result","subtype":"success","is_error":true,"api_error_status":{status},"result":"API Error: {status}"}}"#
        );
        let (_, done) = parse(&line);
        let limit = done.and_then(|done| done.rate_limit);
        assert!(limit.is_some(), "status {status}");
    }
}

#[test]
fn a_successful_message_about_limits_is_not_a_rate_limit() {
    let line = r#"{"type":"result","subtype":"success","is_error":false,"result":"Added a usage limit check to the API.\n<promise>COMPLETE</promise>"}"#;
    let (_, done) = parse(line);
    let done = done.expect("result seen");
    assert_eq!(done.rate_limit, None);
    assert!(!done.is_error);
}
