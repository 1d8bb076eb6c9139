//! Test support shared by the parsers: run a transcript (recorded from a
//! real CLI, or built from its documentation) through a parser, and
//! conclude as git-ralph would from it and the recorded exit code.

use super::{AgentEvent, Conclusion, DEFAULT_TOKEN, Done, ExitStatusKind, StreamParser, conclude};

/// Every event of `transcript`, line by line, and the closing report.
pub(crate) fn parse(
    parser: &mut dyn StreamParser,
    transcript: &str,
) -> (Vec<AgentEvent>, Option<Done>) {
    let mut events = Vec::new();
    for line in transcript.lines() {
        events.extend(parser.feed_line(line));
    }
    (events, parser.finish())
}

/// What git-ralph concludes from `transcript` and the exit code in
/// `exit_file`, reading the promise where this parser's format keeps it.
pub(crate) fn conclusion(
    parser: &mut dyn StreamParser,
    transcript: &str,
    exit_file: &str,
) -> Conclusion {
    let code: i32 = exit_file.trim().parse().expect("exit file holds a code");
    let scope = parser.promise_scope();
    let (_, done) = parse(parser, transcript);
    conclude(
        done.as_ref(),
        ExitStatusKind::Exited(code),
        DEFAULT_TOKEN,
        scope,
    )
}
