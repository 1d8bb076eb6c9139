//! Pages made from the files `status`, `log` and `show` read, with their
//! readers: the list of runs (`audit::list_all`), a run's report
//! (`state::Report`, the lock), its events, and an attempt's record,
//! prompt, checks, transcript and diff (`audit`). Nothing is kept but what
//! the run wrote; every page is read afresh. These block on files and git,
//! so the server calls them off its async threads.

use std::path::PathBuf;

use super::feed::RunFeed;
use super::{AttemptRef, Route, Site};
use crate::audit::{self, AttemptDetail, FoundRun, RunFiles, TrailAttempt};
use crate::events::{Event, Record};
use crate::state::{AttemptOutcome, AttemptRecord, Report, RunDir, StoryRecord, lock_holder};
use crate::ui::web::{self, AttemptView, Document, RunView};

/// How many of a run's latest milestones its pages read.
const MILESTONES: usize = 5000;
/// How much of an attempt's output its page holds at first.
pub const TRANSCRIPT_TAIL_BYTES: u64 = 256 << 10;

/// A page that is not there, and why.
#[derive(Debug)]
pub struct Missing(pub String);

impl From<audit::AuditError> for Missing {
    fn from(err: audit::AuditError) -> Self {
        Missing(err.to_string())
    }
}

fn document(
    site: &Site,
    title: &str,
    crumbs: &[(String, String)],
    feed: Route,
    main: &str,
) -> String {
    web::document(&Document {
        title,
        repo: &site.name,
        crumbs,
        feed: Some(feed.path()),
        main,
    })
}

/// The list's live part.
pub fn runs_main(site: &Site) -> String {
    let holder = lock_holder(&site.lock_path()).map(|(_, change)| change);
    let runs = audit::list_all(&site.ralph_dir, holder.as_deref());
    web::runs_main(&runs, crate::state::now())
}

pub fn runs_page(site: &Site) -> String {
    document(site, "Runs", &[], Route::RunsFeed, &runs_main(site))
}

/// The run a page names, live or in the history, as `log` finds it.
pub fn find(site: &Site, label: &str) -> Result<FoundRun, Missing> {
    Ok(audit::find_run(&site.ralph_dir, Some(label))?)
}

/// The run page's live part, from the run's state, the lock and its events.
pub fn run_main(feed: &RunFeed) -> String {
    let found = &feed.found;
    let state = match found.load() {
        Ok(state) => state,
        Err(err) => {
            return format!(
                "<h1>{}</h1><p class=\"bad\">{}</p>",
                web::escape(&found.label),
                web::escape(&err.to_string())
            );
        }
    };
    let holder = lock_holder(&feed.site().lock_path())
        .filter(|(_, change)| !found.history && change == state.change())
        .map(|(pid, _)| pid);
    let report = Report::new(&state, holder).with_learnings(&state, &found.dir.learnings_path());
    let milestones = feed.milestones(MILESTONES);
    web::run_main(&RunView {
        label: &found.label,
        history: found.history,
        report: &report,
        milestones: &milestones,
    })
}

pub fn run_page(feed: &RunFeed) -> String {
    let found = &feed.found;
    let crumbs = [(Route::Run(found.label.clone()).path(), found.label.clone())];
    document(
        feed.site(),
        &found.label,
        &crumbs,
        Route::RunFeed(found.label.clone()),
        &run_main(feed),
    )
}

/// An attempt where the run recorded it: in the run's state, or, for a
/// story at work in a parallel run, in that story's own state until it
/// ends, as `status` reads it.
struct Located {
    change: String,
    agent: String,
    story: StoryRecord,
    record: AttemptRecord,
    /// Where its prompt and output are.
    files: RunDir,
    /// The worktree it works in.
    workdir: PathBuf,
}

fn locate(feed: &RunFeed, at: &AttemptRef) -> Result<Located, Missing> {
    let state = feed.found.load()?;
    let missing = || {
        Missing(format!(
            "story '{}' has no attempt {}",
            at.story, at.attempt
        ))
    };
    let agent = audit::agent_name(&state);
    let pick = |stories: &[StoryRecord]| {
        let story = stories.iter().find(|story| story.id == at.story)?;
        let record = story.attempts.iter().find(|a| a.attempt == at.attempt)?;
        Some((story.clone(), record.clone()))
    };
    if let Some((story, record)) = pick(state.stories()) {
        let workdir = state
            .worktree()
            .as_ref()
            .filter(|worktree| !worktree.removed)
            .map_or_else(|| feed.site().workdir.clone(), |w| w.linked.path.clone());
        return Ok(Located {
            change: state.change().clone(),
            agent,
            story,
            record,
            files: feed.found.dir.clone(),
            workdir,
        });
    }
    let workers = state
        .parallel()
        .iter()
        .flat_map(|parallel| &parallel.workers);
    for worker in workers.filter(|worker| worker.story == at.story) {
        let files = RunDir {
            dir: worker.run_dir.clone(),
        };
        let Some((story, record)) = files.load().ok().and_then(|own| pick(own.stories())) else {
            continue;
        };
        return Ok(Located {
            change: state.change().clone(),
            agent,
            story,
            record,
            files,
            workdir: worker.linked.path.clone(),
        });
    }
    Err(missing())
}

