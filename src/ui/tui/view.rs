//! Drawing the loop screen with ratatui: header, stories on the left, the
//! selected attempt's tabs on the right (`tabs`), the keys in the footer,
//! the help overlay (`help`). Long lines wrap at word boundaries rather
//! than being cut, and a line of parts leaves out the least important ones
//! (`text`). Without colour (`NO_COLOR`), selection stays visible through
//! reverse video.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

mod answer_box;
mod help;
mod tabs;
mod text;

use super::app::{App, Mode, StoryState};
use crate::state::AttemptOutcome;

/// The smallest terminal the loop screen draws in.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 12;

/// Styles, or none of them under `NO_COLOR`.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    /// Colour unless `NO_COLOR` is set to something.
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::default().fg(color)
        } else {
            Style::default()
        }
    }

    fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    fn dim(self) -> Style {
        if self.color {
            Style::default().add_modifier(Modifier::DIM)
        } else {
            Style::default()
        }
    }

    fn selected(self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    fn good(self) -> Style {
        self.fg(Color::Green)
    }

    fn bad(self) -> Style {
        self.fg(Color::Red)
    }

    fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }

    fn accent(self) -> Style {
        self.fg(Color::Cyan)
    }
}

/// `00:42`, `1:02:03`.
pub fn clock(ms: u64) -> String {
    let secs = ms / 1000;
    if secs >= 3600 {
        format!("{}:{:02}:{:02}", secs / 3600, (secs / 60) % 60, secs % 60)
    } else {
        format!("{:02}:{:02}", secs / 60, secs % 60)
    }
}

/// `950`, `12.3k`, `4.1M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Say the terminal is too small, if it is.
pub fn too_small(frame: &mut Frame, theme: Theme, min: (u16, u16)) -> bool {
    let area = frame.area();
    if area.width >= min.0 && area.height >= min.1 {
        return false;
    }
    let text = vec![
        Line::styled(
            "terminal too small",
            theme.warn().add_modifier(Modifier::BOLD),
        ),
        Line::raw(format!(
            "{}x{} here; {}x{} needed",
            area.width, area.height, min.0, min.1
        )),
    ];
    frame.render_widget(Paragraph::new(text), area);
    true
}

pub fn draw(frame: &mut Frame, app: &mut App, theme: Theme) {
    app.dirty = false;
    if too_small(frame, theme, (MIN_WIDTH, MIN_HEIGHT)) {
        return;
    }
    let notice = if app.search.editing {
        Some(format!("/{}", app.search.query))
    } else {
        app.notice.clone()
    };
    // A notice is said in full, on up to three rows.
    let notice_rows: Vec<String> = notice
        .as_deref()
        .map(|text| text::wrap(text, usize::from(frame.area().width).max(1)))
        .unwrap_or_default()
        .into_iter()
        .take(3)
        .collect();
    let [header, body, notice_area, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(notice_rows.len() as u16),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, app, theme);
    let left_width = (body.width / 3).clamp(20, 36);
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_width), Constraint::Min(10)]).areas(body);
    draw_stories(frame, left, app, theme);
    tabs::draw_tabs(frame, right, app, theme);
    let notice: Vec<Line> = notice_rows
        .into_iter()
        .map(|row| Line::styled(row, theme.warn()))
        .collect();
    frame.render_widget(Paragraph::new(notice), notice_area);
    draw_footer(frame, footer, app, theme);
    if let Some(open) = &app.answer_box {
        answer_box::draw_answer_box(frame, open, theme);
    }
    if app.help {
        help::draw_help(frame, app, theme);
    }
}

