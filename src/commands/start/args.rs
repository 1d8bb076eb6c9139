//! The flags of `git ralph start`, and how they become a [`Requested`].

use std::path::PathBuf;

use crate::commands::agent_flags::AgentFlags;
use crate::commands::values::{OnFinishArg, SourceArg};
use crate::contract::roles::UnknownRole;
use crate::contract::{Role, RoleAgent};
use crate::exit::CommandError;
use crate::git::ChangeName;
use crate::settings::{OnFinish, Requested};
use crate::stories::SourceKind;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// The change to work on: the OpenSpec change `openspec/changes/<CHANGE>/`,
    /// or the run's name with --prd, --tasks or --source github|beads (its
    /// branch is ralph/<CHANGE>).
    #[arg(value_name = "CHANGE")]
    pub change: String,
    #[command(flatten)]
    pub agent: AgentFlags,
    /// Retries per story after its first attempt [default: 3; config: ralph.maxRetries].
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// Seconds any external command may run [default: 30; config: ralph.commandTimeout].
    #[arg(long, value_name = "SECS")]
    pub command_timeout: Option<u64>,
    /// Seconds one agent attempt may run [default: 3600; config: ralph.agentTimeout].
    #[arg(long, value_name = "SECS")]
    pub agent_timeout: Option<u64>,
    /// How long an agent may print nothing before it is stopped like a
    /// timeout, e.g. 15m; 0 lets it be silent [default: 15m; config: ralph.idleTimeout].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub idle_timeout: Option<u64>,
    /// What to do when the loop ends [default: ask; config: ralph.onFinish].
    #[arg(long, value_enum, value_name = "WHAT")]
    pub on_finish: Option<OnFinishArg>,
    /// Print events as JSON lines on stdout.
    #[arg(long)]
    pub json: bool,
    /// The one-line progress view instead of the loop screen, even on a
    /// terminal [config: ralph.ui = plain].
    #[arg(long)]
    pub plain: bool,
    /// Serve the run to a browser while it runs, as `git ralph serve`
    /// does, on 127.0.0.1:7574 or the address given (`--serve=ADDR:PORT`),
    /// and print the URL to open; the server ends when this command does.
    #[arg(
        long,
        value_name = "ADDR:PORT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = crate::serve::DEFAULT_BIND
    )]
    pub serve: Option<std::net::SocketAddr>,
    /// Prompt template to use instead of `<git-dir>/ralph/prompt.md` or the built-in one.
    #[arg(long, value_name = "FILE")]
    pub prompt_template: Option<PathBuf>,
    /// Where the stories come from [default: detected].
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub source: Option<SourceArg>,
    /// A prd.json file of user stories (implies --source prd).
    #[arg(long, value_name = "FILE")]
    pub prd: Option<PathBuf>,
    /// A markdown checklist file (implies --source markdown).
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<PathBuf>,
    /// With --source github: the issues from a file that `gh issue list
    /// --json number,title,body,labels,state,url` wrote, instead of asking `gh`
    /// (all its open issues, or those with --label); with --source beads:
    /// the issues file instead of .beads/issues.jsonl.
    #[arg(long, value_name = "FILE")]
    pub issues: Option<PathBuf>,
    /// With --source github: work on the open issues with this label
    /// [default: ralph]; gitlab, linear, jira: only the issues with it.
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// With --source github, gitlab, linear or jira: post one comment on
    /// each issue whose story is finished, naming its checkpoint; without
    /// it, nothing is written to the tracker.
    #[arg(long)]
    pub comment: bool,
    /// With --source github, gitlab, linear or jira: close each issue whose
    /// story is finished (Linear and Jira: move it to a done state).
    #[arg(long)]
    pub close: bool,
    /// With --source gitlab: the project (`group/name` or its id); linear:
    /// the project's name; jira: the project's key (when --jql is not given).
    #[arg(long, value_name = "PROJECT")]
    pub project: Option<String>,
    /// With --source gitlab: only the issues of this milestone (its title).
    #[arg(long, value_name = "TITLE")]
    pub milestone: Option<String>,
    /// With --source linear: only the issues of this team (its key, `ENG`).
    #[arg(long, value_name = "KEY")]
    pub team: Option<String>,
    /// With --source linear: only the issues of this cycle (its number).
    #[arg(long, value_name = "NUMBER")]
    pub cycle: Option<String>,
    /// With --source jira: the issues this JQL query finds (its open ones).
    #[arg(long, value_name = "QUERY")]
    pub jql: Option<String>,
    /// Prompt mode: repeat this prompt, a fresh agent each time, until the
    /// contract passes; no stories.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["source", "prd", "tasks", "issues", "label", "comment", "close", "project", "milestone", "team", "cycle", "jql"])]
    pub prompt: Option<PathBuf>,
    /// One attempt per story, no checks, no retries: the plain flow.
    #[arg(long)]
    pub once: bool,
    /// Show the stories as read, any warnings, and the first prompt exactly
    /// as the agent would receive it; change nothing (with --json: one object).
    #[arg(long, conflicts_with = "prompt")]
    pub dry_run: bool,
    /// Prompt mode: revert an iteration the contract does not accept,
    /// instead of keeping it as an iteration checkpoint to build on.
    #[arg(long, requires = "prompt")]
    pub revert_failed: bool,
    /// A check every story must pass: a command run through `sh -c` in the
    /// worktree (repeatable) [config: ralph.check].
    #[arg(long = "check", value_name = "CMD")]
    pub checks: Vec<String>,
    /// The promise token for string matching, or `none` to rely on checks
    /// alone [default: COMPLETE; config: ralph.promise].
    #[arg(long, value_name = "TOKEN")]
    pub promise: Option<String>,
    /// Attempts across the whole run [config: ralph.maxIterations].
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Consecutive attempts that change nothing before the run stops; 0 is
    /// no limit [default: 3; config: ralph.noProgressLimit].
    #[arg(long, value_name = "N")]
    pub no_progress_limit: Option<u32>,
    /// Total time the run may take, e.g. 90m, 2h, 1h30m [config: ralph.maxRuntime].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub max_runtime: Option<u64>,
    /// Money the agents may spend, in USD, summed from their reports [config: ralph.maxCost].
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Tokens the agents may use, summed from their reports [config: ralph.maxTokens].
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// The most the run waits out usage limits, in total [default: 6h; config: ralph.maxRateLimitWait].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub max_rate_limit_wait: Option<u64>,
    /// Start no attempt that would take the spend of the last window past
    /// its budget, e.g. '$20/5h' or '2M tokens/5h'; the run waits instead.
    #[arg(long, value_name = "BUDGET/WINDOW", value_parser = parse_pace)]
    pub pace: Option<String>,
    /// Refuse a claim of completion whose only change is ticking boxes in
    /// the tracking file; by default it is accepted and flagged
    /// [config: ralph.requireChange; per story: require_change in ralph.toml].
    #[arg(long)]
    pub require_change: bool,
    /// No learnings file: prompts neither show nor ask for one
    /// [config: ralph.learnings = false].
    #[arg(long)]
    pub no_learnings: bool,
    /// A story whose agent ends with a question fails that attempt, as for
    /// any other ending without a promise, instead of waiting for an
    /// answer [config: ralph.questions = false].
    #[arg(long)]
    pub no_questions: bool,
    /// When only stories waiting for an answer are left, wait this long
    /// for answers before the run stops [default: stop at once].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_duration)]
    pub answer_timeout: Option<u64>,
    /// Look at every file of the worktree after each attempt, as git does,
    /// instead of only at what the agent touched while it ran
    /// [config: ralph.fullScan].
    #[arg(long)]
    pub full_scan: bool,
    /// Take the run up from REMOTE first: fetch ralph/<CHANGE> and the
    /// run's record and refs a machine pushed (--push-each, finish --push),
    /// and go on from them with the same stories done, attempts counted
    /// and budget spent. Records gone apart are refused.
    #[arg(long, value_name = "REMOTE")]
    pub from: Option<String>,
    /// After each checkpoint, push ralph/<CHANGE> with the run's record
    /// and refs (to ralph.remote, else the upstream remote, else origin),
    /// so that another machine can take the run up with --from.
    #[arg(long)]
    pub push_each: bool,
    /// Run this one story of the change alone, in a run of its own on
    /// ralph/<CHANGE>.story-<ID>, on top of ralph/<CHANGE> as it is (as
    /// REMOTE has it, with --from); its dependencies must be done there.
    /// With --from, a lease on the remote keeps other machines off it.
    #[arg(long, value_name = "ID", conflicts_with_all = ["prompt", "parallel", "worktree", "dry_run"])]
    pub story: Option<String>,
    /// With --story: when the story's run ends, push its branch
    /// ralph/<CHANGE>.story-<ID> with its record, in one atomic push.
    #[arg(long, requires = "story")]
    pub push: bool,
    /// With --push: the remote to push to [default: the --from remote,
    /// else ralph.remote, else origin].
    #[arg(long, value_name = "NAME", requires = "push")]
    pub remote: Option<String>,
    /// Run the agent under bubblewrap (Linux), with the git directory and
    /// your global git config read-only to it
    /// [config: ralph.sandbox].
    #[arg(long)]
    pub sandbox: bool,
    /// When the run ends, done or stopped for you, or waits out a usage
    /// limit: a desktop notification (notify-send, osascript) and the bell
    /// [config: ralph.notify]. A webhook in [notify] of ralph.toml is told
    /// either way.
    #[arg(long)]
    pub notify: bool,
    /// An agent preset the story goes to when the agent hits a usage limit
    /// that resets later than --max-rate-limit-wait allows; the primary is
    /// tried again at the next story (repeatable, tried in order)
    /// [config: ralph.fallbackAgents].
    #[arg(long = "fallback-agent", value_name = "NAME")]
    pub fallback_agents: Vec<String>,
    /// The role pipeline each story goes through, in this order: any of
    /// coder, reviewer, tester, qa [config: ralph.roles; roles in
    /// ralph.toml]. Without it, one agent does each story.
    #[arg(long, value_name = "ROLES", value_parser = parse_roles)]
    pub roles: Option<RoleList>,
    /// Work in a worktree of its own on ralph/<CHANGE>, beside yours, which
    /// the run never touches (HEAD, index, files, stashes): at PATH, or by
    /// default at <your worktree>.ralph/<CHANGE> [config: ralph.worktree].
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    pub worktree: Option<Option<PathBuf>>,
    /// Run up to N independent stories at once, each in a worktree of its
    /// own, merged into ralph/<CHANGE> one at a time in story order
    /// (implies --worktree) [config: ralph.parallel].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub parallel: Option<u32>,
    /// The agent preset a role runs, e.g. reviewer=codex (repeatable).
    #[arg(long, value_name = "ROLE=PRESET", value_parser = role_value)]
    pub role_agent: Vec<(Role, String)>,
    /// A command a role runs instead of a preset, prompt on stdin, e.g.
    /// 'reviewer=my-reviewer --strict' (repeatable).
    #[arg(long, value_name = "ROLE=CMD", value_parser = role_value)]
    pub role_agent_command: Vec<(Role, String)>,
    /// The model a role's agent uses, e.g. reviewer=gpt-5 (repeatable).
    #[arg(long, value_name = "ROLE=MODEL", value_parser = role_value)]
    pub role_model: Vec<(Role, String)>,
}

