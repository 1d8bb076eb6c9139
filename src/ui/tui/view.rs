//! Drawing the loop screen with ratatui: header, stories on the left, the
//! selected attempt's tabs on the right, the keys in the footer. Long lines
//! wrap rather than being cut; only the rows on screen are styled. Without
//! colour (`NO_COLOR`), selection stays visible through reverse video.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs};

use super::app::{App, Mode, StoryState, Tab};
use crate::state::AttemptOutcome;
use crate::ui::transcript::LineKind;

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
    let notice = app.notice.is_some() || app.search.editing;
    let [header, body, notice_area, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(3),
        Constraint::Length(u16::from(notice)),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, app, theme);
    let left_width = (body.width / 3).clamp(20, 36);
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_width), Constraint::Min(10)]).areas(body);
    draw_stories(frame, left, app, theme);
    draw_tabs(frame, right, app, theme);
    if notice {
        let text = if app.search.editing {
            format!("/{}", app.search.query)
        } else {
            app.notice.clone().unwrap_or_default()
        };
        frame.render_widget(
            Paragraph::new(Line::styled(text, theme.warn())),
            notice_area,
        );
    }
    draw_footer(frame, footer, app, theme);
    if app.help {
        draw_help(frame, app, theme);
    }
}

fn draw_header(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let state = match (&app.ended, app.stopping_since, app.mode) {
        (Some(ended), _, _) => ended.clone(),
        (None, Some(_), _) => "stopping".to_owned(),
        (None, None, Mode::Watch { live: false }) => "not running".to_owned(),
        (None, None, _) => "running".to_owned(),
    };
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
    let first = Line::from(vec![
        Span::styled(
            format!(" {} ", app.change),
            theme.bold().patch(theme.accent()),
        ),
        Span::raw(format!("· {} · ", app.branch)),
        Span::styled(state, theme.bold()),
    ]);
    let attempt = if let (true, Some((role, n, max))) = (attempt_n > 0, app.role_step) {
        format!("{role} {n}/{max}")
    } else if attempt_n > 0 {
        format!("attempt {attempt_n}/{}", app.max_attempts)
    } else {
        "attempt -".to_owned()
    };
    let at_work = match &app.workers {
        Some(workers) if app.ended.is_none() => {
            let stories: Vec<String> = workers
                .iter()
                .map(|(id, attempt)| format!("{id} (attempt {attempt})"))
                .collect();
            match stories.as_slice() {
                [] => "no story at work".to_owned(),
                _ => format!("at work: story {}", stories.join(", ")),
            }
        }
        _ => format!("story {story_n}/{total} · {attempt}"),
    };
    let second = Line::from(vec![Span::styled(
        format!(
            " {at_work} · {} · {} tok · ${cost:.2} · {}",
            clock(app.elapsed_ms),
            tokens(tokens_used),
            app.agent
        ),
        theme.dim(),
    )]);
    frame.render_widget(Paragraph::new(vec![first, second]), area);
}

fn state_mark(state: StoryState, theme: Theme) -> Span<'static> {
    match state {
        StoryState::Done => Span::styled("✓", theme.good()),
        StoryState::Running => Span::styled("▶", theme.accent()),
        StoryState::Failed => Span::styled("✗", theme.bad()),
        StoryState::Pending => Span::raw("·"),
    }
}

