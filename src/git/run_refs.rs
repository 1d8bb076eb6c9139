//! The refs a run keeps under `refs/ralph/<change>/`, named in one place:
//! a failed attempt's work, what an agent left on a ref it must not move,
//! commits found where HEAD should not have been, work set aside after an
//! interruption, a merge that failed its checks, a story's branch tip.
//! Everything else asks this module for a name instead of formatting one,
//! so `log`, `show`, a resume and an archive all agree on where things are.

use super::name::{ChangeName, ref_component};

/// The ref names of one run, or of one story of a parallel run (whose refs
/// live in the run's namespace, under `stories/<id>/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRefs {
    namespace: String,
}

impl RunRefs {
    /// The refs of the run of `change`.
    pub fn of(change: &ChangeName) -> RunRefs {
        RunRefs {
            namespace: change.ref_namespace(),
        }
    }

    /// The refs of `story` of the parallel run of `run`.
    pub fn of_story(run: &ChangeName, story: &str) -> RunRefs {
        RunRefs {
            namespace: format!("{}/stories/{}", run.ref_namespace(), ref_key(story)),
        }
    }

    /// `refs/ralph/<change>` (or a story's place in it).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The work of a failed attempt: `…/attempts/<story>/<n>`.
    pub fn attempt(&self, story: &str, attempt: u32) -> String {
        format!("{}/attempts/{}/{attempt}", self.namespace, ref_key(story))
    }

    /// Where what an attempt's agent left on the user's refs is kept:
    /// `…/attempts/<story>/<n>-refs/<ref without refs/>`.
    pub fn attempt_refs(&self, story: &str, attempt: u32) -> String {
        format!("{}-refs", self.attempt(story, attempt))
    }

    /// Commits found where HEAD should not have been, at `stamp` (ms).
    pub fn strays(&self, stamp: u64) -> String {
        format!("{}/strays/{stamp}", self.namespace)
    }

    /// Work set aside after an interruption (a bug, a kill), at `stamp`.
    pub fn interrupted(&self, stamp: u64) -> String {
        format!("{}/interrupted/{stamp}", self.namespace)
    }

    /// What an agent of a killed loop left on the user's refs.
    pub fn interrupted_refs(&self, stamp: u64) -> String {
        format!("{}-refs", self.interrupted(stamp))
    }

    /// Work left by an agent that could not work at all.
    pub fn setup_failure(&self, stamp: u64) -> String {
        format!("{}/setup-failure/{stamp}", self.namespace)
    }

    /// A story merged onto the run's branch whose checks failed there.
    pub fn merge(&self, story: &str, stamp: u64) -> String {
        format!("{}/merges/{}/{stamp}", self.namespace, ref_key(story))
    }

    /// A merge cut short by a crash.
    pub fn merge_interrupted(&self, stamp: u64) -> String {
        format!("{}/merges/interrupted/{stamp}", self.namespace)
    }

    /// Where a story's branch tip and what it left are kept when its
    /// worktree is retired: `…/stories/<story>/<stamp>`.
    pub fn story_kept(&self, story: &str, stamp: u64) -> String {
        format!("{}/stories/{}/{stamp}", self.namespace, ref_key(story))
    }

    /// What a role that may not edit changed in the pipeline's work, undone.
    pub fn pipeline_changes(&self, story: &str, stamp: u64) -> String {
        format!(
            "{}/pipeline/{}/changes-{stamp}",
            self.namespace,
            ref_key(story)
        )
    }

    /// Where an earlier run's refs go when the change is run again.
    pub fn history(&self, id: &str) -> String {
        format!("{}/history/{id}", self.namespace)
    }
}

/// Story ids come from files the agent edits; make them safe as one ref and
/// path component.
pub fn ref_key(id: &str) -> String {
    if ref_component(id).is_some() {
        return id.to_owned();
    }
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches('-').to_owned();
    if cleaned.is_empty() {
        "story".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn story_ids_become_safe_ref_components() {
        assert_eq!(ref_key("1"), "1");
        assert_eq!(ref_key("US-001"), "US-001");
        assert_eq!(ref_key("../x y"), "x-y");
        assert_eq!(ref_key("::"), "story");
    }

    #[test]
    fn a_story_of_a_parallel_run_keeps_its_refs_in_the_runs_namespace() {
        let change = ChangeName::parse("greet").unwrap();
        let run = RunRefs::of(&change);
        assert_eq!(run.attempt("1", 2), "refs/ralph/greet/attempts/1/2");
        assert_eq!(
            run.attempt_refs("1", 2),
            "refs/ralph/greet/attempts/1/2-refs"
        );
        let story = RunRefs::of_story(&change, "a b");
        assert_eq!(
            story.attempt("a b", 1),
            "refs/ralph/greet/stories/a-b/attempts/a-b/1"
        );
        assert_eq!(run.story_kept("a b", 7), "refs/ralph/greet/stories/a-b/7");
    }
}
