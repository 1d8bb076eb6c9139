//! An agent's terminal control sequences on the loop screen: its title,
//! its output and its reason are shown escaped, in the cells as on the
//! screen, and no cell holds a control character a terminal would obey.

use super::*;

const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2Jgone\u{0}";
const SHOWN: &str = "\\x1b]0;pwned\\x07\\x1b[2Jgone\\x00";

#[test]
fn issue_51_the_loop_screen_shows_an_agent_s_control_sequences_escaped() {
    let mut app = App::new(Mode::Loop, "greet");
    for record in [
        progress("1", &format!("Greet {HOSTILE}"), 1, 1),
        said("1", 1, message(&format!("thinking {HOSTILE} aloud"))),
        fell_short(
            "1",
            1,
            AttemptOutcome::Failed,
            &format!("the agent said FAILED: {HOSTILE}"),
        ),
    ] {
        app.apply(&record);
    }
    for tab in [Tab::Output, Tab::Events] {
        while app.tab != tab {
            press(&mut app, &[KeyCode::Tab]);
        }
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        terminal
            .draw(|frame| draw(frame, &mut app, Theme { color: false }))
            .unwrap();
        let cells = terminal.backend().buffer().content();
        let hidden: Vec<&str> = cells
            .iter()
            .map(|cell| cell.symbol())
            .filter(|symbol| symbol.contains(char::is_control))
            .collect();
        assert!(hidden.is_empty(), "{tab:?}: cells hold {hidden:?}");
        let screen = terminal.backend().to_string();
        // The story's title, wrapped under its id.
        assert!(screen.contains(&format!("  {SHOWN}  ")), "{screen}");
        let said = match tab {
            Tab::Output => format!("thinking {SHOWN} aloud"),
            _ => format!("FAILED: {SHOWN}"),
        };
        assert!(screen.contains(&said), "{tab:?}: {said} missing:\n{screen}");
    }
}
