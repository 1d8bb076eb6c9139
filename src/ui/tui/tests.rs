//! The screens rendered into ratatui's `TestBackend` and snapshotted at
//! 80x24 and 160x48, and the keys: navigation, tabs, search, and the stop
//! rules (a stop request, then a force-quit at the third q within 3 s).

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::agent::{AgentEvent, Done, ToolUse, Usage};
use crate::audit::{CheckResult, RunSummary};
use crate::events::{Event, Record};
use crate::state::{AttemptOutcome, RunStatus, StopReason};

fn record(event: Event) -> Record {
    Record {
        ts_ms: 1_000_000,
        change: "greet".into(),
        event,
    }
}

fn progress(story: &str, title: &str, index: usize, attempt: u32) -> Record {
    record(Event::StoryProgress {
        story_id: story.into(),
        title: title.into(),
        index,
        total: 3,
        attempt,
        max_attempts: 4,
        role: None,
        role_iteration: None,
        role_max_iterations: None,
    })
}

/// `story`'s attempt `attempt` done, checkpointed at `commit`.
fn checkpointed(story: &str, attempt: u32, commit: &str) -> Record {
    record(Event::AttemptFinished {
        story_id: story.into(),
        attempt,
        outcome: AttemptOutcome::Complete,
        reason: None,
        preserved: None,
        checkpoint: Some(commit.into()),
        role: None,
        unchanged: false,
    })
}

/// `story`'s attempt `attempt` ended `outcome` for `reason`, its work
/// preserved under its ref.
fn fell_short(story: &str, attempt: u32, outcome: AttemptOutcome, reason: &str) -> Record {
    record(Event::AttemptFinished {
        story_id: story.into(),
        attempt,
        outcome,
        reason: Some(reason.into()),
        preserved: Some(format!("refs/ralph/greet/attempts/{story}/{attempt}")),
        checkpoint: None,
        role: None,
        unchanged: false,
    })
}

fn said(story: &str, attempt: u32, event: AgentEvent) -> Record {
    record(Event::StoryEvent {
        story_id: story.into(),
        attempt,
        event,
    })
}

fn message(text: &str) -> AgentEvent {
    AgentEvent::Message {
        text: text.into(),
        tool_uses: vec![],
    }
}

/// A run of `greet` whose three stories are all open, with
/// `tasks_total` tasks each.
fn three_open_stories(mode: Mode, tasks_total: usize) -> App {
    let mut app = App::new(mode, "greet");
    app.agent = "claude".into();
    for (id, title) in [("1", "Greeting"), ("2", "Farewell"), ("3", "Docs")] {
        app.stories.push(StoryItem {
            id: id.into(),
            title: title.into(),
            done: false,
            tasks_done: 0,
            tasks_total,
            attempts: vec![],
        });
    }
    app
}

/// Story 1's two attempts: the first fails after a tool call, the second
/// completes with its checks passing.
fn story_one_failed_then_done() -> Vec<Record> {
    vec![
        progress("1", "Greeting", 1, 1),
        said("1", 1, message("Looking at the tests first.")),
        said(
            "1",
            1,
            AgentEvent::Message {
                text: String::new(),
                tool_uses: vec![ToolUse {
                    id: "t1".into(),
                    name: "Bash".into(),
                    input: serde_json::json!({"command": "cargo test"}),
                }],
            },
        ),
        said(
            "1",
            1,
            AgentEvent::ToolResult {
                tool_use_id: Some("t1".into()),
                output: "error: database unavailable".into(),
                is_error: true,
            },
        ),
        fell_short(
            "1",
            1,
            AttemptOutcome::Failed,
            "the agent said FAILED: the tests need a database",
        ),
        progress("1", "Greeting", 1, 2),
        said(
            "1",
            2,
            message("Created hello.txt. <promise>COMPLETE</promise>"),
        ),
        said(
            "1",
            2,
            AgentEvent::Done(Done {
                usage: Usage {
                    input_tokens: 1200,
                    output_tokens: 300,
                    ..Usage::default()
                },
                cost_usd: Some(0.05),
                ..Done::default()
            }),
        ),
        record(Event::Checks {
            story_id: "1".into(),
            attempt: 2,
            passed: vec!["cargo test".into()],
            failed: vec![],
        }),
        checkpointed("1", 2, "0123456789abcdef0123456789abcdef01234567"),
    ]
}

