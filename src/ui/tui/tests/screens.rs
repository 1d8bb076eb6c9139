//! Issue 36: every screen and overlay at 80x24 and at 120x40, the sizes
//! a newcomer's terminal has: text wraps at word boundaries, headers
//! shorten without losing what matters, footers and the help overlay fit
//! (the help scrolls when it must), and nothing that matters is cut.

use super::*;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

/// The screen as rows of text.
fn rows(app: &mut App, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| draw(frame, app, Theme { color: false }))
        .unwrap();
    buffer_rows(terminal.backend())
}

fn buffer_rows(backend: &TestBackend) -> Vec<String> {
    let buffer = backend.buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_owned())
                .collect::<String>()
        })
        .collect()
}

/// The text right of the stories pane's border, row by row, from the row
/// below the tabs down to the footer.
fn content(rows: &[String]) -> Vec<String> {
    rows[3..rows.len() - 1]
        .iter()
        .map(|row| match row.split_once('│') {
            Some((_, right)) => right.trim_end().to_owned(),
            None => row.trim_end().to_owned(),
        })
        .collect()
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// What the sample's story 2 said, which is long enough to wrap.
fn long_message() -> String {
    format!(
        "Writing bye.txt now; this line is long enough to wrap at eighty columns {}",
        "and then some more words ".repeat(4)
    )
}

#[test]
fn output_wraps_at_word_boundaries() {
    for (width, height) in SIZES {
        let mut app = sample(Mode::Loop);
        let shown = content(&rows(&mut app, width, height)).join(" ");
        assert_eq!(
            words(&shown),
            words(&long_message()),
            "{width}x{height}: a word was cut:\n{shown}"
        );
    }
}

#[test]
fn the_header_shortens_and_keeps_the_clock_and_the_agent() {
    for (width, height) in SIZES {
        let mut app = sample(Mode::Loop);
        app.agent =
            "/home/someone/projects/very/long/path/to/the/agents/chatty.sh --verbose".into();
        app.branch = "ralph/a-change-with-a-rather-long-name-indeed".into();
        let rows = rows(&mut app, width, height);
        let second = rows[1].trim_end();
        assert!(second.contains("01:23"), "{width}x{height}: {second:?}");
        assert!(second.contains("chatty.sh"), "{width}x{height}: {second:?}");
        assert!(!second.ends_with('…'), "{width}x{height}: {second:?}");
        assert!(
            rows[0].contains("running"),
            "{width}x{height}: {:?}",
            rows[0]
        );
    }
}

#[test]
fn the_header_of_a_parallel_run_keeps_its_clock() {
    for (width, height) in SIZES {
        let mut app = parallel_sample();
        app.elapsed_ms = 3_000;
        let second = rows(&mut app, width, height)[1].trim_end().to_owned();
        assert!(second.contains("00:03"), "{width}x{height}: {second:?}");
        assert!(second.contains('1') && second.contains('3'), "{second:?}");
        assert!(!second.ends_with('…'), "{width}x{height}: {second:?}");
        assert!(!second.contains("· 0 tok"), "{second:?}");
    }
}

#[test]
fn footers_fit_with_the_way_out_and_the_help_key() {
    for (width, height) in SIZES {
        for (mode, closed, way_out) in [
            (Mode::Loop, false, "q stop"),
            (Mode::Loop, true, "q leave"),
            (Mode::Watch { live: true }, false, "q leave"),
            (Mode::Watch { live: true }, false, "s stop"),
            (Mode::Watch { live: false }, false, "q leave"),
        ] {
            let mut app = sample(mode);
            if closed {
                app.close_feed();
            }
            let footer = rows(&mut app, width, height).pop().unwrap();
            assert!(footer.contains(way_out), "{width}x{height}: {footer:?}");
            assert!(footer.contains("? help"), "{width}x{height}: {footer:?}");
            assert!(!footer.contains('…'), "{width}x{height}: {footer:?}");
        }
    }
}

/// The help overlay's text, its border and the key column left out.
fn help_text(rows: &[String]) -> String {
    rows.iter()
        .filter_map(|row| {
            let start = row.find('│')?;
            let inner = &row[start + '│'.len_utf8()..];
            let end = inner.rfind('│')?;
            Some(inner[..end].trim().to_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_help_overlay_fits_and_says_every_key_in_full() {
    for (width, height) in SIZES {
        for mode in [Mode::Loop, Mode::Watch { live: true }] {
            let mut app = sample(mode);
            press(&mut app, &[KeyCode::Char('?')]);
            let text = help_text(&rows(&mut app, width, height));
            let said_for_this_screen = |keys: &str, what: &'static str| match (keys, mode) {
                ("q", Mode::Loop) => "stop the run; 3 times within 3 s: force quit",
                ("q", _) => "leave this screen",
                ("s", _) => "ask the running loop to stop",
                _ => what,
            };
            for (keys, what) in KEYS {
                if *keys == "s" && mode == Mode::Loop {
                    continue;
                }
                let what = said_for_this_screen(keys, what);
                let said = words(&text).join(" ");
                assert!(
                    said.contains(&words(what).join(" ")),
                    "{width}x{height}: {what:?} is not said in full:\n{text}"
                );
            }
        }
    }
}

#[test]
fn the_help_overlay_scrolls_on_a_short_terminal_and_any_other_key_closes_it() {
    let mut app = sample(Mode::Loop);
    press(&mut app, &[KeyCode::Char('?')]);
    let first = help_text(&rows(&mut app, 60, 12));
    assert!(first.contains("pick a story"), "{first}");
    assert!(
        !first.contains("this help"),
        "the last key is below:\n{first}"
    );
    press(&mut app, &[KeyCode::PageDown]);
    assert!(app.help, "scrolling keeps the help open");
    let later = help_text(&rows(&mut app, 60, 12));
    assert!(later.contains("this help"), "{later}");
    press(&mut app, &[KeyCode::Char('x')]);
    assert!(!app.help);
}

#[test]
fn a_long_story_title_wraps_in_the_stories_pane() {
    for (width, height) in SIZES {
        let mut app = sample(Mode::Loop);
        app.stories[2].title = "Mention both files in the README and in the user guide".into();
        let rows = rows(&mut app, width, height);
        let left: Vec<String> = rows[3..rows.len() - 1]
            .iter()
            .filter_map(|row| row.split_once('│').map(|(left, _)| left.trim().to_owned()))
            .collect();
        let said = words(&left.join(" ")).join(" ");
        assert!(
            said.contains("Mention both files in the README and in the user guide"),
            "{width}x{height}:\n{}",
            left.join("\n")
        );
    }
}

#[test]
fn the_stopping_notice_is_said_in_full() {
    for (width, height) in SIZES {
        let mut app = sample(Mode::Loop);
        press(&mut app, &[KeyCode::Char('q')]);
        let notice = app.notice.clone().unwrap();
        let shown = rows(&mut app, width, height).join(" ");
        assert!(
            words(&shown).join(" ").contains(&words(&notice).join(" ")),
            "{width}x{height}:\n{shown}"
        );
    }
}

#[test]
fn every_screen_and_overlay_at_80x24_and_120x40() {
    for (width, height) in SIZES {
        let size = format!("{width}x{height}");
        let mut app = sample(Mode::Loop);
        insta::assert_snapshot!(
            format!("loop_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        press(&mut app, &[KeyCode::Up, KeyCode::Char('[')]);
        insta::assert_snapshot!(
            format!("failed_attempt_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        for tab in ["prompt", "diff", "checks", "events"] {
            press(&mut app, &[KeyCode::Tab]);
            insta::assert_snapshot!(
                format!("{tab}_{size}"),
                rows(&mut app, width, height).join("\n")
            );
        }
        let mut app = sample(Mode::Loop);
        press(&mut app, &[KeyCode::Char('?')]);
        insta::assert_snapshot!(
            format!("help_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        let mut app = sample(Mode::Watch { live: true });
        press(&mut app, &[KeyCode::Char('?')]);
        insta::assert_snapshot!(
            format!("help_watch_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        let mut app = sample(Mode::Loop);
        press(&mut app, &[KeyCode::Char('/')]);
        press(
            &mut app,
            &"some more".chars().map(KeyCode::Char).collect::<Vec<_>>(),
        );
        insta::assert_snapshot!(
            format!("search_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        let mut app = sample(Mode::Loop);
        press(&mut app, &[KeyCode::Char('q')]);
        insta::assert_snapshot!(
            format!("stopping_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        let mut app = sample(Mode::Loop);
        app.close_feed();
        app.ended = Some("done (completed)".into());
        insta::assert_snapshot!(
            format!("ended_{size}"),
            rows(&mut app, width, height).join("\n")
        );
        let mut app = parallel_sample();
        insta::assert_snapshot!(
            format!("parallel_{size}"),
            rows(&mut app, width, height).join("\n")
        );
    }
}

/// Details that hold a finished attempt's transcript.
struct Transcripts;

impl AttemptDetails for Transcripts {
    fn transcript(&self, story: &str, attempt: u32) -> Option<Vec<AgentEvent>> {
        Some(vec![message(&format!(
            "what story {story} attempt {attempt} said"
        ))])
    }
}

#[test]
fn issue_36_a_finished_attempt_seeded_from_the_state_shows_its_transcript() {
    // A resumed run's loop screen knows its earlier attempts from
    // state.json alone: their output is read when it is looked at.
    let mut app = three_open_stories(Mode::Loop, 1);
    for event in [
        progress("1", "Greeting", 1, 1),
        checkpointed("1", 1, "0123456789abcdef"),
    ] {
        app.apply(&event);
    }
    app.stories[0].attempts[0].output = Output::default();
    app.load_details(&Transcripts, Instant::now());
    let shown = rows(&mut app, 80, 24).join("\n");
    assert!(shown.contains("what story 1 attempt 1 said"), "{shown}");
    assert!(!shown.contains("no output yet"), "{shown}");
}

#[test]
fn issue_36_enter_on_a_completed_run_opens_it_instead_of_offering_a_resume() {
    let completed = RunSummary {
        label: "greet".into(),
        change: "greet".into(),
        state: RunStatus::Stopped,
        reason: Some(StopReason::Completed),
        stories_done: 3,
        stories_total: 3,
        history: false,
        updated_at: 1_700_003_000,
    };
    let mut screen = SelectionScreen::new(SelectionData {
        changes: Vec::new(),
        runs: vec![completed],
        now: 1_700_003_700,
    });
    assert_eq!(
        screen.on_key(key(KeyCode::Enter)),
        SelectionAction::OpenRun("greet".into())
    );
    for (width, height) in SIZES {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| draw_selection(frame, &screen, Theme { color: false }))
            .unwrap();
        let footer = buffer_rows(terminal.backend()).pop().unwrap();
        assert!(!footer.contains("resume"), "{footer}");
        assert!(footer.contains("Enter watch"), "{footer}");
    }
}

#[test]
fn the_selection_and_preview_screens_fit_at_both_sizes() {
    for (width, height) in SIZES {
        let (selection, preview) = home_screens();
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| draw_selection(frame, &selection, Theme { color: false }))
            .unwrap();
        let shown = buffer_rows(terminal.backend());
        let message = selection.message.clone().unwrap();
        assert!(
            words(&shown.join(" ")).join(" ").contains(&message),
            "{width}x{height}: the message is said in full:\n{}",
            shown.join("\n")
        );
        insta::assert_snapshot!(format!("selection_{width}x{height}"), shown.join("\n"));
        terminal
            .draw(|frame| draw_preview(frame, &preview, Theme { color: false }))
            .unwrap();
        let shown = buffer_rows(terminal.backend());
        let footer = shown.last().unwrap();
        assert!(
            footer.contains("R resume") && footer.contains("Esc back"),
            "{footer}"
        );
        insta::assert_snapshot!(format!("preview_{width}x{height}"), shown.join("\n"));
    }
}
