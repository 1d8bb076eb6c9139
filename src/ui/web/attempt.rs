//! One attempt, as `show` prints it: how it went, its checks, the prompt
//! it was given, the agent's transcript and its diff (the worktree as it
//! is now, while it runs). The head, the transcript and the diff are each
//! rendered alone too, as the server pushes or the page fetches them.

use super::{cost, escape, outcome};
use crate::agent::AgentEvent;
use crate::audit::AttemptDetail;
use crate::events::{Event, Record};
use crate::serve::{AttemptRef, Route};
use crate::state::AttemptOutcome;
use crate::ui::transcript::{LineKind, event_lines};

/// The most of a diff a page holds; `show --diff` prints all of it.
const DIFF_SHOWN_BYTES: usize = 1 << 20;

/// What the attempt page shows.
pub struct AttemptView<'a> {
    pub at: &'a AttemptRef,
    pub detail: &'a AttemptDetail,
    /// The run's agent, against which another agent is named.
    pub agent: &'a str,
    /// The question the agent ended with instead of the work.
    pub asked: Option<&'a str>,
    /// The run's milestone events of this attempt, oldest first.
    pub milestones: &'a [Record],
}

/// The whole inner HTML of the attempt page, around the transcript and
/// diff rendered with [`transcript_part`] and [`diff_part`].
pub fn attempt_main(view: &AttemptView, transcript: &str, diff: &str) -> String {
    let prompt = match &view.detail.prompt {
        Some(prompt) => format!(
            "<details><summary>Prompt</summary><pre class=\"wrap\">{}</pre></details>",
            escape(prompt.trim_end())
        ),
        None => "<p class=\"muted\">The prompt of this attempt was not kept.</p>".to_owned(),
    };
    format!(
        "<section id=\"head\">{head}</section>{prompt}\
         <section id=\"transcript\">{transcript}</section>\
         <h2>Diff</h2><div id=\"diff\" data-src=\"{diff_src}\">{diff}</div>",
        head = attempt_head(view),
        diff_src = escape(&Route::AttemptDiff(view.at.clone()).path()),
    )
}

/// How the attempt went, what it was flagged for, and its checks.
pub fn attempt_head(view: &AttemptView) -> String {
    let detail = view.detail;
    let a = &detail.record;
    let running = a.outcome == AttemptOutcome::Running;
    let mut html = format!(
        "<h1>Story {story} · attempt {n}{role}</h1><p class=\"muted\">{title}</p>\
         <p{data}><strong>{outcome}</strong>{by}</p>",
        story = escape(&detail.story),
        n = a.attempt,
        role = a
            .role
            .map(|role| format!(" · the {role}"))
            .unwrap_or_default(),
        title = escape(&detail.title),
        data = if running { " data-running=\"1\"" } else { "" },
        outcome = outcome(a.outcome),
        by = escape(&crate::ui::by_other_agent(a.agent.as_deref(), view.agent)),
    );
    let kept = match (&a.checkpoint, &a.attempt_ref) {
        (Some(commit), _) => format!("checkpoint {commit}"),
        (None, Some(name)) => name.clone(),
        (None, None) => "-".to_owned(),
    };
    let time = super::run::attempt_time(running, a.started_at, a.duration_ms);
    html.push_str(&format!(
        "<dl class=\"facts\"><dt>kept at</dt><dd>{}</dd><dt>time</dt><dd>{time}</dd>\
         <dt>tokens</dt><dd>{} in, {} out</dd><dt>cost</dt><dd>{}</dd>",
        escape(&kept),
        a.input_tokens,
        a.output_tokens,
        cost(a.cost_usd)
    ));
    if let Some(reason) = &a.reason {
        html.push_str(&format!("<dt>reason</dt><dd>{}</dd>", escape(reason)));
    }
    if let Some(question) = view.asked {
        html.push_str(&format!(
            "<dt>asked</dt><dd class=\"warn\">{}</dd>",
            escape(question)
        ));
    }
    if let Some(flag) = &a.flag {
        html.push_str(&format!(
            "<dt>flagged</dt><dd class=\"warn\">{}</dd>",
            escape(flag.describe())
        ));
    }
    html.push_str("</dl>");
    for remark in crate::ui::attempt_remarks(&a.outside_ticks, &a.git_dir_changes, &a.added_tasks) {
        html.push_str(&format!("<p class=\"warn\">{}</p>", escape(&remark)));
    }
    html.push_str(&findings(view.milestones));
    html.push_str(&checks(detail, running));
    html
}

/// What a role that sent the story back found, in full.
fn findings(milestones: &[Record]) -> String {
    let mut html = String::new();
    for record in milestones {
        if let Event::SentBack { role, findings, .. } = &record.event {
            html.push_str(&format!(
                "<h2>The {role} sent the story back</h2><pre class=\"wrap\">{}</pre>",
                escape(findings)
            ));
        }
    }
    html
}

