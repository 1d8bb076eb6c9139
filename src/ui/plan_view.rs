//! `git ralph plan` for people: a line per milestone (a try begun, what
//! was undone, the reader's verdict), on a terminal a live line with the
//! try, its time, tokens, cost and the agent's last words, and at the end
//! what the plan cost, where it is, and the command that runs it.

use console::Term;

use super::digest::usage;
use super::live_line::LiveLine;
use super::status::plural;
use super::{Styles, out};
use crate::planning::{OpenUnit, Outcome, PlanEvent, Planned};
use crate::process::shell_quote;

pub struct PlanView {
    styles: Styles,
    line: LiveLine,
    attempt: (u32, u32),
}

impl Default for PlanView {
    fn default() -> Self {
        Self::new()
    }
}

impl PlanView {
    pub fn new() -> PlanView {
        let term = Term::stdout();
        let styles = Styles::for_term(&term);
        PlanView {
            line: LiveLine::new(term, styles.dim.clone()),
            styles,
            attempt: (0, 0),
        }
    }

    pub fn render(&mut self, event: &PlanEvent) {
        let s = &self.styles;
        let line = match event {
            PlanEvent::Began {
                change,
                target,
                refine,
                agent,
                tries,
                ..
            } => Some(format!(
                "{} {change} with {agent}: {} {target} (at most {})",
                s.bold
                    .apply_to(if *refine { "Refining" } else { "Planning" }),
                if *refine { "the plan in" } else { "writing" },
                count(*tries as usize, "try", "tries")
            )),
            PlanEvent::TryStarted { attempt, tries } => {
                self.attempt = (*attempt, *tries);
                self.line.begin();
                Some(format!("{} try {attempt}/{tries}", s.bold.apply_to("▶")))
            }
            PlanEvent::Agent { event, .. } => {
                self.line.follow(event);
                None
            }
            PlanEvent::Undone { what, .. } => {
                Some(format!("  {} the agent {what}", s.warn.apply_to("undone:")))
            }
            PlanEvent::SentBack { attempt, findings } => {
                let mut text = format!(
                    "  {} try {attempt} sent back: the reader said",
                    s.bad.apply_to("✗")
                );
                for finding in findings {
                    text.push_str(&format!("\n    - {}", finding.replace('\n', "\n      ")));
                }
                Some(text)
            }
            PlanEvent::Accepted {
                attempt,
                stories,
                open,
                unit,
            } => Some(format!(
                "  {} try {attempt} accepted: {}, {} open",
                s.good.apply_to("✓"),
                count(*stories, "story", "stories"),
                match unit {
                    OpenUnit::Task => plural(*open, "task"),
                    OpenUnit::Story => count(*open, "story", "stories"),
                }
            )),
        };
        if let Some(line) = line {
            self.clear();
            out(&line);
        }
        self.tick();
    }

    /// Redraw the live line (terminals only).
    fn tick(&mut self) {
        if !self.line.is_live() || self.attempt.0 == 0 {
            return;
        }
        let head = format!("  try {}/{}", self.attempt.0, self.attempt.1);
        self.line.show(&head);
    }

    /// Clear the live line before something else is printed.
    pub fn clear(&mut self) {
        self.line.clear();
    }
}

/// How a plan ended, what it cost and where it is recorded.
pub fn print_planned(planned: &Planned) {
    let s = Styles::for_term(&Term::stdout());
    let totals = &planned.totals;
    let spent = format!(
        "{} · {} · recorded in {}",
        count(planned.attempts as usize, "try", "tries"),
        usage(totals.tokens(), totals.cost_usd),
        planned.record.display()
    );
    let target = planned.target.shown();
    match &planned.outcome {
        Outcome::Accepted { .. } => {
            out(&format!(
                "{} planned {target} · {spent}\n",
                s.good.apply_to("✓")
            ));
        }
        Outcome::NotValid { findings } => {
            let kept = if planned.written {
                format!("what was written is kept in {target}")
            } else {
                format!("nothing was written in {target}")
            };
            let mut text = format!(
                "{} the plan is still not accepted; {kept} · {spent}\n  the reader's last words:",
                s.bad.apply_to("✗")
            );
            for finding in findings {
                text.push_str(&format!("\n  - {}", finding.replace('\n', "\n    ")));
            }
            text.push_str(&if planned.written {
                format!(
                    "\n  fix it by hand, or have the agent try again: git ralph plan {} --refine",
                    planned.target.change()
                )
            } else {
                "\n  plan again with a fuller brief, or with another agent (--agent)".to_owned()
            });
            out(&text);
        }
        Outcome::Stopped if !planned.written => out(&format!(
            "{} stopped; nothing was written in {target} · {spent}",
            s.warn.apply_to("■")
        )),
        Outcome::Stopped => out(&format!(
            "{} stopped; what was written is kept in {target} · {spent}",
            s.warn.apply_to("■")
        )),
    }
}

/// A plan whose process was killed, put back: what was done, and where
/// what its agent left is kept.
pub fn print_recovered(recovered: &crate::planning::cut_short::Recovered) {
    if let Some(left) = &recovered.left_as_is {
        print_let_go(recovered, left);
        return;
    }
    super::warn(&format!(
        "a plan of '{}' was cut short (pid {} no longer runs); your files, index and refs are put back as they were before it",
        recovered.change, recovered.pid
    ));
    for what in &recovered.undone {
        super::note(&format!("  put back: {what}"));
    }
    match &recovered.kept {
        Some(kept) => super::note(&format!(
            "  what its agent left is kept at {kept} (git checkout {kept} -- <path> takes a file back)"
        )),
        None => super::note("  its agent had changed no file"),
    }
    super::note(&format!("  its record: {}", recovered.dir.display()));
}

/// A plan cut short, let go with the repository left as it is.
fn print_let_go(
    recovered: &crate::planning::cut_short::Recovered,
    left: &crate::planning::cut_short::LeftAsIs,
) {
    let since = match left.moved.is_empty() {
        true => String::new(),
        false => format!(", and since it began {}", left.moved.join(", ")),
    };
    super::warn(&format!(
        "a plan of '{}' was cut short (pid {} no longer runs){since}: what its agent did cannot be told from what you did since, so it is let go, your repository left as it is",
        recovered.change, recovered.pid
    ));
    for what in &recovered.undone {
        super::note(&format!("  {what}"));
    }
    super::note(&format!(
        "  how things stood before it is kept at {before} (the index in it, the worktree in its parent: git checkout {before}^ -- <path> takes a file back)",
        before = left.before
    ));
    super::note(&format!("  its record: {}", recovered.dir.display()));
}

/// A plan whose process was killed, not yet put back, as `status` tells it.
pub fn print_cut_short(cut: &crate::planning::cut_short::CutShort) {
    super::warn(&format!(
        "a plan of '{change}' was cut short (pid {pid} no longer runs): what its agent changed may still be in your worktree; 'git ralph abort {change}', or any 'git ralph plan', puts back what you had and keeps the agent's work under a ref (unless HEAD or a ref moved since it began: then the plan refuses and abort lets it go, leaving your repository as it is)",
        change = cut.change,
        pid = cut.pid
    ));
}

/// The last line of an accepted plan: the command that runs it.
pub fn print_start_command(words: &[String]) {
    let s = Styles::for_term(&Term::stdout());
    let command: Vec<String> = words.iter().map(|word| shell_quote(word)).collect();
    out(&format!(
        "\n{} {}",
        s.bold.apply_to("run it:"),
        command.join(" ")
    ));
}

/// `1 try`, `3 tries`.
fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}
