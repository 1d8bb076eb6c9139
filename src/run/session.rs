//! A run's beginning: begun fresh, resumed, or (when a finished run of the
//! same change exists) archived to history first. Everything a loop needs
//! (settings, stories, template, contract, agent) is read and validated
//! before anything is written, so a refused start leaves no trace.

use std::path::Path;

use super::earlier;
use super::mode::{Mode, roles_of};
pub use super::opening::agent_spec;
use super::opening::{Found, Named, assemble_contract};
use super::run_settings::{Resolved, RunSettings};
pub use super::sources::{Begin, source_for};
use super::start_error::StartError;
use crate::agent::AgentSpec;
use crate::agent::presets;
use crate::contract::Contract;
use crate::git::{ChangeName, HeadState, Repo};
use crate::settings::{self, Configured, OnFinish, Requested, Settings};
use crate::state::{RunDir, RunState};
use crate::stories::{SourceKind, StorySource};

/// A run ready for its loop.
pub struct Session {
    pub state: RunState,
    /// A stopped or killed run taken up again.
    pub resumed: bool,
    pub source: Box<dyn StorySource>,
    pub settings: RunSettings,
    /// What the user should know about how the run began: an earlier run
    /// moved to history, a kept branch whose tip was set aside.
    pub notices: Vec<String>,
}

impl Session {
    /// Begin a run of `change`, or resume it if it is stopped. `agent`
    /// replaces the configured agent (the demo's scripted one). Whatever
    /// stops it is the start's error: the loop's come later, from `drive`.
    pub fn open(
        repo: &mut Repo,
        change: &ChangeName,
        req: &Requested,
        agent: Option<AgentSpec>,
    ) -> Result<Session, StartError> {
        let found = Found::look(repo, change)?;
        let settings = found.settings(repo, req)?;
        let mut notices = Vec::new();
        let (state, source, prepared) = match found.stopped().cloned() {
            Some(state) => {
                let (state, source) =
                    resume(repo, change, (&found, req), state, settings, &mut notices)?;
                (state, source, None)
            }
            None => {
                let (state, source, prepared) = begin(
                    repo,
                    change,
                    (&found, req),
                    settings,
                    agent.clone(),
                    &mut notices,
                )?;
                (state, source, Some(prepared))
            }
        };
        let settings = loop_settings(repo, change, (&found.run_dir, &state), prepared, agent)?;
        // Every story, pending ones too, for whoever shows the run before
        // the loop reads the file again.
        let mut state = state;
        if let Ok(stories) = source.load() {
            state.sync_stories(&stories);
        }
        Ok(Session {
            state,
            resumed: found.resumes,
            source,
            settings,
            notices,
        })
    }
}

/// A stopped run taken up again, with the settings it may change.
fn resume(
    repo: &mut Repo,
    change: &ChangeName,
    (found, req): (&Found, &Requested),
    mut state: RunState,
    settings: Settings,
    notices: &mut Vec<String>,
) -> Result<(RunState, Box<dyn StorySource>), StartError> {
    earlier::reopen(&mut state);
    // A story's loop in a parallel run works on its one story; a single
    // pass is the whole run's, one story after another, as a new run
    // with both is refused.
    if settings.parallel.is_some() && Mode::of(&settings, &[]).side_by_side().is_err() {
        return Err(StartError::OnceOnParallel {
            change: change.to_string(),
        });
    }
    // Checked before the run's worktree is entered (or made again).
    check_handoff(repo, change, &settings, &state.original().head)?;
    // More retries for a run with roles mean more iterations for each role.
    let added = settings
        .max_retries
        .saturating_sub(state.settings().max_retries);
    state.resumed_with(settings, added);
    let state = reenter(repo, change, (&found.run_dir, req), state, notices)?;
    check_on_branch(repo, change)?;
    super::submodules::check_settled_on_resume(repo, &state)?;
    super::watching::watch_from_start(repo, state.settings());
    let source = source_for(repo, change, state.settings(), Begin::Resume)?;
    super::task_file::check(repo, source.as_ref())?;
    Ok((state, source))
}

