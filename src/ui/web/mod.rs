//! The runs for a browser, as HTML: what `git ralph serve` sends. Like the
//! rest of `ui`, it renders for people what the domain read (the reports of
//! `status`, the trails and attempts of `log` and `show`, the events of the
//! run) and decides nothing; it writes to no terminal and no socket, only
//! returns text. Pages are whole documents; each live part is also
//! rendered alone, for the server to push as it changes. Every piece of
//! text from a run goes through [`escape`].

mod attempt;
mod pages;
mod run;
mod runs;

pub use attempt::{
    AttemptView, attempt_head, attempt_main, diff_part, transcript_lines, transcript_part,
};
pub use pages::{Document, answer_page, confirm_page, document, refusal};
pub use run::{RunView, run_main};
pub use runs::runs_main;

/// The style sheet every page links to.
pub const STYLE: &str = include_str!("style.css");
/// The script that keeps a page's live parts up to date.
pub const SCRIPT: &str = include_str!("app.js");

/// `text` made safe anywhere in HTML: in text and in quoted attributes,
/// its control characters shown as data ([`crate::ui::visible`]) and the
/// carriage return of a CRLF left out.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::ui::visible(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// `3 attempts`, `1 attempt`.
fn plural(n: usize, thing: &str) -> String {
    crate::ui::status::plural(n, thing)
}

/// A word for how an attempt went, with the class that colours it.
fn outcome(outcome: crate::state::AttemptOutcome) -> String {
    use crate::state::AttemptOutcome;
    let class = match outcome {
        AttemptOutcome::Complete | AttemptOutcome::Passed => "good",
        AttemptOutcome::Running => "",
        AttemptOutcome::Interrupted | AttemptOutcome::RateLimited => "warn",
        _ => "bad",
    };
    format!(
        "<span class=\"{class}\">{}</span>",
        escape(outcome.describe())
    )
}

/// `$0.42`.
fn cost(usd: f64) -> String {
    format!("${usd:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_cannot_open_a_tag_or_leave_an_attribute() {
        let text = escape("<script>alert('x')</script> & \"q\"\r\n\u{7}\u{1b}[2J\r");
        assert_eq!(
            text,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;\n\\x07\\x1b[2J\\x0d"
        );
    }
}
