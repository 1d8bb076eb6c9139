//! What a run was asked to do, resolved once. The command line, `ralph.*`
//! git config, `ralph.toml` and a stopped run's own record meet in
//! [`crate::settings::resolve`]; what that gives, plus what it names (the
//! agent's preset and its arguments, the prompt template, the contract
//! snapshotted at start), is gathered here before the first story, and the
//! loop reads nothing else: no git config, no `ralph.toml`, no state file's
//! copy of the flags. A story of a parallel run is given the run's settings
//! narrowed to its story by [`RunSettings::for_story`].

use std::collections::BTreeMap;
use std::time::Duration;

use super::mode::{Mode, Policy};
use crate::agent::{AgentSpec, presets};
use crate::contract::{Contract, Role, RoleAgent, RoleRules};
use crate::git::{ChangeName, RunRefs};
use crate::notify::{Notifier, Webhook};
use crate::settings::{Guardrails, Settings};
use crate::stories::SourceKind;

/// The settings a run's loop works by.
#[derive(Debug, Clone)]
pub struct RunSettings {
    change: ChangeName,
    scope: Scope,
    /// For one story's run (`--story`), the change the story belongs to.
    job_change: Option<ChangeName>,
    recorded: Settings,
    agent: AgentSpec,
    fallback_agents: Vec<AgentSpec>,
    /// `ralph.<preset>.args` of every preset, read at start.
    preset_args: BTreeMap<String, Vec<String>>,
    template: String,
    classic_prompt: Option<String>,
    contract: Contract,
    roles: Vec<Role>,
    mode: Mode,
    /// What the mode asks of the loop, for this scope.
    policy: Policy,
    notifier: Notifier,
}

/// Whom a loop works for: a whole run, or one story of a parallel run in
/// a worktree of its own.
#[derive(Debug, Clone)]
enum Scope {
    Run,
    Story { run: ChangeName, story: String },
}

/// What [`RunSettings::new`] is made of, read and checked by the session.
pub struct Resolved {
    pub change: ChangeName,
    pub recorded: Settings,
    pub agent: AgentSpec,
    pub fallback_agents: Vec<AgentSpec>,
    pub preset_args: BTreeMap<String, Vec<String>>,
    pub template: String,
    pub classic_prompt: Option<String>,
    pub contract: Contract,
    /// The roles every story goes through, in order.
    pub roles: Vec<Role>,
    /// The contract's webhook, checked.
    pub webhook: Option<Webhook>,
}

impl RunSettings {
    /// A whole run's settings; the mode of the run is chosen here.
    pub fn new(resolved: Resolved) -> RunSettings {
        let Resolved {
            change,
            recorded,
            mut agent,
            fallback_agents,
            preset_args,
            template,
            classic_prompt,
            contract,
            roles,
            webhook,
        } = resolved;
        // What any fallback leaves in the worktree is theirs, not the work.
        for fallback in &fallback_agents {
            agent.scratch.extend(fallback.scratch.iter().cloned());
        }
        let mode = Mode::of(&recorded, &roles);
        // One story's run (`--story`) works on that story alone.
        let only = recorded.job.as_ref().map(|job| job.story.clone());
        let policy = mode.policy(&recorded, only.as_deref());
        let notifier = Notifier {
            desktop: recorded.notify,
            webhook,
        };
        let job_change = recorded
            .job
            .as_ref()
            .and_then(|job| ChangeName::parse(&job.change).ok());
        RunSettings {
            change,
            scope: Scope::Run,
            job_change,
            recorded,
            agent,
            fallback_agents,
            preset_args,
            template,
            classic_prompt,
            contract,
            roles,
            mode,
            policy,
            notifier,
        }
    }

    /// The settings of `story`, run on `branch` in a worktree of its own
    /// for this (parallel) run: the same agent, contract and limits; its
    /// refs under the story's place; nobody told when it ends, and no hook
    /// run by it, since the run it belongs to does both.
    pub fn for_story(&self, branch: ChangeName, story: &str) -> RunSettings {
        let mut settings = self.clone();
        settings.scope = Scope::Story {
            run: self.change.clone(),
            story: story.to_owned(),
        };
        settings.change = branch;
        settings.policy = self.mode.policy(&self.recorded, Some(story));
        settings.notifier = Notifier::default();
        settings.contract.hooks = Default::default();
        settings
    }

    /// The change whose branch this loop works on.
    pub fn change(&self) -> &ChangeName {
        &self.change
    }

    /// The change as agents and prompts name it.
    pub fn change_shown(&self) -> &ChangeName {
        match &self.scope {
            Scope::Story { run, .. } => run,
            Scope::Run => self.job_change.as_ref().unwrap_or(&self.change),
        }
    }

    /// What the run's mode asks of this loop: which story next, how many
    /// attempts, how an attempt is judged, where "done" is read.
    pub(super) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The run's own loop, not a story's of a parallel run, which sees
    /// every story of the change.
    pub fn sees_every_story(&self) -> bool {
        matches!(self.scope, Scope::Run) && self.recorded.job.is_none()
    }

