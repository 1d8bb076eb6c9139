//! `git ralph plan`: the agent writes a change's stories, and git-ralph
//! holds them to the reader that will run them.
//!
//! Every run needs stories; an agent can write them, but a plan that reads
//! as no story, as one story of forty tasks, or with boxes the runner will
//! not see is otherwise found only when the run goes wrong. So the
//! configured agent runs in the user's worktree with a planning prompt of
//! its own ([`prompt`]); afterwards what it wrote is read with the reader
//! `git ralph start` will use ([`review`]), and sent back, in the reader's
//! or the validator's own words, until it is accepted or the tries are
//! spent, when what was written is kept. The agent may write only the
//! change's folder or the named file ([`target`]): everything else it
//! changes is undone and reported, as a run's attempt's would be
//! ([`contain`]). What each try cost is recorded under
//! `<git-dir>/ralph/plans/` ([`record`]); how the repository stood before
//! the plan is noted there too, so that a plan whose process was killed
//! is put back by the next one ([`cut_short`]).
//!
//! This module knows neither clap nor the terminal: the command layer
//! hands it a [`Request`], and it reports [`PlanEvent`]s and returns a
//! [`Planned`] or a [`PlanError`].

mod attempt;
mod brief;
mod contain;
pub mod cut_short;
mod error;
mod events;
mod prompt;
mod record;
pub mod review;
mod target;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::watch;

pub use brief::{Brief, BriefSource};
pub use error::PlanError;
pub use events::PlanEvent;
pub use record::{PlanRecord, PlanStatus};
pub use review::{Bounds, DEFAULT_MAX_TASKS, OpenUnit};
pub use target::{Format, Target};

use crate::agent::AgentSpec;
use crate::git::{ChangeName, Repo};
use crate::state::{Totals, now};
use crate::stories::openspec_cli::OpenSpecCommand;
use record::Record;

/// A plan asked for, its settings resolved.
#[derive(Debug, Clone)]
pub struct Request {
    pub change: ChangeName,
    pub format: Format,
    /// `--prd` or `--tasks` as typed, relative to `cwd`.
    pub file: Option<PathBuf>,
    pub cwd: PathBuf,
    /// What to build; `None` is allowed with `refine` alone.
    pub brief: Option<BriefSource>,
    /// Work on the plan that exists instead of refusing it.
    pub refine: bool,
    pub max_tasks: usize,
    pub max_retries: u32,
    pub agent: AgentSpec,
    pub agent_timeout: Duration,
    pub idle_timeout: Option<Duration>,
    pub command_timeout: Duration,
    pub openspec: OpenSpecCommand,
}

/// A plan that may begin: everything read and checked, nothing written.
pub struct Prepared {
    request: Request,
    target: Target,
    brief: Option<Brief>,
    bounds: Bounds,
    /// The plan's files as they were, for `--refine`.
    before: Vec<(String, Vec<u8>)>,
}

/// How a plan ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The reader accepted it.
    Accepted { stories: usize, open: usize },
    /// The tries were spent; what was written is kept, and the last
    /// findings say what is wrong with it.
    NotValid { findings: Vec<String> },
    /// The user stopped it; what was written is kept.
    Stopped,
}

/// A plan made, or given up on.
#[derive(Debug, Clone)]
pub struct Planned {
    pub outcome: Outcome,
    pub target: Target,
    pub attempts: u32,
    pub totals: Totals,
    /// The record's directory.
    pub record: PathBuf,
    /// Whether the plan's folder (or file) is there at the end: a plan
    /// the agent wrote nothing of leaves nothing to keep or refine.
    pub written: bool,
}

/// Check everything a plan needs before anything is written: the change's
/// name and place, that it does not exist (or, with `--refine`, that it
/// does), and the brief.
pub fn prepare(repo: &Repo, request: Request) -> Result<Prepared, PlanError> {
    let workdir = repo.workdir();
    let target = match (&request.file, request.format) {
        (Some(file), format) => Target::file(&request.change, format, workdir, &request.cwd, file)?,
        (None, _) => Target::openspec(&request.change),
    };
    let exists = target.exists(workdir);
    match (exists, request.refine) {
        (true, false) => {
            return Err(PlanError::Exists {
                target: target.shown(),
                change: request.change.to_string(),
            });
        }
        (false, true) => {
            return Err(PlanError::NothingToRefine {
                target: target.shown(),
            });
        }
        _ => {}
    }
    let brief = match &request.brief {
        Some(source) => Some(Brief::read(source, workdir, request.command_timeout)?),
        None if request.refine => None,
        None => return Err(PlanError::NoBrief),
    };
    let (before, done_before) = if request.refine {
        let files = target
            .files(workdir)
            .map_err(|err| PlanError::io(format!("read {}", target.shown()), err))?;
        let marks = target
            .source(workdir)
            .and_then(|source| source.load())
            .map(|stories| review::done_marks(&stories, target.format))
            .unwrap_or_default();
        (files, marks)
    } else {
        (Vec::new(), Vec::new())
    };
    let bounds = Bounds {
        max_tasks: request.max_tasks,
        done_before,
        openspec: request.openspec.clone(),
        command_timeout: request.command_timeout,
    };
    Ok(Prepared {
        request,
        target,
        brief,
        bounds,
        before,
    })
}

