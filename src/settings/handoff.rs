//! What a hand-off is asked to do, as git config says it: where the kept
//! branch goes (`ralph.remote`, else the upstream remote of the branch the
//! run started from, else `origin`), and how its pull request is opened
//! (`ralph.prBase`, `ralph.prDraft`, `ralph.forge`). The command line may
//! override each; the hand-off itself (`run::ending::handoff`) reads no
//! config, it is given these values and asks [`Configured`] for the rest
//! (a remote's URL, whether the user chose an ssh command).

use super::Configured;
use crate::config::{self, ConfigError};

/// What to do once the run is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handoff {
    /// The remote to push to; `None`: the upstream remote of the branch the
    /// run started from, else `origin`.
    pub remote: Option<String>,
    /// Also open (or update) a pull request.
    pub review: Option<ReviewRequest>,
    /// Whose CLI opens it; `None`: told from the remote's URL.
    pub forge: Option<Forge>,
}

/// How to open the pull request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewRequest {
    pub draft: bool,
    /// The branch to merge into; `None`: the branch the run started from,
    /// else the forge's default branch.
    pub base: Option<String>,
}

/// Where the remote lives, which decides the CLI (`ralph.forge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forge {
    GitHub,
    GitLab,
}

impl Configured<'_> {
    /// The hand-off as git config sets it (`ralph.remote`, `ralph.prBase`,
    /// `ralph.prDraft`, `ralph.forge`), with a pull request or without.
    pub fn handoff(&self, with_review: bool) -> Result<Handoff, ConfigError> {
        let repo = self.repo();
        let trimmed = |key: &str| {
            repo.config_string(key)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let draft = config::boolean(repo, "ralph.prDraft")?.unwrap_or(false);
        let forge = match config::one_of(repo, "ralph.forge", &["github", "gitlab"])? {
            Some("gitlab") => Some(Forge::GitLab),
            Some(_) => Some(Forge::GitHub),
            None => None,
        };
        Ok(Handoff {
            forge,
            remote: trimmed("ralph.remote"),
            review: with_review.then(|| ReviewRequest {
                draft,
                base: trimmed("ralph.prBase"),
            }),
        })
    }

    /// `branch.<name>.remote`: the remote the branch `name` (its short
    /// name) pulls from; none for `.`, the repository itself.
    pub fn upstream_remote(&self, name: &str) -> Option<String> {
        self.repo()
            .config_string(&format!("branch.{name}.remote"))
            .map(|remote| remote.trim().to_owned())
            .filter(|remote| !remote.is_empty() && remote != ".")
    }

    /// The URL configured for `remote` (`remote.<name>.url`, else its
    /// `pushurl`), if it is a remote at all.
    pub fn remote_url(&self, remote: &str) -> Option<String> {
        let repo = self.repo();
        repo.config_string(&format!("remote.{remote}.url"))
            .or_else(|| repo.config_string(&format!("remote.{remote}.pushurl")))
    }

    /// Whether `remote` can be fetched from: a URL or path as it is, or
    /// the name of a remote this clone has (`remote.<name>.url`).
    pub fn can_fetch_from(&self, remote: &str) -> bool {
        let looks_like_url = remote.contains('/') || remote.contains(':');
        looks_like_url
            || self
                .repo()
                .config_string(&format!("remote.{remote}.url"))
                .is_some()
    }

    /// Whether git config names the user's own ssh command
    /// (`core.sshCommand`), which a push then leaves alone.
    pub fn own_ssh_command(&self) -> bool {
        self.repo().config_string("core.sshCommand").is_some()
    }
}