/// A run on story 2 of 3: story 1 failed once, then completed.
fn sample(mode: Mode) -> App {
    let mut app = three_open_stories(mode, 2);
    app.apply(&record(Event::RunStarted {
        branch: "ralph/greet".into(),
        source: "openspec".into(),
        stories_total: 3,
        stories_done: 0,
        resumed: false,
    }));
    for event in &story_one_failed_then_done() {
        app.apply(event);
    }
    app.apply(&progress("2", "Farewell", 2, 1));
    app.apply(&said(
        "2",
        1,
        message(&format!(
            "Writing bye.txt now; this line is long enough to wrap at eighty columns {}",
            "and then some more words ".repeat(4)
        )),
    ));
    app.elapsed_ms = 83_000;
    app.max_attempts = 4;
    app
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| draw(frame, app, Theme { color: false }))
        .unwrap();
    terminal.backend().to_string()
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn press(app: &mut App, codes: &[KeyCode]) -> Vec<Action> {
    let now = Instant::now();
    codes
        .iter()
        .map(|code| app.on_key(key(*code), now))
        .collect()
}

#[test]
fn diff_checks_and_events_tabs() {
    let mut app = sample(Mode::Watch { live: false });
    press(&mut app, &[KeyCode::Char('k')]);
    let attempt = &mut app.stories[0].attempts[1];
    attempt.diff = Some(
        "diff --git a/hello.txt b/hello.txt\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello\n"
            .into(),
    );
    attempt.checks = Some(vec![
        CheckResult {
            name: "cargo test".into(),
            passed: true,
            output: None,
        },
        CheckResult {
            name: "cargo clippy".into(),
            passed: false,
            output: Some("warning: unused variable".into()),
        },
    ]);
    press(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.tab, Tab::Diff);
    for (width, height) in [(80, 24), (120, 40)] {
        let size = format!("{width}x{height}");
        insta::assert_snapshot!(format!("diff_{size}"), render(&mut app, width, height));
        press(&mut app, &[KeyCode::Tab]);
        insta::assert_snapshot!(format!("checks_{size}"), render(&mut app, width, height));
        press(&mut app, &[KeyCode::Tab]);
        insta::assert_snapshot!(format!("events_{size}"), render(&mut app, width, height));
        press(&mut app, &[KeyCode::Tab, KeyCode::Tab, KeyCode::Tab]);
    }
}

/// Details whose diff changes at every look, counting the looks; with
/// `slow`, the first looks find nothing yet.
struct Worktree {
    looks: std::cell::Cell<u32>,
    slow: u32,
}

impl AttemptDetails for Worktree {
    fn diff(&self, _: &str, _: u32) -> Option<String> {
        self.looks.set(self.looks.get() + 1);
        (self.looks.get() > self.slow).then(|| format!("+++ b/a.txt\n+look {}\n", self.looks.get()))
    }
}

