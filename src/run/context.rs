//! The run as every step of a story sees it: the repository and the
//! story source it works on, its settings, and its record (the state and
//! the event log), with the user's hooks and notifications that follow
//! from that record. The loop ([`super::story_loop`]) decides; the steps
//! below it (an attempt, its evidence, its settling into git) take a
//! `&mut Run` and never the loop.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

use super::error::{Hints, RunError};
use super::run_settings::RunSettings;
use super::runtime::blocking;
use crate::events::{Event, Record, now_ms};
use crate::git::Repo;
use crate::state::{Change, EventsLog, RunDir, RunState, StoryRecord, now};
use crate::stories::{Story, StorySource};

/// Where the loop delivers events besides `events.jsonl`. It is called on
/// the loop's task for every event, agent output included, so it must not
/// block for long; a renderer that cannot keep up may drop agent output
/// (never milestones), since the log on disk has it all.
pub type EventSink = Arc<dyn Fn(Record) + Send + Sync>;

/// Everything a story's run reads and writes.
pub struct Run {
    pub(super) repo: Arc<Mutex<Repo>>,
    pub(super) source: Arc<dyn StorySource>,
    pub(super) run_dir: RunDir,
    pub(super) state: RunState,
    pub(super) settings: RunSettings,
    pub(super) log: EventsLog,
    pub(super) sink: EventSink,
    pub(super) stop: watch::Receiver<bool>,
    pub(super) session_started: Instant,
    /// The agent CLI's version, for the receipts: asked while the first
    /// attempt runs, so that a slow `--version` never delays the start.
    pub(super) agent_version: AgentVersion,
    /// The user's hooks waiting to run.
    pub(super) hook_queue: super::pending::HookQueue,
    /// Notifications under way.
    pub(super) deliveries: super::pending::Deliveries,
    /// What the user can do about an error that ends the run.
    pub(super) hints: Hints,
}

/// A preset CLI's version: being asked, or known (`None` when it gave
/// none, or the agent is a command run through `sh -c`).
pub(super) enum AgentVersion {
    Asking(tokio::task::JoinHandle<Option<String>>),
    Known(Option<String>),
}

impl Run {
    /// The run of `state`, its stories from `source`, in `repo`.
    pub fn new(
        repo: Repo,
        source: Box<dyn StorySource>,
        run_dir: RunDir,
        state: RunState,
        settings: RunSettings,
        sink: EventSink,
        stop: watch::Receiver<bool>,
    ) -> std::io::Result<Run> {
        let log = EventsLog::open(&run_dir.events_path())?;
        // Left only by a loop killed after a hook started and before its
        // record said it ran.
        let started = std::fs::remove_file(run_dir.hook_started_file()).is_ok();
        let hook_queue = super::pending::HookQueue::from_state(&state, started);
        Ok(Run {
            repo: Arc::new(Mutex::new(repo.with_scratch(&settings.agent().scratch))),
            source: Arc::from(source),
            run_dir,
            state,
            settings,
            log,
            sink,
            stop,
            session_started: Instant::now(),
            agent_version: AgentVersion::Known(None),
            hook_queue,
            deliveries: Default::default(),
            hints: |_| None,
        })
    }

    /// The run, its end telling an error with what `hints` says to do.
    pub(super) fn with_hints(self, hints: Hints) -> Run {
        Run { hints, ..self }
    }

    /// The rules `story` is judged by: the contract's, with the story's own.
    pub(super) fn rules_for(&self, story: &Story) -> crate::contract::StoryRules {
        self.settings
            .contract()
            .rules_for(&story.id, &story.acceptance_criteria)
    }

    /// Time spent in loops, this one included.
    pub(super) fn runtime_ms(&self) -> u64 {
        self.state
            .runtime_ms()
            .saturating_add(self.session_started.elapsed().as_millis() as u64)
    }

    pub(super) fn attempt_record(
        &self,
        story: &str,
        attempt: u32,
    ) -> Option<&crate::state::AttemptRecord> {
        self.state
            .stories()
            .iter()
            .find(|record| record.id == story)?
            .attempts
            .iter()
            .find(|a| a.attempt == attempt)
    }

    /// Bring the recorded stories in line with the file, keeping attempts.
    pub(super) fn sync_stories(&mut self, stories: &[Story]) {
        self.state.sync_stories(stories);
    }

