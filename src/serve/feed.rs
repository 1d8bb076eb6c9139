//! Runs followed for their pages. One thread per run looked at, however
//! many pages follow it, reads what the run appends to `events.jsonl` and
//! watches `state.json` and the lock, a few times a second, the way
//! `watch` follows a run from another terminal: it only reads, and the run
//! never waits for it. When the run moves, the run page's live part is
//! rendered once and handed to every page following it; new agent output
//! goes out in batches to the attempt pages. The events log's offsets are
//! kept here, so that a run whose agents wrote gigabytes is indexed once,
//! not per request. A run no page has looked at for a while is let go.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{broadcast, watch};

use super::Site;
use crate::agent::AgentEvent;
use crate::audit::{
    AttemptDetails, EventsIndex, FoundRun, RunDetails, read_events_where, read_record,
    read_transcript_tail,
};
use crate::events::{Event, Record};
use crate::git::Repo;
use crate::state::{RunDir, lock_holder};

/// How often a followed run's files are looked at.
const POLL: Duration = Duration::from_millis(200);
/// How often the list of runs is read again while a page follows it.
const LIST_POLL: Duration = Duration::from_secs(1);
/// How long a run no page follows is kept indexed.
const IDLE: Duration = Duration::from_secs(60);
/// New output beyond this much since the last look goes out as its end only.
const CATCH_UP_BYTES: u64 = 4 << 20;
/// Batches an attempt page may fall behind by before it is sent the
/// transcript afresh.
const BATCHES_KEPT: usize = 64;

/// Agent output appended to the events log: the records of the lines from
/// `start` on (its last [`CATCH_UP_BYTES`], after a flood).
#[derive(Debug)]
pub struct Batch {
    pub start: u64,
    pub records: Vec<Record>,
}

/// How the followed pages' live parts are rendered: a run page's from its
/// feed, the list's from the site. The views know the pages; the feeds only
/// know when to render them again.
#[derive(Clone, Copy)]
pub struct Renderers {
    pub run: fn(&RunFeed) -> String,
    pub list: fn(&Site) -> String,
}

/// Every followed run of the server, and the list.
pub struct Feeds {
    site: Arc<Site>,
    render: Renderers,
    runs: Mutex<HashMap<PathBuf, Arc<RunFeed>>>,
    list: Mutex<Option<Arc<ListFeed>>>,
}

/// A run's feed, held while a request uses it: a run is let go only when
/// no request holds it and no page follows it.
pub struct Held(Arc<RunFeed>);

