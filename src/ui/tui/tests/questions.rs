//! The loop screen marks a story that waits for an answer, with its
//! question, at 80x24 and larger, and takes the mark away once a person
//! answered.

use super::*;

/// Story 1 done; story 2's first attempt asked a question.
fn asked(app: &mut App) {
    let events = vec![
        progress("1", "Greeting", 1, 1),
        record(Event::AttemptFinished {
            story_id: "1".into(),
            attempt: 1,
            outcome: AttemptOutcome::Complete,
            reason: None,
            preserved: None,
            checkpoint: Some("0123456789abcdef".into()),
            role: None,
            unchanged: false,
        }),
        progress("2", "Farewell", 2, 1),
        record(Event::AttemptFinished {
            story_id: "2".into(),
            attempt: 1,
            outcome: AttemptOutcome::Question,
            reason: Some("the agent asked a question: CSV or JSON?".into()),
            preserved: Some("refs/ralph/greet/attempts/2/1".into()),
            checkpoint: None,
            role: None,
            unchanged: false,
        }),
        record(Event::Question {
            story_id: "2".into(),
            attempt: 1,
            question: "CSV or JSON?".into(),
            preserved: Some("refs/ralph/greet/attempts/2/1".into()),
        }),
        progress("3", "Docs", 3, 1),
    ];
    for event in &events {
        app.apply(event);
    }
}

#[test]
fn issue_38_the_loop_screen_marks_the_story_that_waits_with_its_question() {
    for (width, height) in [(80, 24), (160, 48)] {
        let mut app = three_open_stories(Mode::Loop, 1);
        asked(&mut app);
        let story = app.stories[1].clone();
        assert_eq!(app.story_state(&story), StoryState::Waiting);
        let screen = render(&mut app, width, height);
        assert!(screen.contains("? 2. Farewell"), "{screen}");
        assert!(screen.contains("asks: CSV or JSON?"), "{screen}");

        app.apply(&record(Event::Answered {
            story_id: "2".into(),
            attempt: 1,
            answer: "CSV".into(),
        }));
        let story = app.stories[1].clone();
        assert_ne!(app.story_state(&story), StoryState::Waiting);
        let screen = render(&mut app, width, height);
        assert!(!screen.contains("asks: CSV or JSON?"), "{screen}");
    }
}
