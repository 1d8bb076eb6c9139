//! What git config says of a run beyond the flags its state records: each
//! preset's arguments (`ralph.<preset>.args`), where a new run works
//! (`ralph.worktree`), the user's own checks, hooks and webhook, and the
//! hand-off's remote and pull request (`handoff.rs`). The run
//! reads them through [`Configured`], here, and nowhere else; each is read
//! when it is asked for, so a key a run does not use (the worktree's place
//! on resume, say) cannot refuse it.

use std::collections::BTreeMap;

use super::SettingsError;
use crate::agent::{AgentSpec, PresetError, presets};
use crate::config;
pub use crate::config::WorktreeChoice;
use crate::git::Repo;

/// The `ralph.*` git config of one repository, read on demand.
#[derive(Clone, Copy)]
pub struct Configured<'r> {
    repo: &'r Repo,
}

impl<'r> Configured<'r> {
    /// The git config of `repo`.
    pub fn of(repo: &'r Repo) -> Configured<'r> {
        Configured { repo }
    }

    pub(super) fn repo(&self) -> &'r Repo {
        self.repo
    }

    /// `ralph.<preset>.args`: what the user adds to a preset's command.
    pub fn agent_args(&self, preset: &str) -> Vec<String> {
        config::agent_args(self.repo, preset)
    }

    /// The arguments of every preset, as a run keeps them for its roles.
    pub fn preset_args(&self) -> BTreeMap<String, Vec<String>> {
        presets::PRESETS
            .iter()
            .map(|name| (name.to_string(), self.agent_args(name)))
            .collect()
    }

    /// The preset `name` with `model`, and the user's arguments for it.
    pub fn preset(&self, name: &str, model: Option<&str>) -> Result<AgentSpec, PresetError> {
        presets::preset(name, model, &self.agent_args(name))
    }

    /// `ralph.worktree`: where a new run works when no flag says.
    pub fn worktree(&self) -> Result<Option<WorktreeChoice>, SettingsError> {
        Ok(config::worktree(self.repo)?)
    }

    /// `ralph.check`: the user's own checks, run after the contract's.
    pub fn checks(&self) -> Vec<String> {
        self.repo.config_strings("ralph.check")
    }

    /// `ralph.hook.<event>`: the user's own hooks.
    pub fn hooks(&self) -> crate::contract::Hooks {
        config::hooks(self.repo)
    }

    /// `ralph.notifyWebhook` and `ralph.notifyPayload`.
    pub fn notify(&self) -> Result<crate::notify::NotifySettings, SettingsError> {
        Ok(config::notify(self.repo)?)
    }
}