/// `--roles coder,reviewer`: a pipeline, as one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleList(pub Vec<Role>);

fn parse_roles(text: &str) -> Result<RoleList, UnknownRole> {
    crate::config::parse_roles(text).map(RoleList)
}

/// Why a `ROLE=VALUE` flag cannot be read.
#[derive(Debug, thiserror::Error)]
enum RoleValueError {
    #[error("{0:?} is not ROLE=VALUE")]
    NotPair(String),
    #[error(transparent)]
    Role(#[from] UnknownRole),
    #[error("{text:?} gives the {role} nothing")]
    Empty { text: String, role: Role },
}

/// `ROLE=VALUE`.
fn role_value(text: &str) -> Result<(Role, String), RoleValueError> {
    let (role, value) = text
        .split_once('=')
        .ok_or_else(|| RoleValueError::NotPair(text.to_owned()))?;
    let role = role.parse::<Role>()?;
    if value.trim().is_empty() {
        return Err(RoleValueError::Empty {
            text: text.to_owned(),
            role,
        });
    }
    Ok((role, value.to_owned()))
}

impl Args {
    /// The run's name: the change, or with --story, the story's own run
    /// (`<CHANGE>.story-<ID>`).
    pub(super) fn run_name(&self) -> Result<ChangeName, CommandError> {
        let change = ChangeName::parse(&self.change)?;
        crate::state::check_run_name(change.as_str())?;
        match &self.story {
            Some(story) => Ok(crate::remote::story_job::StoryJob::of(&change, story)?.name),
            None => Ok(change),
        }
    }

