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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectionAction {
    None,
    /// Preview this change.
    OpenChange(String),
    /// Open this run (its label) in the loop screen.
    OpenRun(String),
    Quit,
}

pub struct SelectionScreen {
    pub data: SelectionData,
    pub selected: usize,
}

impl SelectionScreen {
    pub fn new(data: SelectionData) -> SelectionScreen {
        SelectionScreen { data, selected: 0 }
    }

    fn len(&self) -> usize {
        self.data.changes.len() + self.data.runs.len()
    }

    pub fn on_key(&mut self, key: KeyEvent) -> SelectionAction {
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(self.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                let changes = self.data.changes.len();
                if self.selected < changes {
                    return SelectionAction::OpenChange(
                        self.data.changes[self.selected].name.clone(),
                    );
                }
                if let Some(run) = self.data.runs.get(self.selected - changes) {
                    return SelectionAction::OpenRun(run.label.clone());
                }
            }
            KeyCode::Char('q') | KeyCode::Esc => return SelectionAction::Quit,
            _ => {}
        }
        SelectionAction::None
    }
}

pub fn draw_selection(frame: &mut Frame, screen: &SelectionScreen, theme: Theme) {
    if too_small(frame, theme, (40, 8)) {
        return;
    }
    let [body, footer] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    let mut lines = vec![Line::styled(
        "OpenSpec changes",
        Style::default().add_modifier(Modifier::BOLD),
    )];
    let row = |selected: bool, text: String| {
        let style = if selected {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        Line::styled(format!("  {text}"), style)
    };
    if screen.data.changes.is_empty() {
        lines.push(Line::raw("  (none)"));
    }
    for (at, change) in screen.data.changes.iter().enumerate() {
        lines.push(row(
            at == screen.selected,
            format!(
                "{}  {}/{} stories done",
                change.name, change.stories_done, change.stories_total
            ),
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Runs",
        Style::default().add_modifier(Modifier::BOLD),
    ));
    if screen.data.runs.is_empty() {
        lines.push(Line::raw("  (none)"));
    }
    let offset = screen.data.changes.len();
    for (at, run) in screen.data.runs.iter().enumerate() {
        lines.push(row(
            offset + at == screen.selected,
            format!(
                "{}  {}{}  {}/{} stories done",
                run.label,
                run.state,
                run.reason.map(|r| format!(" ({r})")).unwrap_or_default(),
                run.stories_done,
                run.stories_total
            ),
        ));
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" git ralph ")),
        body,
    );
    frame.render_widget(
        Paragraph::new(Line::styled(" ↑↓/jk pick  Enter open  q quit", dim(theme))),
        footer,
    );
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
    pub tasks: Vec<(bool, String)>,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewAction {
    None,
    Start,
    Back,
}

pub struct PreviewScreen {
    pub data: PreviewData,
    pub scroll: u16,
}

impl PreviewScreen {
    pub fn new(data: PreviewData) -> PreviewScreen {
        PreviewScreen { data, scroll: 0 }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> PreviewAction {
        match key.code {
            KeyCode::Char('R') | KeyCode::Char('r') => return PreviewAction::Start,
            KeyCode::Esc | KeyCode::Char('q') => return PreviewAction::Back,
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(10),
            _ => {}
        }
        PreviewAction::None
    }
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
    let mut story_lines = Vec::new();
    for story in &data.stories {
        story_lines.push(Line::from(vec![
            Span::raw(if story.done { "✓ " } else { "· " }),
            Span::styled(format!("{}. {}", story.id, story.title), bold),
        ]));
        for (done, task) in &story.tasks {
            story_lines.push(Line::raw(format!(
                "   [{}] {task}",
                if *done { "x" } else { " " }
            )));
        }
    }
    frame.render_widget(
        Paragraph::new(story_lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(format!(" {} · stories ", data.change)),
        ),
        stories,
    );
    let mut rule_lines = vec![
        Line::styled("agent", bold),
        Line::raw(format!("  {}", data.agent_command)),
    ];
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
    frame.render_widget(
        Paragraph::new(rule_lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .block(Block::default().borders(Borders::ALL).title(" rules ")),
        rules,
    );
    frame.render_widget(
        Paragraph::new(data.first_prompt.as_str())
            .wrap(ratatui::widgets::Wrap { trim: false })
            .scroll((screen.scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" first prompt "),
            ),
        prompt,
    );
    frame.render_widget(
        Paragraph::new(Line::styled(
            " R start  ↑↓/PgUp/PgDn scroll the prompt  Esc back",
            dim(theme),
        )),
        footer,
    );
}
