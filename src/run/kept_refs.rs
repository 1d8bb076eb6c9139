//! The user's branches, tags and stash as they stood before the attempt
//! under way, kept on disk while it runs (`refs-before.json` in the run's
//! directory, and in each story's of a parallel run). The attempt puts
//! them back itself when its agent ends; a loop killed before that leaves
//! the file, and whoever takes the run up next (a resume, `finish`,
//! `abort`) puts them back from it, so that nothing an agent did to them
//! outlives a kill.

use std::path::PathBuf;

use crate::events::now_ms;
use crate::git::{ChangeName, GitFailure, RefSnapshot, Repo, RestoredRef};
use crate::state::RunDir;

/// Put back what the snapshots a killed loop left recorded, the newest
/// first so that the oldest has the last word, and remove them. What an
/// agent left on a ref is kept under the run's refs.
pub(crate) fn put_back(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
) -> Result<Vec<RestoredRef>, GitFailure> {
    let mut kept = left_behind(run_dir);
    kept.sort_by_key(|(_, modified)| std::cmp::Reverse(*modified));
    // The run moves its own branches; so does a story of a parallel run.
    let run = change.branch_ref();
    let except = match run.split_once(".story-") {
        Some((run, _)) => vec![run.to_owned(), format!("{run}.story-*")],
        None => vec![run.clone(), format!("{run}.story-*")],
    };
    let mut restored = Vec::new();
    for (path, _) in kept {
        let before = std::fs::read(&path)
            .ok()
            .and_then(|bytes| RefSnapshot::from_json(&bytes));
        if let Some(before) = before {
            let keep = crate::git::RunRefs::of(change).interrupted_refs(now_ms());
            restored.extend(repo.restore_user_refs(&before, &except, &keep)?);
        }
        let _ = std::fs::remove_file(&path);
    }
    Ok(restored)
}

/// `own`, taken before an attempt at a story of a parallel run, under the
/// oldest snapshot another story's attempt under way keeps: agents share
/// the user's branches, tags and stash, so an attempt that began while
/// another agent had already cleared the stash must put back what that
/// agent took too, or a clear made after the other attempt put the stash
/// back would lose it. Outside a parallel run, `own` as it is. A snapshot
/// an earlier loop left (killed mid-attempt) is not one under way: only
/// those written since this loop's first attempt began count.
pub(crate) fn under_way_beside(run_dir: &RunDir, own: RefSnapshot) -> RefSnapshot {
    static FIRST_ATTEMPT: std::sync::OnceLock<std::time::SystemTime> = std::sync::OnceLock::new();
    // File times may lag the clock by a tick of the kernel's.
    let since = *FIRST_ATTEMPT
        .get_or_init(|| std::time::SystemTime::now() - std::time::Duration::from_millis(50));
    let Some(workers) = run_dir
        .dir
        .parent()
        .filter(|parent| parent.file_name().is_some_and(|name| name == "workers"))
    else {
        return own;
    };
    let Ok(entries) = std::fs::read_dir(workers) else {
        return own;
    };
    let oldest = entries
        .flatten()
        .map(|entry| RunDir { dir: entry.path() })
        .filter(|sibling| sibling.dir != run_dir.dir)
        .filter_map(|sibling| {
            let path = sibling.refs_before_path();
            let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
            if modified < since {
                return None;
            }
            let kept = RefSnapshot::from_json(&std::fs::read(&path).ok()?)?;
            Some((modified, kept))
        })
        .min_by_key(|(modified, _)| *modified);
    match oldest {
        Some((_, earlier)) => own.under(earlier),
        None => own,
    }
}

/// The snapshots left in the run's directory and its stories', with when
/// each was written.
fn left_behind(run_dir: &RunDir) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut dirs = vec![run_dir.dir.clone()];
    if let Ok(workers) = std::fs::read_dir(run_dir.dir.join("workers")) {
        dirs.extend(workers.flatten().map(|entry| entry.path()));
    }
    dirs.into_iter()
        .map(|dir| RunDir { dir }.refs_before_path())
        .filter_map(|path| {
            let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
            Some((path, modified))
        })
        .collect()
}

/// What the agent did to a ref of the user's, and what was done about it:
/// "moved refs/heads/main, which it must not touch; it is put back".
pub(crate) fn words(moved: &RestoredRef) -> String {
    if let Some(stash) = &moved.stash {
        let mut said = match stash.lost {
            0 => "stashed on top of your stash".to_owned(),
            n => format!(
                "took {n} entr{} off your stash, which it must not touch; {} put back",
                if n == 1 { "y" } else { "ies" },
                if n == 1 { "it is" } else { "they are" }
            ),
        };
        if stash.added > 0 && stash.lost > 0 {
            said.push_str(&format!(
                ", and what it stashed ({}) stays on top",
                stash.added
            ));
        } else if stash.added > 0 {
            said.push_str(&format!(" ({}); it stays there", stash.added));
        }
        return said;
    }
    let what = match (moved.was, moved.found) {
        (Some(_), Some(_)) => "moved",
        (Some(_), None) => "deleted",
        (None, _) => "created",
    };
    let kept = moved
        .kept_at
        .as_ref()
        .map(|at| format!("; what it held is kept at {at}"))
        .unwrap_or_default();
    format!(
        "{what} {}, which it must not touch; it is put back{kept}",
        moved.name
    )
}