fn outcome_style(outcome: AttemptOutcome, theme: Theme) -> Style {
    match outcome {
        AttemptOutcome::Complete => theme.good(),
        AttemptOutcome::Running => theme.accent(),
        AttemptOutcome::RateLimited | AttemptOutcome::Interrupted => theme.warn(),
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
        let title = fit(
            &format!("{}. {}", story.id, story.title),
            width.saturating_sub(2),
        );
        let title_style = if is_selected {
            theme.selected()
        } else {
            Style::default()
        };
        lines.push(Line::from(vec![
            state_mark(state, theme),
            Span::raw(" "),
            Span::styled(title, title_style),
        ]));
        if !is_selected && state != StoryState::Running {
            continue;
        }
        for (n, attempt) in story.attempts.iter().enumerate() {
            let marker = if is_selected && Some(n) == selected_attempt {
                "›"
            } else {
                " "
            };
            let text = fit(
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

/// Cut `text` to `width` characters with an ellipsis.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Split a line into rows of `width` characters; tabs become spaces and
/// other control characters are dropped so nothing moves the cursor.
fn wrap(line: &str, width: usize) -> Vec<String> {
    let clean: String = line
        .chars()
        .flat_map(|c| {
            let replacement: Option<&str> = match c {
                '\t' => Some("    "),
                c if c.is_control() => Some(""),
                _ => None,
            };
            match replacement {
                Some(text) => text.chars().collect::<Vec<_>>(),
                None => vec![c],
            }
        })
        .collect();
    if clean.is_empty() {
        return vec![String::new()];
    }
    let chars: Vec<char> = clean.chars().collect();
    chars
        .chunks(width.max(1))
        .map(|chunk| chunk.iter().collect())
        .collect()
}

fn kind_style(kind: LineKind, theme: Theme) -> Style {
    match kind {
        LineKind::Message => Style::default(),
        LineKind::ToolCall => theme.accent(),
        LineKind::ToolOutput => theme.dim(),
        LineKind::ToolError => theme.bad(),
        LineKind::Summary => theme.bold(),
    }
}

/// The lines of the selected tab, styled, before wrapping.
fn tab_lines(app: &App, theme: Theme) -> (Vec<(Style, String)>, Option<usize>) {
    let Some((story, attempt)) = app.selected() else {
        return (vec![(theme.dim(), "no story selected".to_owned())], None);
    };
    let Some(attempt) = attempt else {
        let text = match app.tab {
            Tab::Events => {
                return (
                    app.run_events
                        .iter()
                        .map(|line| (Style::default(), line.clone()))
                        .collect(),
                    None,
                );
            }
            _ => format!("story {} has no attempt yet", story.id),
        };
        return (vec![(theme.dim(), text)], None);
    };
    let running = attempt.outcome == AttemptOutcome::Running;
    match app.tab {
        Tab::Output => {
            let mut lines = Vec::with_capacity(attempt.output.lines.len() + 1);
            if attempt.output.dropped_lines > 0 || attempt.output.skipped_bytes > 0 {
                lines.push((
                    theme.dim(),
                    format!(
                        "… earlier output not shown; see 'git ralph show {}/{} --transcript'",
                        story.id, attempt.number
                    ),
                ));
            }
            let offset = lines.len();
            lines.extend(
                attempt
                    .output
                    .lines
                    .iter()
                    .map(|(kind, line)| (kind_style(*kind, theme), line.clone())),
            );
            if attempt.output.lines.is_empty() {
                lines.push((theme.dim(), "no output yet".to_owned()));
            }
            let hit = app.search.hit.map(|hit| hit + offset);
            (lines, hit)
        }
        Tab::Prompt => match &attempt.prompt {
            Some(prompt) => (
                prompt
                    .lines()
                    .map(|line| (Style::default(), line.to_owned()))
                    .collect(),
                None,
            ),
            None => (vec![(theme.dim(), "no prompt recorded".to_owned())], None),
        },
        Tab::Diff => match &attempt.diff {
            Some(diff) if diff.is_empty() && running => {
                (vec![(theme.dim(), "no change yet (live)".to_owned())], None)
            }
            Some(diff) if diff.is_empty() => (vec![(theme.dim(), "no change".to_owned())], None),
            Some(diff) => (
                running
                    .then(|| {
                        (
                            theme.dim(),
                            "live: the worktree against the story's checkpoint".to_owned(),
                        )
                    })
                    .into_iter()
                    .chain(diff.lines().map(|line| {
                        let style = if line.starts_with("+++") || line.starts_with("---") {
                            theme.bold()
                        } else if line.starts_with('+') {
                            theme.good()
                        } else if line.starts_with('-') {
                            theme.bad()
                        } else if line.starts_with("@@") {
                            theme.accent()
                        } else {
                            Style::default()
                        };
                        (style, line.to_owned())
                    }))
                    .collect(),
                None,
            ),
            None if running => (
                vec![(
                    theme.dim(),
                    "no diff yet: the worktree is being read".to_owned(),
                )],
                None,
            ),
            None => (
                vec![(theme.dim(), "no diff: no commit or attempt ref".to_owned())],
                None,
            ),
        },
        Tab::Checks => {
            let mut lines = Vec::new();
            match &attempt.checks {
                Some(checks) => {
                    for check in checks {
                        if check.passed {
                            lines.push((theme.good(), format!("✓ {}", check.name)));
                        } else {
                            lines.push((theme.bad(), format!("✗ {}", check.name)));
                            for line in check.output.as_deref().unwrap_or_default().lines() {
                                lines.push((Style::default(), format!("    {line}")));
                            }
                        }
                    }
                }
                None => {
                    for name in &attempt.checks_passed {
                        lines.push((theme.good(), format!("✓ {name}")));
                    }
                    for name in &attempt.checks_failed {
                        lines.push((theme.bad(), format!("✗ {name}")));
                    }
                }
            }
            if lines.is_empty() {
                lines.push((theme.dim(), "no checks ran".to_owned()));
            }
            (lines, None)
        }
        Tab::Events => {
            let mut lines: Vec<(Style, String)> = attempt
                .events
                .iter()
                .map(|line| (Style::default(), line.clone()))
                .collect();
            if let Some(reason) = &attempt.reason
                && !attempt.events.iter().any(|e| e.contains(reason.as_str()))
            {
                lines.push((Style::default(), format!("reason: {reason}")));
            }
            if lines.is_empty() {
                lines.push((theme.dim(), "no events".to_owned()));
            }
            (lines, None)
        }
    }
}

fn draw_tabs(frame: &mut Frame, area: Rect, app: &mut App, theme: Theme) {
    let [tabs_area, content] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    let titles: Vec<String> = Tab::ALL.iter().map(|tab| tab.title().to_owned()).collect();
    let selected = Tab::ALL.iter().position(|tab| *tab == app.tab).unwrap_or(0);
    let mut label = match app.selected() {
        Some((story, Some(attempt))) => format!("story {} {}", story.id, attempt.label()),
        Some((story, None)) => format!("story {}", story.id),
        None => String::new(),
    };
    if app.tab == Tab::Output {
        label.push_str(if app.follow {
            " · following "
        } else {
            " · paused "
        });
    }
    // The tab titles take 46 columns; the label goes only where it fits.
    let room = tabs_area.width.saturating_sub(47);
    if label.chars().count() as u16 > room {
        label = label
            .replace("story ", "")
            .replace(" · following ", " ▼")
            .replace(" · paused ", " ‖");
    }
    let label_width = if label.chars().count() as u16 <= room {
        label.chars().count() as u16
    } else {
        0
    };
    let [tabs_left, label_area] =
        Layout::horizontal([Constraint::Min(10), Constraint::Length(label_width)]).areas(tabs_area);
    let tabs = Tabs::new(titles)
        .select(selected)
        .highlight_style(theme.selected().add_modifier(Modifier::BOLD));
    frame.render_widget(tabs, tabs_left);
    frame.render_widget(
        Paragraph::new(Line::styled(
            fit(&label, usize::from(label_width)),
            theme.dim(),
        )),
        label_area,
    );

    let width = usize::from(content.width.max(1));
    let height = usize::from(content.height);
    app.page = height.saturating_sub(1).max(1);
    let (lines, hit) = tab_lines(app, theme);
    // Wrap everything to know the row count; style only what shows.
    let mut rows: Vec<(usize, String)> = Vec::new();
    let mut hit_row = None;
    for (at, (_, line)) in lines.iter().enumerate() {
        if Some(at) == hit {
            hit_row = Some(rows.len());
        }
        for row in wrap(line, width) {
            rows.push((at, row));
        }
    }
    let max_scroll = rows.len().saturating_sub(height);
    if let Some(row) = hit_row
        && app.search.hit.is_some()
        && !app.follow
        && app.search.jump_pending()
    {
        app.scroll = row.saturating_sub(2).min(max_scroll);
    }
    if app.follow {
        app.scroll = max_scroll;
    } else if app.scroll >= max_scroll && app.tab == Tab::Output && max_scroll > 0 {
        // Paging down to the end resumes following.
        app.scroll = max_scroll;
        app.follow = true;
    }
    app.scroll = app.scroll.min(max_scroll);
    let query = app.search.query.to_lowercase();
    let shown: Vec<Line> = rows
        .iter()
        .skip(app.scroll)
        .take(height)
        .map(|(at, row)| {
            let mut style = lines[*at].0;
            if Some(*at) == hit || (!query.is_empty() && row.to_lowercase().contains(&query)) {
                style = style.patch(theme.warn().add_modifier(Modifier::BOLD));
            }
            Line::styled(row.clone(), style)
        })
        .collect();
    frame.render_widget(Paragraph::new(shown), content);
}

fn draw_footer(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let wide = area.width >= 100;
    let stop = match app.mode {
        Mode::Loop if app.feed_closed => "q leave",
        Mode::Loop => "q stop",
        Mode::Watch { live: true } if wide => "q leave  s stop run",
        Mode::Watch { live: true } => "q leave s stop",
        Mode::Watch { live: false } => "q leave",
    };
    let text = if wide {
        format!(
            " ↑↓/jk story  [ ] attempt  Tab view  PgUp/PgDn g G scroll  f follow  / search  {stop}  ? help"
        )
    } else {
        format!(" ↑↓ story [] attempt Tab view PgUp/PgDn/g/G scroll f follow / find {stop} ? help")
    };
    frame.render_widget(
        Paragraph::new(Line::styled(
            fit(&text, usize::from(area.width)),
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
    ("s", "watch: ask the running loop to stop"),
    ("?", "this help; any key closes it"),
];

fn draw_help(frame: &mut Frame, app: &App, theme: Theme) {
    let area = frame.area();
    let width = area.width.min(76);
    let shown = KEYS
        .iter()
        .filter(|(keys, _)| *keys != "s" || matches!(app.mode, Mode::Watch { .. }))
        .count() as u16;
    let height = (shown + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line> = KEYS
        .iter()
        .filter(|(keys, _)| *keys != "s" || matches!(app.mode, Mode::Watch { .. }))
        .map(|(keys, what)| {
            Line::from(vec![
                Span::styled(format!(" {keys:<16}"), theme.bold()),
                Span::raw(*what),
            ])
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Keys ")),
        popup,
    );
}
