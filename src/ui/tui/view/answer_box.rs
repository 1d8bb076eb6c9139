//! The answer box drawn over the loop screen: which story it answers, the
//! question (wrapped, in full as far as the terminal allows), the line
//! being typed, and why the last Enter was refused, if it was.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::Theme;
use super::text::wrap;
use crate::ui::tui::app::AnswerBox;

/// The widest the box gets.
const MAX_WIDTH: u16 = 76;
/// The most rows the question takes.
const QUESTION_ROWS: usize = 6;

pub(super) fn draw_answer_box(frame: &mut Frame, open: &AnswerBox, theme: Theme) {
    let area = frame.area();
    let width = area.width.min(MAX_WIDTH);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let mut rows: Vec<Line> = wrap(&format!("asks: {}", open.question), inner)
        .into_iter()
        .take(QUESTION_ROWS)
        .map(Line::from)
        .collect();
    rows.push(Line::from(""));
    // The end of a long answer stays in view.
    let typed: String = {
        let line = format!("> {}_", open.text);
        let skip = line.chars().count().saturating_sub(inner);
        line.chars().skip(skip).collect()
    };
    rows.push(Line::from(Span::styled(typed, theme.bold())));
    if let Some(refusal) = &open.refusal {
        rows.extend(
            wrap(refusal, inner)
                .into_iter()
                .map(|row| Line::styled(row, theme.warn())),
        );
    }
    rows.push(Line::styled("Enter records · Esc cancels", theme.dim()));
    let height = (rows.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let title = super::text::fit(
        &format!(" answer story {}. {} ", open.story, open.title),
        usize::from(width.saturating_sub(2)),
    );
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(rows).block(Block::default().borders(Borders::ALL).title(title)),
        popup,
    );
}
