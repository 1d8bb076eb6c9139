//! The only module that writes to the terminal. It renders the loop's typed
//! events for people (the console crate: colour only on a terminal, honouring
//! `NO_COLOR`) or as JSON lines for programs, and prints errors as
//! `error: …` / `caused by: …` / `hint: …` on stderr. A closed stdout (a
//! broken pipe) silences output instead of failing the command. Whatever
//! it prints as a line shows control characters as data ([`visible`]):
//! text from an agent or a file never acts on the terminal.

mod agents_view;
pub mod answer;
mod audit_view;
mod console_view;
mod digest;
pub(crate) mod ending;
mod finish_menu;
mod keys;
mod live_line;
pub(crate) mod plan_view;
pub(crate) mod preview;
pub(crate) mod status;
pub(crate) mod transcript;
pub mod travel;
pub mod tui;
mod visible;
pub mod web;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use console::{Style, Term};

pub use agents_view::{AgentRow, print_agents, print_progress, print_verdicts};
pub use audit_view::{AttemptPrinter, duration, outcome_word, print_patch, print_trail};
pub use console_view::ConsoleView;
pub use finish_menu::ask_finish;
pub use keys::KeyListener;
pub use visible::visible;

use crate::events::Record;
use crate::exit::CommandError;

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Write a line to stdout, its control characters visible; a broken pipe
/// makes later writes no-ops.
pub fn out(line: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let line = shown(line, &Term::stdout());
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Write `text` to stdout byte for byte, without a newline of its own: for
/// what must stay exact (a patch for `git apply`), never for text to be
/// read on a terminal. A broken pipe makes later writes no-ops.
pub fn out_raw(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Print `value` as pretty JSON on stdout.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), CommandError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|err| CommandError::from_error(crate::exit::ErrorKind::Internal, err))?;
    out(&text);
    Ok(())
}

/// `line` as printed on `term`: its control characters visible, but for
/// the colours of [`Styles`] when `term` takes colour.
fn shown<'a>(line: &'a str, term: &Term) -> std::borrow::Cow<'a, str> {
    visible::visible_styled(line, colors_enabled(term))
}

/// Whether colour may be used on `term`.
pub fn colors_enabled(term: &Term) -> bool {
    term.is_term() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub struct Styles {
    pub bold: Style,
    pub dim: Style,
    pub good: Style,
    pub bad: Style,
    pub warn: Style,
}

impl Styles {
    pub fn for_term(term: &Term) -> Styles {
        let on = colors_enabled(term);
        let style = |s: Style| s.force_styling(on);
        Styles {
            bold: style(Style::new().bold()),
            dim: style(Style::new().dim()),
            good: style(Style::new().green()),
            bad: style(Style::new().red().bold()),
            warn: style(Style::new().yellow()),
        }
    }

    /// A line of a report: its `label` in bold, then `value`.
    pub fn field(&self, label: &str, value: impl std::fmt::Display) -> String {
        format!("{} {value}", self.bold.apply_to(label))
    }
}

/// Print a command error to stderr. A closed stdout is not an error and
/// prints nothing.
pub fn print_error(err: &CommandError) {
    if err.kind == crate::exit::ErrorKind::BrokenPipe {
        return;
    }
    let term = Term::stderr();
    let styles = Styles::for_term(&term);
    let mut text = format!("{} {}\n", styles.bad.apply_to("error:"), err.message);
    for cause in err.causes() {
        text.push_str(&format!("caused by: {cause}\n"));
    }
    for hint in &err.hints {
        text.push_str(&format!("{} {hint}\n", styles.warn.apply_to("hint:")));
    }
    let _ = std::io::stderr().write_all(shown(&text, &term).as_bytes());
}

/// What an attempt did beyond its own story, as `status` and `log` say
/// it: ticks in other stories (put back), changes in the git directory
/// (undone), tasks it added.
pub(crate) fn attempt_remarks(
    outside_ticks: &[String],
    git_dir_changes: &[String],
    added_tasks: &[String],
) -> Vec<String> {
    let mut remarks = Vec::new();
    if !outside_ticks.is_empty() {
        remarks.push(format!(
            "ticked outside its story: {}, put back",
            outside_ticks.join(", ")
        ));
    }
    if !git_dir_changes.is_empty() {
        remarks.push(format!(
            "undone in the git directory: {}",
            git_dir_changes.join(", ")
        ));
    }
    if !added_tasks.is_empty() {
        remarks.push(format!("added tasks: {}", added_tasks.join("; ")));
    }
    remarks
}

/// ` by codex` for an attempt another agent than the run's ran (a
/// fallback, a role's own); nothing for the run's agent.
pub fn by_other_agent(ran: Option<&str>, run: &str) -> String {
    match ran {
        Some(agent) if agent != run => format!(" by {agent}"),
        _ => String::new(),
    }
}

/// A run's state and why it ended, once: `stopped (max_retries)`,
/// `finished (completed)`, but `stopped` for a run the user stopped.
pub fn state_words(
    state: crate::state::RunStatus,
    reason: Option<crate::state::StopReason>,
) -> String {
    match reason {
        Some(crate::state::StopReason::Stopped) if state == crate::state::RunStatus::Stopped => {
            state.to_string()
        }
        Some(reason) => format!("{state} ({reason})"),
        None => state.to_string(),
    }
}

/// The terminal's bell (BEL on stdout), for a user who looked away.
pub fn ring_bell() {
    use std::io::Write;
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(b"\x07");
    let _ = stdout.flush();
}

/// A warning on stderr.
pub fn warn(message: &str) {
    let term = Term::stderr();
    let styles = Styles::for_term(&term);
    let line = format!("{} {message}", styles.warn.apply_to("warning:"));
    let _ = writeln!(std::io::stderr(), "{}", shown(&line, &term));
}

/// A note for people on stderr (so that stdout stays clean for `--json`).
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "{}", visible(message));
}

impl crate::run::View for Renderer {
    fn lossless(&self) -> bool {
        matches!(self, Renderer::Json)
    }

    fn render(&mut self, record: &Record) {
        Renderer::render(self, record);
    }

    fn tick(&mut self) {
        Renderer::tick(self);
    }

    fn clear(&mut self) {
        Renderer::clear(self);
    }

    fn note(&mut self, text: &str) {
        note(text);
    }
}

/// How events are shown.
pub enum Renderer {
    Console(Box<ConsoleView>),
    Json,
}

impl Renderer {
    pub fn new(json: bool) -> Renderer {
        if json {
            Renderer::Json
        } else {
            Renderer::Console(Box::default())
        }
    }

    /// `--notify`: the line view rings the bell when the run ends; JSON,
    /// for programs, never does.
    pub fn with_bell(mut self, bell: bool) -> Renderer {
        if let Renderer::Console(view) = &mut self {
            view.bell = bell;
        }
        self
    }

    pub fn render(&mut self, record: &Record) {
        match self {
            Renderer::Json => {
                if let Ok(line) = serde_json::to_string(record) {
                    out(&line);
                }
            }
            Renderer::Console(view) => view.render(record),
        }
    }

    /// Called about once a second to refresh the live line.
    pub fn tick(&mut self) {
        if let Renderer::Console(view) = self {
            view.tick();
        }
    }

    /// Clear the live line before something else is printed.
    pub fn clear(&mut self) {
        if let Renderer::Console(view) = self {
            view.clear();
        }
    }
}