/// A run begun fresh, in place or in a worktree of its own; an earlier
/// finished run of the change moved to history first.
fn begin(
    repo: &mut Repo,
    change: &ChangeName,
    (found, req): (&Found, &Requested),
    settings: Settings,
    agent: Option<AgentSpec>,
    notices: &mut Vec<String>,
) -> Result<(RunState, Box<dyn StorySource>, Prepared), StartError> {
    let run_dir = &found.run_dir;
    // Everything is validated before the earlier run is moved aside: a
    // refused start changes nothing.
    let (fresh, prepared) = prepare_fresh(repo, change, settings, agent)?;
    let place = super::beside::place(repo, change, req, fresh.settings.parallel.is_some())?;
    repo.check_begin(change)?;
    if place.is_none() {
        super::submodules::check_settled(repo)?;
    }
    if let Some(previous) = &found.previous {
        notices.push(earlier::archive(repo, change, run_dir, previous)?);
    }
    let (state, replaced, source) = match place {
        None => begin_fresh(repo, change, run_dir, fresh)?,
        Some(path) => {
            let (begun, inside) = begin_beside(repo, change, run_dir, fresh, &path)?;
            *repo = inside;
            notices.push(format!(
                "the run works in its own worktree at {}, on {}; yours is left as it is",
                repo.workdir().display(),
                change.branch_short()
            ));
            begun
        }
    };
    if let Some(tip) = replaced {
        notices.push(format!(
            "the branch {} was at {}; that tip is kept at {}/replaced",
            change.branch_short(),
            tip.to_hex_with_len(10),
            change.ref_namespace()
        ));
    }
    Ok((state, source, prepared))
}

/// A stopped run's way back in: into its own worktree, found again or made
/// anew (and recorded when it moved), when it has one; refused when asked
/// for a worktree it never had.
fn reenter(
    repo: &mut Repo,
    change: &ChangeName,
    (run_dir, req): (&RunDir, &Requested),
    mut state: RunState,
    notices: &mut Vec<String>,
) -> Result<RunState, StartError> {
    match state.worktree().clone() {
        Some(mut record) => {
            let before = (record.linked.clone(), record.removed);
            let (inside, notice) = super::beside::enter(repo, change, &mut record)?;
            *repo = inside;
            notices.push(notice);
            record.removed = false;
            if (record.linked.clone(), record.removed) != before {
                state.works_in(record);
                run_dir.save(&state)?;
            }
        }
        None if req.worktree.is_some() || req.parallel.is_some() => {
            return Err(StartError::WorktreeOnResume {
                change: change.to_string(),
            });
        }
        None => {}
    }
    Ok(state)
}

/// What a run's loop is given besides its stored settings, resolved
/// once: what they name, and the roles' order.
struct Prepared {
    named: Named,
    roles: Vec<crate::contract::Role>,
}

/// What a new run was validated with, before anything is written.
struct Fresh {
    settings: Settings,
    contract: Contract,
    source: Box<dyn StorySource>,
}

/// A new run: settings, stories, template, contract and agent, all read
/// and checked; nothing is written.
fn prepare_fresh(
    repo: &Repo,
    change: &ChangeName,
    mut settings: Settings,
    agent: Option<AgentSpec>,
) -> Result<(Fresh, Prepared), StartError> {
    let source = source_for(repo, change, &settings, Begin::Fresh)?;
    // Status states the source that was found, not "auto".
    settings.source = Some(source.kind());
    if let Some(agent) = &agent {
        settings.agent = agent.name.clone();
    }
    let stories = source.load()?;
    super::task_file::check(repo, source.as_ref())?;
    if !stories.iter().any(|story| !story.is_complete()) {
        return Err(StartError::all_done(change, stories.len(), source.as_ref()));
    }
    let scripted = agent.is_some();
    let named = Named::resolve(repo, &settings, agent)?;
    let contract = assemble_contract(repo, change, &settings, source.as_ref())?;
    if !scripted && !crate::process::is_runnable(&named.agent.program) {
        return Err(StartError::AgentMissing {
            name: named.agent.name.clone(),
            program: named.agent.program.clone(),
        });
    }
    let roles = roles_of(&settings, &contract);
    let mode = Mode::of(&settings, &roles);
    check_roles(repo, &settings, (mode, &roles), &contract, &stories)?;
    check_parallel(&settings, mode, source.kind())?;
    let head = repo
        .head()
        .map_err(|err| StartError::git("read HEAD", err))?;
    check_handoff(repo, change, &settings, &head)?;
    if settings.parallel.is_some() {
        super::parallel::check_order(&contract, source.kind(), &stories)?;
    }
    super::fallback::check_installed(&named.fallback_agents)?;
    let fresh = Fresh {
        settings,
        contract,
        source,
    };
    Ok((fresh, Prepared { named, roles }))
}

