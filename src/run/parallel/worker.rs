//! One story of a parallel run at work: its own branch
//! (`ralph/<change>.story-<id>`), its own worktree beside the run's, its
//! own state under `<run-dir>/workers/<id>/`, and an ordinary story loop
//! that works on that story alone. The run's loop starts it, hears its
//! events, and retires it when it ends: whatever it left uncommitted and
//! the tip of its branch are kept under the run's refs, its files join the
//! run's, and its worktree and branch go.

use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, watch};

use super::super::context::EventSink;
use super::super::context::Run;
use super::super::error::RunError;
use super::super::lifecycle::LoopEnd;
use super::super::run_settings::RunSettings;
use super::super::story_loop::StoryLoop;
use crate::events::{Record, now_ms};
use crate::git::{ChangeName, ObjectId, Repo, RunRefs, ref_key};
use crate::state::{RunDir, RunState, StoryRecord, WorkerRecord};
use crate::stories::Story;

/// A story's loop under way.
pub(super) struct Running {
    pub record: WorkerRecord,
    pub handle: tokio::task::JoinHandle<()>,
}

/// The change name a story's loop works under: it names its branch, its
/// refs and its worktree.
pub(super) fn worker_change(change: &ChangeName, story: &str) -> Result<ChangeName, RunError> {
    ChangeName::parse(&format!("{change}.story-{}", ref_key(story))).map_err(|err| {
        RunError::io(
            format!("name a branch for story {story}"),
            std::io::Error::other(err.to_string()),
        )
    })
}

/// The place of a story's worktree: beside the run's own.
fn worker_place(run_worktree: &Path, name: &ChangeName) -> PathBuf {
    let parent = run_worktree.parent().unwrap_or(run_worktree);
    parent.join(name.as_str())
}

/// What a story's loop needs from the run's.
pub(super) struct Start<'a> {
    pub repo: &'a Repo,
    pub change: &'a ChangeName,
    pub run_dir: &'a RunDir,
    pub state: &'a RunState,
    pub settings: &'a RunSettings,
    pub records: mpsc::UnboundedSender<Record>,
    pub stop: watch::Receiver<bool>,
    pub hints: crate::run::error::Hints,
}

/// What `story`'s worktree will be, beside the run's worktree at
/// `run_worktree`, from the run's tip `base`: recorded before it is made,
/// so that a crash at any moment leaves nothing a resume cannot find.
pub(super) fn plan(
    change: &ChangeName,
    run_worktree: &Path,
    run_dir: &RunDir,
    base: ObjectId,
    story: &Story,
) -> Result<WorkerRecord, RunError> {
    let name = worker_change(change, &story.id)?;
    Ok(WorkerRecord {
        story: story.id.clone(),
        branch: name.branch_ref(),
        base,
        linked: crate::git::LinkedWorktree {
            path: worker_place(run_worktree, &name),
            id: name.to_string(),
        },
        run_dir: run_dir.dir.join("workers").join(ref_key(&story.id)),
        ended: false,
    })
}

impl Start<'_> {
    /// Make the story's branch and worktree as `planned`, and start its
    /// loop.
    pub fn launch(
        self,
        planned: WorkerRecord,
        story: &Story,
        ended: mpsc::UnboundedSender<(String, LoopEnd)>,
    ) -> Result<Running, RunError> {
        let name = worker_change(self.change, &story.id)?;
        let base = planned.base;
        let path = planned.linked.path.clone();
        let reason = format!(
            "git-ralph run '{}' works on story {} here; 'git ralph abort {}' removes it",
            self.change, story.id, self.change
        );
        // Only a loop killed while it wrote the branch leaves its lock.
        self.repo
            .clear_stale_ref_lock(&name.branch_ref())
            .map_err(|err| RunError::git("clear a story's branch", err))?;
        let linked = self
            .repo
            .add_worktree_at(&path, &name.branch_ref(), base, &reason)?;
        let run_dir = RunDir {
            dir: planned.run_dir.clone(),
        };
        let record = WorkerRecord {
            linked: linked.clone(),
            ..planned
        };
        let worker_repo = self
            .repo
            .open_worktree(&linked)?
            .ok_or_else(|| super::super::beside::gone(&linked.path))?;
        // The run's state on the story's branch, with the story's attempts
        // so far, so that retries count across merges.
        let state = (self.state).for_worker(name.to_string(), name.branch_short(), &story.id, base);
        std::fs::create_dir_all(&run_dir.dir)
            .map_err(|err| RunError::io(format!("create {}", run_dir.dir.display()), err))?;
        if let Ok(learned) = std::fs::read(self.run_dir.learnings_path()) {
            let _ = std::fs::write(run_dir.learnings_path(), learned);
        }
        let source = super::super::sources::source_for(
            &worker_repo,
            self.change,
            state.settings(),
            super::super::sources::Begin::Resume,
        )?;
        let settings = self.settings.for_story(name, &story.id);
        let records = self.records;
        let sink: EventSink = std::sync::Arc::new(move |record: Record| {
            let _ = records.send(record);
        });
        let mut context = Run::new(
            worker_repo,
            source,
            run_dir,
            state,
            settings,
            sink,
            self.stop,
        )
        .map_err(|err| RunError::io("open the story's event log", err))?
        .with_hints(self.hints);
        // Its record is written as every loop's is, before the loop starts.
        context.save()?;
        let story_loop = StoryLoop::new(context);
        let id = story.id.clone();
        let handle = tokio::spawn(async move {
            let end = story_loop.run(false).await;
            let _ = ended.send((id, end));
        });
        Ok(Running { record, handle })
    }
}

