//! The loop screen's model: what the terminal UI knows about a run, fed by
//! the run's events (from the driver's channel or from a file follower: see
//! `feed`) and, for details that are not events, by an [`AttemptDetails`]
//! source. It keeps every story's attempts with their output, capped per
//! attempt so a flooding agent costs bounded memory, and turns keys into
//! [`Action`]s. It draws nothing: `view` does.

mod answer_box;
mod feed;

pub use answer_box::AnswerBox;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::state::AttemptOutcome;
use crate::ui::transcript::LineKind;

/// The most output text kept per attempt; older lines are dropped first.
pub const OUTPUT_CAP_BYTES: usize = 4 << 20;
/// Stop presses within this window force-quit at the third.
const FORCE_QUIT_WINDOW: Duration = Duration::from_secs(3);
/// How often the Diff tab of a running attempt looks at the worktree again.
pub const LIVE_DIFF_EVERY: Duration = Duration::from_secs(2);
/// How often a running attempt's first diff is asked for until it comes.
const FIRST_DIFF_EVERY: Duration = Duration::from_millis(250);
/// After this long stopping, the force-quit hint shows.
const HINT_AFTER: Duration = Duration::from_secs(5);

use crate::audit::CheckResult;
pub use crate::audit::{AttemptDetails, NoDetails};

/// Who the screen serves: the loop's own terminal, or a watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `start`: q stops the run (three presses within 3 s force-quit).
    Loop,
    /// `watch`: q only leaves; s asks a running loop to stop.
    Watch { live: bool },
}

/// What a key asks of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    None,
    /// Stop the run gracefully (the first q).
    Stop,
    /// The third stop within three seconds: quit now.
    ForceQuit,
    /// Leave the screen.
    Leave,
    /// Ask the running loop of a watched run to stop.
    StopRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Output,
    Prompt,
    Diff,
    Checks,
    Events,
}

impl Tab {
    pub const ALL: [Tab; 5] = [
        Tab::Output,
        Tab::Prompt,
        Tab::Diff,
        Tab::Checks,
        Tab::Events,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Output => "Output",
            Tab::Prompt => "Prompt",
            Tab::Diff => "Diff",
            Tab::Checks => "Checks",
            Tab::Events => "Events",
        }
    }

    fn index(self) -> usize {
        Tab::ALL.iter().position(|tab| *tab == self).unwrap_or(0)
    }
}

/// Where a story stands, as the left pane shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoryState {
    Done,
    Running,
    Failed,
    Pending,
    /// Its last attempt asked a person a question, not answered yet.
    Waiting,
}

/// An attempt's output lines, capped at [`OUTPUT_CAP_BYTES`].
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub lines: VecDeque<(LineKind, String)>,
    bytes: usize,
    /// Lines dropped from the front to stay within the cap, or never loaded.
    pub dropped_lines: u64,
    /// Bytes of the events log left out before the first line.
    pub skipped_bytes: u64,
}