#[test]
fn the_diff_of_a_running_attempt_follows_the_worktree() {
    let mut app = sample(Mode::Loop);
    press(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.tab, Tab::Diff);
    let (_, attempt) = app.selected().unwrap();
    assert_eq!(attempt.unwrap().outcome, AttemptOutcome::Running);
    let worktree = Worktree {
        looks: Default::default(),
        slow: 0,
    };
    let t0 = Instant::now();
    app.load_details(&worktree, t0);
    assert_eq!(worktree.looks.get(), 1);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("live: the worktree"), "{screen}");
    assert!(screen.contains("+look 1"), "{screen}");
    app.load_details(&worktree, t0 + Duration::from_millis(500));
    assert_eq!(worktree.looks.get(), 1, "not looked at again within 2 s");
    app.load_details(&worktree, t0 + LIVE_DIFF_EVERY);
    assert_eq!(worktree.looks.get(), 2);
    assert!(render(&mut app, 80, 24).contains("+look 2"));
    // The attempt ends: one last look gives its final diff, then no more.
    let at = app.attempt_index().unwrap();
    let story = app.selected_story;
    app.stories[story].attempts[at].outcome = AttemptOutcome::Complete;
    app.load_details(&worktree, t0 + LIVE_DIFF_EVERY + Duration::from_millis(10));
    assert_eq!(worktree.looks.get(), 3);
    let screen = render(&mut app, 80, 24);
    assert!(!screen.contains("live:"), "{screen}");
    app.load_details(&worktree, t0 + LIVE_DIFF_EVERY * 5);
    assert_eq!(
        worktree.looks.get(),
        3,
        "a finished attempt's diff is final"
    );
}