impl std::ops::Deref for Held {
    type Target = RunFeed;
    fn deref(&self) -> &RunFeed {
        &self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Feeds {
    pub fn new(site: Arc<Site>, render: Renderers) -> Feeds {
        Feeds {
            site,
            render,
            runs: Mutex::new(HashMap::new()),
            list: Mutex::new(None),
        }
    }

    pub fn site(&self) -> &super::Site {
        &self.site
    }

    /// The feed of `found`, followed from now on if it was not.
    pub fn run(self: &Arc<Self>, found: FoundRun) -> Held {
        let mut runs = lock(&self.runs);
        let feed = runs
            .entry(found.dir.dir.clone())
            .or_insert_with(|| {
                let feed = Arc::new(RunFeed::new(self.site.clone(), found));
                let (feeds, followed) = (Arc::clone(self), Arc::clone(&feed));
                std::thread::spawn(move || follow(&feeds, &followed));
                feed
            })
            .clone();
        feed.held.fetch_add(1, Ordering::SeqCst);
        *lock(&feed.used) = Instant::now();
        Held(feed)
    }

    /// Let `feed` go if nothing uses it any more; false when something does.
    fn retire(&self, feed: &Arc<RunFeed>) -> bool {
        let mut runs = lock(&self.runs);
        let unused = feed.held.load(Ordering::SeqCst) == 0
            && feed.followers() == 0
            && lock(&feed.used).elapsed() > IDLE;
        if unused {
            runs.remove(&feed.found.dir.dir);
        }
        unused
    }

    /// The list's live part, followed while a page follows it.
    pub fn list(self: &Arc<Self>) -> watch::Receiver<Arc<str>> {
        let mut list = lock(&self.list);
        if let Some(feed) = list.as_ref() {
            return feed.page.subscribe();
        }
        let (page, receiver) = watch::channel(Arc::from(""));
        let feed = Arc::new(ListFeed { page });
        *list = Some(feed.clone());
        let feeds = Arc::clone(self);
        std::thread::spawn(move || follow_list(&feeds, &feed));
        receiver
    }
}

/// A mutex whose holder panicked is still good for reading files again.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One followed run.
pub struct RunFeed {
    pub found: FoundRun,
    site: Arc<Site>,
    index: Mutex<Indexed>,
    /// The diffs of attempts at work, by the run directory they are
    /// recorded in (a parallel run's stories each have their own).
    details: Mutex<HashMap<PathBuf, RunDetails>>,
    /// The run page's live part, as last rendered.
    pub page: watch::Sender<Arc<str>>,
    batches: broadcast::Sender<Arc<Batch>>,
    held: AtomicUsize,
    used: Mutex<Instant>,
}

/// The events log's offsets, for the file they were taken of.
#[derive(Default)]
struct Indexed {
    file: Option<File>,
    identity: Option<(u64, u64)>,
    index: EventsIndex,
}

impl RunFeed {
    fn new(site: Arc<Site>, found: FoundRun) -> RunFeed {
        RunFeed {
            found,
            site,
            index: Mutex::new(Indexed::default()),
            details: Mutex::new(HashMap::new()),
            page: watch::channel(Arc::from("")).0,
            batches: broadcast::channel(BATCHES_KEPT).0,
            held: AtomicUsize::new(0),
            used: Mutex::new(Instant::now()),
        }
    }

    pub fn site(&self) -> &Site {
        &self.site
    }

    fn followers(&self) -> usize {
        self.page.receiver_count() + self.batches.receiver_count()
    }

    /// Index what was appended since the last look, and send its agent
    /// output to the attempt pages. Returns whether milestones came.
    fn advance(&self, indexed: &mut Indexed) -> bool {
        let path = self.found.dir.events_path();
        let Ok(meta) = std::fs::metadata(&path) else {
            return false;
        };
        let identity = Some((meta.dev(), meta.ino()));
        if indexed.identity != identity || meta.len() < indexed.index.indexed {
            // A new log (the run was started again): begin again.
            *indexed = Indexed {
                file: File::open(&path).ok(),
                identity,
                index: EventsIndex::default(),
            };
        }
        let Some(file) = indexed.file.as_ref() else {
            return false;
        };
        let before = indexed.index.indexed;
        let Ok(milestones) = indexed.index.update(file) else {
            return false;
        };
        let after = indexed.index.indexed;
        if after > before && self.batches.receiver_count() > 0 {
            let start = before.max(after.saturating_sub(CATCH_UP_BYTES));
            let mut records = Vec::new();
            let _ = read_events_where(
                &path,
                start,
                after,
                |head| head.is_output(),
                |record| records.push(record),
            );
            let _ = self.batches.send(Arc::new(Batch {
                start: before,
                records,
            }));
        }
        !milestones.is_empty()
    }

    /// The run's latest milestone events (not agent output), oldest first.
    pub fn milestones(&self, at_most: usize) -> Vec<Record> {
        let mut indexed = lock(&self.index);
        self.advance(&mut indexed);
        let Some(file) = indexed.file.as_ref() else {
            return Vec::new();
        };
        let milestones = &indexed.index.milestones;
        milestones[milestones.len().saturating_sub(at_most)..]
            .iter()
            .filter_map(|(offset, len)| read_record(file, *offset, *len))
            .collect()
    }

    /// The last `max_bytes` of an attempt's output and how much came before
    /// it, with a receiver of every batch appended after it.
    pub fn follow_attempt(
        &self,
        story: &str,
        attempt: u32,
        max_bytes: u64,
    ) -> (broadcast::Receiver<Arc<Batch>>, u64, Vec<AgentEvent>, u64) {
        let mut indexed = lock(&self.index);
        self.advance(&mut indexed);
        let receiver = self.batches.subscribe();
        let upto = indexed.index.indexed;
        let (events, skipped) = indexed
            .index
            .span(story, attempt)
            .and_then(|span| {
                read_transcript_tail(&self.found.dir.events_path(), span, max_bytes).ok()
            })
            .unwrap_or_default();
        (receiver, upto, events, skipped)
    }

    /// The diff of an attempt at work recorded in `run_dir`, whose
    /// worktree is `workdir`: the newest one taken, and a fresher one asked
    /// for.
    pub fn live_diff(
        &self,
        run_dir: &RunDir,
        workdir: &std::path::Path,
        story: &str,
        attempt: u32,
    ) -> Option<String> {
        let mut details = lock(&self.details);
        if !details.contains_key(&run_dir.dir) {
            let repo = Repo::open_for_recovery(workdir).ok()?;
            details.insert(run_dir.dir.clone(), RunDetails::new(repo, run_dir.clone()));
        }
        details.get(&run_dir.dir)?.diff(story, attempt)
    }
}

/// What says a run moved without reading it: its state file's size and
/// time, and the loop holding the lock.
fn probe(feed: &RunFeed) -> (Option<(u64, SystemTime)>, Option<u32>) {
    let state = std::fs::metadata(feed.found.dir.state_path())
        .ok()
        .map(|meta| {
            (
                meta.len(),
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            )
        });
    let holder = lock_holder(&feed.site.lock_path()).map(|(pid, _)| pid);
    (state, holder)
}

/// The thread of one followed run, until it is let go.
fn follow(feeds: &Feeds, feed: &Arc<RunFeed>) {
    let mut seen = None;
    loop {
        std::thread::sleep(POLL);
        if feed.followers() == 0 {
            if feed.held.load(Ordering::SeqCst) == 0 && feeds.retire(feed) {
                return;
            }
            seen = None;
            continue;
        }
        let milestones = feed.advance(&mut lock(&feed.index));
        let now = probe(feed);
        if !milestones && seen.as_ref() == Some(&now) {
            continue;
        }
        seen = Some(now);
        if feed.page.receiver_count() > 0 {
            let html = (feeds.render.run)(feed);
            if **feed.page.borrow() != *html {
                feed.page.send_replace(Arc::from(html));
            }
        }
    }
}

/// The list of runs, as pages follow it.
struct ListFeed {
    page: watch::Sender<Arc<str>>,
}

fn follow_list(feeds: &Feeds, feed: &Arc<ListFeed>) {
    loop {
        std::thread::sleep(LIST_POLL);
        {
            let mut list = lock(&feeds.list);
            if feed.page.receiver_count() == 0 {
                *list = None;
                return;
            }
        }
        let html = (feeds.render.list)(&feeds.site);
        if **feed.page.borrow() != *html {
            feed.page.send_replace(Arc::from(html));
        }
    }
}

/// The agent output of `batch` for one attempt.
pub fn output_of(batch: &Batch, story: &str, attempt: u32) -> Vec<AgentEvent> {
    batch
        .records
        .iter()
        .filter_map(|record| match &record.event {
            Event::StoryEvent {
                story_id,
                attempt: n,
                event,
            } if story_id == story && *n == attempt => Some(event.clone()),
            _ => None,
        })
        .collect()
}
