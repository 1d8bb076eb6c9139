//! Conclusions of the recorded transcripts are checked with every other
//! format's (see `mod.rs`); these tests check the rest.

use super::*;

super::parser_tests!("opencode", "opencode");

#[test]
fn steps_sum_tokens_and_cost() {
    let (transcript, _) = fixture("multi-message");
    let (events, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert_eq!(
        done.final_text,
        "Both steps are done.\n<promise>COMPLETE</promise>"
    );
    assert_eq!(done.turns, Some(3));
    assert_eq!(done.usage.input_tokens, 1000 + 1001 + 1002);
    assert_eq!(done.usage.output_tokens, 50 + 51 + 52);
    assert_eq!(done.usage.cache_read_input_tokens, 0);
    let cost = done.cost_usd.expect("cost reported");
    assert!(
        (cost - (0.00375 + 0.003768 + 0.003786)).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(done.duration_ms, Some(1795419377781 - 1795419376651));

    assert_eq!(super::kinds(&events), super::TWO_TOOL_ROUNDS);
    let tool =
        super::assert_tool_round(&events, 4, "toolu_1_1795419377229", "cat hello.txt", "hi\n");
    assert_eq!(tool.name, "bash");
}

#[test]
fn a_silent_command_reports_no_output() {
    let (transcript, _) = fixture("complete");
    let (events, _) = parse(&transcript);
    assert!(events.contains(&AgentEvent::ToolResult {
        tool_use_id: Some("toolu_0_1795419256195".into()),
        output: "(no output)".into(),
        is_error: false
    }));
}

/// Issue 14: without `--auto` the call is rejected and the run ends
/// there, with exit 0 and nothing said.
#[test]
fn a_rejected_permission_is_a_failed_tool_and_the_end_of_the_run() {
    let (transcript, _) = fixture("permission-rejected");
    let (events, done) = parse(&transcript);
    assert_eq!(
        events.last(),
        Some(&AgentEvent::ToolResult {
            tool_use_id: Some("toolu_0_1795419365002".into()),
            output: "The user rejected permission to use this specific tool call.".into(),
            is_error: true
        })
    );
    let done = done.expect("events seen");
    assert_eq!(done.final_text, "");
    assert!(!done.is_error);
}

#[test]
fn a_429_after_opencodes_own_retries_is_a_rate_limit() {
    let (transcript, exit) = fixture("rate-limit");
    assert_eq!(exit.trim(), "1");
    let (_, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert_eq!(done.turns, None, "no step ran");
    assert_eq!(
        done.rate_limit.map(|limit| limit.message),
        Some("scripted rate limit".to_owned())
    );
}

#[test]
fn a_failed_tool_reports_its_error() {
    let line = r#"{"type":"tool_use","part":{"type":"tool","callID":"c1","tool":"bash","state":{"status":"error","input":{"command":"false"},"error":"exit status 1"}}}"#;
    let (events, _) = parse(line);
    assert_eq!(
        events[1],
        AgentEvent::ToolResult {
            tool_use_id: Some("c1".into()),
            output: "exit status 1".into(),
            is_error: true
        }
    );
}

#[test]
fn a_step_after_an_error_means_it_was_overcome() {
    let transcript = concat!(
        r#"{"type":"error","error":{"name":"APIError","data":{"message":"overloaded","statusCode":529}}}"#,
        "\n",
        r#"{"type":"text","part":{"type":"text","text":"<promise>COMPLETE</promise>"}}"#,
        "\n",
        r#"{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":1,"output":1}}}"#,
        "\n",
    );
    assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
}

#[test]
fn unknown_events_synthetic_text_and_garbage_are_ignored() {
    let transcript = concat!(
        "opencode: warming up\n",
        r#"{"type":"session.status","properties":{"status":{"type":"busy"}}}"#,
        "\n",
        r#"{"type":"text","part":{"type":"text","synthetic":true,"text":"<promise>COMPLETE</promise>"}}"#,
        "\n",
        r#"{"type":"reasoning","part":{"type":"reasoning","text":"thinking"}}"#,
        "\n",
    );
    let (events, done) = parse(transcript);
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(done.expect("events seen").final_text, "");
    assert_eq!(parse("").1, None);
}