#[test]
fn a_first_live_diff_is_asked_for_again_soon_but_not_every_frame() {
    let mut app = sample(Mode::Loop);
    press(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    let worktree = Worktree {
        looks: Default::default(),
        slow: 2,
    };
    let t0 = Instant::now();
    app.load_details(&worktree, t0);
    app.load_details(&worktree, t0 + Duration::from_millis(50));
    assert_eq!(worktree.looks.get(), 1, "not at every frame");
    app.load_details(&worktree, t0 + Duration::from_millis(250));
    assert_eq!(worktree.looks.get(), 2);
    app.load_details(&worktree, t0 + Duration::from_millis(500));
    assert_eq!(worktree.looks.get(), 3);
    assert!(render(&mut app, 80, 24).contains("+look 3"));
    app.load_details(&worktree, t0 + Duration::from_millis(750));
    assert_eq!(worktree.looks.get(), 3, "then only every 2 s");
}

#[test]
fn help_and_a_terminal_too_small() {
    let mut app = sample(Mode::Loop);
    press(&mut app, &[KeyCode::Char('?')]);
    assert!(app.help);
    press(&mut app, &[KeyCode::Char('x')]);
    assert!(!app.help, "any key closes the help");
    insta::assert_snapshot!("too_small", render(&mut app, 40, 10));
}

/// The selection screen with a change, a stopped run and an earlier one,
/// and a message; the preview of a resume.
fn home_screens() -> (SelectionScreen, PreviewScreen) {
    let stopped = RunSummary {
        label: "greet".into(),
        change: "greet".into(),
        state: RunStatus::Stopped,
        reason: Some(StopReason::MaxRetries),
        stories_done: 1,
        stories_total: 3,
        history: false,
        updated_at: 1_700_003_000,
    };
    let earlier = RunSummary {
        label: "history/greet-1700000000".into(),
        change: "greet".into(),
        state: RunStatus::Finished,
        reason: Some(StopReason::Completed),
        stories_done: 3,
        stories_total: 3,
        history: true,
        updated_at: 1_699_900_000,
    };
    let mut selection = SelectionScreen::new(SelectionData {
        changes: vec![ChangeEntry {
            name: "add-login".into(),
            stories_done: 0,
            stories_total: 4,
        }],
        runs: vec![stopped, earlier],
        now: 1_700_003_700,
    });
    selection.message = Some(
        "greet: stopped (max_retries), 1/3 stories done; Enter on it previews its resume with two more retries"
            .into(),
    );
    let preview = PreviewScreen::new(PreviewData {
        change: "add-login".into(),
        stories: vec![select::PreviewStory {
            id: "1".into(),
            title: "Login form".into(),
            done: false,
            next: true,
            tasks: vec![
                (true, "1.1 Add the route".into()),
                (false, "1.2 Add the form".into()),
            ],
            pipeline: Vec::new(),
        }],
        first_prompt:
            "You are working on story 1 of 4: Login form.\n\nTasks:\n- 1.2 Add the form\n".into(),
        agent_command: "claude -p --output-format stream-json".into(),
        contract: vec!["promise: COMPLETE".into(), "check: cargo test".into()],
        guardrails: vec!["3 retries per story".into(), "no-progress limit 3".into()],
        notes: vec!["claude is not on PATH".into()],
        resumes: true,
    });
    (selection, preview)
}

#[test]
fn selection_keys_pick_preview_and_open() {
    let (mut screen, _) = home_screens();
    assert_eq!(screen.on_key(key(KeyCode::Down)), SelectionAction::None);
    // A stopped run is previewed to be resumed, or watched with w.
    assert_eq!(
        screen.on_key(key(KeyCode::Enter)),
        SelectionAction::OpenChange("greet".into())
    );
    assert_eq!(
        screen.on_key(key(KeyCode::Char('w'))),
        SelectionAction::OpenRun("greet".into())
    );
    // A finished run is opened to be browsed.
    screen.on_key(key(KeyCode::Char('G')));
    assert_eq!(
        screen.on_key(key(KeyCode::Enter)),
        SelectionAction::OpenRun("history/greet-1700000000".into())
    );
    screen.on_key(key(KeyCode::Char('g')));
    assert_eq!(
        screen.on_key(key(KeyCode::Enter)),
        SelectionAction::OpenChange("add-login".into())
    );
}

#[test]
fn preview_keys_start_go_back_and_scroll_each_pane() {
    let (_, mut preview) = home_screens();
    assert_eq!(
        preview.on_key(key(KeyCode::Char('R'))),
        PreviewAction::Start
    );
    assert_eq!(
        preview.on_key(key(KeyCode::Char('r'))),
        PreviewAction::None,
        "only R starts an agent"
    );
    assert_eq!(preview.on_key(key(KeyCode::Esc)), PreviewAction::Back);
    // Tab gives the scroll keys to the stories, the rules, and back to
    // the prompt; each pane keeps its own place.
    preview.on_key(key(KeyCode::Tab));
    preview.on_key(key(KeyCode::Down));
    assert_eq!(preview.scroll, [0, 1, 0]);
    preview.on_key(key(KeyCode::Tab));
    preview.on_key(key(KeyCode::PageDown));
    assert_eq!(preview.scroll, [0, 1, 10]);
    preview.on_key(key(KeyCode::Tab));
    preview.on_key(key(KeyCode::Down));
    assert_eq!(preview.scroll, [1, 1, 10]);
    preview.on_key(key(KeyCode::BackTab));
    assert_eq!(preview.focus, select::Pane::Rules);
    preview.on_key(key(KeyCode::Char('g')));
    assert_eq!(preview.scroll, [1, 1, 0]);
}

#[test]
fn arrows_and_brackets_pick_stories_and_attempts() {
    let mut app = sample(Mode::Loop);
    assert_eq!(app.selected_story, 1, "follows the story being worked on");
    press(
        &mut app,
        &[KeyCode::Down, KeyCode::Char('j'), KeyCode::Char('j')],
    );
    assert_eq!(app.selected_story, 2, "stops at the last story");
    press(&mut app, &[KeyCode::Up, KeyCode::Char('k'), KeyCode::Up]);
    assert_eq!(app.selected_story, 0);
    assert_eq!(app.attempt_index(), Some(1), "the latest attempt first");
    press(&mut app, &[KeyCode::Char('['), KeyCode::Char('[')]);
    assert_eq!(app.attempt_index(), Some(0));
    press(&mut app, &[KeyCode::Char(']'), KeyCode::Char(']')]);
    assert_eq!(app.attempt_index(), Some(1));
}

#[test]
fn tab_and_shift_tab_cycle_the_views() {
    let mut app = sample(Mode::Loop);
    press(&mut app, &[KeyCode::BackTab]);
    assert_eq!(app.tab, Tab::Events);
    press(&mut app, &[KeyCode::Tab, KeyCode::Tab]);
    assert_eq!(app.tab, Tab::Prompt);
}

#[test]
fn scrolling_and_follow() {
    let mut app = sample(Mode::Loop);
    for i in 0..200 {
        app.apply(&said("2", 1, message(&format!("line {i}"))));
    }
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("line 199"), "follows the end:\n{screen}");
    press(&mut app, &[KeyCode::Char('g')]);
    assert!(!app.follow);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("Writing bye.txt"), "the top:\n{screen}");
    press(&mut app, &[KeyCode::PageDown]);
    let screen = render(&mut app, 80, 24);
    assert!(
        !screen.contains("Writing bye.txt"),
        "a page down:\n{screen}"
    );
    app.apply(&said("2", 1, message("new line while reading")));
    let screen = render(&mut app, 80, 24);
    assert!(
        !screen.contains("new line while reading"),
        "no jump while reading"
    );
    press(&mut app, &[KeyCode::Char('G')]);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("new line while reading"), "G follows again");
    press(&mut app, &[KeyCode::Char('f')]);
    assert!(!app.follow);
}