impl Output {
    pub fn push(&mut self, kind: LineKind, line: String) {
        self.bytes += line.len();
        self.lines.push_back((kind, line));
        while self.bytes > OUTPUT_CAP_BYTES {
            match self.lines.pop_front() {
                Some((_, old)) => {
                    self.bytes -= old.len();
                    self.dropped_lines += 1;
                }
                None => break,
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct AttemptItem {
    pub number: u32,
    pub outcome: AttemptOutcome,
    pub reason: Option<String>,
    /// The checkpoint commit or the attempt ref.
    pub kept: Option<String>,
    pub tokens: u64,
    pub cost: f64,
    pub output: Output,
    pub events: Vec<String>,
    pub checks_passed: Vec<String>,
    pub checks_failed: Vec<String>,
    pub prompt: Option<String>,
    pub diff: Option<String>,
    /// When the diff was last asked for; a running attempt's is refreshed
    /// every [`LIVE_DIFF_EVERY`].
    diff_asked: Option<Instant>,
    /// The diff shown was taken while the attempt ran.
    diff_live: bool,
    /// The output of a finished attempt the screen did not see was asked
    /// for (a run seeded from its state: a resumed one).
    output_asked: bool,
    pub checks: Option<Vec<CheckResult>>,
    /// The role the attempt played, in a role pipeline.
    pub role: Option<crate::contract::Role>,
    /// The question it ended with, and the answer a person gave.
    pub asked: Option<String>,
    pub answer: Option<String>,
}

impl AttemptItem {
    /// `#3`, or `#3 reviewer` in a role pipeline.
    pub fn label(&self) -> String {
        match self.role {
            Some(role) => format!("#{} {role}", self.number),
            None => format!("#{}", self.number),
        }
    }
}

impl AttemptItem {
    fn new(number: u32) -> AttemptItem {
        AttemptItem {
            number,
            outcome: AttemptOutcome::Running,
            reason: None,
            kept: None,
            tokens: 0,
            cost: 0.0,
            output: Output::default(),
            events: Vec::new(),
            checks_passed: Vec::new(),
            checks_failed: Vec::new(),
            prompt: None,
            diff: None,
            diff_asked: None,
            diff_live: false,
            output_asked: false,
            checks: None,
            role: None,
            asked: None,
            answer: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StoryItem {
    pub id: String,
    pub title: String,
    pub done: bool,
    pub tasks_done: usize,
    pub tasks_total: usize,
    pub attempts: Vec<AttemptItem>,
}

impl StoryItem {
    /// The question the story waits on, if its last attempt asked one
    /// nobody has answered yet.
    pub fn waiting(&self) -> Option<&str> {
        let last = self.attempts.last()?;
        match (&last.asked, &last.answer) {
            (Some(asked), None) if last.outcome == AttemptOutcome::Question => Some(asked),
            _ => None,
        }
    }
}

/// `/` search over the Output tab.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub editing: bool,
    pub query: String,
    /// The line of the match shown, if any.
    pub hit: Option<usize>,
    pub not_found: bool,
    /// The view should bring the hit into sight at its next draw.
    jump: std::cell::Cell<bool>,
}

impl Search {
    /// Whether a new hit waits to be scrolled to; asking clears it.
    pub fn jump_pending(&self) -> bool {
        self.jump.replace(false)
    }
}

/// The state of the loop screen.
#[derive(Debug, Clone)]
pub struct App {
    pub mode: Mode,
    pub change: String,
    pub branch: String,
    pub agent: String,
    pub stories: Vec<StoryItem>,
    /// The story and attempt being worked on.
    pub current: Option<(String, u32)>,
    /// A parallel run's stories at work now, each with its attempt; `None`
    /// for a run that does one story at a time.
    pub workers: Option<Vec<(String, u32)>>,
    pub max_attempts: u32,
    /// The role at work in a pipeline, with its iteration and bound.
    pub role_step: Option<(crate::contract::Role, u32, u32)>,
    /// When the run (this loop) started, ms since the epoch.
    pub started_ms: Option<u64>,
    /// Time shown in the header.
    pub elapsed_ms: u64,
    /// How the run ended, once it did.
    pub ended: Option<String>,
    /// The feed closed: nothing more will come.
    pub feed_closed: bool,
    pub run_events: Vec<String>,
    pub selected_story: usize,
    /// `None` follows the latest attempt of the selected story.
    pub selected_attempt: Option<usize>,
    pub tab: Tab,
    /// First output row shown (in wrapped rows).
    pub scroll: usize,
    pub follow: bool,
    pub search: Search,
    pub help: bool,
    /// The first row of the help overlay shown, when it scrolls.
    pub help_scroll: usize,
    /// Rows the content pane showed at the last draw, for paging.
    pub page: usize,
    presses: Vec<Instant>,
    pub stopping_since: Option<Instant>,
    pub notice: Option<String>,
    /// Something changed since the last draw.
    pub dirty: bool,
    /// The box an answer is typed in, while it is open.
    pub answer_box: Option<AnswerBox>,
    /// Where the run's answers are recorded; `None` where it cannot be.
    pub run_dir: Option<crate::state::RunDir>,
}

impl App {
    pub fn new(mode: Mode, change: &str) -> App {
        App {
            mode,
            change: change.to_owned(),
            branch: String::new(),
            agent: String::new(),
            stories: Vec::new(),
            current: None,
            workers: None,
            max_attempts: 0,
            role_step: None,
            started_ms: None,
            elapsed_ms: 0,
            ended: None,
            feed_closed: false,
            run_events: Vec::new(),
            selected_story: 0,
            selected_attempt: None,
            tab: Tab::Output,
            scroll: 0,
            follow: true,
            search: Search::default(),
            help: false,
            help_scroll: 0,
            page: 10,
            presses: Vec::new(),
            stopping_since: None,
            notice: None,
            dirty: true,
            answer_box: None,
            run_dir: None,
        }
    }

    /// The feed ended (the loop finished, or the watched file is done).
    pub fn close_feed(&mut self) {
        self.feed_closed = true;
        self.dirty = true;
    }

    /// Whether the screen should leave now that the feed has closed: when
    /// the caller says so (the run was stopped), and also when the user
    /// pressed q while it ran. A q that lands as the run completes on its
    /// own still means leave; the screen does not wait for another.
    pub fn leaves_when_closed(&self, told: bool) -> bool {
        self.feed_closed && (told || self.stopping_since.is_some())
    }

    /// Advance clocks: the header's elapsed time and the stop hint.
    pub fn tick(&mut self, now_ms: u64, now: Instant) {
        if self.ended.is_none()
            && let Some(start) = self.started_ms
        {
            let elapsed = now_ms.saturating_sub(start);
            if elapsed / 1000 != self.elapsed_ms / 1000 {
                self.dirty = true;
            }
            self.elapsed_ms = elapsed;
        }
        if let Some(since) = self.stopping_since
            && now.duration_since(since) >= HINT_AFTER
            && !self.feed_closed
        {
            let hint = "still stopping… press q twice more to force quit".to_owned();
            if self.notice.as_ref() != Some(&hint) {
                self.notice = Some(hint);
                self.dirty = true;
            }
        }
    }

    pub fn story_state(&self, story: &StoryItem) -> StoryState {
        if story.done {
            StoryState::Done
        } else if self.ended.is_none()
            && match &self.workers {
                Some(workers) => workers.iter().any(|(id, _)| *id == story.id),
                None => self.current.as_ref().is_some_and(|(id, _)| *id == story.id),
            }
        {
            StoryState::Running
        } else if story.waiting().is_some() {
            StoryState::Waiting
        } else if !story.attempts.is_empty() {
            StoryState::Failed
        } else {
            StoryState::Pending
        }
    }

    /// The selected attempt's index within the selected story.
    pub fn attempt_index(&self) -> Option<usize> {
        let story = self.stories.get(self.selected_story)?;
        match self.selected_attempt {
            Some(at) if at < story.attempts.len() => Some(at),
            _ => story.attempts.len().checked_sub(1),
        }
    }

    pub fn selected(&self) -> Option<(&StoryItem, Option<&AttemptItem>)> {
        let story = self.stories.get(self.selected_story)?;
        Some((story, self.attempt_index().map(|at| &story.attempts[at])))
    }

    /// Totals over every attempt seen.
    pub fn totals(&self) -> (u64, f64) {
        self.stories
            .iter()
            .flat_map(|story| &story.attempts)
            .fold((0, 0.0), |(tokens, cost), a| {
                (a.tokens.saturating_add(tokens), cost + a.cost)
            })
    }

    /// Fetch what the selected tab needs and is not an event.
    pub fn load_details(&mut self, details: &dyn AttemptDetails, now: Instant) {
        let tab = self.tab;
        let Some(at) = self.attempt_index() else {
            return;
        };
        let story = &mut self.stories[self.selected_story];
        let id = story.id.clone();
        let attempt = &mut story.attempts[at];
        let finished = attempt.outcome != AttemptOutcome::Running;
        match tab {
            Tab::Output if finished && attempt.output.lines.is_empty() && !attempt.output_asked => {
                attempt.output_asked = true;
                if let Some(events) = details.transcript(&id, attempt.number) {
                    for event in &events {
                        for (kind, line) in crate::ui::transcript::event_lines(event) {
                            attempt.output.push(kind, line);
                        }
                    }
                    self.dirty = true;
                }
            }
            Tab::Prompt if attempt.prompt.is_none() => {
                attempt.prompt = details.prompt(&id, attempt.number);
                self.dirty |= attempt.prompt.is_some();
            }
            Tab::Diff => {
                let due = if finished {
                    // Once, or once more after the attempt ended.
                    attempt.diff_asked.is_none() || attempt.diff_live
                } else {
                    // Often until a first diff arrives, then every so often.
                    let every = if attempt.diff.is_none() {
                        FIRST_DIFF_EVERY
                    } else {
                        LIVE_DIFF_EVERY
                    };
                    attempt
                        .diff_asked
                        .is_none_or(|at| now.duration_since(at) >= every)
                };
                if due {
                    let diff = details.diff(&id, attempt.number);
                    self.dirty |= diff != attempt.diff;
                    // A running attempt keeps its last diff when the
                    // worktree cannot be read for a moment.
                    if diff.is_some() || finished {
                        attempt.diff = diff;
                    }
                    attempt.diff_asked = Some(now);
                    attempt.diff_live = !finished;
                }
            }
            Tab::Checks if attempt.checks.is_none() && finished => {
                attempt.checks = details.checks(&id, attempt.number);
                self.dirty |= attempt.checks.is_some();
            }
            _ => {}
        }
    }

    /// Handle one key press at `now`.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant) -> Action {
        self.dirty = true;
        let ctrl_c =
            key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        if self.search.editing && !ctrl_c {
            self.edit_search(key);
            return Action::None;
        }
        if self.answer_box.is_some() && !ctrl_c {
            self.answer_key(key);
            return Action::None;
        }
        if self.help && !ctrl_c {
            self.help_key(key);
            return Action::None;
        }
        if ctrl_c {
            return self.stop_press(now);
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Char('Q') => return self.stop_press(now),
            KeyCode::Char('s') if matches!(self.mode, Mode::Watch { live: true }) => {
                self.notice = Some("asked the loop to stop…".to_owned());
                return Action::StopRun;
            }
            KeyCode::Up | KeyCode::Char('k') => self.pick_story(-1),
            KeyCode::Down | KeyCode::Char('j') => self.pick_story(1),
            KeyCode::Char('[') => self.pick_attempt(-1),
            KeyCode::Char(']') => self.pick_attempt(1),
            KeyCode::Tab => self.pick_tab(1),
            KeyCode::BackTab => self.pick_tab(-1),
            KeyCode::PageUp => {
                self.follow = false;
                self.scroll = self.scroll.saturating_sub(self.page.max(1));
            }
            KeyCode::PageDown => {
                // The view clamps and resumes following at the bottom.
                self.scroll = self.scroll.saturating_add(self.page.max(1));
            }
            KeyCode::Home | KeyCode::Char('g') => {
                self.follow = false;
                self.scroll = 0;
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.follow = true;
            }
            KeyCode::Char('f') => self.follow = !self.follow,
            KeyCode::Char('/') => {
                self.search = Search {
                    editing: true,
                    ..Search::default()
                };
            }
            KeyCode::Char('n') => self.find(true),
            KeyCode::Char('N') => self.find(false),
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('a') => self.open_answer_box(),
            KeyCode::Esc => {
                self.search = Search::default();
                self.notice = None;
            }
            _ => self.dirty = false,
        }
        Action::None
    }

    /// In the help overlay, the scroll keys scroll it (the view keeps it
    /// in range); any other key closes it.
    fn help_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => {
                self.help_scroll = self.help_scroll.saturating_sub(1);
            }
            KeyCode::Down | KeyCode::Char('j') => self.help_scroll += 1,
            KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(self.page),
            KeyCode::PageDown => self.help_scroll += self.page.max(1),
            _ => {
                self.help = false;
                self.help_scroll = 0;
            }
        }
    }

    /// q (or Ctrl-C): in the loop's own terminal a stop request, the third
    /// within three seconds a force-quit; elsewhere, or once the run has
    /// ended, it leaves.
    fn stop_press(&mut self, now: Instant) -> Action {
        if matches!(self.mode, Mode::Watch { .. }) || self.feed_closed {
            return Action::Leave;
        }
        self.presses
            .retain(|at| now.duration_since(*at) < FORCE_QUIT_WINDOW);
        self.presses.push(now);
        if self.presses.len() >= 3 {
            return Action::ForceQuit;
        }
        if self.stopping_since.is_none() {
            self.stopping_since = Some(now);
            self.notice = Some(
                "stopping: the agent is being stopped, completed work is kept… (q twice more to force quit)"
                    .to_owned(),
            );
            return Action::Stop;
        }
        Action::None
    }

    fn pick_story(&mut self, step: isize) {
        if self.stories.is_empty() {
            return;
        }
        let last = self.stories.len() - 1;
        let next = self.selected_story.saturating_add_signed(step).min(last);
        if next != self.selected_story {
            self.selected_story = next;
            self.selected_attempt = None;
            self.scroll = 0;
            self.follow = true;
            self.search.hit = None;
        }
    }

    fn pick_attempt(&mut self, step: isize) {
        let Some(story) = self.stories.get(self.selected_story) else {
            return;
        };
        let Some(last) = story.attempts.len().checked_sub(1) else {
            return;
        };
        let at = self.attempt_index().unwrap_or(last);
        let next = at.saturating_add_signed(step).min(last);
        self.selected_attempt = if next == last { None } else { Some(next) };
        self.scroll = 0;
        self.follow = next == last;
        self.search.hit = None;
    }

    fn pick_tab(&mut self, step: isize) {
        let count = Tab::ALL.len() as isize;
        let next = (self.tab.index() as isize + step).rem_euclid(count);
        self.tab = Tab::ALL[next as usize];
        self.scroll = 0;
        self.follow = self.tab == Tab::Output;
    }

    fn edit_search(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Enter => {
                self.search.editing = false;
                self.search.hit = None;
                self.find(true);
            }
            KeyCode::Esc => self.search = Search::default(),
            KeyCode::Backspace => {
                self.search.query.pop();
            }
            KeyCode::Char(c) => self.search.query.push(c),
            _ => {}
        }
    }

    /// Move to the next (or previous) output line holding the query.
    fn find(&mut self, forward: bool) {
        if self.search.query.is_empty() {
            return;
        }
        let query = self.search.query.to_lowercase();
        let Some((_, Some(attempt))) = self.selected() else {
            return;
        };
        let lines = &attempt.output.lines;
        let count = lines.len();
        if count == 0 {
            self.search.not_found = true;
            return;
        }
        let start = match self.search.hit {
            Some(hit) if forward => hit + 1,
            Some(hit) => hit + count - 1,
            None if forward => 0,
            None => count - 1,
        };
        let found = (0..count)
            .map(|i| {
                if forward {
                    (start + i) % count
                } else {
                    (start + count - i) % count
                }
            })
            .find(|&i| lines[i].1.to_lowercase().contains(&query));
        self.search.not_found = found.is_none();
        if let Some(hit) = found {
            self.search.hit = Some(hit);
            self.search.jump.set(true);
            self.tab = Tab::Output;
            self.follow = false;
        }
    }
}
