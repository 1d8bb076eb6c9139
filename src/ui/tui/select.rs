//! The selection screen (OpenSpec changes and recorded runs) and the
//! preview screen (what a run would do before `R` starts it), as widgets fed
//! by plain data and key handlers that say what the user chose. Whoever
//! drives them gathers the data; nothing here reads files.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::view::{Theme, too_small};
use crate::audit::RunSummary;
use crate::state::RunStatus;

/// The selection screen's keys, for the documentation.
pub const SELECTION_KEYS: &[(&str, &str)] = &[
    ("Up Down  k j", "pick a change or a run"),
    ("g  G", "the first / the last"),
    (
        "Enter",
        "preview a run of the change (of a stopped run with work left: its resume); open any other run in the loop screen",
    ),
    ("w", "open the run in the loop screen"),
    (
        "n",
        "plan a new change: type what to build and its name; the agent writes its stories, and the preview opens on them",
    ),
    ("q  Esc", "quit"),
];

/// The preview screen's keys, for the documentation.
pub const PREVIEW_KEYS: &[(&str, &str)] = &[
    (
        "R",
        "start the run (or resume it) on the loop screen; when it ends, back to the list",
    ),
    ("Up Down  k j  PgUp PgDn  g", "scroll"),
    (
        "Tab  Shift-Tab",
        "the pane to scroll: the first prompt, the stories, the rules",
    ),
    ("Esc  q", "back to the list"),
];

/// An OpenSpec change that could be started.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeEntry {
    pub name: String,
    pub stories_done: usize,
    pub stories_total: usize,
}

/// What the selection screen lists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SelectionData {
    pub changes: Vec<ChangeEntry>,
    pub runs: Vec<RunSummary>,
    /// Now, in seconds since the epoch: how long ago runs moved.
    pub now: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectionAction {
    None,
    /// Preview a run of this change (a new one, or the stopped one resumed).
    OpenChange(String),
    /// Open this run (its label) in the loop screen.
    OpenRun(String),
    /// Plan a new change (`n`).
    NewChange,
    Quit,
}

pub struct SelectionScreen {
    pub data: SelectionData,
    pub selected: usize,
    /// What the last run ended with, or why something could not be done.
    pub message: Option<String>,
}

impl SelectionScreen {
    pub fn new(data: SelectionData) -> SelectionScreen {
        SelectionScreen {
            data,
            selected: 0,
            message: None,
        }
    }

    fn len(&self) -> usize {
        self.data.changes.len() + self.data.runs.len()
    }

    /// New data (the runs move on); the selection stays in range.
    pub fn refresh(&mut self, data: SelectionData) {
        self.data = data;
        self.selected = self.selected.min(self.len().saturating_sub(1));
    }

    /// The run under the selection, if it is a run.
    fn run(&self) -> Option<&RunSummary> {
        let changes = self.data.changes.len();
        self.selected
            .checked_sub(changes)
            .and_then(|at| self.data.runs.get(at))
    }

    pub fn on_key(&mut self, key: KeyEvent) -> SelectionAction {
        self.message = None;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(self.len().saturating_sub(1));
            }
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = self.len().saturating_sub(1),
            KeyCode::Enter => {
                if let Some(change) = self.data.changes.get(self.selected) {
                    return SelectionAction::OpenChange(change.name.clone());
                }
                if let Some(run) = self.run() {
                    // A stopped run is previewed to be resumed; any other
                    // is opened to be watched or browsed.
                    return if resumable(run) {
                        SelectionAction::OpenChange(run.change.clone())
                    } else {
                        SelectionAction::OpenRun(run.label.clone())
                    };
                }
            }
            KeyCode::Char('w') => {
                if let Some(run) = self.run() {
                    return SelectionAction::OpenRun(run.label.clone());
                }
            }
            KeyCode::Char('n') => return SelectionAction::NewChange,
            KeyCode::Char('q') | KeyCode::Esc => return SelectionAction::Quit,
            _ => {}
        }
        SelectionAction::None
    }
}

