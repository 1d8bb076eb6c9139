//! The short scripts `agents --verify` plays to each CLI, and the
//! conclusion git-ralph must reach from each one.

use crate::agent::{AgentRun, Conclusion};
use crate::standin::{Script, Turn};

/// The reason the failed scenario gives.
pub const FAILED_REASON: &str = "tests need a running database";

/// What git-ralph must conclude from a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    Complete,
    /// FAILED with [`FAILED_REASON`].
    Failed,
    /// No signal: the promise was only echoed by a tool.
    NoSignal,
    /// A provider rate limit: a pause, not a spent retry.
    RateLimited,
}

impl Expected {
    pub fn describe(self) -> &'static str {
        match self {
            Expected::Complete => "COMPLETE",
            Expected::Failed => "FAILED with its reason",
            Expected::NoSignal => "no signal",
            Expected::RateLimited => "rate limited",
        }
    }

    /// Whether `run` reached this conclusion. No signal counts only when
    /// the final message was read (it holds `marker`), so a stream the
    /// parser could not read at all never passes for "no signal".
    pub fn met_by(self, run: &AgentRun, marker: &str) -> bool {
        match self {
            Expected::Complete => run.conclusion == Conclusion::Complete,
            Expected::Failed => {
                run.conclusion
                    == Conclusion::Failed {
                        reason: FAILED_REASON.into(),
                    }
            }
            Expected::NoSignal => {
                run.conclusion == Conclusion::NoSignal
                    && run
                        .done
                        .as_ref()
                        .is_some_and(|done| done.final_text.contains(marker))
            }
            Expected::RateLimited => run
                .done
                .as_ref()
                .is_some_and(|done| done.rate_limit.is_some()),
        }
    }
}

/// One scripted conversation and its expected conclusion.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    pub script: Script,
    pub expected: Expected,
    /// Words of the script that must show up in the CLI's output; a line
    /// holding one that the parser did not place is what gets reported.
    pub marker: &'static str,
}

/// The scenarios for a CLI; `tools` is false for a CLI that offers the
/// model no tools (Aider), whose turns are told in edit blocks instead.
pub fn scenarios(tools: bool) -> Vec<Scenario> {
    let shell = |command: &str| Turn::Shell {
        text: String::new(),
        command: command.into(),
    };
    let text = |text: &str| Turn::Text { text: text.into() };
    let failed_text =
        format!("I cannot finish this story.\n\n<promise>FAILED: {FAILED_REASON}</promise>");
    let (complete, failed, echoed) = if tools {
        (
            vec![
                shell("echo hello > hello.txt"),
                text("Created hello.txt.\n\n<promise>COMPLETE</promise>"),
            ],
            vec![shell("ls"), text(&failed_text)],
            vec![
                shell("echo '<promise>COMPLETE</promise>'"),
                text("The command printed a tag; the story is not done yet."),
            ],
        )
    } else {
        (
            vec![text(
                "Nothing was left to change.\n\n<promise>COMPLETE</promise>",
            )],
            vec![text(&failed_text)],
            // The file is not valid Python, so Aider's linter quotes its
            // line back; the last reply has no promise.
            vec![
                text(
                    "I will add a marker file.\n\necho.py\n```python\n<<<<<<< SEARCH\n=======\n<promise>COMPLETE</promise>\n>>>>>>> REPLACE\n```\n",
                ),
                text("The marker file is not valid Python; the story is not done yet."),
            ],
        )
    };
    let rate_limit = vec![Turn::Error {
        status: 429,
        message: "This request would exceed the rate limit for your organization".into(),
    }];
    let scenario = |name, turns, expected, marker| Scenario {
        name,
        script: Script { turns, tools },
        expected,
        marker,
    };
    vec![
        scenario("complete", complete, Expected::Complete, "promise"),
        scenario("failed", failed, Expected::Failed, "promise"),
        scenario("echoed-promise", echoed, Expected::NoSignal, "not done yet"),
        scenario("rate-limit", rate_limit, Expected::RateLimited, "rate"),
    ]
}
