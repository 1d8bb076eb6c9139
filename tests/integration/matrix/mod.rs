//! Issue 33: where features meet. Every mode of a run (in the user's
//! worktree, `--worktree`, `--parallel 2`, `--roles coder,reviewer`,
//! `--prompt`) with every ending (keep, cleanup, push, a pull request,
//! abort, out of retries, a stopping hook, Ctrl-C, kill -9) and every fault
//! of an agent (a cleared or dropped stash, a planted hook, a commit of its
//! own, a moved `main`, a rewound `ralph/<change>`), one test per cell,
//! through the real binary.
//!
//! Each cell is judged by git (branches, worktrees, refs, stashes, hooks,
//! the user's files byte for byte, `git fsck --strict`) and by one oracle,
//! [`oracle::assert_record_agrees_with_branch`]: a story is shown done by
//! `status`, `status --json`, `log`, the events, the `on_story_done` hook,
//! the webhook and the pull request's description if and only if its work
//! (`story-<id>.txt`, written by its agent) is on `ralph/<change>`, and the
//! hook and the webhook are told only once it is there. A combination that
//! cannot be is refused before anything is written: those refusals are
//! cells too ([`refusals`]).
//!
//! A cell reports every disagreement it saw, not only the first. Run one
//! mode with `cargo test --test integration matrix::parallel::`, one
//! ending across modes with `cargo test --test integration
//! ::stash_clear`. The whole matrix takes about 65 CPU-seconds.

mod endings;
pub mod oracle;
mod refusals;
pub mod world;

/// Where and how the run works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In the user's own worktree (the default).
    Here,
    /// `--worktree`: in a worktree of its own, beside the user's.
    Worktree,
    /// `--parallel 2`: independent stories at once, each in its worktree.
    Parallel,
    /// `--roles coder,reviewer`: each story through a coder and a reviewer.
    Roles,
    /// `--prompt`: one prompt repeated until the contract passes.
    Prompt,
}

/// How the run ends, or what its agent does wrong on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Every story done, `--on-finish keep`.
    Keep,
    /// Every story done, `--on-finish cleanup`.
    Cleanup,
    /// Every story done, `--on-finish push` to a bare remote.
    OnFinishPush,
    /// Every story done, then `finish --push`.
    FinishPush,
    /// Every story done, then `finish --pr` through a scripted `gh`.
    FinishPr,
    /// `abort` while an agent is at work.
    AbortLive,
    /// `abort` of a run that stopped out of retries.
    AbortStopped,
    /// Out of retries (`--max-retries 0`), then `start --max-retries 2`.
    OutOfRetries,
    /// `on_story_done` fails with `on_error = "stop"`, then resume.
    HookStop,
    /// SIGINT while an agent is at work, then resume.
    CtrlC,
    /// kill -9 of the loop while an agent is at work, then resume.
    Kill9,
    /// An agent runs `git stash clear`.
    StashClear,
    /// An agent runs `git stash drop`.
    StashDrop,
    /// An agent plants an executable `.git/hooks/post-checkout`.
    PlantHook,
    /// An agent commits its work itself.
    AgentCommits,
    /// An agent moves `main` to its own commit.
    MovesMain,
    /// The last story's agent rewinds `ralph/<change>` by two commits.
    Rewind,
}

impl Ending {
    /// The endings that push, for which the project has a bare `origin`.
    pub fn hands_off(self) -> bool {
        matches!(
            self,
            Ending::OnFinishPush | Ending::FinishPush | Ending::FinishPr
        )
    }
}

impl Mode {
    /// The stories of the run: prompt mode has one, named `1`.
    pub fn stories(self) -> &'static [&'static str] {
        match self {
            Mode::Prompt => &["1"],
            _ => &["1", "2", "3"],
        }
    }

    /// The story whose agent misbehaves, stops or is stopped.
    pub fn faulty(self) -> &'static str {
        match self {
            Mode::Prompt => "1",
            _ => "2",
        }
    }

    /// Script lines that do story `id` properly: its file, its boxes, the
    /// promise its agent owes.
    pub fn does(self, id: &str) -> String {
        let write = format!("write story-{id}.txt work of story {id}\\n\n");
        match self {
            Mode::Prompt => format!("{write}promise COMPLETE\n"),
            Mode::Roles => format!("{write}tick-story\npromise IMPLEMENTATION_COMPLETE\n"),
            _ => format!("{write}tick-story\npromise COMPLETE\n"),
        }
    }

    /// A script: `special` sections (header, lines) first, then every
    /// story done at once by the sections no special one replaces.
    pub fn script(self, special: &[(String, String)]) -> String {
        let mut text: String = special
            .iter()
            .map(|(header, lines)| format!("{header}\n{lines}"))
            .collect();
        for id in self.stories() {
            let header = format!("[story={id}]");
            if !special.iter().any(|(taken, _)| *taken == header) {
                text.push_str(&format!("{header}\n{}", self.does(id)));
            }
        }
        text
    }
}

/// One cell: a fresh project, the ending played in the mode, every
/// finding reported at once.
fn cell(mode: Mode, ending: Ending) {
    let mut world = world::World::new(mode, ending);
    endings::play(&mut world);
    world.finish();
}

/// One `#[test]` per ending, for the mode `$mode`.
macro_rules! endings {
    ($mode:expr) => {
        use super::{Ending, Mode, cell};

        #[test]
        fn keep() {
            cell($mode, Ending::Keep)
        }
        #[test]
        fn cleanup() {
            cell($mode, Ending::Cleanup)
        }
        #[test]
        fn on_finish_push() {
            cell($mode, Ending::OnFinishPush)
        }
        #[test]
        fn finish_push() {
            cell($mode, Ending::FinishPush)
        }
        #[test]
        fn finish_pr() {
            cell($mode, Ending::FinishPr)
        }
        #[test]
        fn abort_live() {
            cell($mode, Ending::AbortLive)
        }
        #[test]
        fn abort_stopped() {
            cell($mode, Ending::AbortStopped)
        }
        #[test]
        fn out_of_retries_then_resume() {
            cell($mode, Ending::OutOfRetries)
        }
        #[test]
        fn hook_stop_then_resume() {
            cell($mode, Ending::HookStop)
        }
        #[test]
        fn ctrl_c_then_resume() {
            cell($mode, Ending::CtrlC)
        }
        #[test]
        fn kill_9_then_resume() {
            cell($mode, Ending::Kill9)
        }
        #[test]
        fn stash_clear() {
            cell($mode, Ending::StashClear)
        }
        #[test]
        fn stash_drop() {
            cell($mode, Ending::StashDrop)
        }
        #[test]
        fn plant_hook() {
            cell($mode, Ending::PlantHook)
        }
        #[test]
        fn agent_commits() {
            cell($mode, Ending::AgentCommits)
        }
        #[test]
        fn moves_main() {
            cell($mode, Ending::MovesMain)
        }
        #[test]
        fn rewind() {
            cell($mode, Ending::Rewind)
        }
    };
}

mod here {
    endings!(Mode::Here);
}

mod worktree {
    endings!(Mode::Worktree);
}

mod parallel {
    endings!(Mode::Parallel);
}

mod roles {
    endings!(Mode::Roles);
}

mod prompt {
    endings!(Mode::Prompt);
}
