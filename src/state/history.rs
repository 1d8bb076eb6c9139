//! A run moved to history: when a change is run again, the earlier run's
//! files go to `<git-dir>/ralph/history/<id>/` and its refs from
//! `refs/ralph/<change>/` to `refs/ralph/<change>/history/<id>/`, so the
//! names its record holds must move with them. The archive records the new
//! names; a run archived by an earlier release, which kept the old ones,
//! has them mapped when it is read, so every reader (log, show, status,
//! watch) names the refs where they are now. Mapping a record that already
//! names them so changes nothing.

use super::{RunDir, RunState};
use crate::git::{ChangeName, RunRefs};

/// The directory of the history, under `<git-dir>/ralph/`.
pub const HISTORY_DIR: &str = "history";

impl RunDir {
    /// The id of a run kept in history (`<change>-<unix time>`, the name of
    /// its directory under `<git-dir>/ralph/history/`); `None` for a live
    /// run.
    pub fn history_id(&self) -> Option<&str> {
        let parent = self.dir.parent()?;
        (parent.file_name()? == HISTORY_DIR)
            .then(|| self.dir.file_name()?.to_str())
            .flatten()
    }
}

impl RunState {
    /// Name every ref of this run's record as the history `id` holds it.
    pub fn name_refs_in_history(&mut self, id: &str) {
        let change = self.change.clone();
        let moved = |text: &mut String| *text = refs_in_history(text, &change, id);
        for story in &mut self.stories {
            for attempt in &mut story.attempts {
                attempt.preserved.as_mut().map(moved);
                attempt.reason.as_mut().map(moved);
            }
        }
        self.last_failure.as_mut().map(moved);
    }
}

/// `text` with each ref name of `change`'s run that is not yet in the
/// history named as the history `id` holds it.
pub fn refs_in_history(text: &str, change: &str, id: &str) -> String {
    let Ok(change) = ChangeName::parse(change) else {
        return text.to_owned();
    };
    let refs = RunRefs::of(&change);
    let namespace = format!("{}/", refs.namespace());
    if !text.contains(&namespace) {
        return text.to_owned();
    }
    let moved = Moved {
        namespace: &namespace,
        history: &refs.history(""),
        target: &format!("{}/", refs.history(id)),
    };
    moved.apply(text)
}

/// Where a run's refs went: every name under `namespace` (ending in `/`)
/// but those already under `history` moves under `target`.
struct Moved<'a> {
    namespace: &'a str,
    history: &'a str,
    target: &'a str,
}

impl Moved<'_> {
    fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(self.namespace) {
            let (before, from) = rest.split_at(at);
            out.push_str(before);
            if let Some(after) = from.strip_prefix(self.history) {
                out.push_str(self.history);
                rest = after;
            } else {
                out.push_str(self.target);
                rest = &from[self.namespace.len()..];
            }
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn names_under_the_namespace_move_into_the_history_once() {
        assert_eq!(
            refs_in_history("refs/ralph/greet/attempts/1/1", "greet", "greet-9"),
            "refs/ralph/greet/history/greet-9/attempts/1/1"
        );
        let moved = "refs/ralph/greet/history/greet-9/attempts/1/1";
        assert_eq!(refs_in_history(moved, "greet", "greet-9"), moved);
        // An earlier history of the same change stays where it is.
        let older = "refs/ralph/greet/history/greet-1/attempts/2/1";
        assert_eq!(refs_in_history(older, "greet", "greet-9"), older);
        assert_eq!(
            refs_in_history(
                "kept at refs/ralph/greet/attempts/1/1-refs and refs/ralph/greet-two/x",
                "greet",
                "greet-9"
            ),
            "kept at refs/ralph/greet/history/greet-9/attempts/1/1-refs and refs/ralph/greet-two/x"
        );
    }

    #[test]
    fn a_run_dir_knows_whether_it_is_in_the_history() {
        let live = RunDir::new(Path::new("/r/.git/ralph"), "greet");
        assert_eq!(live.history_id(), None);
        let old = RunDir::new(Path::new("/r/.git/ralph/history"), "greet-9");
        assert_eq!(old.history_id(), Some("greet-9"));
    }
}