#[test]
fn slash_searches_the_output() {
    let mut app = sample(Mode::Loop);
    for i in 0..100 {
        app.apply(&said("2", 1, message(&format!("line {i}"))));
    }
    press(&mut app, &[KeyCode::Char('/')]);
    for c in "BYE.TXT".chars() {
        press(&mut app, &[KeyCode::Char(c)]);
    }
    assert_eq!(
        app.search.query, "BYE.TXT",
        "keys go to the query while typing"
    );
    press(&mut app, &[KeyCode::Enter]);
    assert_eq!(app.search.hit, Some(0));
    assert!(!app.follow);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("Writing bye.txt"), "{screen}");
    press(
        &mut app,
        &[
            KeyCode::Char('/'),
            KeyCode::Char('z'),
            KeyCode::Char('z'),
            KeyCode::Enter,
        ],
    );
    assert!(app.search.not_found);
}

#[test]
fn q_stops_then_three_presses_within_three_seconds_force_quit() {
    let mut app = sample(Mode::Loop);
    let start = Instant::now();
    let q = key(KeyCode::Char('q'));
    assert_eq!(app.on_key(q, start), Action::Stop);
    assert!(app.notice.as_deref().unwrap().starts_with("stopping"));
    // Spread out: no force-quit, and no second stop request.
    assert_eq!(app.on_key(q, start + Duration::from_secs(2)), Action::None);
    assert_eq!(app.on_key(q, start + Duration::from_secs(4)), Action::None);
    // After five seconds of waiting, the hint.
    app.tick(0, start + Duration::from_secs(6));
    assert_eq!(
        app.notice.as_deref(),
        Some("still stopping… press q twice more to force quit")
    );
    assert_eq!(app.on_key(q, start + Duration::from_secs(7)), Action::None);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(
        app.on_key(ctrl_c, start + Duration::from_millis(7500)),
        Action::None,
        "Ctrl-C counts like q"
    );
    assert_eq!(
        app.on_key(q, start + Duration::from_millis(9900)),
        Action::ForceQuit,
        "the third press within three seconds"
    );
}

#[test]
fn once_the_run_ended_q_leaves() {
    let mut app = sample(Mode::Loop);
    app.close_feed();
    assert_eq!(press(&mut app, &[KeyCode::Char('q')]), vec![Action::Leave]);
}

#[test]
fn a_q_pressed_as_the_run_completes_leaves_when_the_feed_closes() {
    let mut app = sample(Mode::Loop);
    assert!(!app.leaves_when_closed(false), "the feed is open");
    app.close_feed();
    assert!(
        !app.leaves_when_closed(false),
        "a run that ended on its own stays to be browsed"
    );
    assert!(app.leaves_when_closed(true), "a stopped run leaves");

    // q while running, then the run completes on its own, not stopped.
    let mut app = sample(Mode::Loop);
    assert_eq!(press(&mut app, &[KeyCode::Char('q')]), vec![Action::Stop]);
    assert!(!app.leaves_when_closed(false), "the feed is open");
    app.close_feed();
    assert!(
        app.leaves_when_closed(false),
        "the q asked to leave; it is not asked for again"
    );
}

