//! What opening a run of a change reads, the same for `start` (a
//! [`Session`](super::Session)) and for its plan (`start --dry-run`): the
//! record of an earlier run and whether it is taken up again, the settings
//! resolved against it, and what they name (the agent, its fallbacks, the
//! prompt template, the contract), each resolved once. Git config is read
//! through [`Configured`] alone. Nothing here writes.

use std::collections::BTreeMap;
use std::path::Path;

use super::sources::Begin;
use super::start_error::StartError;
use crate::agent::{AgentSpec, presets};
use crate::contract::Contract;
use crate::git::{ChangeName, Repo};
use crate::prompt;
use crate::settings::{self, Configured, Requested, Settings};
use crate::state::{RunDir, RunState};
use crate::stories::{SourceKind, StorySource};

/// What is found of a change before anything is decided: its run's
/// directory, an earlier run's record, and whether that run goes on.
pub(super) struct Found {
    pub run_dir: RunDir,
    pub previous: Option<RunState>,
    /// The earlier run is stopped (or was killed): starting takes it up.
    pub resumes: bool,
}

impl Found {
    /// What `repo` holds of a run of `change`.
    pub fn look(repo: &Repo, change: &ChangeName) -> Result<Found, StartError> {
        let run_dir = RunDir::new(&repo.ralph_dir(), change.as_str());
        let previous = match run_dir.exists() {
            true => Some(run_dir.load()?),
            false => None,
        };
        let resumes = match &previous {
            Some(state) => super::earlier::resumes(repo, change, state)?,
            None => false,
        };
        Ok(Found {
            run_dir,
            previous,
            resumes,
        })
    }

    /// The run taken up again, if one is.
    pub fn stopped(&self) -> Option<&RunState> {
        self.previous.as_ref().filter(|_| self.resumes)
    }

    /// How the stories are read: afresh, or from the stopped run's record.
    pub fn begin(&self) -> Begin {
        match self.resumes {
            true => Begin::Resume,
            false => Begin::Fresh,
        }
    }

    /// The settings of the run: the command line over the stopped run's
    /// own, over git config and the defaults; checked for what they need
    /// of this machine.
    pub fn settings(&self, repo: &Repo, req: &Requested) -> Result<Settings, StartError> {
        let settings = settings::resolve(repo, req, self.stopped().map(RunState::settings))?;
        if settings.sandbox {
            crate::sandbox::check()?;
        }
        Ok(settings)
    }

    /// The contract: a stopped run's as snapshotted when it began (if it
    /// kept one), else the one the repository and git config make now.
    pub fn contract(
        &self,
        repo: &Repo,
        change: &ChangeName,
        settings: &Settings,
        source: &dyn StorySource,
    ) -> Result<Contract, StartError> {
        if self.resumes
            && let Ok(Some(snapshot)) = Contract::load_snapshot(&self.run_dir.dir)
        {
            return Ok(snapshot);
        }
        assemble_contract(repo, change, settings, source)
    }
}

/// What a run's settings name, resolved once: the agent (its preset with
/// the user's arguments, or the user's command), the fallbacks, the
/// prompt template (checked), and every preset's arguments for the roles.
pub(super) struct Named {
    pub agent: AgentSpec,
    pub fallback_agents: Vec<AgentSpec>,
    pub template: String,
    pub preset_args: BTreeMap<String, Vec<String>>,
}

impl Named {
    /// What `settings` name in `repo`; `agent` replaces the configured
    /// agent (the demo's scripted one).
    pub fn resolve(
        repo: &Repo,
        settings: &Settings,
        agent: Option<AgentSpec>,
    ) -> Result<Named, StartError> {
        let configured = Configured::of(repo);
        let template = template_text(repo, settings)?;
        prompt::validate(&template)?;
        let agent = match agent {
            Some(agent) => agent,
            None => agent_of(configured, settings)?,
        };
        let fallback_agents = settings
            .fallback_agents
            .iter()
            .map(|name| configured.preset(name, None))
            .collect::<Result<_, _>>()?;
        Ok(Named {
            agent,
            fallback_agents,
            template,
            preset_args: configured.preset_args(),
        })
    }
}

/// The agent of this run: its preset, or the user's command.
pub fn agent_spec(repo: &Repo, settings: &Settings) -> Result<AgentSpec, StartError> {
    agent_of(Configured::of(repo), settings)
}

fn agent_of(configured: Configured, settings: &Settings) -> Result<AgentSpec, StartError> {
    match &settings.agent_command {
        Some(command) => Ok(presets::command(command)),
        None => Ok(configured.preset(&settings.agent, settings.model.as_deref())?),
    }
}

/// The prompt template: `--prompt-template`, `<git-dir>/ralph/prompt.md`, or
/// the built-in one.
fn template_text(repo: &Repo, settings: &Settings) -> Result<String, StartError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| StartError::Template {
            path: path.to_owned(),
            source,
        })
    };
    if let Some(path) = &settings.prompt_template {
        return read(Path::new(path));
    }
    let custom = repo.ralph_dir().join(crate::state::layout::PROMPT_TEMPLATE);
    if custom.is_file() {
        return read(&custom);
    }
    Ok(prompt::DEFAULT_TEMPLATE.to_owned())
}

/// The contract of a new run, assembled before anything is touched: the
/// repository's (and the change's) `ralph.toml`, with the user's checks,
/// hooks and webhook from git config.
pub(super) fn assemble_contract(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
    source: &dyn StorySource,
) -> Result<Contract, StartError> {
    let configured = Configured::of(repo);
    let change_dir = (source.kind() == SourceKind::OpenSpec).then(|| {
        repo.workdir()
            .join("openspec/changes")
            .join(super::sources::stories_of(change, settings))
    });
    let mut contract = Contract::assemble(
        repo.workdir(),
        change_dir.as_deref(),
        &configured.checks(),
        &settings.checks,
        settings.promise.as_deref(),
    )?;
    // The user's own hooks (git config) run before the repository's.
    contract.hooks = configured.hooks().then(contract.hooks);
    // The user's own webhook (git config) over the repository's.
    let notify = configured.notify()?;
    contract.notify = std::mem::take(&mut contract.notify).then(notify);
    contract.notify.webhook()?;
    Ok(contract)
}