/// Two lines: the change, its branch and how the run stands; then the
/// story and attempt at work, the time, what it spent and the agent. Parts
/// that do not fit are left out, least important first.
fn draw_header(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let width = usize::from(area.width).saturating_sub(1);
    let state = match (&app.ended, app.stopping_since, app.mode) {
        (Some(ended), _, _) => ended.clone(),
        (None, Some(_), _) => "stopping".to_owned(),
        (None, None, Mode::Watch { live: false }) => "not running".to_owned(),
        (None, None, _) => "running".to_owned(),
    };
    let first = [(0, app.change.clone()), (1, app.branch.clone()), (0, state)];
    let kept = text::keep_parts(&first, width);
    let mut spans = vec![Span::raw(" ")];
    for (n, at) in kept.iter().enumerate() {
        if n > 0 {
            spans.push(Span::raw(" · "));
        }
        let room = width.saturating_sub(spans.iter().map(|s| s.content.chars().count()).sum());
        let text = text::fit(&first[*at].1, room);
        spans.push(match at {
            0 => Span::styled(text, theme.bold().patch(theme.accent())),
            2 => Span::styled(text, theme.bold()),
            _ => Span::raw(text),
        });
    }
    // A parallel run's stories at work in words where they fit, else short.
    let mut second = header_facts(app, true);
    if text::keep_parts(&second, width).len() < second.len() {
        second = header_facts(app, false);
    }
    let kept = text::keep_parts(&second, width);
    let line = kept
        .iter()
        .map(|at| second[*at].1.as_str())
        .collect::<Vec<_>>()
        .join(" · ");
    let second = Line::from(vec![Span::styled(
        format!(" {}", text::fit(&line, width)),
        theme.dim(),
    )]);
    frame.render_widget(Paragraph::new(vec![Line::from(spans), second]), area);
}

/// The second header line's parts, each with how soon it is left out;
/// `in_words`: `story 1 (attempt 2)` rather than `1 #2` for each story at
/// work.
fn header_facts(app: &App, in_words: bool) -> Vec<(u8, String)> {
    let total = app.stories.len();
    let (story_n, attempt_n) = match &app.current {
        Some((id, attempt)) => (
            app.stories
                .iter()
                .position(|s| &s.id == id)
                .map(|at| at + 1)
                .unwrap_or(0),
            *attempt,
        ),
        None => (app.stories.iter().filter(|s| s.done).count(), 0),
    };
    let (tokens_used, cost) = app.totals();
    let spent = match (tokens_used, cost > 0.0) {
        (0, false) => "usage unknown".to_owned(),
        (0, true) => format!("${cost:.2}"),
        (n, false) => format!("{} tok", tokens(n)),
        (n, true) => format!("{} tok · ${cost:.2}", tokens(n)),
    };
    let mut facts = Vec::new();
    match &app.workers {
        Some(workers) if app.ended.is_none() => {
            let stories: Vec<String> = workers
                .iter()
                .map(|(id, attempt)| match in_words {
                    true => format!("{id} (attempt {attempt})"),
                    false => format!("{id} #{attempt}"),
                })
                .collect();
            facts.push((
                0,
                match (stories.as_slice(), in_words) {
                    ([], _) => "no story at work".to_owned(),
                    (_, true) => format!("at work: story {}", stories.join(", ")),
                    (_, false) => format!("at work: {}", stories.join(", ")),
                },
            ));
        }
        _ => {
            facts.push((0, format!("story {story_n}/{total}")));
            facts.push((
                2,
                if let (true, Some((role, n, max))) = (attempt_n > 0, app.role_step) {
                    format!("{role} {n}/{max}")
                } else if attempt_n > 0 {
                    format!("attempt {attempt_n}/{}", app.max_attempts)
                } else {
                    "attempt -".to_owned()
                },
            ));
        }
    }
    facts.push((0, clock(app.elapsed_ms)));
    facts.push((3, spent));
    facts.push((1, text::agent_short(&app.agent)));
    facts
}

fn state_mark(state: StoryState, theme: Theme) -> Span<'static> {
    match state {
        StoryState::Done => Span::styled("✓", theme.good()),
        StoryState::Running => Span::styled("▶", theme.accent()),
        StoryState::Failed => Span::styled("✗", theme.bad()),
        StoryState::Pending => Span::raw("·"),
        StoryState::Waiting => Span::styled("?", theme.warn()),
    }
}

fn outcome_style(outcome: AttemptOutcome, theme: Theme) -> Style {
    match outcome {
        AttemptOutcome::Complete => theme.good(),
        AttemptOutcome::Running => theme.accent(),
        AttemptOutcome::RateLimited | AttemptOutcome::Interrupted | AttemptOutcome::Question => {
            theme.warn()
        }
        _ => theme.bad(),
    }
}

