//! The fixtures were recorded from Kilo 7.7.7 (see the README beside them);
//! their conclusions are checked with every other format's. Kilo prints
//! opencode's stream, which opencode's parser reads.

use super::*;

super::parser_tests!("kilo", "kilo");

#[test]
fn steps_fill_the_done_as_for_opencode() {
    super::standin_round(parse(&fixture("complete").0));
}

#[test]
fn a_429_after_kilos_own_retries_is_a_rate_limit() {
    let (transcript, exit) = fixture("rate-limit");
    assert_eq!(exit.trim(), "1");
    let (_, done) = parse(&transcript);
    let done = done.expect("events seen");
    assert_eq!(
        done.rate_limit.map(|limit| limit.message),
        Some("This request would exceed the rate limit for your organization".to_owned())
    );
}

#[test]
fn kilos_stream_is_read_as_opencodes_when_detected() {
    let (transcript, _) = fixture("complete");
    let first = transcript.lines().next().expect("a line");
    assert_eq!(sniff_format(first), super::format_of("opencode"));
}
