//! Conclusions of the recorded transcripts are checked with every other
//! format's (see `mod.rs`); these tests check the rest.

use super::*;

super::parser_tests!("aider", "aider");

#[test]
fn the_reply_is_what_came_before_the_last_usage_report() {
    let (transcript, _) = fixture("complete");
    assert!(transcript.trim_end().ends_with("Applied edit to hello.txt"));
    let (events, done) = parse(&transcript);
    let done = done.expect("plain output always yields a done");
    assert!(
        done.final_text
            .ends_with("Created hello.txt.\n<promise>COMPLETE</promise>"),
        "{}",
        done.final_text
    );
    assert!(!done.is_error);
    let shown = |text: &str| {
        events
            .iter()
            .any(|event| matches!(event, AgentEvent::Message { text: t, .. } if t == text))
    };
    assert!(
        shown("Applied edit to hello.txt"),
        "Aider's own lines are shown"
    );
    assert!(!shown(""), "blank lines are not");
}

#[test]
fn usage_reports_add_up_and_the_session_cost_is_the_last_one() {
    let (transcript, _) = fixture("multi-message");
    let (_, done) = parse(&transcript);
    let done = done.expect("a done");
    assert_eq!(done.turns, Some(2));
    assert_eq!(done.usage.input_tokens, 2000);
    assert_eq!(done.usage.output_tokens, 50 + 51);
    assert_eq!(done.cost_usd, Some(0.0075));
    assert!(
        done.final_text
            .ends_with("Both steps are done.\n<promise>COMPLETE</promise>"),
        "{}",
        done.final_text
    );
    assert!(!done.final_text.contains("Step one"), "{}", done.final_text);
}

#[test]
fn cache_figures_are_read_from_the_report() {
    let transcript = "Done.\n<promise>COMPLETE</promise>\n\nTokens: 2.6k sent, 1.2k cache write, 3.4k cache hit, 80 received. Cost: $0.0090 message, $0.02 session.\n";
    let (_, done) = parse(transcript);
    let done = done.expect("a done");
    assert_eq!(done.usage.input_tokens, 2600);
    assert_eq!(done.usage.cache_creation_input_tokens, 1200);
    assert_eq!(done.usage.cache_read_input_tokens, 3400);
    assert_eq!(done.usage.output_tokens, 80);
    assert_eq!(done.cost_usd, Some(0.02));
}

#[test]
fn older_report_formats_are_read_too() {
    let transcript = "Done.\n<promise>COMPLETE</promise>\n\nTokens: 12,345 sent, 1.5M received. Cost: $0.05 request, $0.31 session.\n";
    let (_, done) = parse(transcript);
    let done = done.expect("a done");
    assert_eq!(done.usage.input_tokens, 12_345);
    assert_eq!(done.usage.output_tokens, 1_500_000);
    assert_eq!(done.cost_usd, Some(0.31));
    assert_eq!(
        conclude(
            Some(&done),
            ExitStatusKind::Exited(0),
            DEFAULT_TOKEN,
            PromiseScope::LastLine
        ),
        Conclusion::Complete
    );
}

/// Issue 14: at 80 columns the error's JSON and `rate_limit_error` fall
/// on the next line.
#[test]
fn a_wrapped_provider_error_is_read_whole() {
    let (transcript, exit) = fixture("rate-limit");
    assert_eq!(exit.trim(), "0", "Aider exits cleanly after giving up");
    assert!(transcript.contains("{\"type\":\n\"rate_limit_error\""));
    let (_, done) = parse(&transcript);
    let done = done.expect("a done");
    assert!(done.is_error);
    assert_eq!(done.error, done.rate_limit.map(|limit| limit.message));
}

#[test]
fn a_rate_limit_is_recognised_by_its_name_or_by_aiders_notice() {
    let by_name = "litellm.RateLimitError: AnthropicException - overloaded\n";
    let by_notice = "litellm.APIError: AnthropicException - busy\nThe API provider has rate limited you. Try again later or check your quotas.\n";
    let other = "litellm.APIError: AnthropicException - busy\n";
    for (transcript, limited) in [(by_name, true), (by_notice, true), (other, false)] {
        let (_, done) = parse(transcript);
        let done = done.expect("a done");
        assert!(done.is_error, "{transcript}");
        assert_eq!(done.rate_limit.is_some(), limited, "{transcript}");
    }
}

#[test]
fn an_error_continues_only_while_its_brackets_are_open() {
    let transcript = "litellm.BadRequestError: AnthropicException - {\"error\": \n{\"message\": \"bad\"}}\nRetrying in 0.2 seconds...\n";
    let (_, done) = parse(transcript);
    assert_eq!(
        done.and_then(|done| done.error).as_deref(),
        Some("litellm.BadRequestError: AnthropicException - {\"error\": {\"message\": \"bad\"}}")
    );
    let unbalanced = "litellm.APIError: AnthropicException - {oops\n\nAll done.\n";
    let (_, done) = parse(unbalanced);
    assert_eq!(
        done.and_then(|done| done.error).as_deref(),
        Some("litellm.APIError: AnthropicException - {oops"),
        "a blank line ends the error"
    );
}

#[test]
fn an_error_retried_into_a_reply_is_forgotten() {
    let transcript = "litellm.RateLimitError: AnthropicException - {\"type\":\n\"rate_limit_error\"}\nThe API provider has rate limited you.\nRetrying in 0.2 seconds...\nAll done.\n<promise>COMPLETE</promise>\n\nTokens: 10 sent, 5 received.\n";
    assert_eq!(conclusion_of(transcript, "0"), Conclusion::Complete);
}

#[test]
fn without_a_usage_report_the_last_line_of_output_decides() {
    assert_eq!(
        conclusion_of("thinking\n<promise>COMPLETE</promise>\n", "0"),
        Conclusion::Complete
    );
    assert_eq!(
        conclusion_of("<promise>COMPLETE</promise>\nApplied edit to a.txt\n", "0"),
        Conclusion::NoSignal
    );
}