    /// Where the loop keeps its refs (failed attempts, strays): the run's
    /// namespace, and for a story of a parallel run, the story's place in
    /// it, `refs/ralph/<change>/stories/<id>`.
    pub fn refs(&self) -> RunRefs {
        match &self.scope {
            Scope::Story { run, story } => RunRefs::of_story(run, story),
            Scope::Run => RunRefs::of(&self.change),
        }
    }

    /// The branches the run moves itself, which an attempt's agent is not
    /// blamed for: the loop's own, and in a parallel run the run's branch
    /// and every story's.
    pub fn run_branches(&self) -> Vec<String> {
        let mut branches = vec![self.change.branch_ref()];
        if let Scope::Story { run, .. } = &self.scope {
            branches.push(run.branch_ref());
            branches.push(format!("{}.story-*", run.branch_ref()));
        }
        branches
    }

    /// The flags as the run's state records them.
    pub fn recorded(&self) -> &Settings {
        &self.recorded
    }

    pub fn agent(&self) -> &AgentSpec {
        &self.agent
    }

    /// The agents a story goes to, in turn, when the agent's usage limit
    /// outlasts `--max-rate-limit-wait`.
    pub fn fallback_agents(&self) -> &[AgentSpec] {
        &self.fallback_agents
    }

    pub fn max_retries(&self) -> u32 {
        self.recorded.max_retries
    }

    pub fn agent_timeout(&self) -> Duration {
        Duration::from_secs(self.recorded.agent_timeout_secs)
    }

    /// How long an agent may print nothing; `None` lets it be silent.
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.recorded.idle_timeout_secs > 0)
            .then(|| Duration::from_secs(self.recorded.idle_timeout_secs))
    }

    pub fn command_timeout(&self) -> Duration {
        Duration::from_secs(self.recorded.command_timeout_secs)
    }

    pub fn template(&self) -> &str {
        &self.template
    }

    /// The prompt itself in prompt mode.
    pub fn classic_prompt(&self) -> Option<&str> {
        self.classic_prompt.as_deref()
    }

    /// The contract as snapshotted at start, not whatever the agent may
    /// have done to its files since.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    pub fn guardrails(&self) -> &Guardrails {
        &self.recorded.guardrails
    }

    /// Refuse a claim that changes nothing besides ticking boxes, unless
    /// the story's contract says otherwise.
    pub fn require_change(&self) -> bool {
        self.recorded.require_change
    }

    /// Keep a learnings file and show it in prompts.
    pub fn learnings(&self) -> bool {
        !self.recorded.no_learnings
    }

    /// A question for a person parks its story instead of failing the
    /// attempt.
    pub fn questions(&self) -> bool {
        !self.recorded.no_questions
    }

    /// How long to wait for answers once only stories waiting for one are
    /// left. A story of a parallel run waits for none: its loop ends, and
    /// the run it belongs to waits.
    pub fn answer_timeout(&self) -> Option<Duration> {
        match self.scope {
            Scope::Story { .. } => None,
            Scope::Run => self.recorded.answer_timeout_secs.map(Duration::from_secs),
        }
    }

    /// Never watch the worktree: every snapshot and revert looks at every
    /// file.
    pub fn full_scan(&self) -> bool {
        self.recorded.full_scan
    }

    /// Run the agent under bubblewrap, the git directory read-only to it.
    pub fn sandbox(&self) -> bool {
        self.recorded.sandbox
    }

    /// The role pipeline every story goes through; empty for one agent per
    /// story.
    pub fn roles(&self) -> &[Role] {
        &self.roles
    }

    /// The command line's choice of agent per role.
    pub fn role_agents(&self) -> &BTreeMap<Role, RoleAgent> {
        &self.recorded.role_agents
    }

    /// Post a comment on the tracker's issue of each finished story.
    pub fn comment(&self) -> bool {
        self.recorded.comment
            && self
                .recorded
                .source
                .is_some_and(SourceKind::is_remote_tracker)
    }

    /// Who is told when the run ends.
    pub fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// The run's width when its stories run side by side.
    pub fn parallel(&self) -> Option<u32> {
        self.recorded.parallel
    }

    /// The agent a role runs: its own command or preset (with its model),
    /// the run's preset with the role's model, or the run's agent.
    pub fn role_agent(&self, rules: &RoleRules) -> Result<AgentSpec, crate::agent::PresetError> {
        if let Some(command) = &rules.agent_command {
            return Ok(presets::command(command));
        }
        let preset = match (&rules.agent, &self.recorded.agent_command) {
            (Some(name), _) => name.clone(),
            (None, None) if rules.model.is_some() => self.recorded.agent.clone(),
            _ => return Ok(self.agent.clone()),
        };
        let args = self.preset_args.get(&preset).cloned().unwrap_or_default();
        let model = rules.model.as_deref().or(self.recorded.model.as_deref());
        presets::preset(&preset, model, &args)
    }
}