/// What a story's loop recorded of its story, read from its own state.
pub(super) struct Recorded {
    /// Its record of the story, attempts and all.
    pub story: Option<StoryRecord>,
    /// What its attempts cost.
    pub totals: crate::state::Totals,
}

/// What a story's loop recorded, as its state file has it now.
pub(super) fn recorded(worker: &WorkerRecord) -> Recorded {
    let loaded = RunDir {
        dir: worker.run_dir.clone(),
    }
    .load()
    .ok();
    match loaded {
        Some(state) => Recorded {
            totals: state.totals().clone(),
            story: state
                .into_stories()
                .into_iter()
                .find(|record| record.id == worker.story),
        },
        None => Recorded {
            story: None,
            totals: Default::default(),
        },
    }
}

/// Retire a story's loop that has ended (or whose process died): keep
/// what it left, bring its files into the run's, remove its worktree and
/// branch. Returns where the tip of its branch is kept, when it had
/// moved.
pub(super) fn retire(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    worker: &WorkerRecord,
) -> Result<Option<String>, RunError> {
    let keep_base = RunRefs::of(change).story_kept(&worker.story, now_ms());
    // A worktree whose making was cut short holds nothing of the story.
    repo.undo_unfinished_worktree(&worker.linked)?;
    if let Some(inside) = repo.open_worktree(&worker.linked)? {
        let tip = inside.head().ok().and_then(|head| head.commit());
        let dirty = match tip {
            Some(tip) => {
                let (old, new) = inside
                    .checkpoint_tree_and_fingerprint(tip)
                    .map_err(|err| RunError::git("read a story's worktree", err))?;
                old != new
            }
            None => false,
        };
        if dirty {
            let mut inside = inside;
            inside
                .preserve(
                    &format!("{keep_base}-uncommitted"),
                    &format!(
                        "ralph({change}): what story {} left uncommitted",
                        worker.story
                    ),
                )
                .map_err(|err| RunError::git("keep a story's uncommitted work", err))?;
        }
    }
    // The story's loop has ended: a lock on its branch is a dead loop's.
    repo.clear_stale_ref_lock(&worker.branch)
        .map_err(|err| RunError::git("clear a story's branch", err))?;
    let tip = repo
        .resolve_ref(&worker.branch)
        .map_err(|err| RunError::git("read a story's branch", err))?;
    let mut kept_tip = None;
    if let Some(tip) = tip.filter(|tip| *tip != worker.base) {
        repo.keep_at(
            &keep_base,
            tip,
            &format!("ralph: keep the work of story {}", worker.story),
        )
        .map_err(|err| RunError::git("keep a story's branch", err))?;
        kept_tip = Some(keep_base.clone());
    }
    bring_files(run_dir, &worker.run_dir);
    repo.remove_worktree(&worker.linked)?;
    repo.drop_ref(&worker.branch)
        .map_err(|err| RunError::git("delete a story's branch", err))?;
    Ok(kept_tip)
}

/// The story loop's attempt files, receipts and learnings join the run's.
fn bring_files(run_dir: &RunDir, worker_dir: &Path) {
    let from = worker_dir.join("attempts");
    let to = run_dir.dir.join("attempts");
    if let Ok(entries) = std::fs::read_dir(&from) {
        let _ = std::fs::create_dir_all(&to);
        for entry in entries.flatten() {
            let _ = std::fs::rename(entry.path(), to.join(entry.file_name()));
        }
    }
    let worker = RunDir {
        dir: worker_dir.to_owned(),
    };
    if let Ok(receipts) = std::fs::read(worker.receipts_path()) {
        append(&run_dir.receipts_path(), &receipts);
    }
    let (before, after) = (
        std::fs::read(run_dir.learnings_path()).unwrap_or_default(),
        std::fs::read(worker.learnings_path()).unwrap_or_default(),
    );
    if after.len() > before.len() && after.starts_with(&before) {
        append(&run_dir.learnings_path(), &after[before.len()..]);
    }
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = file.write_all(bytes);
    }
}