impl Prepared {
    /// Make the plan in `repo` on a runtime of its own, Ctrl-C and SIGTERM
    /// stopping it (the agent is ended, and what it wrote is kept).
    pub fn run(
        self,
        repo: Repo,
        on_event: &mut (dyn FnMut(PlanEvent) + Send),
    ) -> Result<Planned, PlanError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|err| PlanError::io("start the async runtime", err))?;
        let (stop_tx, stop) = watch::channel(false);
        runtime.block_on(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let listen =
                |kind| signal(kind).map_err(|err| PlanError::io("listen for signals", err));
            let (mut interrupt, mut terminate) = (
                listen(SignalKind::interrupt())?,
                listen(SignalKind::terminate())?,
            );
            tokio::spawn(async move {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
                let _ = stop_tx.send(true);
            });
            self.plan(repo, on_event, stop).await
        })
    }

    /// The tries, each judged, until one is accepted or they are spent.
    async fn plan(
        self,
        mut repo: Repo,
        on_event: &mut (dyn FnMut(PlanEvent) + Send),
        stop: watch::Receiver<bool>,
    ) -> Result<Planned, PlanError> {
        repo.set_scratch(&self.request.agent.scratch);
        let mut record = self.begin_record(&repo)?;
        cut_short::note(&mut repo, &record.dir, &self.request.change)?;
        let tries = self.request.max_retries.saturating_add(1);
        on_event(PlanEvent::Began {
            change: self.request.change.to_string(),
            target: self.target.shown(),
            refine: self.request.refine,
            agent: agent_label(&self.request.agent),
            tries,
            record: record.dir.display().to_string(),
        });
        let ended = self
            .tries(&mut repo, &mut record, tries, on_event, stop)
            .await;
        record.plan.status = match &ended {
            Ok(Outcome::Accepted { .. }) => PlanStatus::Accepted,
            Ok(Outcome::NotValid { .. }) => PlanStatus::NotValid,
            Ok(Outcome::Stopped) => PlanStatus::Stopped,
            Err(_) => PlanStatus::Error,
        };
        record.save()?;
        // A plan that could not put the repository back leaves what it
        // noted, for the next plan or `abort` to put it back from.
        if !matches!(
            ended,
            Err(PlanError::Git { .. } | PlanError::Io { .. } | PlanError::State(_))
        ) {
            cut_short::forget(&repo, &record.dir);
        }
        Ok(Planned {
            written: self.target.exists(repo.workdir()),
            outcome: ended?,
            target: self.target,
            attempts: record.plan.totals.attempts,
            totals: record.plan.totals.clone(),
            record: record.dir,
        })
    }

    async fn tries(
        &self,
        repo: &mut Repo,
        record: &mut Record,
        tries: u32,
        on_event: &mut (dyn FnMut(PlanEvent) + Send),
        stop: watch::Receiver<bool>,
    ) -> Result<Outcome, PlanError> {
        let mut findings: Vec<String> = Vec::new();
        for attempt in 1..=tries {
            if *stop.borrow() {
                return Ok(Outcome::Stopped);
            }
            on_event(PlanEvent::TryStarted { attempt, tries });
            let stopped = attempt::Try {
                prepared: self,
                attempt,
                tries,
                findings: &findings,
            }
            .run(repo, record, on_event, stop.clone())
            .await?;
            if stopped {
                return Ok(Outcome::Stopped);
            }
            let review = review::review(&self.target, repo.workdir(), &self.bounds).await;
            if review.accepted() {
                on_event(PlanEvent::Accepted {
                    attempt,
                    stories: review.stories,
                    open: review.open,
                    unit: review.unit,
                });
                return Ok(Outcome::Accepted {
                    stories: review.stories,
                    open: review.open,
                });
            }
            findings = review.findings;
            if let Some(last) = record.plan.attempts.last_mut() {
                last.findings = findings.clone();
            }
            record.save()?;
            on_event(PlanEvent::SentBack {
                attempt,
                findings: findings.clone(),
            });
        }
        Ok(Outcome::NotValid { findings })
    }

    /// The record of this plan, begun on disk, with the plan as it was
    /// before a refinement kept beside it.
    fn begin_record(&self, repo: &Repo) -> Result<Record, PlanError> {
        let mut record = Record::new(
            &repo.ralph_dir(),
            PlanRecord {
                version: 1,
                change: self.request.change.to_string(),
                target: self.target.shown(),
                refine: self.request.refine,
                agent: agent_label(&self.request.agent),
                status: PlanStatus::Planning,
                started_at: now(),
                updated_at: now(),
                attempts: Vec::new(),
                totals: Totals::default(),
            },
        );
        record.save()?;
        for (path, bytes) in &self.before {
            let kept = record.before_dir().join(path);
            write_file(&kept, bytes)?;
        }
        Ok(record)
    }
}

/// The agent as people name it: its preset, or its command.
fn agent_label(spec: &AgentSpec) -> String {
    match (spec.name.as_str(), spec.args.last()) {
        ("command", Some(command)) => format!("command {command}"),
        (name, _) => name.to_owned(),
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PlanError> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, bytes)
    };
    write().map_err(|err| PlanError::io(format!("write {}", path.display()), err))
}
