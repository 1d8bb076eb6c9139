//! The right-hand side of the loop screen: the tab bar and the selected
//! attempt in the view it names (Output, Prompt, Diff, Checks, Events),
//! wrapped at word boundaries, scrolled and searched. Only the rows on
//! screen are styled.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Tabs};

use super::Theme;
use super::text::{fit, wrap};
use crate::state::AttemptOutcome;
use crate::ui::transcript::LineKind;
use crate::ui::tui::app::{App, AttemptItem, StoryItem, Tab};

/// Lines of a view, each with its style, before wrapping.
type Lines = Vec<(Style, String)>;

fn kind_style(kind: LineKind, theme: Theme) -> Style {
    match kind {
        LineKind::Message => Style::default(),
        LineKind::ToolCall => theme.accent(),
        LineKind::ToolOutput => theme.dim(),
        LineKind::ToolError => theme.bad(),
        LineKind::Summary => theme.bold(),
    }
}

/// One dim line saying there is nothing to show.
fn nothing(theme: Theme, text: &str) -> Lines {
    vec![(theme.dim(), text.to_owned())]
}

/// The lines of the selected tab, styled, before wrapping; with the line
/// of the search hit in the Output tab.
fn tab_lines(app: &App, theme: Theme) -> (Lines, Option<usize>) {
    let Some((story, attempt)) = app.selected() else {
        return (nothing(theme, "no story selected"), None);
    };
    let Some(attempt) = attempt else {
        let lines = match app.tab {
            Tab::Events => app
                .run_events
                .iter()
                .map(|line| (Style::default(), line.clone()))
                .collect(),
            _ => nothing(theme, &format!("story {} has no attempt yet", story.id)),
        };
        return (lines, None);
    };
    match app.tab {
        Tab::Output => output_lines(app, story, attempt, theme),
        Tab::Prompt => (prompt_lines(attempt, theme), None),
        Tab::Diff => (diff_lines(attempt, theme), None),
        Tab::Checks => (check_lines(attempt, theme), None),
        Tab::Events => (event_lines(attempt, theme), None),
    }
}

/// What the agent said and did, with a line saying when earlier output
/// is not shown.
fn output_lines(
    app: &App,
    story: &StoryItem,
    attempt: &AttemptItem,
    theme: Theme,
) -> (Lines, Option<usize>) {
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
        let said = if attempt.outcome == AttemptOutcome::Running {
            "no output yet"
        } else {
            "no output recorded"
        };
        lines.push((theme.dim(), said.to_owned()));
    }
    let hit = app.search.hit.map(|hit| hit + offset);
    (lines, hit)
}

fn prompt_lines(attempt: &AttemptItem, theme: Theme) -> Lines {
    match &attempt.prompt {
        Some(prompt) => prompt
            .lines()
            .map(|line| (Style::default(), line.to_owned()))
            .collect(),
        None => nothing(theme, "no prompt recorded"),
    }
}

/// The attempt's patch, coloured; live while the attempt runs.
fn diff_lines(attempt: &AttemptItem, theme: Theme) -> Lines {
    let running = attempt.outcome == AttemptOutcome::Running;
    match &attempt.diff {
        Some(diff) if diff.is_empty() && running => nothing(theme, "no change yet (live)"),
        Some(diff) if diff.is_empty() => nothing(theme, "no change"),
        Some(diff) => running
            .then(|| {
                (
                    theme.dim(),
                    "live: the worktree against the story's checkpoint".to_owned(),
                )
            })
            .into_iter()
            .chain(
                diff.lines()
                    .map(|line| (diff_style(line, theme), line.to_owned())),
            )
            .collect(),
        None if running => nothing(theme, "no diff yet: the worktree is being read"),
        None => nothing(theme, "no diff: no commit or attempt ref"),
    }
}

fn diff_style(line: &str, theme: Theme) -> Style {
    if line.starts_with("+++") || line.starts_with("---") {
        theme.bold()
    } else if line.starts_with('+') {
        theme.good()
    } else if line.starts_with('-') {
        theme.bad()
    } else if line.starts_with("@@") {
        theme.accent()
    } else {
        Style::default()
    }
}

/// Each check passed or failed, a failure with its output.
fn check_lines(attempt: &AttemptItem, theme: Theme) -> Lines {
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
    lines
}

fn event_lines(attempt: &AttemptItem, theme: Theme) -> Lines {
    let mut lines: Lines = attempt
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
    lines
}

pub(super) fn draw_tabs(frame: &mut Frame, area: Rect, app: &mut App, theme: Theme) {
    let [tabs_area, content] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    draw_tab_bar(frame, tabs_area, app, theme);
    draw_content(frame, content, app, theme);
}

/// The tab titles, and what is shown (`story 2 #1 · following`) where
/// there is room, shortened where there is less.
fn draw_tab_bar(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
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
    let room = area.width.saturating_sub(47);
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
        Layout::horizontal([Constraint::Min(10), Constraint::Length(label_width)]).areas(area);
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
}

/// The selected view, wrapped to the pane, scrolled where the user left
/// it (or following the end), the search hit brought into sight.
fn draw_content(frame: &mut Frame, area: Rect, app: &mut App, theme: Theme) {
    let width = usize::from(area.width.max(1));
    let height = usize::from(area.height);
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
    frame.render_widget(Paragraph::new(shown), area);
}