    /// The record of story `id`; an empty one when it has none yet.
    pub(super) fn story_record(&self, id: &str) -> std::borrow::Cow<'_, StoryRecord> {
        match self.state.stories().iter().find(|record| record.id == id) {
            Some(record) => std::borrow::Cow::Borrowed(record),
            None => std::borrow::Cow::Owned(StoryRecord::empty(id)),
        }
    }

    pub(super) fn tracking_file(&self) -> String {
        self.source.tracking_file().to_string_lossy().into_owned()
    }

    pub(super) async fn load_stories(&self) -> Result<Vec<Story>, crate::stories::StoriesError> {
        let source = self.source.clone();
        blocking(move || source.load()).await
    }

    pub(super) async fn with_repo<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Repo) -> T + Send + 'static,
    ) -> T {
        let repo = self.repo.clone();
        blocking(move || {
            let mut repo = repo.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut repo)
        })
        .await
    }

    pub(super) fn repo_lock(&self) -> std::sync::MutexGuard<'_, Repo> {
        self.repo
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn stop_requested(&self) -> bool {
        *self.stop.borrow()
    }

    pub(super) fn warn(&mut self, message: String) {
        self.emit(Event::Warning { message });
    }

    pub(super) fn emit(&mut self, event: Event) {
        let record = self.record(event);
        self.deliver(record);
    }

    /// The one place a record is published: an event that tells of the
    /// run's state goes out only once that state is saved; then it is
    /// logged, queued for the hooks that wait for it, and handed to the
    /// sink. A crash in between leaves a state that says more than the
    /// log, never less.
    pub(super) fn deliver(&mut self, record: Record) {
        if !record.event.tells_of_state() {
            let hooks = &self.settings.contract().hooks;
            let _ = self.log.append(&record);
            self.hook_queue.note(hooks, &record);
            (self.sink)(record);
            return;
        }
        self.save_then_publish(vec![record]);
    }

    /// The one place the record changes: `change` saved once, then every
    /// event it caused published. A state that cannot be saved is an
    /// error, and nobody is told what it does not hold.
    pub(super) fn commit(&mut self, change: Change) -> Result<(), RunError> {
        let records = self.records_of(change);
        self.note_hooks(&records);
        self.save()?;
        for record in records {
            self.publish_saved(record);
        }
        Ok(())
    }

    /// `change` saved and published where an error is already on its
    /// way: a state that cannot be saved is warned of, and its events
    /// are shown but not logged, as [`Run::deliver`] does.
    pub(super) fn commit_or_warn(&mut self, change: Change) {
        let records = self.records_of(change);
        self.save_then_publish(records);
    }

    /// Its hooks are queued with the state, so that a loop killed before
    /// they ran runs them when the run goes on; then the state is saved,
    /// and the events published. Told on screen, but not logged as what
    /// happened, when the state could not be saved: the record does not
    /// hold them.
    fn save_then_publish(&mut self, records: Vec<Record>) {
        self.note_hooks(&records);
        if let Err(err) = self.save() {
            let message = format!("the run's state could not be saved: {err}");
            let warning = self.record(Event::Warning { message });
            (self.sink)(warning);
            for record in records {
                // An event that tells of no saved state (the run's end in an
                // error among them) is logged all the same.
                if !record.event.tells_of_state() {
                    let _ = self.log.append(&record);
                }
                (self.sink)(record);
            }
            return;
        }
        for record in records {
            self.publish_saved(record);
        }
    }

    fn records_of(&self, change: Change) -> Vec<Record> {
        let events = change.into_events().into_iter();
        events.map(|event| self.record(event)).collect()
    }

    fn note_hooks(&mut self, records: &[Record]) {
        let hooks = &self.settings.contract().hooks;
        for record in records {
            self.hook_queue.note(hooks, record);
        }
    }

    /// `record`, whose state is saved, logged and handed to the sink.
    fn publish_saved(&mut self, record: Record) {
        if record.event.tells_of_state() && std::env::var_os(crate::bug::PANIC_AT).is_some() {
            crate::bug::trip(&format!("published:{}", record.event.kind()));
        }
        let _ = self.log.append(&record);
        (self.sink)(record);
    }

    fn record(&self, event: Event) -> Record {
        Record {
            ts_ms: now_ms(),
            change: self.settings.change().to_string(),
            event,
        }
    }

    /// The one place the run's state is written.
    pub(super) fn save(&mut self) -> Result<(), RunError> {
        self.state.stamped(now(), self.hook_queue.persisted());
        Ok(self.run_dir.save(&self.state)?)
    }
}