#[test]
fn watch_q_leaves_and_s_asks_the_loop_to_stop() {
    let mut app = sample(Mode::Watch { live: true });
    assert_eq!(
        press(&mut app, &[KeyCode::Char('s')]),
        vec![Action::StopRun]
    );
    assert_eq!(press(&mut app, &[KeyCode::Char('q')]), vec![Action::Leave]);
    let mut finished = sample(Mode::Watch { live: false });
    assert_eq!(
        press(&mut finished, &[KeyCode::Char('s')]),
        vec![Action::None]
    );
}

#[test]
fn output_is_capped_per_attempt() {
    let mut app = sample(Mode::Loop);
    let line = "x".repeat(1 << 16);
    for _ in 0..(OUTPUT_CAP_BYTES / line.len() + 10) {
        app.apply(&said("2", 1, message(&line)));
    }
    let output = &app.stories[1].attempts[0].output;
    assert!(output.dropped_lines >= 10);
    let kept: usize = output.lines.iter().map(|(_, l)| l.len()).sum();
    assert!(kept <= OUTPUT_CAP_BYTES);
    press(&mut app, &[KeyCode::Char('g')]);
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("earlier output not shown"), "{screen}");
}

mod big_files;
mod control_text;
mod questions;
mod screens;

/// A parallel run: stories 1 and 3 at work at once; story 2 done in its
/// worktree but not merged (a conflict), so it is not shown done.
fn parallel_sample() -> App {
    let mut app = three_open_stories(Mode::Loop, 1);
    let workers = |stories: &[&str]| {
        record(Event::Workers {
            stories: stories.iter().map(|s| s.to_string()).collect(),
        })
    };
    for event in [
        workers(&["1"]),
        progress("1", "Greeting", 1, 1),
        workers(&["1", "2"]),
        progress("2", "Farewell", 2, 1),
        checkpointed("2", 1, "0123456789abcdef"),
        workers(&["1"]),
        record(Event::Merged {
            story_id: "2".into(),
            merged: false,
            checkpoint: None,
            reason: Some("its work conflicts with the work of story 1 in bye.txt".into()),
            preserved: Some("refs/ralph/greet/stories/2/1".into()),
        }),
        workers(&["1", "3"]),
        progress("3", "Docs", 3, 1),
    ] {
        app.apply(&event);
    }
    app
}

#[test]
fn loop_screen_of_a_parallel_run_shows_every_story_at_work() {
    let mut app = parallel_sample();
    let screen = render(&mut app, 80, 24);
    assert!(
        screen.contains("at work: story 1 (attempt 1), 3 (attempt 1)"),
        "{screen}"
    );
    assert_eq!(
        app.story_state(&app.stories[0].clone()),
        StoryState::Running
    );
    assert_eq!(
        app.story_state(&app.stories[2].clone()),
        StoryState::Running
    );
    assert_eq!(
        app.story_state(&app.stories[1].clone()),
        StoryState::Failed,
        "a story done in its worktree but not merged is not done"
    );
}

/// Issue 33: a story in its role pipeline shows the role's own bound, not
/// the plain run's attempts per story.
#[test]
fn a_role_at_work_shows_its_own_iteration_and_bound() {
    let mut app = three_open_stories(Mode::Loop, 1);
    app.apply(&record(Event::StoryProgress {
        story_id: "1".into(),
        title: "Greeting".into(),
        index: 1,
        total: 3,
        attempt: 9,
        max_attempts: 4,
        role: Some(crate::contract::Role::Coder),
        role_iteration: Some(9),
        role_max_iterations: Some(15),
    }));
    let screen = render(&mut app, 80, 24);
    assert!(screen.contains("coder 9/15"), "{screen}");
    assert!(!screen.contains("9/4"), "{screen}");
}
