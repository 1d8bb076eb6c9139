//! The loop screen marks a story that waits for an answer, with its
//! question, at 80x24 and larger, and takes the mark away once a person
//! answered.

use super::*;

/// Story 1 done; story 2's first attempt asked a question.
fn asked(app: &mut App) {
    let events = vec![
        progress("1", "Greeting", 1, 1),
        checkpointed("1", 1, "0123456789abcdef"),
        progress("2", "Farewell", 2, 1),
        fell_short(
            "2",
            1,
            AttemptOutcome::Question,
            "the agent asked a question: CSV or JSON?",
        ),
        record(Event::Question {
            story_id: "2".into(),
            attempt: 1,
            question: "CSV or JSON?".into(),
            preserved: Some("refs/ralph/greet/attempts/2/1".into()),
            others_go_on: Some(true),
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

/// A running run of `greet` on disk whose story 2 waits on "CSV or JSON?".
fn waiting_run(dir: &std::path::Path) -> crate::state::RunDir {
    let mut state: serde_json::Value =
        serde_json::from_str(include_str!("../../../../tests/fixtures/state/state.json")).unwrap();
    state["status"] = serde_json::to_value(RunStatus::Running).unwrap();
    state.as_object_mut().unwrap().remove("reason");
    let mut asked =
        crate::state::AttemptRecord::new(1, AttemptOutcome::Question, crate::state::now());
    asked.asked = Some("CSV or JSON?".into());
    let story = crate::state::StoryRecord {
        id: "2".into(),
        title: "Farewell".into(),
        done: false,
        tasks_done: 0,
        tasks_total: 1,
        attempts: vec![asked],
    };
    let stories = state["stories"].as_array_mut().unwrap();
    stories.retain(|s| s["id"] != "2");
    stories.push(serde_json::to_value(story).unwrap());
    let state: crate::state::RunState = serde_json::from_value(state).unwrap();
    let run_dir = crate::state::RunDir::new(dir, "greet");
    std::fs::create_dir_all(&run_dir.dir).unwrap();
    run_dir.save(&state).unwrap();
    run_dir
}

#[test]
fn issue_38_a_opens_the_answer_box_on_the_waiting_story_with_its_question() {
    for (width, height) in [(80, 24), (160, 48)] {
        let mut app = three_open_stories(Mode::Loop, 1);
        asked(&mut app);
        // The selection is on story 1: the box goes to the first that waits.
        app.selected_story = 0;
        press(&mut app, &[KeyCode::Char('a'), KeyCode::Char('C')]);
        let screen = render(&mut app, width, height);
        assert!(screen.contains("answer story 2. Farewell"), "{screen}");
        assert!(screen.contains("CSV or JSON?"), "{screen}");
        insta::assert_snapshot!(format!("answer_box_{width}x{height}"), screen);
    }
}

#[test]
fn issue_38_enter_records_the_answer_and_esc_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = waiting_run(dir.path());
    let mut app = three_open_stories(Mode::Loop, 1);
    asked(&mut app);
    app.run_dir = Some(run_dir.clone());
    app.selected_story = 1;

    // Esc cancels: nothing written.
    press(
        &mut app,
        &[KeyCode::Char('a'), KeyCode::Char('x'), KeyCode::Esc],
    );
    assert!(app.answer_box.is_none());
    assert!(!run_dir.answers_path().exists());

    // An empty answer is refused in the box, nothing written.
    press(
        &mut app,
        &[KeyCode::Char('a'), KeyCode::Char(' '), KeyCode::Enter],
    );
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("the answer is empty"), "{screen}");
    assert!(app.answer_box.is_some());
    assert!(!run_dir.answers_path().exists());

    // Enter records it through the same function as `git ralph answer`.
    let typed: Vec<KeyCode> = "CSV".chars().map(KeyCode::Char).collect();
    press(&mut app, &typed);
    press(&mut app, &[KeyCode::Enter]);
    assert!(app.answer_box.is_none());
    let given = crate::state::answers::read(&run_dir.answers_path()).unwrap();
    assert_eq!(given.len(), 1, "{given:?}");
    assert_eq!((given[0].story.as_str(), given[0].attempt), ("2", 1));
    assert_eq!(given[0].text, "CSV");
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("answer recorded for story 2"), "{screen}");

    // Before the run takes it, a second answer to the same question
    // replaces it, and the screen says so (issue 47).
    press(&mut app, &[KeyCode::Char('a')]);
    let again: Vec<KeyCode> = "JSON".chars().map(KeyCode::Char).collect();
    press(&mut app, &again);
    press(&mut app, &[KeyCode::Enter]);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("replacing the earlier one"), "{screen}");
    let given = crate::state::answers::read(&run_dir.answers_path()).unwrap();
    let latest = crate::state::answers::latest(&given);
    assert_eq!(latest.len(), 1, "{latest:?}");
    assert_eq!(latest[0].text, "JSON");
}
