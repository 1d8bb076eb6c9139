//! The help overlay: every key of the loop screen with what it does, each
//! description wrapped beside its key rather than cut, in a box that fits
//! the terminal and scrolls (↑↓, PgUp PgDn) when the terminal is too short.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::text::wrap;
use super::{KEYS, Theme};
use crate::ui::tui::app::{App, Mode};

/// The width of the key column.
const KEY_COLUMN: usize = 16;
/// The widest the box gets.
const MAX_WIDTH: u16 = 76;

/// The keys this screen has, each said for this screen: `q` stops the
/// run in the loop's own terminal and leaves elsewhere; `s` only where
/// there is a loop to ask.
fn keys_for(app: &App) -> Vec<(&'static str, &'static str)> {
    let watching = matches!(app.mode, Mode::Watch { .. });
    KEYS.iter()
        .filter(|(keys, _)| *keys != "s" || matches!(app.mode, Mode::Watch { live: true }))
        .map(|(keys, what)| match *keys {
            "q" if watching || app.feed_closed => (*keys, "leave this screen"),
            "q" => (*keys, "stop the run; 3 times within 3 s: force quit"),
            "s" => (*keys, "ask the running loop to stop"),
            _ => (*keys, *what),
        })
        .collect()
}

/// The overlay's rows for a box `inner` columns wide: the key, then its
/// description wrapped in the column beside it.
fn help_rows(app: &App, inner: usize, theme: Theme) -> Vec<Line<'static>> {
    let what_width = inner.saturating_sub(KEY_COLUMN + 1).max(10);
    let mut rows = Vec::new();
    for (keys, what) in keys_for(app) {
        for (n, part) in wrap(what, what_width).into_iter().enumerate() {
            let key = if n == 0 { keys } else { "" };
            rows.push(Line::from(vec![
                Span::styled(
                    format!(" {key:<width$}", width = KEY_COLUMN - 1),
                    theme.bold(),
                ),
                Span::raw(format!(" {part}")),
            ]));
        }
    }
    rows
}

pub(super) fn draw_help(frame: &mut Frame, app: &mut App, theme: Theme) {
    let area = frame.area();
    let width = area.width.min(MAX_WIDTH);
    let rows = help_rows(app, usize::from(width.saturating_sub(2)), theme);
    let height = (rows.len() as u16 + 2).min(area.height);
    let visible = usize::from(height.saturating_sub(2));
    let max_scroll = rows.len().saturating_sub(visible);
    app.help_scroll = app.help_scroll.min(max_scroll);
    let title = if max_scroll > 0 {
        " Keys · ↑↓ PgUp PgDn scroll, any other key closes "
    } else {
        " Keys · any key closes "
    };
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let shown: Vec<Line> = rows.into_iter().skip(app.help_scroll).collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(shown).block(Block::default().borders(Borders::ALL).title(title)),
        popup,
    );
}