/// `just now`, `12 min ago`, `3 h ago`, `2 days ago`.
fn ago(secs: u64) -> String {
    match secs {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        86_400..172_800 => "1 day ago".to_owned(),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// A live run no loop is working on and with work left: starting its
/// change resumes it. A completed run has nothing to resume; it is opened.
fn resumable(run: &RunSummary) -> bool {
    !run.history
        && run.state == RunStatus::Stopped
        && run.reason != Some(crate::state::StopReason::Completed)
}

pub fn draw_selection(frame: &mut Frame, screen: &SelectionScreen, theme: Theme) {
    if too_small(frame, theme, (40, 8)) {
        return;
    }
    // A long message wraps, up to three rows.
    let message_rows = screen.message.as_ref().map_or(0, |text| {
        let width = usize::from(frame.area().width.max(1));
        (text.chars().count() + 1).div_ceil(width).min(3) as u16
    });
    let [body, message, footer] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(message_rows),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::styled("OpenSpec changes", bold)];
    let mut selected_line = 0;
    let mut row = |lines: &mut Vec<Line>, selected: bool, text: String| {
        let style = if selected {
            selected_line = lines.len();
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::styled(format!("  {text}"), style));
    };
    if screen.data.changes.is_empty() {
        lines.push(Line::raw("  (none in openspec/changes)"));
    }
    for (at, change) in screen.data.changes.iter().enumerate() {
        row(
            &mut lines,
            at == screen.selected,
            format!(
                "{}  {}/{} stories done",
                change.name, change.stories_done, change.stories_total
            ),
        );
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Runs", bold));
    if screen.data.runs.is_empty() {
        lines.push(Line::raw("  (none yet)"));
    }
    let offset = screen.data.changes.len();
    for (at, run) in screen.data.runs.iter().enumerate() {
        row(
            &mut lines,
            offset + at == screen.selected,
            run_row(run, screen.data.now),
        );
    }
    // Keep the selection in sight on a long list.
    let visible = usize::from(body.height.saturating_sub(2)).max(1);
    let scroll = (selected_line + 1).saturating_sub(visible);
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
            .block(Block::default().borders(Borders::ALL).title(" git ralph ")),
        body,
    );
    if let Some(text) = &screen.message {
        frame.render_widget(
            Paragraph::new(Line::styled(format!(" {text}"), bold))
                .wrap(ratatui::widgets::Wrap { trim: false }),
            message,
        );
    }
    let keys = footer_keys(screen.run());
    frame.render_widget(Paragraph::new(Line::styled(keys, dim(theme))), footer);
}

/// A run's row in the list: its name, state, progress and age.
fn run_row(run: &RunSummary, now: u64) -> String {
    format!(
        "{}  {}  {}/{} stories done  · {}",
        if run.history {
            format!("{} (earlier run)", run.change)
        } else {
            run.label.clone()
        },
        crate::ui::state_words(run.state, run.reason),
        run.stories_done,
        run.stories_total,
        ago(now.saturating_sub(run.updated_at))
    )
}

/// The selection screen's keys for what is selected.
fn footer_keys(run: Option<&RunSummary>) -> &'static str {
    match run {
        Some(run) if resumable(run) => {
            " ↑↓/jk pick  Enter preview the resume  w watch  n new  q quit"
        }
        Some(_) => " ↑↓/jk pick  Enter watch  n new  q quit",
        None => " ↑↓/jk pick  Enter preview  n new  q quit",
    }
}

/// One pane of the preview: wrapped, scrolled where the user left it, its
/// border bold when the scroll keys move it.
fn pane<'a>(
    screen: &PreviewScreen,
    which: Pane,
    title: String,
    text: impl Into<ratatui::text::Text<'a>>,
) -> Paragraph<'a> {
    let border = if screen.focus == which {
        Style::default().add_modifier(Modifier::BOLD)
    } else {
        Style::default()
    };
    Paragraph::new(text)
        .wrap(ratatui::widgets::Wrap { trim: false })
        .scroll((screen.scroll[which as usize], 0))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(title)
                .border_style(border),
        )
}

fn dim(theme: Theme) -> Style {
    if theme.color {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    }
}

/// One story as the preview lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewStory {
    pub id: String,
    pub title: String,
    pub done: bool,
    /// The story the first attempt works on.
    pub next: bool,
    pub tasks: Vec<(bool, String)>,
    /// The story's role pipeline, each role in one line.
    pub pipeline: Vec<String>,
}

/// What a run would do, shown before it starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreviewData {
    pub change: String,
    pub stories: Vec<PreviewStory>,
    /// The exact prompt of the first attempt.
    pub first_prompt: String,
    /// The agent's command line.
    pub agent_command: String,
    /// The contract: promise, checks, protected files.
    pub contract: Vec<String>,
    /// The guardrails: retries, iterations, runtime, budget.
    pub guardrails: Vec<String>,
    /// What to know first: warnings, an agent not on PATH.
    pub notes: Vec<String>,
    /// R resumes a stopped run rather than starting one.
    pub resumes: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewAction {
    None,
    Start,
    Back,
}