/// Stories run at once only when each one's marks live in the worktree,
/// where git-ralph can merge them, and stories are done one by one.
fn check_parallel(settings: &Settings, mode: Mode, kind: SourceKind) -> Result<(), StartError> {
    if settings.parallel.is_none() {
        return Ok(());
    }
    let what = match (mode.side_by_side(), kind) {
        (Err(why), _) => why.to_owned(),
        (Ok(()), SourceKind::OpenSpec | SourceKind::Markdown | SourceKind::Prd) => return Ok(()),
        (Ok(()), other) => format!(
            "the marks of {other} stories live outside the worktree, where no merge can carry them"
        ),
    };
    Err(StartError::ParallelUnfit { what })
}

/// A role pipeline must fit the run: story by story (not with `--once`
/// or `--prompt`), every story's roles resolvable, every role's agent
/// installed.
fn check_roles(
    repo: &Repo,
    settings: &Settings,
    (mode, roles): (Mode, &[crate::contract::Role]),
    contract: &Contract,
    stories: &[crate::stories::Story],
) -> Result<(), StartError> {
    if roles.is_empty() {
        return Ok(());
    }
    if !mode.takes_roles() {
        return Err(StartError::RolesNeedStories);
    }
    for story in stories {
        for rules in contract.pipeline_for(&story.id, roles, &settings.role_agents)? {
            let spec = match (&rules.agent_command, &rules.agent) {
                (Some(command), _) => presets::command(command),
                (None, Some(preset)) => {
                    Configured::of(repo).preset(preset, rules.model.as_deref())?
                }
                (None, None) => continue,
            };
            if !crate::process::is_runnable(&spec.program) {
                return Err(StartError::AgentMissing {
                    name: format!("{} (the {})", spec.name, rules.role),
                    program: spec.program,
                });
            }
        }
    }
    Ok(())
}

/// What a new run began with: its state, the tip `ralph/<change>` had
/// before if it existed (a kept run's branch), and its stories.
type Begun = (RunState, Option<crate::git::ObjectId>, Box<dyn StorySource>);

/// Begin the branch and record the state of a new run, and the source's own
/// record of its stories, if it keeps one.
fn begin_fresh(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    Fresh {
        settings,
        contract,
        source,
    }: Fresh,
) -> Result<Begun, StartError> {
    super::watching::watch_from_start(repo, &settings);
    // The initial state's index is the shared index each checkpoint's is
    // then written against (see `lifecycle::start`).
    repo.write_index_split(crate::git::SPLIT_INDEX_FROM);
    let begin = repo.begin(change).inspect_err(|_| {
        // Nothing begun: the index goes back whole. git reads it the same
        // either way, so a failure here is not the one to report.
        let _ = repo.settle_index();
    })?;
    let state = new_state(
        change,
        begin.original.clone(),
        begin.initial.commit,
        settings,
    );
    let recorded = record_begun(repo, run_dir, &state, &contract, source.as_ref());
    if let Err(err) = recorded {
        return Err(undo_begun(repo, change, run_dir, &begin, err));
    }
    Ok((state, begin.replaced, source))
}

/// The run's files, once its branch is begun: its state, its contract
/// and the source's own record of its stories.
fn record_begun(
    repo: &Repo,
    run_dir: &RunDir,
    state: &RunState,
    contract: &Contract,
    source: &dyn StorySource,
) -> Result<(), StartError> {
    run_dir.save(state)?;
    contract.snapshot(repo.workdir(), &run_dir.dir)?;
    source.begin()?;
    Ok(())
}

/// A run begun in git that could not be recorded is taken back, so that
/// the user is not left on a branch no command knows of; returns `err`,
/// or, when even that fails, what to do by hand (a state already written
/// is kept then, for `abort`).
fn undo_begun(
    repo: &mut Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    begin: &crate::git::Begin,
    err: StartError,
) -> StartError {
    match repo.undo_begin(change, begin) {
        Ok(()) => {
            let _ = std::fs::remove_file(run_dir.state_path());
            let _ = repo.settle_index();
            err
        }
        Err(undo) => StartError::BeginNotUndone {
            change: change.to_string(),
            cause: Box::new(err),
            undo,
        },
    }
}

