//! The answer box: a one-line text box on the loop screen for the question
//! a story waits on. What is typed is recorded through
//! [`crate::state::answers::give`], the same function as `git ralph
//! answer`, so the same refusals apply; a refusal stays in the box and
//! nothing is written.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use crate::state::answers;

/// The box, open on one story's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerBox {
    pub story: String,
    pub title: String,
    pub question: String,
    /// What has been typed so far.
    pub text: String,
    /// Why the last Enter was refused.
    pub refusal: Option<String>,
}

impl AnswerBox {
    pub fn new(story: &str, title: &str, question: &str) -> AnswerBox {
        AnswerBox {
            story: story.to_owned(),
            title: title.to_owned(),
            question: question.to_owned(),
            text: String::new(),
            refusal: None,
        }
    }
}

impl App {
    /// `a`: open the box on the selected story if it waits for an answer,
    /// else on the first story that does; say so when none does.
    pub(super) fn open_answer_box(&mut self) {
        let selected = self
            .stories
            .get(self.selected_story)
            .filter(|story| story.waiting().is_some());
        let story = selected.or_else(|| self.stories.iter().find(|s| s.waiting().is_some()));
        match story {
            Some(story) => {
                let question = story.waiting().unwrap_or_default();
                self.answer_box = Some(AnswerBox::new(&story.id, &story.title, question));
            }
            None => self.notice = Some("no story waits for an answer".to_owned()),
        }
    }

    /// A key while the box is open: Enter records, Esc cancels, the rest
    /// edits the line.
    pub(super) fn answer_key(&mut self, key: KeyEvent) {
        let Some(open) = self.answer_box.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Enter => self.record_answer(),
            KeyCode::Esc => self.answer_box = None,
            KeyCode::Backspace => {
                open.text.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                open.text.push(c);
            }
            _ => self.dirty = false,
        }
    }

    /// Enter: record the answer beside the run's state, or show why not.
    fn record_answer(&mut self) {
        let Some(open) = self.answer_box.as_mut() else {
            return;
        };
        let Some(run_dir) = &self.run_dir else {
            open.refusal = Some(format!(
                "this screen cannot record answers: use 'git ralph answer {} {}'",
                self.change, open.story
            ));
            return;
        };
        match answers::give(run_dir, &open.story, &open.text) {
            Ok(given) => {
                let replacing = if given.replaced.is_some() {
                    ", replacing the earlier one"
                } else {
                    ""
                };
                self.notice = Some(format!(
                    "answer recorded for story {}{replacing}: the run takes it at its next turn",
                    given.answer.story
                ));
                self.answer_box = None;
            }
            Err(refused) => open.refusal = Some(refused.to_string()),
        }
    }
}
