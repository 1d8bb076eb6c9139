//! The command line, as clap types only. Each subcommand's arguments live
//! with its command in `commands/`.

use clap::{Parser, Subcommand};

use crate::commands;

/// Drive an AI coding agent through the stories of a change until each one is verifiably done.
#[derive(Parser, Debug)]
#[command(
    name = "git-ralph",
    bin_name = "git-ralph",
    version = crate::version::LONG,
    propagate_version = true,
    long_about = "git-ralph runs a coding agent again and again, a fresh process per attempt, through the \
stories of a change. A story is done only when the agent promises COMPLETE and the story is marked \
done; then it becomes a checkpoint commit on ralph/<change>. A failed attempt is preserved under \
refs/ralph/<change>/attempts/ and the worktree is reverted before the retry. On a terminal, \
git ralph with no subcommand lists the changes and runs to preview, start, resume or watch."
)]
pub struct Cli {
    /// With none, on a terminal: the selection screen of the changes and
    /// runs, where Enter previews a run and R starts it.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Start a run on a change, or resume a stopped one (or one kept
    /// before its stories were all done).
    Start(Box<commands::start::Args>),
    /// Have the agent write a change's stories, held to the reader that
    /// will run them.
    ///
    /// The configured agent runs in your worktree with a planning prompt of
    /// its own and writes an OpenSpec change (proposal.md, tasks.md with a
    /// numbered group per story, spec deltas), or with --prd a prd.json,
    /// or with --tasks a markdown checklist. git-ralph then reads it with
    /// the reader start will use, and accepts it only when it reads as
    /// stories with open tasks, no line the reader warns about, no story
    /// over --max-tasks tasks, every story saying how to verify it (a task
    /// or line starting with "Verify:", or a prd.json story's acceptance
    /// criteria), and, for an OpenSpec change when the openspec CLI is on
    /// PATH, `openspec validate <change> --strict` passing. Otherwise the
    /// reader's or validator's words go back to the agent, at most
    /// --max-retries more times; then the plan stops, and what was written
    /// is kept. The agent may write only the change's folder (or the
    /// file): any other change it makes, in the worktree, the index, HEAD,
    /// the branches or the git directory, is undone and reported, its work
    /// kept under refs/ralph/<change>/plan/. An existing change or file is
    /// never overwritten: plan refuses, or with --refine has the agent
    /// split the stories that are too big and fill in what is missing,
    /// keeping every done mark. An accepted plan is shown as start
    /// --dry-run shows it, with the command that runs it. Each try's
    /// prompt, output, tokens and cost are recorded under
    /// <git-dir>/ralph/plans/<change>/.
    Plan(Box<commands::plan::Args>),
    /// Report a run, from any terminal.
    Status(commands::status::Args),
    /// Open the terminal UI on a run, live or finished, from any terminal.
    Watch(commands::watch::Args),
    /// The audit trail of a run: stories, attempts, outcomes, where the work is.
    Log(commands::log::Args),
    /// One attempt of a run: its prompt, transcript, diff and checks.
    Show(commands::show::Args),
    /// Serve the runs to a browser, live, behind a token.
    ///
    /// The pages show what status, log and show show: the runs, a run's
    /// stories with their attempts, outcomes, reasons, tokens, cost and
    /// flags, and an attempt's prompt, transcript, diff (the live diff
    /// while it runs) and checks, each updated as the run moves. A page may
    /// do two things, each after a confirmation: stop a running loop, as q
    /// on its screen does, and answer the question a story waits on, as
    /// git ralph answer does. It listens on 127.0.0.1 unless --bind says
    /// otherwise, and prints a URL holding its token; a request without the
    /// token (which the browser keeps as a cookie after the first visit) is
    /// refused, and so is an action sent from another site's page, whatever
    /// token it carries. The token is kept in <git-dir>/ralph/serve-token,
    /// so that a server started again serves the pages left open; a server
    /// already running reads it again when serve --new-token replaces it.
    /// The server only reads the run's files and writes the answers given;
    /// the run never waits for it.
    Serve(commands::serve::Args),
    /// Answer the question a story of a run waits on, from any terminal.
    ///
    /// A story whose agent ended with a question waits for an answer while
    /// the rest of the run goes on. The answer is recorded beside the run's
    /// state: a live run takes the story up again at its next turn, a
    /// stopped run when 'git ralph start' resumes it. The next attempt's
    /// prompt carries every question and answer of the story, word for
    /// word.
    Answer(commands::answer::Args),
    /// Stop a run and restore the exact pre-start state.
    Abort(commands::abort::Args),
    /// Finish a stopped run: keep its branch, or clean up to uncommitted
    /// changes; or keep it, push it and open a pull request.
    ///
    /// --push and --pr keep the run first, then push ralph/<change>. The push
    /// is the one operation for which git-ralph runs the git binary
    /// (gitoxide cannot push yet); it never prompts: it has no standard
    /// input, GIT_TERMINAL_PROMPT=0, and ssh runs in batch mode. A missing
    /// remote is refused before anything is done; a rejected push or
    /// missing credentials is an error after which the run is exactly as
    /// finish --keep leaves it. A run in a worktree of its own is pushed
    /// the same from either worktree. --pr then opens
    /// a pull request with gh (glab when the remote's host names GitLab),
    /// titled after the change, its description written from the run's
    /// record and kept in .git/ralph/<change>/pull-request.md; when one is
    /// already open for the branch, its description is rewritten instead.
    /// Without gh, or not logged in, the branch stays pushed and the error
    /// gives the command that opens the pull request by hand.
    Finish(commands::finish::Args),
    /// Merge the stories of a change run one per machine (start --story
    /// ID --push) onto ralph/<change>.
    ///
    /// The change's run is taken up from the remote when a machine pushed
    /// one, then each branch ralph/<change>.story-<ID> whose run finished
    /// its story is merged as --parallel merges its stories: in the order
    /// they wait for each other, the checks run on the merged tree. A story
    /// that conflicts with one merged before it, or whose checks fail
    /// there, is sent back: recorded as not done, its work kept under a
    /// ref, to be run again. --push then pushes ralph/<change> with the
    /// run's record.
    Merge(commands::merge::Args),
    /// Watch a real loop work on a throwaway repository, offline.
    Demo(commands::demo::Args),
    /// List the agent presets, which are on PATH, and the command each runs.
    ///
    /// Each preset runs its CLI unattended, with its permission prompts off
    /// (opencode and Kilo with --auto, Qwen Code with --yolo, Factory Droid
    /// with --skip-permissions-unsafe, Aider with --yes-always; pi asks for
    /// none), and prints a stream git-ralph reads. Each row names the
    /// releases git-ralph understands (from the oldest whose output its
    /// tests hold to the one it was verified on), and whether the installed
    /// version was verified on this machine (see --verify). The command line shows the environment a preset sets
    /// (Aider's COLUMNS, so that its output is not wrapped). Files an agent
    /// keeps for itself in the worktree (Aider's .aider.chat.history.md,
    /// .aider.input.history, .aider.llm.history and .aider.tags.cache.v*) are
    /// left out of checkpoints and attempt refs, and a revert leaves them in
    /// place; --json lists them as "scratch".
    Agents(commands::agents::Args),
    /// Hooks for agent CLIs, e.g. the Claude Code Stop hook.
    Hook(commands::hook::Args),
    /// The scripted model stand-in of `agents --verify`.
    #[command(name = "__standin", hide = true)]
    Standin(commands::standin::Args),
    /// The scripted agent of the demo.
    #[command(name = "__demo-agent", hide = true)]
    DemoAgent {
        #[arg(long, default_value_t = 300)]
        pace: u64,
    },
}