/// Whether the run recorded this attempt.
pub fn attempt_exists(feed: &RunFeed, at: &AttemptRef) -> Result<(), Missing> {
    locate(feed, at).map(|_| ())
}

fn detail(located: &Located) -> AttemptDetail {
    let files = RunFiles::new(located.files.clone());
    let record = &located.record;
    AttemptDetail {
        change: located.change.clone(),
        story: located.story.id.clone(),
        title: located.story.title.clone(),
        record: TrailAttempt::from(record),
        prompt: files.prompt(record),
        diff: None,
        checks: (record.outcome != AttemptOutcome::Running)
            .then(|| files.checks(&located.story.id, record).ok())
            .flatten(),
    }
}

/// The run's milestones about this attempt.
fn milestones_of(feed: &RunFeed, at: &AttemptRef) -> Vec<Record> {
    feed.milestones(MILESTONES)
        .into_iter()
        .filter(|record| {
            matches!(&record.event, Event::SentBack { story_id, attempt, .. }
                if *story_id == at.story && *attempt == at.attempt)
        })
        .collect()
}

/// The attempt's head: how it went, what it was flagged for, its checks;
/// `None` when its record is still `last` (which is then brought up to
/// date), as its checks are read from the whole events log.
pub fn attempt_head(
    feed: &RunFeed,
    at: &AttemptRef,
    last: &mut Option<AttemptRecord>,
) -> Result<Option<String>, Missing> {
    let located = locate(feed, at)?;
    let running = located.record.outcome == AttemptOutcome::Running;
    if !running && last.as_ref() == Some(&located.record) {
        return Ok(None);
    }
    *last = Some(located.record.clone());
    let detail = detail(&located);
    let milestones = milestones_of(feed, at);
    Ok(Some(web::attempt_head(&AttemptView {
        at,
        detail: &detail,
        agent: &located.agent,
        asked: located.record.asked.as_deref(),
        milestones: &milestones,
    })))
}

/// The attempt's diff: the worktree now while it runs, else its work
/// against the checkpoint it started from.
pub fn attempt_diff(feed: &RunFeed, at: &AttemptRef) -> Result<String, Missing> {
    let located = locate(feed, at)?;
    let running = located.record.outcome == AttemptOutcome::Running;
    let diff = if running {
        feed.live_diff(&located.files, &located.workdir, &at.story, at.attempt)
    } else {
        crate::git::Repo::open_for_recovery(&feed.site().workdir)
            .ok()
            .and_then(|repo| {
                audit::attempt_patch(&repo, &located.record, crate::git::PatchFor::VIEW)
            })
    };
    Ok(web::diff_part(diff.as_deref(), running))
}

pub fn attempt_page(feed: &RunFeed, at: &AttemptRef) -> Result<String, Missing> {
    let located = locate(feed, at)?;
    let detail = detail(&located);
    let milestones = milestones_of(feed, at);
    let (_, _, events, skipped) = feed.follow_attempt(&at.story, at.attempt, TRANSCRIPT_TAIL_BYTES);
    let main = web::attempt_main(
        &AttemptView {
            at,
            detail: &detail,
            agent: &located.agent,
            asked: located.record.asked.as_deref(),
            milestones: &milestones,
        },
        &web::transcript_part(at, &events, skipped),
        &attempt_diff(feed, at)?,
    );
    let crumbs = [
        (Route::Run(at.run.clone()).path(), at.run.clone()),
        (
            Route::Attempt(at.clone()).path(),
            format!("story {} · #{}", at.story, at.attempt),
        ),
    ];
    Ok(document(
        feed.site(),
        &format!("{} · story {} · #{}", at.run, at.story, at.attempt),
        &crumbs,
        Route::AttemptFeed(at.clone()),
        &main,
    ))
}

/// The whole transcript as text, handed on in chunks to `send`, which
/// says whether anyone still takes them. As `show --transcript` prints it.
pub fn transcript_text(
    feed: &RunFeed,
    at: &AttemptRef,
    mut send: impl FnMut(String) -> bool,
) -> Result<(), Missing> {
    let located = locate(feed, at)?;
    let mut chunk = String::new();
    let mut open = true;
    let _ = RunFiles::new(feed.found.dir.clone()).each_transcript_event(
        &located.story.id,
        at.attempt,
        |event| {
            if !open {
                return;
            }
            for (_, line) in crate::ui::transcript::event_lines(&event) {
                chunk.push_str(&line);
                chunk.push('\n');
            }
            if chunk.len() > 64 << 10 {
                open = send(std::mem::take(&mut chunk));
            }
        },
    );
    if open && !chunk.is_empty() {
        send(chunk);
    }
    Ok(())
}
