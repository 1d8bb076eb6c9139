//! Files an agent keeps for itself in the worktree (Aider's chat history
//! and tag cache, for example): they are not the story's work, so a
//! checkpoint, a preserved attempt and the no-progress fingerprint leave
//! them out, and a revert neither deletes nor restores them. An untracked
//! one stays untracked; a tracked one keeps, in every commit, the content
//! it had before the run, while the worktree keeps whatever the agent made
//! of it.
//!
//! Whoever opens the repository says which files those are: the loop and
//! finish do, for the agent the run uses. Beginning a run takes the user's
//! worktree as it is, and abort restores it exactly, scratch files included.

use gix::bstr::{BStr, ByteSlice};

use super::open::Repo;
use super::repo_state::Scratch;

impl Scratch {
    /// The items of a status run, the scratch files left out; `what` says
    /// what the status compared, for its errors.
    pub(crate) fn leave_out<E>(
        &self,
        status: impl Iterator<Item = Result<gix::status::index_worktree::Item, E>>,
        what: &str,
    ) -> Result<Vec<gix::status::index_worktree::Item>, super::error::GitFailure>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    {
        use super::error::Context;
        let mut items = Vec::new();
        for item in status {
            let item = item.ctx(|| format!("could not compare {what}"))?;
            if !self.holds(item.rela_path()) {
                items.push(item);
            }
        }
        Ok(items)
    }

    /// Whether `path` (relative to the worktree, `/`-separated) is one of
    /// the scratch files or lies in one of the scratch directories.
    pub(crate) fn holds(&self, path: &BStr) -> bool {
        if self.names.is_empty() {
            return false;
        }
        let top = path.split_str("/").next().unwrap_or_default();
        self.names.iter().any(|name| match name.strip_suffix('*') {
            Some(prefix) => top.starts_with(prefix.as_bytes()),
            None => top == name.as_bytes(),
        })
    }
}

impl Repo {
    /// [`Repo::set_scratch`], for a repository being handed over.
    pub fn with_scratch<S: AsRef<str>>(mut self, names: &[S]) -> Repo {
        self.set_scratch(names);
        self
    }

    /// From now on, leave the agent's own files `names` out of checkpoints,
    /// preserved attempts and fingerprints, and alone on revert.
    pub fn set_scratch<S: AsRef<str>>(&mut self, names: &[S]) {
        self.scratch = Scratch {
            names: names
                .iter()
                .map(|name| name.as_ref().trim_matches('/').to_owned())
                .filter(|name| !name.is_empty() && name != "*")
                .collect(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(names: &[&str]) -> Scratch {
        Scratch {
            names: names.iter().map(|name| (*name).to_owned()).collect(),
        }
    }

    #[test]
    fn names_match_at_the_top_of_the_worktree_with_what_they_hold() {
        let scratch = scratch(&[".aider.chat.history.md", ".aider.tags.cache.v*"]);
        for path in [
            ".aider.chat.history.md",
            ".aider.tags.cache.v4/cache.db",
            ".aider.tags.cache.v3",
        ] {
            assert!(scratch.holds(path.into()), "{path}");
        }
        for path in [
            "src/.aider.chat.history.md",
            ".aider.chat.history.md.bak",
            ".aider.conf.yml",
            ".aider.tags.cache",
            "README.md",
        ] {
            assert!(!scratch.holds(path.into()), "{path}");
        }
        assert!(!Scratch::default().holds("anything".into()));
    }
}