fn checks(detail: &AttemptDetail, running: bool) -> String {
    let mut html = String::from("<h2>Checks</h2>");
    match &detail.checks {
        _ if running => html.push_str("<p class=\"muted\">They run once the agent is done.</p>"),
        None => html.push_str("<p class=\"muted\">Not recorded.</p>"),
        Some(checks) if checks.is_empty() => html.push_str("<p class=\"muted\">No checks ran.</p>"),
        Some(checks) => {
            html.push_str("<ul class=\"checks\">");
            for check in checks {
                let (mark, class) = if check.passed {
                    ("✓", "good")
                } else {
                    ("✗", "bad")
                };
                html.push_str(&format!(
                    "<li><span class=\"{class}\">{mark}</span> {}",
                    escape(&check.name)
                ));
                if let Some(output) = &check.output {
                    html.push_str(&format!("<pre>{}</pre>", escape(output.trim_end())));
                }
                html.push_str("</li>");
            }
            html.push_str("</ul>");
        }
    }
    html
}

/// The transcript section: the last stretch of the agent's events, a note
/// on what was left out before it, and a link to all of it.
pub fn transcript_part(at: &AttemptRef, events: &[AgentEvent], skipped_bytes: u64) -> String {
    let skipped = if skipped_bytes > 0 {
        format!(
            "<p class=\"muted\">… {:.1} MiB of earlier output not shown.</p>",
            skipped_bytes as f64 / 1048576.0
        )
    } else {
        String::new()
    };
    format!(
        "<h2>Transcript</h2>{skipped}\
         <pre class=\"wrap transcript\" id=\"transcript-box\"><span id=\"transcript-lines\">{lines}</span></pre>\
         <p><a href=\"{all}\">The whole transcript, as text</a></p>",
        lines = transcript_lines(events),
        all = escape(&Route::Transcript(at.clone()).path()),
    )
}

/// Events as transcript lines, each styled by what it is.
pub fn transcript_lines(events: &[AgentEvent]) -> String {
    let mut html = String::new();
    for event in events {
        for (kind, line) in event_lines(event) {
            let class = match kind {
                LineKind::Message => "line-message",
                LineKind::ToolCall => "line-call",
                LineKind::ToolOutput => "line-output",
                LineKind::ToolError => "line-error",
                LineKind::Summary => "line-summary",
            };
            html.push_str(&format!(
                "<span class=\"{class}\">{}</span>\n",
                escape(&line)
            ));
        }
    }
    html
}

/// The diff as the page shows it. `None` is a diff not taken: not yet,
/// for an attempt at work, or never, for one that kept no work.
pub fn diff_part(diff: Option<&str>, running: bool) -> String {
    let diff = match diff {
        None if running => {
            return "<p class=\"muted\">Reading the worktree…</p>".to_owned();
        }
        None => return "<p class=\"muted\">The attempt kept no work to compare.</p>".to_owned(),
        Some("") => return "<p class=\"muted\">No change.</p>".to_owned(),
        Some(diff) => diff,
    };
    let live = if running {
        "<p class=\"muted\">The worktree as it is now, against the checkpoint the attempt started from.</p>"
    } else {
        ""
    };
    let mut shown = diff;
    let mut cut = String::new();
    if diff.len() > DIFF_SHOWN_BYTES {
        let mut end = DIFF_SHOWN_BYTES;
        while !diff.is_char_boundary(end) {
            end -= 1;
        }
        shown = &diff[..end];
        cut = format!(
            "<p class=\"muted\">The diff is cut at 1 MiB of {:.1} MiB; 'git ralph show --diff' prints all of it.</p>",
            diff.len() as f64 / 1048576.0
        );
    }
    let mut html = format!("{live}<pre class=\"diff\">");
    for line in shown.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            ""
        } else if line.starts_with('+') {
            "diff-add"
        } else if line.starts_with('-') {
            "diff-del"
        } else if line.starts_with("@@") {
            "diff-hunk"
        } else {
            ""
        };
        html.push_str(&format!(
            "<span class=\"{class}\">{}</span>\n",
            escape(line)
        ));
    }
    html.push_str("</pre>");
    html.push_str(&cut);
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_is_coloured_by_line_and_cut_on_a_character() {
        let html = diff_part(
            Some("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new <b>\n"),
            false,
        );
        assert!(
            html.contains("<span class=\"diff-del\">-old</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"diff-add\">+new &lt;b&gt;</span>"),
            "{html}"
        );
        assert!(html.contains("<span class=\"\">+++ b/x</span>"), "{html}");
        let big = format!("+{}\n", "é".repeat(DIFF_SHOWN_BYTES));
        let html = diff_part(Some(&big), false);
        assert!(html.contains("is cut at 1 MiB"), "a note says so");
        assert!(html.len() < big.len() + 4096);
        assert!(diff_part(None, true).contains("Reading the worktree"));
        assert!(diff_part(Some(""), false).contains("No change"));
    }
}
