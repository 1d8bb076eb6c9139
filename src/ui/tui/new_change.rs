//! `n` on the selection screen: a new change planned from a one-line
//! brief. The user types what to build, then (Enter) the change's name,
//! offered from the brief's first words; Enter again plans it, Esc goes
//! back to the list. Nothing is read or written here: the caller plans.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::view::{Theme, too_small};

/// The field being typed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Brief,
    Name,
}

/// What the user did on the form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewChangeAction {
    None,
    /// Plan the change `change` from `brief`.
    Plan {
        change: String,
        brief: String,
    },
    Cancel,
}

/// The form of a new change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChange {
    pub brief: String,
    pub name: String,
    pub field: Field,
    /// Why the form cannot be sent yet.
    pub problem: Option<String>,
}

impl Default for NewChange {
    fn default() -> Self {
        Self::new()
    }
}

impl NewChange {
    pub fn new() -> NewChange {
        NewChange {
            brief: String::new(),
            name: String::new(),
            field: Field::Brief,
            problem: None,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> NewChangeAction {
        self.problem = None;
        let text = match self.field {
            Field::Brief => &mut self.brief,
            Field::Name => &mut self.name,
        };
        match key.code {
            KeyCode::Esc => return NewChangeAction::Cancel,
            KeyCode::Char(c) => text.push(c),
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Tab | KeyCode::BackTab | KeyCode::Up | KeyCode::Down => {
                self.field = match self.field {
                    Field::Brief => Field::Name,
                    Field::Name => Field::Brief,
                };
            }
            KeyCode::Enter => return self.enter(),
            _ => {}
        }
        NewChangeAction::None
    }

    /// Enter: from the brief on to the name (offered from the brief), from
    /// the name to the plan.
    fn enter(&mut self) -> NewChangeAction {
        if self.brief.trim().is_empty() {
            self.field = Field::Brief;
            self.problem = Some("say what to build first".to_owned());
            return NewChangeAction::None;
        }
        if self.field == Field::Brief {
            if self.name.trim().is_empty() {
                self.name = name_from(&self.brief);
            }
            self.field = Field::Name;
            return NewChangeAction::None;
        }
        if self.name.trim().is_empty() {
            self.problem = Some("give the change a name".to_owned());
            return NewChangeAction::None;
        }
        NewChangeAction::Plan {
            change: self.name.trim().to_owned(),
            brief: self.brief.trim().to_owned(),
        }
    }
}

/// A change name from the first words of a brief: `Add a dark mode
/// toggle!` → `add-a-dark-mode`.
pub fn name_from(brief: &str) -> String {
    let words: Vec<String> = brief
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .take(4)
        .map(str::to_ascii_lowercase)
        .collect();
    let name = words.join("-");
    if name.is_empty() {
        "new-change".to_owned()
    } else {
        name.chars()
            .take(40)
            .collect::<String>()
            .trim_end_matches('-')
            .to_owned()
    }
}

pub fn draw_new_change(frame: &mut Frame, form: &NewChange, theme: Theme) {
    if too_small(frame, theme, (40, 10)) {
        return;
    }
    let [body, footer] =
        Layout::vertical([Constraint::Min(8), Constraint::Length(1)]).areas(frame.area());
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let field = |label: &str, value: &str, on: bool| {
        let cursor = if on { "▏" } else { "" };
        let style = if on { bold } else { Style::default() };
        vec![
            Line::styled(label.to_owned(), bold),
            Line::styled(format!("  {value}{cursor}"), style),
            Line::raw(""),
        ]
    };
    let mut lines = field(
        "What to build (one line):",
        &form.brief,
        form.field == Field::Brief,
    );
    lines.extend(field(
        "Its name (openspec/changes/<name>/):",
        &form.name,
        form.field == Field::Name,
    ));
    lines.push(Line::raw(
        "The agent writes the change's stories; git-ralph holds them to the reader that will run them, then shows the preview.",
    ));
    if let Some(problem) = &form.problem {
        lines.push(Line::raw(""));
        lines.push(Line::styled(format!("! {problem}"), bold));
    }
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" plan a new change "),
        ),
        body,
    );
    let keys = match form.field {
        Field::Brief => " Enter next  Tab the name  Esc back",
        Field::Name => " Enter plan it  Tab the brief  Esc back",
    };
    let dim = if theme.color {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    };
    frame.render_widget(Paragraph::new(Line::styled(keys, dim)), footer);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(form: &mut NewChange, text: &str) {
        for c in text.chars() {
            form.on_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn a_brief_then_its_name_plans_a_change() {
        let mut form = NewChange::new();
        assert_eq!(form.on_key(key(KeyCode::Enter)), NewChangeAction::None);
        assert!(form.problem.is_some(), "an empty brief is not sent");
        typed(&mut form, "Add a dark mode toggle!");
        assert_eq!(form.on_key(key(KeyCode::Enter)), NewChangeAction::None);
        assert_eq!(form.field, Field::Name);
        assert_eq!(form.name, "add-a-dark-mode");
        for _ in 0..4 {
            form.on_key(key(KeyCode::Backspace));
        }
        typed(&mut form, "theme");
        assert_eq!(
            form.on_key(key(KeyCode::Enter)),
            NewChangeAction::Plan {
                change: "add-a-dark-theme".into(),
                brief: "Add a dark mode toggle!".into()
            }
        );
        assert_eq!(form.on_key(key(KeyCode::Esc)), NewChangeAction::Cancel);
    }

    #[test]
    fn the_form_at_80x24_and_larger() {
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        let mut form = NewChange::new();
        typed(&mut form, "Say hello to every visitor");
        form.on_key(key(KeyCode::Enter));
        for (name, width, height) in [("new_change_80x24", 80, 24), ("new_change_160x48", 160, 48)]
        {
            let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
            terminal
                .draw(|frame| draw_new_change(frame, &form, Theme { color: false }))
                .unwrap();
            insta::assert_snapshot!(name, terminal.backend().to_string());
        }
    }

    #[test]
    fn names_come_from_the_first_words() {
        assert_eq!(name_from("Fix: the login page"), "fix-the-login-page");
        assert_eq!(name_from("!!!"), "new-change");
    }
}