/// Begin a run beside the user, in its own worktree at `path`: the branch,
/// the worktree and the run's state; the stories are read from the run's
/// worktree from now on. Returns the run's worktree too.
fn begin_beside(
    repo: &Repo,
    change: &ChangeName,
    run_dir: &RunDir,
    Fresh {
        mut settings,
        contract,
        source,
    }: Fresh,
    path: &Path,
) -> Result<(Begun, Repo), StartError> {
    super::beside::relative_tracking(&mut settings, repo.workdir());
    let (begin, linked) = repo.begin_beside(change, path, &super::beside::lock_reason(change))?;
    let mut state = new_state(change, begin.original, begin.initial.commit, settings);
    state.works_in(crate::state::RunWorktree {
        linked: linked.clone(),
        owner: repo.workdir().to_owned(),
        removed: false,
    });
    run_dir.save(&state)?;
    let mut inside = repo
        .open_worktree(&linked)?
        .ok_or_else(|| super::beside::gone(&linked.path))?;
    super::watching::watch_fresh_worktree(&mut inside, state.settings());
    contract.snapshot(inside.workdir(), &run_dir.dir)?;
    source.begin()?;
    let source = source_for(&inside, change, state.settings(), Begin::Resume)?;
    Ok(((state, begin.replaced, source), inside))
}

/// The state of a run just begun.
fn new_state(
    change: &ChangeName,
    original: crate::git::Original,
    initial: crate::git::ObjectId,
    settings: Settings,
) -> RunState {
    RunState::begun(
        change.to_string(),
        change.branch_short(),
        original,
        initial,
        settings,
        std::process::id(),
    )
}

/// A run is resumed on its branch: HEAD (of the run's worktree, for a run
/// beside the user) must still be on it.
fn check_on_branch(repo: &Repo, change: &ChangeName) -> Result<(), StartError> {
    match repo
        .head()
        .map_err(|err| StartError::git("read HEAD", err))?
    {
        HeadState::Branch { name, .. } if name == change.branch_ref() => Ok(()),
        other => Err(StartError::NotOnBranch {
            change: change.to_string(),
            head: other.describe(),
            branch: change.branch_short(),
        }),
    }
}

/// `--on-finish push` or `pr` pushes when the run ends: a remote that is
/// not there is said now, before anything is written, not after the run.
fn check_handoff(
    repo: &Repo,
    change: &ChangeName,
    settings: &Settings,
    original: &HeadState,
) -> Result<(), StartError> {
    let review = match settings.on_finish {
        OnFinish::Push => false,
        OnFinish::Pr => true,
        _ => return Ok(()),
    };
    let handoff = Configured::of(repo)
        .handoff(review)
        .map_err(settings::SettingsError::from)?;
    match handoff.destination(repo, change, original) {
        Ok(_) => Ok(()),
        Err(why) => Err(StartError::CannotHandOff {
            on_finish: settings.on_finish.as_str(),
            change: change.to_string(),
            why: Box::new(why),
        }),
    }
}

/// What the loop needs, from the run's stored settings: what a fresh
/// start resolved already, or, on resume, everything they name read now,
/// so that the loop reads no config of its own.
fn loop_settings(
    repo: &Repo,
    change: &ChangeName,
    (run_dir, state): (&RunDir, &RunState),
    prepared: Option<Prepared>,
    agent: Option<AgentSpec>,
) -> Result<RunSettings, StartError> {
    let settings = state.settings();
    let classic_prompt = match &settings.prompt_file {
        Some(file) => {
            Some(
                std::fs::read_to_string(file).map_err(|source| StartError::PromptFile {
                    path: file.into(),
                    source,
                })?,
            )
        }
        None => None,
    };
    // The rules are the ones snapshotted at start, not whatever the agent
    // may have done to the contract files since.
    let contract = Contract::load_snapshot(&run_dir.dir)?.unwrap_or_default();
    let webhook = contract.notify.webhook()?;
    let Prepared { named, roles } = match prepared {
        Some(prepared) => prepared,
        None => Prepared {
            named: Named::resolve(repo, settings, agent)?,
            roles: roles_of(settings, &contract),
        },
    };
    Ok(RunSettings::new(Resolved {
        change: change.clone(),
        recorded: settings.clone(),
        agent: named.agent,
        fallback_agents: named.fallback_agents,
        preset_args: named.preset_args,
        template: named.template,
        classic_prompt,
        contract,
        roles,
        webhook,
    }))
}