    /// The command line's choice of agent per role.
    fn role_agents(&self) -> std::collections::BTreeMap<Role, RoleAgent> {
        let mut agents: std::collections::BTreeMap<Role, RoleAgent> = Default::default();
        for (role, preset) in &self.role_agent {
            agents.entry(*role).or_default().agent = Some(preset.clone());
        }
        for (role, command) in &self.role_agent_command {
            agents.entry(*role).or_default().agent_command = Some(command.clone());
        }
        for (role, model) in &self.role_model {
            agents.entry(*role).or_default().model = Some(model.clone());
        }
        agents
    }

    /// The flags as plain values for [`crate::settings::resolve`].
    pub(super) fn requested(&self) -> Result<Requested, CommandError> {
        Ok(Requested {
            cwd: crate::commands::current_dir()?,
            max_retries: self.max_retries,
            command_timeout: self.command_timeout,
            agent_timeout: self.agent_timeout,
            idle_timeout: self.idle_timeout,
            on_finish: self.on_finish.map(OnFinish::from),
            prompt_template: self.prompt_template.clone(),
            source: self.source.map(SourceKind::from),
            prd: self.prd.clone(),
            tasks: self.tasks.clone(),
            issues: self.issues.clone(),
            label: self.label.clone(),
            comment: self.comment,
            tracker: crate::settings::TrackerQuery {
                project: self.project.clone(),
                milestone: self.milestone.clone(),
                team: self.team.clone(),
                cycle: self.cycle.clone(),
                jql: self.jql.clone(),
                close: self.close,
            },
            prompt: self.prompt.clone(),
            once: self.once,
            revert_failed: self.revert_failed,
            checks: self.checks.clone(),
            promise: self.promise.clone(),
            max_iterations: self.max_iterations,
            no_progress_limit: self.no_progress_limit,
            max_runtime: self.max_runtime,
            max_cost: self.max_cost,
            max_tokens: self.max_tokens,
            max_rate_limit_wait: self.max_rate_limit_wait,
            pace: self.pace.clone(),
            require_change: self.require_change,
            no_learnings: self.no_learnings,
            no_questions: self.no_questions,
            answer_timeout: self.answer_timeout,
            full_scan: self.full_scan,
            push_each: self.push_each,
            sandbox: self.sandbox,
            notify: self.notify,
            roles: self.roles.clone().map(|list| list.0),
            role_agents: self.role_agents(),
            fallback_agents: self.fallback_agents.clone(),
            worktree: self.worktree.clone(),
            parallel: self.parallel,
            job: self.story.clone().map(|story| crate::settings::StoryJob {
                change: self.change.clone(),
                story,
            }),
            ..self.agent.requested()
        })
    }
}

/// `--pace`, checked when the command line is read.
fn parse_pace(given: &str) -> Result<String, crate::pace::PaceError> {
    given.parse::<crate::pace::Pace>().map(|_| given.to_owned())
}
