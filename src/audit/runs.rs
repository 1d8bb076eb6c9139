//! Finding runs: the live one of each change under `<git-dir>/ralph/<change>`
//! and the finished or aborted ones a new start moved to
//! `<git-dir>/ralph/history/<change>-<unix time>`.

use std::path::Path;

use serde::Serialize;

use super::{AuditError, FoundRun};
use crate::state::{RunDir, RunStatus, StopReason, list_runs};

/// One run, as the selection screen lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub label: String,
    pub change: String,
    /// As a reader should see it ([`RunStatus::seen`]).
    pub state: RunStatus,
    pub reason: Option<StopReason>,
    pub stories_done: usize,
    pub stories_total: usize,
    pub history: bool,
    /// When the run last moved, in seconds since the epoch.
    pub updated_at: u64,
}

/// The history runs of `change`, oldest first, as (unix time, dir name).
fn history_of(ralph_dir: &Path, change: &str) -> Vec<(u64, String)> {
    let mut found: Vec<(u64, String)> = list_runs(&ralph_dir.join("history"))
        .into_iter()
        .filter_map(|name| {
            let (base, stamp) = name.rsplit_once('-')?;
            (base == change).then(|| Some((stamp.parse().ok()?, name.clone())))?
        })
        .collect();
    found.sort();
    found
}

/// The run `named` (a change, or `history/<dir>`), or the only one there is.
/// A change with no live run falls back to its latest run in the history.
pub fn find_run(ralph_dir: &Path, named: Option<&str>) -> Result<FoundRun, AuditError> {
    let live = |name: &str| FoundRun {
        dir: RunDir::new(ralph_dir, name),
        label: name.to_owned(),
        history: false,
    };
    let old = |name: &str| FoundRun {
        dir: RunDir::new(&ralph_dir.join("history"), name),
        label: format!("history/{name}"),
        history: true,
    };
    match named {
        Some(name) => {
            if let Some(dir) = name.strip_prefix("history/") {
                let found = old(dir);
                return if found.dir.exists() && !dir.contains('/') {
                    Ok(found)
                } else {
                    Err(AuditError::NoSuchRun(name.to_owned()))
                };
            }
            if name.contains('/') || name.starts_with('.') {
                return Err(AuditError::NoSuchRun(name.to_owned()));
            }
            let found = live(name);
            if found.dir.exists() {
                return Ok(found);
            }
            history_of(ralph_dir, name)
                .pop()
                .map(|(_, dir)| old(&dir))
                .ok_or_else(|| AuditError::NoSuchRun(name.to_owned()))
        }
        None => match list_runs(ralph_dir).as_slice() {
            [only] => Ok(live(only)),
            [] => {
                let mut history: Vec<String> = list_runs(&ralph_dir.join("history"));
                history.sort_by_key(|name| {
                    name.rsplit_once('-')
                        .and_then(|(_, stamp)| stamp.parse::<u64>().ok())
                });
                history.pop().map(|dir| old(&dir)).ok_or(AuditError::NoRun)
            }
            many => Err(AuditError::Ambiguous(many.to_vec())),
        },
    }
}

/// Every run of the repository: live ones first, then the history, newest
/// first. A run whose state cannot be read is left out.
pub fn list_all(ralph_dir: &Path, lock_holder: Option<&str>) -> Vec<RunSummary> {
    let summary = |found: FoundRun, change_alive: bool| {
        let state = found.load().ok()?;
        Some(RunSummary {
            label: found.label,
            change: state.change().clone(),
            state: state.status().seen(change_alive),
            reason: state.reason(),
            stories_done: state.stories_done(),
            stories_total: state.stories().len(),
            history: found.history,
            updated_at: state.updated_at(),
        })
    };
    let mut runs: Vec<RunSummary> = list_runs(ralph_dir)
        .into_iter()
        .filter_map(|name| {
            let alive = lock_holder == Some(name.as_str());
            summary(
                FoundRun {
                    dir: RunDir::new(ralph_dir, &name),
                    label: name.clone(),
                    history: false,
                },
                alive,
            )
        })
        .collect();
    let mut history = list_runs(&ralph_dir.join("history"));
    history.sort_by_key(|name| {
        std::cmp::Reverse(
            name.rsplit_once('-')
                .and_then(|(_, stamp)| stamp.parse::<u64>().ok()),
        )
    });
    runs.extend(history.into_iter().filter_map(|name| {
        summary(
            FoundRun {
                dir: RunDir::new(&ralph_dir.join("history"), &name),
                label: format!("history/{name}"),
                history: true,
            },
            false,
        )
    }));
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("state.json"), "{}").unwrap();
    }

    #[test]
    fn a_change_without_a_live_run_falls_back_to_its_latest_history_run() {
        let tmp = tempfile::tempdir().unwrap();
        let ralph = tmp.path();
        run(&ralph.join("history/greet-100"));
        run(&ralph.join("history/greet-900"));
        run(&ralph.join("history/greet-2-500"));
        let found = find_run(ralph, Some("greet")).unwrap();
        assert_eq!(found.label, "history/greet-900");
        assert!(found.history);
        assert_eq!(
            find_run(ralph, Some("history/greet-100")).unwrap().label,
            "history/greet-100"
        );
        assert_eq!(find_run(ralph, None).unwrap().label, "history/greet-900");

        run(&ralph.join("greet"));
        let found = find_run(ralph, Some("greet")).unwrap();
        assert_eq!(found.label, "greet", "the live run comes first");
        assert!(!found.history);
        assert!(matches!(
            find_run(ralph, Some("other")),
            Err(AuditError::NoSuchRun(_))
        ));
        assert!(matches!(
            find_run(ralph, Some("history/../greet")),
            Err(AuditError::NoSuchRun(_))
        ));
        run(&ralph.join("other"));
        assert!(matches!(
            find_run(ralph, None),
            Err(AuditError::Ambiguous(_))
        ));
    }
}