fn draw_stories(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let block = Block::default()
        .borders(Borders::RIGHT)
        .title(Span::styled(" Stories ", theme.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = usize::from(inner.width);
    let mut lines: Vec<Line> = Vec::new();
    let mut selected_row = 0;
    let selected_attempt = app.attempt_index();
    for (at, story) in app.stories.iter().enumerate() {
        let state = app.story_state(story);
        let is_selected = at == app.selected_story;
        if is_selected {
            selected_row = lines.len();
        }
        let title_style = if is_selected {
            theme.selected()
        } else {
            Style::default()
        };
        let title = format!("{}. {}", story.id, story.title);
        for (n, row) in text::wrap(&title, width.saturating_sub(2))
            .into_iter()
            .enumerate()
        {
            lines.push(Line::from(vec![
                if n == 0 {
                    state_mark(state, theme)
                } else {
                    Span::raw(" ")
                },
                Span::raw(" "),
                Span::styled(row, title_style),
            ]));
        }
        if let Some(question) = story.waiting() {
            let asked = text::fit(&format!("asks: {question}"), width.saturating_sub(2));
            lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(asked, theme.warn()),
            ]));
        }
        if !is_selected && state != StoryState::Running {
            continue;
        }
        for (n, attempt) in story.attempts.iter().enumerate() {
            let marker = if is_selected && Some(n) == selected_attempt {
                "›"
            } else {
                " "
            };
            let text = text::fit(
                &format!(
                    "{marker} {} {}",
                    attempt.label(),
                    crate::ui::outcome_word(attempt.outcome)
                ),
                width.saturating_sub(2),
            );
            lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(text, outcome_style(attempt.outcome, theme)),
            ]));
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled("no stories yet", theme.dim()));
    }
    let height = usize::from(inner.height);
    let top = selected_row.saturating_sub(height.saturating_sub(3));
    let shown: Vec<Line> = lines.into_iter().skip(top).take(height).collect();
    frame.render_widget(Paragraph::new(shown), inner);
}

/// The keys, as many as fit, the way out and `? help` always among them.
fn draw_footer(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let wide = area.width >= 100;
    let mut keys: Vec<(u8, &str)> = vec![
        (
            1,
            if wide {
                "↑↓/jk story"
            } else {
                "↑↓ story"
            },
        ),
        (3, "[ ] attempt"),
        (2, "Tab view"),
        (6, "PgUp PgDn g G scroll"),
        (5, "f follow"),
        (4, if wide { "/ search" } else { "/ find" }),
    ];
    match app.mode {
        Mode::Loop if app.feed_closed => keys.push((0, "q leave")),
        Mode::Loop => keys.push((0, "q stop")),
        Mode::Watch { live: true } => {
            keys.push((0, "q leave"));
            keys.push((0, if wide { "s stop the run" } else { "s stop" }));
        }
        Mode::Watch { live: false } => keys.push((0, "q leave")),
    }
    keys.push((0, "? help"));
    let width = usize::from(area.width).saturating_sub(1);
    let fits = |keys: &[(u8, &str)]| {
        keys.iter()
            .map(|(_, k)| k.chars().count() + 2)
            .sum::<usize>()
            <= width
    };
    while !fits(&keys) {
        let least = keys
            .iter()
            .enumerate()
            .filter(|(_, (priority, _))| *priority > 0)
            .max_by_key(|(_, (priority, _))| *priority)
            .map(|(at, _)| at);
        match least {
            Some(at) => {
                keys.remove(at);
            }
            None => break,
        }
    }
    let text: Vec<&str> = keys.iter().map(|(_, key)| *key).collect();
    frame.render_widget(
        Paragraph::new(Line::styled(
            text::fit(&format!(" {}", text.join("  ")), usize::from(area.width)),
            theme.dim(),
        )),
        area,
    );
}

/// The keys, for the help overlay and the documentation.
pub const KEYS: &[(&str, &str)] = &[
    ("Up Down  k j", "pick a story"),
    ("[ ]", "pick an attempt of the story"),
    (
        "Tab  Shift-Tab",
        "switch view: Output, Prompt, Diff, Checks, Events",
    ),
    ("PgUp PgDn", "scroll a page"),
    ("g  G", "go to the top / the end (and follow)"),
    ("f", "follow new output on or off"),
    ("/  n  N", "search the output; next, previous match"),
    (
        "q",
        "stop the run; 3 times within 3 s: force quit (watch: leave)",
    ),
    (
        "a",
        "answer the question of the selected story (or the first that waits): Enter records, Esc cancels",
    ),
    ("s", "watch: ask the running loop to stop"),
    (
        "?",
        "this help: Up Down PgUp PgDn scroll it, any other key closes it",
    ),
];
