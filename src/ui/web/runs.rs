//! The list of the repository's runs, live ones first, as the selection
//! screen lists them.

use super::escape;
use crate::audit::RunSummary;
use crate::serve::Route;
use crate::state::RunStatus;

/// The inner HTML of the list page.
pub fn runs_main(runs: &[RunSummary], now: u64) -> String {
    let mut html = String::from("<h1>Runs</h1>");
    if runs.is_empty() {
        html.push_str(
            "<p>No run yet. Start one with <code>git ralph start &lt;change&gt;</code>; \
             it shows here as soon as it begins.</p>",
        );
        return html;
    }
    html.push_str("<ul class=\"runs\">");
    for run in runs {
        let state_class = match run.state {
            RunStatus::Running => "good",
            RunStatus::Stopped => "warn",
            RunStatus::Finished | RunStatus::Aborted => "muted",
        };
        let reason = run
            .reason
            .map(|reason| format!(" ({reason})"))
            .unwrap_or_default();
        let kept = if run.history {
            format!(" <span class=\"muted\">{}</span>", escape(&run.label))
        } else {
            String::new()
        };
        html.push_str(&format!(
            "<li class=\"card run\"><a href=\"{href}\"><strong>{change}</strong></a>{kept}<br>\
             <span class=\"{state_class}\">{state}{reason}</span> · {done}/{total} stories done \
             · <span class=\"muted\">moved {ago}</span></li>",
            href = escape(&Route::Run(run.label.clone()).path()),
            change = escape(&run.change),
            state = run.state,
            reason = escape(&reason),
            done = run.stories_done,
            total = run.stories_total,
            ago = ago(now.saturating_sub(run.updated_at)),
        ));
    }
    html.push_str("</ul>");
    html
}

/// `12s ago`, `5m ago`, `3h ago`, `2d ago`.
pub(super) fn ago(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s ago"),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86400),
    }
}
