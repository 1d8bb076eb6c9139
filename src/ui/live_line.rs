//! The live line a run's and a plan's console views keep under their
//! milestones, on a terminal: what the current attempt is, how long it has
//! run, what it spent and the agent's last words, redrawn in place and
//! cleared before anything else is printed. Each view says what the line
//! begins with; the rest is kept here once.

use std::time::Instant;

use console::{Style, Term};

use super::digest::{clock, spent, usage};
use crate::agent::AgentEvent;

pub(super) struct LiveLine {
    term: Term,
    dim: Style,
    /// Only a terminal gets a live line.
    live: bool,
    shown: bool,
    started: Instant,
    last_message: String,
    tokens: u64,
    cost: f64,
}

impl LiveLine {
    pub(super) fn new(term: Term, dim: Style) -> LiveLine {
        LiveLine {
            live: term.is_term(),
            term,
            dim,
            shown: false,
            started: Instant::now(),
            last_message: String::new(),
            tokens: 0,
            cost: 0.0,
        }
    }

    pub(super) fn is_live(&self) -> bool {
        self.live
    }

    /// An attempt begins: its clock starts and the agent has said nothing.
    pub(super) fn begin(&mut self) {
        self.started = Instant::now();
        self.last_message.clear();
    }

    /// Seconds since the attempt began.
    pub(super) fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// What the agent said: its last words, and what it spent.
    pub(super) fn follow(&mut self, event: &AgentEvent) {
        if let AgentEvent::Message { text, tool_uses } = event {
            let text = text.trim();
            if !text.is_empty() {
                self.last_message = text.lines().last().unwrap_or_default().to_owned();
            } else if let Some(tool) = tool_uses.last() {
                self.last_message = format!("[{}]", tool.name);
            }
        }
        if let Some((tokens, cost)) = spent(event) {
            self.tokens = self.tokens.saturating_add(tokens);
            self.cost += cost;
        }
    }

    /// `{head} · 0:42 · 1234 tokens · $0.05 · last words`, cut to the
    /// terminal's width.
    pub(super) fn show(&mut self, head: &str) {
        let width = usize::from(self.term.size().1).max(40);
        let status = format!(
            "{head} · {} · {} · {}",
            clock(self.started.elapsed().as_secs()),
            usage(self.tokens, self.cost),
            self.last_message
        );
        let status = console::truncate_str(&super::visible(&status), width - 1, "…").into_owned();
        let _ = self.term.clear_line();
        let _ = self.term.write_str(&self.dim.apply_to(status).to_string());
        self.shown = true;
    }

    /// `text` on the line as it is.
    pub(super) fn show_plain(&mut self, text: &str) {
        let _ = self.term.clear_line();
        let _ = self.term.write_str(text);
        self.shown = true;
    }

    /// Clear the line before something else is printed.
    pub(super) fn clear(&mut self) {
        if self.shown {
            let _ = self.term.clear_line();
            self.shown = false;
        }
    }
}
