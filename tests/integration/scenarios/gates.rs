//! The one switch for failures known on `main` and being fixed elsewhere:
//! while a kind is listed in [`KNOWN_UNFIXED`], the generator does not
//! draw the steps or shapes that meet it (and the player skips a step that
//! would), so that the budget run stays green. When a fix lands, its line
//! is deleted here, and nothing else changes.
//!
//! `GIT_RALPH_SCENARIO_UNGATE=all` (or a comma-separated list of the names
//! below) lifts gates for one run, to see the generator find them.

/// A failure known on `main`, met by particular steps or shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// `abort` in place after a stop (or a keep) throws away what the user
    /// did meanwhile.
    AbortAfterStop,
    /// A submodule's worktree is neither snapshotted nor restored.
    Submodule,
    /// `finish --cleanup` and `abort` lose the skip-worktree bits of a
    /// sparse checkout.
    Sparse,
    /// A stop is not honoured while a `--check` runs.
    StopDuringCheck,
    /// The user's own `git gc` during an attempt is blamed on the agent.
    GcDuringAttempt,
    /// A resume in place commits the worktree of a run stopped meanwhile,
    /// and the version the user staged (the index differing from the
    /// worktree) is reachable no more.
    StagedWhileStopped,
    /// Two agents of `--parallel 2` clearing the stash at once: the
    /// user's stash is sometimes not given back.
    ParallelStashClear,
    /// A kill -9 at a random moment, then a resume or a finish: the record
    /// may lag the branch. The windows between a checkpoint commit and its
    /// record are closed (`lost_killed.rs`); one is left: a kill while the
    /// checkpoint holds `.git/index.lock` leaves the lock, the resume ends
    /// with exit 70 ("index.lock is held by another git process") before
    /// it takes the branch back to the record's checkpoint.
    RandomKill,
    /// A `--parallel 2` run whose agents plant hooks: `on_story_done` is
    /// sometimes not told of a story whose work is on the branch.
    ParallelHook,
    /// `abort` while the user's index holds conflicts (a `git stash pop`
    /// that conflicted) is refused instead of setting them aside.
    AbortConflicted,
    /// A story ticked by hand while a role pipeline is stopped: on resume
    /// the webhook is told fewer stories done than the branch holds.
    RolesTickByHand,
    /// A `plan` killed -9, then the user acts before the next `plan`: the
    /// next plan puts back everything since the killed one began, the
    /// user's act with it, and calls it the agent's ("moved
    /// refs/heads/main, which it must not touch; it is put back", the
    /// user's commit kept only at
    /// `refs/ralph/extra/plan/1/cut-short-refs/heads/main`). Shortest:
    /// `shape=plain plan-kill commit plan-refine`.
    ActAfterKilledPlan,
    /// Two starts at once, both refused after the lock (a dirty
    /// submodule): the lock's directory `.git/ralph/`, which did not exist
    /// before, is left behind, empty. Shortest:
    /// `shape=submodule start-twice`.
    RacedRefusalLeavesDir,
    /// A `--parallel 2` run whose agents plant a `post-checkout` hook:
    /// once in 150 sequences the hook was left in `.git/hooks` after the
    /// start ("after start: .git/hooks is not the user's: [added
    /// post-checkout]"), in `shape=detached edit:2 abort stash-pop
    /// add-story start/parallel/hook/keep gc
    /// start/worktree/succeeds/keep/live release`, which passed when
    /// replayed twice: a race between the two agents' attempts.
    ParallelHookLeft,
    /// A `--parallel` run stopped, then its resume killed -9 about a
    /// second in, then aborted: `status` and `log` call story 2 done at a
    /// checkpoint not on `refs/ralph/greet/aborted`, which holds story 1's
    /// work. Shortest: `shape=todo-crlf start/parallel/succeeds/keep/live
    /// kill kill9:1157 abort`.
    ParallelResumeKilled,
}

/// Every kind still unfixed on `main`. Delete a line when its fix lands.
pub const KNOWN_UNFIXED: &[Known] = &[];

/// Whether the steps and shapes that meet `known` are left out.
pub fn gated(known: Known) -> bool {
    if !KNOWN_UNFIXED.contains(&known) {
        return false;
    }
    let ungate = std::env::var("GIT_RALPH_SCENARIO_UNGATE").unwrap_or_default();
    let name = format!("{known:?}");
    !ungate
        .split(',')
        .any(|word| word.trim() == "all" || word.trim() == name)
}