/// The pane of the preview the scroll keys move; Tab goes round them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Prompt,
    Stories,
    Rules,
}

pub struct PreviewScreen {
    pub data: PreviewData,
    pub focus: Pane,
    /// The first row shown of each pane: prompt, stories, rules.
    pub scroll: [u16; 3],
}

impl PreviewScreen {
    pub fn new(data: PreviewData) -> PreviewScreen {
        PreviewScreen {
            data,
            focus: Pane::Prompt,
            scroll: [0; 3],
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> PreviewAction {
        let scroll = &mut self.scroll[self.focus as usize];
        match key.code {
            KeyCode::Char('R') => return PreviewAction::Start,
            KeyCode::Esc | KeyCode::Char('q') => return PreviewAction::Back,
            KeyCode::Tab => {
                self.focus = match self.focus {
                    Pane::Prompt => Pane::Stories,
                    Pane::Stories => Pane::Rules,
                    Pane::Rules => Pane::Prompt,
                }
            }
            KeyCode::BackTab => {
                self.focus = match self.focus {
                    Pane::Prompt => Pane::Rules,
                    Pane::Stories => Pane::Prompt,
                    Pane::Rules => Pane::Stories,
                }
            }
            KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
            KeyCode::PageDown => *scroll = scroll.saturating_add(10),
            KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
            KeyCode::Home | KeyCode::Char('g') => *scroll = 0,
            _ => {}
        }
        PreviewAction::None
    }
}

/// The preview's stories, each with its tasks and roles.
fn story_lines(data: &PreviewData) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    for story in &data.stories {
        lines.push(Line::from(vec![
            Span::raw(match (story.done, story.next) {
                (true, _) => "✓ ",
                (false, true) => "▶ ",
                (false, false) => "· ",
            }),
            Span::styled(format!("{}. {}", story.id, story.title), bold),
        ]));
        for (done, task) in &story.tasks {
            lines.push(Line::raw(format!(
                "   [{}] {task}",
                if *done { "x" } else { " " }
            )));
        }
        for role in &story.pipeline {
            lines.push(Line::raw(format!("   → {role}")));
        }
    }
    lines
}

pub fn draw_preview(frame: &mut Frame, screen: &PreviewScreen, theme: Theme) {
    if too_small(frame, theme, (50, 12)) {
        return;
    }
    let data = &screen.data;
    let [top, prompt, footer] = Layout::vertical([
        Constraint::Percentage(45),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let [stories, rules] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let story_lines = story_lines(data);
    let title = if data.resumes {
        format!(" {} · resume · stories ", data.change)
    } else {
        format!(" {} · stories ", data.change)
    };
    frame.render_widget(pane(screen, Pane::Stories, title, story_lines), stories);
    let mut rule_lines: Vec<Line> = data
        .notes
        .iter()
        .map(|note| Line::styled(format!("! {note}"), bold))
        .collect();
    // The bounded parts first, so that the contract and the guardrails
    // show at a glance however long the agent's command line wraps.
    rule_lines.push(Line::styled("contract", bold));
    rule_lines.extend(
        data.contract
            .iter()
            .map(|line| Line::raw(format!("  {line}"))),
    );
    rule_lines.push(Line::styled("guardrails", bold));
    rule_lines.extend(
        data.guardrails
            .iter()
            .map(|line| Line::raw(format!("  {line}"))),
    );
    rule_lines.push(Line::styled("agent", bold));
    rule_lines.push(Line::raw(format!("  {}", data.agent_command)));
    frame.render_widget(
        pane(screen, Pane::Rules, " rules ".to_owned(), rule_lines),
        rules,
    );
    frame.render_widget(
        pane(
            screen,
            Pane::Prompt,
            " first prompt ".to_owned(),
            data.first_prompt.as_str(),
        ),
        prompt,
    );
    frame.render_widget(
        Paragraph::new(Line::styled(
            if data.resumes {
                " R resume the run  ↑↓/PgUp/PgDn scroll  Tab next pane  Esc back"
            } else {
                " R start the run  ↑↓/PgUp/PgDn scroll  Tab next pane  Esc back"
            },
            dim(theme),
        )),
        footer,
    );
}
