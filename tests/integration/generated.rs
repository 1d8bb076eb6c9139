//! The man pages in `man/man1/`, the shell completions in `completions/` and the
//! tables of the guides in `docs/` (configuration keys, exit statuses, the
//! screens' keys) are generated from the clap definitions and from the
//! product's own tables (`config::KEYS`, `exit::table()`, the screens' keys). They are committed so that `install.sh` only copies them.
//! This test regenerates everything in memory and fails when a committed file
//! has drifted; the one command that refreshes them is
//!
//! ```text
//! UPDATE_GENERATED=1 cargo test --test integration generated::
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, Command, CommandFactory, ValueHint};
use clap_complete::Shell;
use clap_mangen::roff::{Roff, bold, roman};

use crate::harness::{required_tool, source_path};

const REFRESH: &str = "UPDATE_GENERATED=1 cargo test --test integration generated::";

/// Subcommands that run a loop, and so can end with any exit status.
const LOOP_COMMANDS: &[&str] = &["start", "demo"];

/// The command line as users type it: `git ralph …`, without hidden
/// subcommands.
fn cli() -> Command {
    let mut cmd = git_ralph::cli::Cli::command()
        .bin_name("git ralph")
        .disable_help_subcommand(true);
    cmd.build();
    cmd
}

fn visible_subcommands(cmd: &Command) -> Vec<&Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect()
}

/// Does this subcommand take the name of a change (or run) as its positional?
fn takes_change(sub: &Command) -> bool {
    sub.get_positionals().any(|arg| arg.get_id() == "change")
}

// ---------------------------------------------------------------------------
// Man pages

struct Section {
    title: &'static str,
    roff: Roff,
}

fn render_page(cmd: &Command, extra: Vec<Section>) -> String {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_owned();
    let man = clap_mangen::Man::new(cmd.clone())
        .title(name.to_uppercase())
        .section("1")
        .source(format!("git-ralph {}", env!("CARGO_PKG_VERSION")))
        .manual("Git Ralph Manual");
    let mut out: Vec<u8> = Vec::new();
    let rendered = man
        .render_title(&mut out)
        .and_then(|()| man.render_name_section(&mut out))
        .and_then(|()| man.render_synopsis_section(&mut out))
        .and_then(|()| man.render_description_section(&mut out))
        .and_then(|()| {
            if cmd.get_arguments().any(|a| !a.is_hide_set()) {
                man.render_options_section(&mut out)
            } else {
                Ok(())
            }
        })
        .and_then(|()| {
            if visible_subcommands(cmd).is_empty() {
                Ok(())
            } else {
                man.render_subcommands_section(&mut out)
            }
        });
    rendered.unwrap_or_else(|err| panic!("rendering {name}: {err}"));
    let mut text = String::from_utf8(out).unwrap_or_else(|err| panic!("{name}: {err}"));
    for section in extra {
        text.push_str(&format!(".SH \"{}\"\n", section.title));
        text.push_str(&section.roff.to_roff());
    }
    text
}

fn paragraph(roff: &mut Roff, text: &str) {
    roff.control("PP", []).text([roman(text)]);
}

/// A `.TP` entry: a bold term, then its description.
fn term(roff: &mut Roff, name: &str, description: &str) {
    roff.control("TP", [])
        .text([bold(name)])
        .text([roman(description)]);
}

/// Lines shown as typed, one per line.
fn example(roff: &mut Roff, what: &str, lines: &[&str]) {
    paragraph(roff, what);
    roff.control("PP", [])
        .control("RS", ["4"])
        .control("nf", []);
    for line in lines {
        roff.text([roman(*line)]);
    }
    roff.control("fi", []).control("RE", []);
}

fn exit_status_section(codes: impl Fn(u8) -> bool) -> Section {
    let mut roff = Roff::new();
    for (code, meaning) in git_ralph::exit::table() {
        if codes(code) {
            term(&mut roff, &code.to_string(), meaning);
        }
    }
    paragraph(
        &mut roff,
        "A closed standard output (a broken pipe, as in git ralph status | head -1) is not an error.",
    );
    Section {
        title: "EXIT STATUS",
        roff,
    }
}

/// A nested command (`hook claude-stop`): what it does and its options,
/// which its parent's page would otherwise not name.
fn nested_section(nested: &Command) -> Section {
    let mut roff = Roff::new();
    if let Some(about) = nested.get_about() {
        paragraph(&mut roff, &about.to_string());
    }
    for arg in nested.get_arguments().filter(|arg| !arg.is_hide_set()) {
        let Some(long) = arg.get_long() else {
            continue;
        };
        if matches!(long, "help" | "version") {
            continue;
        }
        let value = arg
            .get_value_names()
            .map(|names| format!(" <{}>", names.join("> <")))
            .unwrap_or_default();
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        term(&mut roff, &format!("--{long}{value}"), &help);
    }
    Section {
        title: Box::leak(nested.get_name().to_uppercase().into_boxed_str()),
        roff,
    }
}

/// The web view's routes, from the server's own list.
fn routes_section() -> Section {
    let mut roff = Roff::new();
    let routes: Vec<String> = git_ralph::reference::web_routes()
        .into_iter()
        .map(|route| format!("{} {}", route.method, route.path))
        .collect();
    let lines: Vec<&str> = routes.iter().map(String::as_str).collect();
    example(
        &mut roff,
        "Every page needs the token. A run is named <change>, or history/<dir> for a run in \
         the history; a confirmation page and its action share a path, GET showing it and \
         POST acting:",
        &lines,
    );
    Section {
        title: "ROUTES",
        roff,
    }
}

fn configuration_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "git-ralph reads these keys with git config: a repository's own value (.git/config) \
         beats the global one (~/.gitconfig), which beats the system one. A flag given to \
         git ralph start beats them all, and the built-in default comes last. A malformed \
         value is an error that names the key, raised before anything is touched.",
    );
    for (key, meaning) in git_ralph::config::KEYS {
        term(&mut roff, key, meaning);
    }
    example(
        &mut roff,
        "For example, to allow five retries in this repository and let every run end on its branch:",
        &[
            "git config ralph.maxRetries 5",
            "git config --global ralph.onFinish keep",
        ],
    );
    Section {
        title: "CONFIGURATION",
        roff,
    }
}

fn files_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "Runs are recorded in the git directory (.git/ralph/ in a plain repository), never in \
         the worktree:",
    );
    for (path, meaning) in [
        (
            "<git-dir>/ralph/lock",
            "the PID and change of the running loop; one loop runs per repository",
        ),
        (
            "<git-dir>/ralph/<change>/state.json",
            "the run: status, stories, attempts, settings and totals; rewritten atomically, so \
             git ralph status can read it while the loop runs",
        ),
        (
            "<git-dir>/ralph/<change>/events.jsonl",
            "every event of the run, one JSON object per line",
        ),
        (
            "<git-dir>/ralph/<change>/attempts/<story>-<n>.jsonl",
            "the raw output of the agent for attempt <n> at a story",
        ),
        (
            "<git-dir>/ralph/<change>/attempts/<story>-<n>.prompt.md",
            "the prompt that attempt received",
        ),
        (
            "<git-dir>/ralph/<change>/learnings.md",
            "what the agents learned, appended by them and shown to later attempts and stories, \
             newest first; a revert never touches it, and finish and abort keep it",
        ),
        (
            "<git-dir>/ralph/<change>/issues.json",
            "with --source github or beads: the issues as read when the run began",
        ),
        (
            "<git-dir>/ralph/<change>/tasks.md",
            "with --source github or beads: the run's tracking file, one section per issue \
             holding the boxes of its task list, ticked by the agent; the issues themselves \
             are never changed",
        ),
        (
            "<git-dir>/ralph/<change>/tasks.checkpoint.md",
            "tasks.md as of the last checkpoint: a failed attempt's ticks are taken back from \
             it, as its work is reverted",
        ),
        (
            "<git-dir>/ralph/<change>/receipts.txt",
            "the trailers of every checkpoint commit, kept after a cleanup squashes them away",
        ),
        (
            "<git-dir>/ralph/<change>/pull-request.md",
            "the pull request's description finish --pr wrote from the run's record, kept to \
             open it by hand when gh could not",
        ),
        (
            "<git-dir>/ralph/prompt.md",
            "a prompt template for this repository, used instead of the built-in one",
        ),
        (
            "<git-dir>/ralph/plans/<change>/<n>/",
            "the record of git ralph plan: plan.json (each try's prompt, output, tokens, cost, \
             what was undone and what the reader said; the totals), the prompts and raw output \
             under attempts/, and with --refine the plan as it was under before/",
        ),
        (
            "<git-dir>/ralph/serve-token",
            "the token git ralph serve asks of every request, readable by its owner only; \
             kept so that a server started again serves the pages left open, and replaced \
             by serve --new-token",
        ),
        (
            "<git-dir>/ralph/history/",
            "the files of finished or aborted runs whose change was started again, one \
             directory per run (git ralph status --all lists them)",
        ),
    ] {
        term(&mut roff, path, meaning);
    }
    Section {
        title: "FILES",
        roff,
    }
}

fn issues_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "With --source github or --source beads, the stories are a tracker's open issues, one \
         story each, and CHANGE names the run (its branch is ralph/<CHANGE>). The issues are \
         read once, when the run begins; resuming reads the run's own record. Each issue's \
         task list (- [ ] lines of its text) gives the story's tasks; an issue without one is \
         a single task. The tasks are ticked in the run's own tracking file, \
         <git-dir>/ralph/<change>/tasks.md, never in the worktree and never in the tracker.",
    );
    term(
        &mut roff,
        "--source github",
        "the open issues with the label --label (default ralph), from `gh issue list --label \
         <label> --state open --limit 10000 --json number,title,body,labels,state,url`, or \
         from a file that command wrote (--issues FILE). Of each issue, number (the story id), \
         title, body, labels, state and url are read. They are worked oldest first; a line of \
         the body that starts with \"Depends on #N\" or \"Blocked by #N\" makes the issue \
         wait for #N (the references it lists, of this repository). A list as long as the \
         limit is said to be cut, and a dependency it may have left out is refused. \
         Nothing is written to GitHub unless --comment is given: then each finished story's \
         issue gets one comment (gh issue comment) naming its checkpoint.",
    );
    term(
        &mut roff,
        "--source beads",
        "the issues of .beads/issues.jsonl (or --issues FILE) whose status is open, \
         in_progress or blocked: id, title, description, design, notes, acceptance_criteria, \
         status, priority, issue_type, labels, created_at and dependencies are read. They are \
         worked by priority (0 first), a blocks dependency and an epic's children first. \
         Nothing is closed in beads: finish lists the finished issues with the bd close \
         command that closes them.",
    );
    Section {
        title: "ISSUES AS STORIES",
        roff,
    }
}

fn roles_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "With --roles (ralph.roles, or roles in ralph.toml), each story goes through a \
         pipeline of roles, in this order: coder, reviewer, tester, qa (any of them). Each role \
         is a loop of its own over the story: a fresh agent per iteration (RALPH_ROLE in its \
         environment), its own prompt, promise, verification and bound. The coder does the \
         story; its pass is kept under its attempt's ref, not on the branch. A reviewer or qa \
         only looks: files it changes are undone and reported. A tester's tests are kept only \
         when its gate passes. A role that does not pass sends the story back to the coder \
         with its findings, word for word in the coder's next prompt, and the pipeline goes on \
         at that role once the coder passes again. Every iteration counts against its role's \
         max_iterations; a role out of iterations stops the run (exit 3), named. The story's \
         one checkpoint is made once the last role passed, with a Ralph-Role trailer per role. \
         --max-retries does not apply to a pipeline.",
    );
    term(
        &mut roff,
        "defaults",
        "coder: 15 iterations, IMPLEMENTATION_COMPLETE, external; reviewer: 5, REVIEW_PASSED, \
         semantic; tester: 10, TESTS_PASSED, external; qa: 5, QA_PASSED, multi_stage. A \
         verification with nothing to run (external without a command, semantic without \
         patterns or a verifier, multi_stage without stages) falls back to the story's \
         contract: its checks, or the promise alone; start --dry-run says so.",
    );
    term(
        &mut roff,
        "keys",
        "[roles] pipeline = [...] (or roles = [...] alone), then [roles.<role>] with enabled, \
         promise, description, max_iterations, agent, agent_command, model, prompt (a \
         template file replacing the role's built-in prompt) and verification (a method's \
         name, or a table with method and its settings: command, success_exit_code, \
         output_contains, output_not_contains, timeout, working_dir; check_for, \
         negative_patterns, agent, command, model; stages with required, require_all). \
         [story.\"<id>\".roles.<role>] takes the same keys for one story, over the role's. \
         --role-agent ROLE=PRESET, --role-agent-command ROLE=CMD and --role-model ROLE=MODEL \
         choose a role's agent over all of them.",
    );
    Section {
        title: "ROLE PIPELINE",
        roff,
    }
}

fn worktree_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "With --worktree (or ralph.worktree), the whole loop works in a linked worktree of its \
         own on ralph/<CHANGE>, and your worktree is never touched: not its HEAD, its index, \
         its files or your stashes. It is made in-process as git worktree add would make it, \
         and locked while the run lives, with a reason that git worktree list shows. By \
         default it is <your worktree>.ralph/<CHANGE>, beside yours, the same on every resume; \
         --worktree PATH puts it elsewhere, never inside your worktree. The initial-state \
         commit holds your uncommitted work, which your worktree keeps too. status, watch, \
         log, show, finish and abort work from either worktree. A run killed mid-attempt \
         resumes in the same worktree; one whose worktree was deleted has it made again from \
         the branch. Branches you move in your own worktree meanwhile, as its HEAD log shows, \
         are yours and are left alone.",
    );
    term(
        &mut roff,
        "finish --keep",
        "the branch stays; the run's worktree is removed",
    );
    term(
        &mut roff,
        "finish --cleanup",
        "the run's work is written into your worktree as uncommitted changes (your index is \
         left alone), only if you changed none of the paths it changed since the run began; \
         otherwise nothing is done and the paths are named",
    );
    term(
        &mut roff,
        "abort",
        "the run's worktree is removed and the branch deleted; your worktree stays exactly as \
         it is",
    );
    paragraph(
        &mut roff,
        "Anything left uncommitted in the run's worktree is kept under \
         refs/ralph/<change>/interrupted/ before the worktree is removed.",
    );
    Section {
        title: "WORKTREE",
        roff,
    }
}

fn refs_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "Nothing an agent writes is lost: it is either a checkpoint commit or kept under a ref.",
    );
    for (name, meaning) in [
        (
            "refs/heads/ralph/<change>",
            "the run's branch: the initial-state commit (your uncommitted work), then one \
             checkpoint commit per finished story",
        ),
        (
            "refs/ralph/<change>/attempts/<story>/<n>",
            "the work of failed attempt <n> at a story, preserved before the worktree was reverted",
        ),
        (
            "refs/ralph/<change>/original",
            "what abort needs to restore the exact pre-start state",
        ),
        (
            "refs/ralph/<change>/finished",
            "the branch's tip after finish --cleanup deleted the branch",
        ),
        (
            "refs/ralph/<change>/aborted",
            "the branch's tip after abort deleted the branch",
        ),
        (
            "refs/ralph/<change>/replaced",
            "the tip an older ralph/<change> branch had when a new run reset it",
        ),
        (
            "refs/ralph/<change>/interrupted/*, refs/ralph/<change>/strays/*",
            "work set aside at finish (or left in a run's own worktree at finish or abort), \
             and commits an agent made behind the loop's back",
        ),
        (
            "refs/ralph/<change>/attempts/<story>/<n>-refs/*",
            "what an agent left on a branch or tag it must not touch; the branch or tag \
             itself is put back where it was",
        ),
        (
            "refs/ralph/<change>/setup-failure/*",
            "anything left by an agent command that could not be run at all",
        ),
        (
            "refs/ralph/<change>/plan/*",
            "git ralph plan: at plan/<n>/<try>, the whole work of a try whose agent changed \
             files outside the plan, kept before they were reverted; under <try>-refs/, what it \
             left on a branch or tag; at <try>-head, where it left HEAD detached",
        ),
        (
            "refs/ralph/<change>/history/<run>/*",
            "every ref of an earlier run of the change, moved aside when the change was \
             started again",
        ),
    ] {
        term(&mut roff, name, meaning);
    }
    Section {
        title: "REFS",
        roff,
    }
}

fn environment_section() -> Section {
    let mut roff = Roff::new();
    term(
        &mut roff,
        "NO_COLOR",
        "when set and not empty, no colour is used; without it, colour is used only on a terminal",
    );
    paragraph(
        &mut roff,
        "Each agent process gets RALPH_CHANGE, RALPH_STORY, RALPH_ATTEMPT and RALPH_PROMPT_FILE, \
         and RALPH_LEARNINGS_FILE unless --no-learnings is given. A planning agent (git ralph \
         plan) gets RALPH_CHANGE, RALPH_PLAN (the change's folder or the file it writes), \
         RALPH_ATTEMPT and RALPH_PROMPT_FILE.",
    );
    paragraph(
        &mut roff,
        "git push (finish --push and --pr) runs with GIT_TERMINAL_PROMPT=0 and GCM_INTERACTIVE=never, \
         and with GIT_SSH_COMMAND='ssh -o BatchMode=yes' unless GIT_SSH_COMMAND, GIT_SSH or \
         core.sshCommand is set; gh and glab run with their prompts off. gh reads GH_TOKEN and glab \
         GITLAB_TOKEN, as in CI.",
    );
    Section {
        title: "ENVIRONMENT",
        roff,
    }
}

fn prompt_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "The prompt of each attempt is rendered from a template: --prompt-template, else \
         <git-dir>/ralph/prompt.md, else the built-in one. A template uses {{name}} \
         placeholders; an unknown name is an error. The placeholders are:",
    );
    for (name, meaning) in git_ralph::prompt::VARIABLES {
        term(&mut roff, &format!("{{{{{name}}}}}"), meaning);
    }
    paragraph(
        &mut roff,
        "An agent may ask a person a question. An attempt whose final message ends with a \
         question and no promise parks its story: outcome \"question\", no retry spent, its \
         work kept under the attempt's ref and the worktree reverted, while the stories that do \
         not depend on it go on. git ralph answer <change> <story> records the answer; the next \
         attempt's {{answers}} section (added in front of a template without it) gives every \
         question of the story with its answer, word for word. With --no-questions (or \
         ralph.questions = false) nobody answers: the built-in template says so, such an \
         attempt counts as no signal, named \"the agent asked instead of working: \
         <question>\", and the {{retry}} section of the next prompt quotes the question and \
         asks the agent to decide itself and record the decision in the learnings file. The \
         learnings file, <git-dir>/ralph/<change>/learnings.md, \
         is created empty; the {{learnings}} section names it and asks the agent to append \
         what the next attempt must know. After each attempt, git-ralph heads what it \
         appended with \"## Attempt <n> at story <id>\"; prompts show the entries newest first, \
         at most 8 KiB, and say when older ones are left out. In prompt mode (--prompt) the \
         section follows the prompt file's text.",
    );
    Section {
        title: "PROMPT TEMPLATE",
        roff,
    }
}

fn keys_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "The loop screen shows the run: a header with the change, branch, story n/N, attempt \
         n/max, elapsed time, tokens, cost and agent; the stories with their state and attempts \
         on the left; the selected attempt on the right, in the views Output (the agent's \
         messages and tool calls, in full), Prompt, Diff (against the checkpoint it started \
         from; live while the attempt runs), Checks and Events. The keys:",
    );
    for (key, meaning) in git_ralph::ui::tui::KEYS {
        term(&mut roff, key, meaning);
    }
    paragraph(
        &mut roff,
        "git ralph with no subcommand, on a terminal, opens the selection screen: the \
         repository's OpenSpec changes and every run with its state. Its keys:",
    );
    for (key, meaning) in git_ralph::ui::tui::SELECTION_KEYS {
        term(&mut roff, key, meaning);
    }
    paragraph(
        &mut roff,
        "The preview shows the stories with their tasks, the exact first prompt, the agent's \
         command line, the contract and the guardrails. Its keys:",
    );
    for (key, meaning) in git_ralph::ui::tui::PREVIEW_KEYS {
        term(&mut roff, key, meaning);
    }
    Section {
        title: "KEYS",
        roff,
    }
}

fn contract_section() -> Section {
    let mut roff = Roff::new();
    paragraph(
        &mut roff,
        "A story is done only when its boxes are ticked (or prd.json passes), the verification \
         method passes, and every check passes. Checks come from ralph.check in git config, \
         --check flags, and two optional TOML files: ralph.toml at the repository root and \
         ralph.toml in the OpenSpec change's directory, the second refining the first. The \
         contract is snapshotted into <git-dir>/ralph/<change>/ at start; an attempt that edits \
         a contract file or a protected path is refused. Methods: string_match (the promise \
         token), external (a command's exit code and output), semantic (negative patterns on \
         the attempt's diff, then a verifier agent answering VERIFIED or NOT_VERIFIED: reason; \
         if the verifier fails, string_match decides and a warning is printed) and multi_stage \
         (ordered stages; the first failing required stage names itself; optional stages warn). \
         Every key is optional; an unknown key or a wrong type is an error naming the line:",
    );
    paragraph(
        &mut roff,
        "A claim of completion whose only change is ticking boxes in the tracking file (or \
         prd.json's passes fields), or that changes nothing at all, is accepted but flagged: a \
         flag event, a mark in status, and a Ralph-Flag trailer on its checkpoint. With \
         --require-change, ralph.requireChange or require_change = true (for the whole contract \
         or one story), a tick-only claim is rejected as \"no change besides ticking boxes\"; \
         require_change = false on a story exempts it.",
    );
    paragraph(
        &mut roff,
        "Every checkpoint commit carries trailers that git interpret-trailers --parse reads: \
         Ralph-Change, Ralph-Story, Ralph-Attempt (<n> of <max>), Ralph-Agent (the preset and \
         the version its CLI gives, then the model; or command and its text, with the model only \
         when one was set), Ralph-Tokens and Ralph-Cost (each when the agent reported it), Ralph-Checks (<name> passed, and so on, when checks ran) and Ralph-Flag (when flagged). \
         They are also appended to <git-dir>/ralph/<change>/receipts.txt, since finish \
         --cleanup squashes the checkpoints away.",
    );
    let lines: Vec<&str> = git_ralph::contract::FORMAT_EXAMPLE.lines().collect();
    example(&mut roff, "For example, with every key:", &lines);
    Section {
        title: "CONTRACT FILES",
        roff,
    }
}

fn see_also_section(cmd: &Command, this: Option<&str>) -> Section {
    let mut pages: Vec<String> = Vec::new();
    if this.is_some() {
        pages.push("git-ralph(1)".into());
    }
    for sub in visible_subcommands(cmd) {
        if Some(sub.get_name()) != this {
            pages.push(format!("git-ralph-{}(1)", sub.get_name()));
        }
    }
    pages.push("git-config(1)".into());
    let mut roff = Roff::new();
    roff.text([roman(pages.join(", "))]);
    Section {
        title: "SEE ALSO",
        roff,
    }
}

fn examples_section(sub: Option<&str>) -> Option<Section> {
    let mut roff = Roff::new();
    match sub {
        None => {
            example(
                &mut roff,
                "Watch a loop work on a throwaway repository, offline:",
                &["git ralph demo"],
            );
            example(
                &mut roff,
                "Work through the OpenSpec change openspec/changes/add-dark-mode/ with Claude Code, \
                 then look at it from another terminal:",
                &["git ralph start add-dark-mode", "git ralph status"],
            );
            example(
                &mut roff,
                "When the loop ends, keep its branch (one commit per story), or go back to your \
                 branch with all the work uncommitted, or undo the whole run:",
                &[
                    "git ralph finish add-dark-mode --keep",
                    "git ralph finish add-dark-mode --cleanup",
                    "git ralph abort add-dark-mode",
                ],
            );
            example(
                &mut roff,
                "Look at the work of a failed attempt:",
                &["git show refs/ralph/add-dark-mode/attempts/2/1"],
            );
        }
        Some("start") => {
            example(
                &mut roff,
                "Work through an OpenSpec change with the default agent (Claude Code):",
                &["git ralph start add-dark-mode"],
            );
            example(
                &mut roff,
                "Work through a markdown checklist with another agent CLI, which reads the \
                 prompt on its standard input, and stay on the branch at the end:",
                &[
                    "git ralph start tidy-up --tasks TODO.md --agent-command 'my-agent --stdin' --on-finish keep",
                ],
            );
            example(
                &mut roff,
                "Work through the open GitHub issues labelled ralph (through gh), and comment \
                 on each finished one; or read them from a file gh exported:",
                &[
                    "git ralph start issues --source github --comment",
                    "gh issue list --label ralph --state open --limit 10000 --json number,title,body,labels,state,url > ../issues.json",
                    "git ralph start issues --source github --issues ../issues.json",
                ],
            );
            example(
                &mut roff,
                "Work through the open beads issues, by priority, dependencies first:",
                &["git ralph start backlog --source beads"],
            );
            example(
                &mut roff,
                "Stream the events as JSON lines to a program, here only each attempt's end:",
                &[
                    "git ralph start add-dark-mode --json --on-finish keep | jq -c 'select(.type == \"attempt_finished\")'",
                ],
            );
            example(
                &mut roff,
                "Work in a worktree of its own beside yours, and go on working in yours \
                 meanwhile:",
                &["git ralph start add-dark-mode --worktree"],
            );
            example(
                &mut roff,
                "Resume a run that was stopped (Ctrl-C or q):",
                &["git ralph start add-dark-mode"],
            );
        }
        Some("plan") => {
            example(
                &mut roff,
                "Have the agent write the OpenSpec change openspec/changes/add-dark-mode/, then \
                 run it:",
                &[
                    "git ralph plan add-dark-mode \"a dark theme the user can switch to, remembered across visits\"",
                    "git ralph start add-dark-mode",
                ],
            );
            example(
                &mut roff,
                "Plan from a longer brief, or from a GitHub issue, with another agent:",
                &[
                    "git ralph plan search --from notes/search.md --agent codex",
                    "git ralph plan fix-login --issue 42",
                ],
            );
            example(
                &mut roff,
                "Write a prd.json or a markdown checklist instead:",
                &[
                    "git ralph plan onboarding \"a first-run tour\" --prd prd.json",
                    "git ralph plan tidy-up \"remove the dead code\" --tasks TODO.md",
                ],
            );
            example(
                &mut roff,
                "Split the stories that grew too big, keeping what is done:",
                &["git ralph plan add-dark-mode --refine --max-tasks 6"],
            );
        }
        Some("status") => {
            example(&mut roff, "Show the only run:", &["git ralph status"]);
            example(
                &mut roff,
                "Count the finished stories of a run:",
                &["git ralph status add-dark-mode --json | jq .stories_done"],
            );
        }
        Some("abort") => {
            example(
                &mut roff,
                "Stop the loop, if one runs, and go back to exactly where you started:",
                &["git ralph abort add-dark-mode"],
            );
        }
        Some("finish") => {
            example(
                &mut roff,
                "Stay on ralph/add-dark-mode, one commit per finished story:",
                &["git ralph finish add-dark-mode --keep"],
            );
            example(
                &mut roff,
                "Go back to the original branch with all the work as uncommitted changes:",
                &["git ralph finish --cleanup"],
            );
            example(
                &mut roff,
                "Keep the run and push ralph/add-dark-mode to the remote, then open a draft pull \
                 request (or update the one already open) and print its address:",
                &[
                    "git ralph finish add-dark-mode --push",
                    "git ralph finish add-dark-mode --pr --draft",
                ],
            );
        }
        Some("demo") => {
            example(&mut roff, "Watch the demo:", &["git ralph demo"]);
            example(
                &mut roff,
                "Run it unattended and clean up at the end, as a smoke test:",
                &["git ralph demo --on-finish cleanup --pace 50 </dev/null"],
            );
        }
        Some("serve") => {
            example(
                &mut roff,
                "Serve the runs of this repository to a browser on this machine, and open the \
                 URL it prints:",
                &["git ralph serve"],
            );
            example(
                &mut roff,
                "Follow a run left going on a machine reached over SSH: forward the port, then \
                 open the printed URL on your own machine:",
                &[
                    "ssh -L 7574:127.0.0.1:7574 devbox",
                    "git ralph serve add-dark-mode",
                ],
            );
            example(
                &mut roff,
                "Start a run and serve it at once:",
                &["git ralph start add-dark-mode --serve"],
            );
        }
        Some("agents") => {
            example(
                &mut roff,
                "See which agent CLIs are installed, and the command line each would run here:",
                &["git ralph agents"],
            );
            example(
                &mut roff,
                "Then run one of them:",
                &["git ralph start add-dark-mode --agent codex"],
            );
        }
        Some(_) => return None,
    }
    Some(Section {
        title: "EXAMPLES",
        roff,
    })
}

fn man_pages() -> Vec<(PathBuf, String)> {
    let cmd = cli();
    let mut pages = Vec::new();
    let mut main = vec![
        keys_section(),
        configuration_section(),
        files_section(),
        refs_section(),
        environment_section(),
        exit_status_section(|_| true),
    ];
    main.extend(examples_section(None));
    main.push(see_also_section(&cmd, None));
    pages.push((
        PathBuf::from("man/man1/git-ralph.1"),
        render_page(&cmd, main),
    ));

    for sub in visible_subcommands(&cmd) {
        let name = sub.get_name();
        let runs_loop = LOOP_COMMANDS.contains(&name);
        let mut extra = Vec::new();
        if name == "start" {
            extra.push(configuration_section());
            extra.push(issues_section());
            extra.push(prompt_section());
            extra.push(contract_section());
            extra.push(roles_section());
            extra.push(worktree_section());
        }
        if name == "watch" || name == "start" {
            extra.push(keys_section());
        }
        if name == "serve" {
            extra.push(routes_section());
        }
        extra.extend(visible_subcommands(sub).into_iter().map(nested_section));
        extra.push(files_section());
        let plans = name == "plan";
        extra.push(exit_status_section(|code| {
            runs_loop || code <= 2 || (plans && matches!(code, 3 | 8 | 70 | 130))
        }));
        extra.extend(examples_section(Some(name)));
        extra.push(see_also_section(&cmd, Some(name)));
        pages.push((
            PathBuf::from(format!("man/man1/git-ralph-{name}.1")),
            render_page(sub, extra),
        ));
    }
    pages
}

// ---------------------------------------------------------------------------
// Completions

/// The command line as the completion scripts see it: hidden subcommands
/// left out, and each option's value completed by what it holds: files for
/// FILE, commands for CMD, the presets for --agent, nothing for numbers and
/// other free text.
fn completion_model(bin_name: &'static str) -> Command {
    // Unbuilt, so that clap_complete names the subcommands after `bin_name`.
    let cli = git_ralph::cli::Cli::command();
    let mut model = Command::new(bin_name)
        .about(cli.get_about().cloned().unwrap_or_default())
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .disable_help_subcommand(true);
    for sub in visible_subcommands(&cli) {
        let mut sub = sub.clone();
        let ids: Vec<String> = sub
            .get_arguments()
            .map(|arg| arg.get_id().to_string())
            .collect();
        for id in ids {
            sub = sub.mut_arg(id, hint_value);
        }
        model = model.subcommand(sub);
    }
    model
}

fn hint_value(arg: Arg) -> Arg {
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values())
        || matches!(arg.get_action(), ArgAction::Set | ArgAction::Append);
    if arg.is_positional() || !takes_value || !arg.get_possible_values().is_empty() {
        return arg;
    }
    if arg.get_id() == "agent" {
        return arg.value_parser(clap::builder::PossibleValuesParser::new(
            git_ralph::agent::presets::PRESETS,
        ));
    }
    let value_name = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|name| name.to_string())
        .unwrap_or_default();
    match value_name.as_str() {
        "FILE" => arg.value_hint(ValueHint::FilePath),
        "DIR" => arg.value_hint(ValueHint::DirPath),
        "CMD" => arg.value_hint(ValueHint::CommandString),
        _ => arg.value_hint(ValueHint::Other),
    }
}

fn clap_completion(shell: Shell, bin_name: &'static str) -> String {
    let mut model = completion_model(bin_name);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut model, bin_name, &mut out);
    String::from_utf8(out).unwrap_or_else(|err| panic!("{shell} completion: {err}"))
}

/// `--opt` names of each subcommand's options that take a value, as bash
/// `case` branches.
fn bash_value_options(cmd: &Command) -> String {
    let mut branches = String::new();
    for sub in visible_subcommands(cmd) {
        let mut names: Vec<String> = Vec::new();
        for arg in sub.get_opts() {
            if !arg.get_num_args().is_some_and(|n| n.takes_values()) {
                continue;
            }
            names.extend(arg.get_long().map(|l| format!("--{l}")));
            names.extend(arg.get_short().map(|s| format!("-{s}")));
        }
        if !names.is_empty() {
            let _ = writeln!(
                branches,
                "        {}) case $2 in {}) return 0 ;; esac ;;",
                sub.get_name(),
                names.join("|")
            );
        }
    }
    branches
}

fn change_subcommands(cmd: &Command) -> Vec<String> {
    visible_subcommands(cmd)
        .into_iter()
        .filter(|sub| takes_change(sub))
        .map(|sub| sub.get_name().to_owned())
        .collect()
}

const HEADER: &str = "Generated from the clap definitions by `UPDATE_GENERATED=1 cargo test --test integration generated::`; do not edit.";

fn bash_completion() -> String {
    let cmd = cli();
    let clap = clap_completion(Shell::Bash, "_git_ralph_clap");
    let tail = "\nif [[ \"${BASH_VERSINFO[0]}\" -eq 4";
    let Some(end) = clap.find(tail) else {
        panic!("clap_complete's bash script no longer ends with its `complete` lines:\n{clap}");
    };
    assert!(
        clap.starts_with("__git_ralph_clap() {"),
        "clap_complete's bash function is no longer named after the binary:\n{clap}"
    );
    let clap = &clap[..end];
    format!(
        r#"# bash completion for git-ralph                              -*- shell-script -*-
# {HEADER}
#
# Completes `git-ralph <TAB>` and, through git's own completion, which calls
# _git_ralph, `git ralph <TAB>`: subcommands, options, option values and the
# names of changes. bash-completion loads this file on demand from
# <prefix>/share/bash-completion/completions/git-ralph, both for git-ralph and
# (git's completion asks it to) for `git ralph`. Without bash-completion,
# source this file from ~/.bashrc after git's completion script.

# Subcommands, options and option values, as clap_complete writes them.
{clap}
# The changes a command can name, one per line: the OpenSpec changes of this
# worktree (openspec/changes/*/, not the archive) and the runs recorded in
# the git directory.
__git_ralph_changes ()
{{
    local top gitdir dir
    top=$(git rev-parse --show-toplevel 2>/dev/null) || return 0
    for dir in "$top"/openspec/changes/*/; do
        [[ -d $dir ]] || continue
        dir=${{dir%/}}
        dir=${{dir##*/}}
        [[ $dir == archive ]] || printf '%s\n' "$dir"
    done
    gitdir=$(git rev-parse --absolute-git-dir 2>/dev/null) || return 0
    for dir in "$gitdir"/ralph/*/; do
        [[ -f ${{dir}}state.json ]] || continue
        dir=${{dir%/}}
        printf '%s\n' "${{dir##*/}}"
    done
}}

# Does option $2 of subcommand $1 take a value (in the next word)?
__git_ralph_takes_value ()
{{
    case $1 in
{value_options}    esac
    return 1
}}

# Completes the words that follow it, "git-ralph ARG...", with the cursor on
# word $1.
__git_ralph_complete ()
{{
    local cword=$1
    shift
    local -a argv=("$@")
    local cur=${{argv[cword]}} prev=${{argv[cword-1]}}
    local sub= word i positionals=0 value_next=
    for ((i = 1; i < cword; i++)); do
        word=${{argv[i]}}
        if [[ -n $value_next ]]; then
            value_next=
        elif [[ $word == -* ]]; then
            [[ -n $sub ]] && __git_ralph_takes_value "$sub" "$word" && value_next=1
        elif [[ -z $sub ]]; then
            sub=$word
        else
            ((positionals++))
        fi
    done
    if [[ -z $value_next && $cur != -* && $positionals -eq 0 ]]; then
        case $sub in
            {change_subcommands})
                COMPREPLY=($(compgen -W "$(__git_ralph_changes | sort -u)" -- "$cur"))
                ((${{#COMPREPLY[@]}})) && return 0
                ;;
        esac
    fi
    local -a COMP_WORDS=("${{argv[@]}}")
    local COMP_CWORD=$cword
    __git_ralph_clap "${{argv[0]}}" "$cur" "$prev"
}}

# `git-ralph ...`
__git_ralph_main ()
{{
    COMPREPLY=()
    __git_ralph_complete "$COMP_CWORD" "${{COMP_WORDS[@]}}"
}}

# `git ralph ...`: git's completion has split the line into words and set
# cword, and since git 2.31 __git_cmd_idx, the index of `ralph`.
_git_ralph ()
{{
    local idx=${{__git_cmd_idx-}}
    if [[ -z $idx ]]; then
        for ((idx = 1; idx < cword; idx++)); do
            [[ ${{words[idx]}} == ralph ]] && break
        done
    fi
    # git's completion adds its own trailing spaces; these words need bash's.
    compopt +o nospace 2>/dev/null
    COMPREPLY=()
    __git_ralph_complete "$((cword - idx))" git-ralph "${{words[@]:idx+1}}"
}}

if [[ ${{BASH_VERSINFO[0]}} -gt 4 || ${{BASH_VERSINFO[0]}} -eq 4 && ${{BASH_VERSINFO[1]}} -ge 4 ]]; then
    complete -F __git_ralph_main -o nosort -o bashdefault -o default git-ralph
else
    complete -F __git_ralph_main -o bashdefault -o default git-ralph
fi
"#,
        value_options = bash_value_options(&cmd),
        change_subcommands = change_subcommands(&cmd).join("|"),
    )
}

fn zsh_completion() -> String {
    let cmd = cli();
    let mut script = clap_completion(Shell::Zsh, "git-ralph");
    // Positional change arguments complete change names instead of files.
    let mut replaced = 0;
    let lines: Vec<String> = script
        .lines()
        .map(|line| {
            let is_change = line.starts_with("':change -- ") || line.starts_with("'::change -- ");
            if is_change && line.ends_with(":_default' \\") {
                replaced += 1;
                format!(
                    "{}:__git_ralph_changes' \\",
                    &line[..line.len() - ":_default' \\".len()]
                )
            } else {
                line.to_owned()
            }
        })
        .collect();
    assert_eq!(
        replaced,
        change_subcommands(&cmd).len(),
        "clap_complete's zsh script no longer has one `:change` spec per subcommand:\n{script}"
    );
    script = lines.join("\n") + "\n";
    let dispatch = "if [ \"$funcstack[1]\" = \"_git-ralph\" ]; then";
    let Some(at) = script.find(dispatch) else {
        panic!("clap_complete's zsh script no longer ends with its dispatch:\n{script}");
    };
    let Some(first_line_end) = script.find('\n') else {
        panic!("empty zsh script");
    };
    let (head, tail) = script.split_at(at);
    format!(
        "{first}\n# {HEADER}\n#\n# Completes `git-ralph <TAB>` and, through zsh's git completion, which calls\n# _git-ralph, `git ralph <TAB>`. Install it as _git-ralph in a directory of\n# $fpath (e.g. <prefix>/share/zsh/site-functions) before compinit runs.\n{rest}\
(( $+functions[__git_ralph_changes] )) ||\n\
__git_ralph_changes() {{\n\
    # The OpenSpec changes of this worktree (not the archive) and the runs\n\
    # recorded in the git directory.\n\
    local top gitdir expl\n\
    local -a changes\n\
    top=$(git rev-parse --show-toplevel 2>/dev/null) || return 1\n\
    changes=(\"$top\"/openspec/changes/*(N/:t))\n\
    changes=(${{changes:#archive}})\n\
    gitdir=$(git rev-parse --absolute-git-dir 2>/dev/null) &&\n\
        changes+=(\"$gitdir\"/ralph/*/state.json(N:h:t))\n\
    _wanted changes expl change compadd - ${{(u)changes}}\n\
}}\n\n{tail}",
        first = &head[..first_line_end],
        rest = &head[first_line_end..],
    )
}

fn fish_completion() -> String {
    let cmd = cli();
    let clap = clap_completion(Shell::Fish, "git-ralph");
    assert!(
        clap.contains("function __fish_git_ralph_using_subcommand"),
        "clap_complete's fish script no longer defines __fish_git_ralph_using_subcommand:\n{clap}"
    );
    format!(
        r#"# fish completion for git-ralph
# {HEADER}
#
# Completes `git-ralph <TAB>`, and `git ralph <TAB>` through the hook that
# git-ralph.conf.fish (installed in vendor_conf.d) adds to git's completions.

{clap}
# The OpenSpec changes of this worktree (not the archive) and the runs
# recorded in the git directory.
function __git_ralph_changes
    set -l top (command git rev-parse --show-toplevel 2>/dev/null)
    or return
    for dir in $top/openspec/changes/*/
        set -l name (string replace -r '.*/([^/]+)/$' '$1' -- $dir)
        test "$name" = archive
        or echo $name
    end
    set -l gitdir (command git rev-parse --absolute-git-dir 2>/dev/null)
    or return
    for file in $gitdir/ralph/*/state.json
        string replace -r '.*/([^/]+)/state.json$' '$1' -- $file
    end
end

complete -c git-ralph -n "__fish_git_ralph_using_subcommand {subs}" -f -a "(__git_ralph_changes | sort -u)" -d Change
"#,
        subs = change_subcommands(&cmd).join(" "),
    )
}

/// fish autoloads completions by command name, so `git ralph` needs a hook
/// in git's completions, set up at startup from a vendor_conf.d directory.
/// Some fish versions hand custom git commands over by themselves; fish drops
/// the duplicate candidates.
fn fish_git_hook() -> String {
    let about = cli()
        .get_about()
        .map(|about| about.to_string())
        .unwrap_or_default()
        .replace('\'', "\\'");
    format!(
        r#"# fish: `git ralph <TAB>` completes as `git-ralph <TAB>` does.
# {HEADER}
#
# Install it in a vendor_conf.d directory (e.g. <prefix>/share/fish/vendor_conf.d)
# or as ~/.config/fish/conf.d/git-ralph.fish.

# The words after `git [global options] ralph`, escaped; fails when the
# command line is not a `git ralph` one.
function __git_ralph_git_words
    set -l words (commandline -opc)
    set -e words[1]
    set -l found 0
    set -l skip 0
    set -l after
    for word in $words
        if test $found = 1
            set -a after $word
        else if test $skip = 1
            set skip 0
        else
            switch $word
                case -C -c --git-dir --work-tree --namespace --exec-path --config-env
                    set skip 1
                case '-*'
                case ralph
                    set found 1
                case '*'
                    return 1
            end
        end
    end
    test $found = 1
    or return 1
    string escape -- $after
    return 0
end

# Is the cursor on git's subcommand?
function __git_ralph_git_needs_command
    set -l words (commandline -opc)
    set -e words[1]
    set -l skip 0
    for word in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $word
            case -C -c --git-dir --work-tree --namespace --exec-path --config-env
                set skip 1
            case '-*'
            case '*'
                return 1
        end
    end
    return 0
end

function __git_ralph_git_complete
    set -l words (__git_ralph_git_words)
    complete -C (string join ' ' -- git-ralph $words)" "(commandline -ct)
end

complete -c git -n __git_ralph_git_needs_command -f -a ralph -d '{about}'
complete -c git -n '__git_ralph_git_words >/dev/null' -f -a '(__git_ralph_git_complete)'
"#
    )
}

fn completions() -> Vec<(PathBuf, String)> {
    vec![
        (
            PathBuf::from("completions/git-ralph.bash"),
            bash_completion(),
        ),
        (PathBuf::from("completions/_git-ralph"), zsh_completion()),
        (
            PathBuf::from("completions/git-ralph.fish"),
            fish_completion(),
        ),
        (
            PathBuf::from("completions/git-ralph.conf.fish"),
            fish_git_hook(),
        ),
    ]
}

// ---------------------------------------------------------------------------
// The guides' tables

fn markdown_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;")
}

/// Each generated table: the guide that holds it, its marker's name, and
/// the table.
fn guide_tables() -> Vec<(&'static str, &'static str, String)> {
    let mut config = String::from("| key | what it sets |\n|---|---|\n");
    for (key, meaning) in git_ralph::config::KEYS {
        let _ = writeln!(
            config,
            "| `{key}` | {} |",
            markdown_cell(meaning).replace("&lt;", "<")
        );
    }
    let mut exit = String::from("| status | meaning |\n|---|---|\n");
    for (code, meaning) in git_ralph::exit::table() {
        let _ = writeln!(exit, "| {code} | {} |", markdown_cell(meaning));
    }
    let mut keys = String::from("| key | what it does |\n|---|---|\n");
    for (key, meaning) in git_ralph::ui::tui::KEYS {
        let _ = writeln!(
            keys,
            "| {} | {} |",
            markdown_cell(key),
            markdown_cell(meaning)
        );
    }
    let mut home = String::from("| screen | key | what it does |\n|---|---|---|\n");
    for (screen, table) in [
        ("selection", git_ralph::ui::tui::SELECTION_KEYS),
        ("preview", git_ralph::ui::tui::PREVIEW_KEYS),
    ] {
        for (key, meaning) in table {
            let _ = writeln!(
                home,
                "| {screen} | {} | {} |",
                markdown_cell(key),
                markdown_cell(meaning)
            );
        }
    }
    vec![
        ("docs/configuration.md", "config-keys", config),
        ("docs/exit-status.md", "exit-status", exit),
        ("docs/screens.md", "tui-keys", keys),
        ("docs/screens.md", "home-keys", home),
    ]
}

/// Each guide that holds tables, with every `<!-- name:begin -->…<!--
/// name:end -->` block filled from its table.
fn guides() -> Vec<(PathBuf, String)> {
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for (rel, name, table) in guide_tables() {
        let at = match files.iter().position(|(path, _)| *path == Path::new(rel)) {
            Some(at) => at,
            None => {
                files.push((PathBuf::from(rel), read(rel)));
                files.len() - 1
            }
        };
        let text = &mut files[at].1;
        let begin = format!("<!-- {name}:begin (generated) -->\n");
        let end = format!("<!-- {name}:end -->");
        let (Some(start), Some(stop)) = (text.find(&begin), text.find(&end)) else {
            panic!("{rel} lacks the markers {begin:?} and {end:?}");
        };
        assert!(start < stop, "{rel} has {end:?} before {begin:?}");
        text.replace_range(start + begin.len()..stop, &table);
    }
    files
}

// ---------------------------------------------------------------------------
// The drift check

fn generated() -> Vec<(PathBuf, String)> {
    let mut files = man_pages();
    files.extend(completions());
    files.extend(guides());
    files
}

/// Files in the generated directories that nothing generates any more.
fn stale(files: &[(PathBuf, String)]) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for dir in ["man", "man/man1", "completions"] {
        let Ok(entries) = std::fs::read_dir(source_path(dir)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            // Generated directories are listed themselves.
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                continue;
            }
            let rel = Path::new(dir).join(entry.file_name());
            if !files.iter().any(|(path, _)| *path == rel) {
                stale.push(rel);
            }
        }
    }
    stale.sort();
    stale
}

fn first_difference(old: &str, new: &str) -> String {
    let mut old_lines = old.lines();
    for (n, new_line) in new.lines().enumerate() {
        match old_lines.next() {
            Some(old_line) if old_line == new_line => {}
            Some(old_line) => {
                return format!(
                    "line {}: committed {old_line:?}, generated {new_line:?}",
                    n + 1
                );
            }
            None => return format!("line {}: generated {new_line:?} is missing", n + 1),
        }
    }
    "the committed file has extra lines at the end".into()
}

#[test]
fn generated_files_are_up_to_date() {
    let files = generated();
    let update = std::env::var("UPDATE_GENERATED").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut problems = Vec::new();
    for (rel, content) in &files {
        let path = source_path(rel);
        match std::fs::read_to_string(&path) {
            Ok(old) if old == *content => {}
            old => {
                if update {
                    if let Some(dir) = path.parent() {
                        std::fs::create_dir_all(dir)
                            .unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
                    }
                    std::fs::write(&path, content)
                        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
                    eprintln!("updated {}", rel.display());
                } else {
                    problems.push(match old {
                        Ok(old) => format!(
                            "{} is out of date ({})",
                            rel.display(),
                            first_difference(&old, content)
                        ),
                        Err(err) => format!("{} cannot be read: {err}", rel.display()),
                    });
                }
            }
        }
    }
    for rel in stale(&files) {
        if update {
            let path = source_path(&rel);
            std::fs::remove_file(&path)
                .unwrap_or_else(|err| panic!("cannot remove {}: {err}", path.display()));
            eprintln!("removed {}", rel.display());
        } else {
            problems.push(format!("{} is no longer generated", rel.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "the generated files drifted from the clap definitions:\n  {}\nrefresh them with:\n  {REFRESH}",
        problems.join("\n  ")
    );
}

// ---------------------------------------------------------------------------
// What the generated files must say

fn page(files: &[(PathBuf, String)], name: &str) -> String {
    files
        .iter()
        .find(|(path, _)| path.file_name().is_some_and(|n| n == name))
        .map(|(_, text)| text.clone())
        .unwrap_or_else(|| panic!("{name} is not generated"))
}

/// The text of a roff page with its escapes undone, enough to search it.
fn plain(roff: &str) -> String {
    roff.replace("\\-", "-")
        .replace("\\(aq", "'")
        .replace("\\\\", "\\")
}

#[test]
fn every_subcommand_has_a_page_named_after_git_ralph() {
    let pages = man_pages();
    let cmd = cli();
    for sub in visible_subcommands(&cmd) {
        let name = format!("git-ralph-{}.1", sub.get_name());
        let text = page(&pages, &name);
        let title = format!("\n.TH GIT-RALPH-{} 1 ", sub.get_name().to_uppercase());
        assert!(text.contains(&title), "{name} has no title {title:?}");
        assert!(
            plain(&text).contains(&format!("git ralph {}", sub.get_name())),
            "{name} has no synopsis with `git ralph {}`",
            sub.get_name()
        );
    }
    let main = page(&pages, "git-ralph.1");
    assert!(main.contains("\n.TH GIT-RALPH 1 "));
    assert!(
        !pages
            .iter()
            .any(|(path, text)| path.to_string_lossy().contains("demo-agent")
                || text.contains("__demo")),
        "a hidden subcommand leaked into the man pages"
    );
}

#[test]
fn main_page_documents_configuration_files_exit_status_and_examples() {
    let text = plain(&page(&man_pages(), "git-ralph.1"));
    for section in [
        "DESCRIPTION",
        "OPTIONS",
        "CONFIGURATION",
        "FILES",
        "EXIT STATUS",
        "EXAMPLES",
        "SEE ALSO",
    ] {
        assert!(
            text.contains(&format!(".SH \"{section}\""))
                || text.contains(&format!(".SH {section}")),
            "git-ralph.1 has no {section} section"
        );
    }
    for (key, _) in git_ralph::config::KEYS {
        assert!(text.contains(key), "git-ralph.1 does not document {key}");
    }
    for (code, meaning) in git_ralph::exit::table() {
        assert!(
            text.contains(&format!(".TP\n\\fB{code}\\fR\n{}", plain(meaning))),
            "git-ralph.1 does not document exit status {code}"
        );
    }
    for file in ["state.json", "events.jsonl", "<git-dir>/ralph/lock"] {
        assert!(text.contains(file), "git-ralph.1 does not document {file}");
    }
    let start = plain(&page(&man_pages(), "git-ralph-start.1"));
    for (name, _) in git_ralph::prompt::VARIABLES {
        assert!(
            start.contains(&format!("{{{{{name}}}}}")),
            "git-ralph-start.1 does not document {{{{{name}}}}}"
        );
    }
}

#[test]
fn man_pages_render_without_warnings() {
    let Some(groff) = required_tool("groff") else {
        return;
    };
    for (path, text) in man_pages() {
        let file = tempfile::NamedTempFile::new().unwrap_or_else(|err| panic!("tempfile: {err}"));
        std::fs::write(file.path(), &text).unwrap_or_else(|err| panic!("write: {err}"));
        let output = std::process::Command::new(&groff)
            .args(["-man", "-ww", "-z", "-Tutf8"])
            .arg(file.path())
            .output()
            .unwrap_or_else(|err| panic!("cannot run groff: {err}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && stderr.trim().is_empty(),
            "groff warns about {}:\n{stderr}",
            path.display()
        );
    }
}

#[test]
fn completions_offer_every_subcommand_and_long_option() {
    let files = completions();
    let cmd = cli();
    for (path, text) in files
        .iter()
        .filter(|(path, _)| !path.ends_with("git-ralph.conf.fish"))
    {
        for sub in visible_subcommands(&cmd) {
            assert!(
                text.contains(sub.get_name()),
                "{} does not complete {}",
                path.display(),
                sub.get_name()
            );
            for arg in sub.get_opts().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    assert!(
                        text.contains(&format!("--{long}"))
                            || text.contains(&format!("-l {long} ")),
                        "{} does not complete {} --{long}",
                        path.display(),
                        sub.get_name()
                    );
                }
            }
        }
        assert!(
            !text.contains("__demo-agent"),
            "{} offers a hidden subcommand",
            path.display()
        );
        assert!(
            text.contains("openspec/changes/") && text.contains("archive"),
            "{} does not complete change names",
            path.display()
        );
    }
    let bash = page(&files, "git-ralph.bash");
    assert!(
        bash.contains("\n_git_ralph ()\n"),
        "bash: no _git_ralph for git's completion"
    );
    assert!(bash.contains("complete -F __git_ralph_main"));
    let zsh = page(&files, "_git-ralph");
    assert!(
        zsh.starts_with("#compdef git-ralph\n"),
        "zsh: no #compdef line"
    );
    assert!(
        zsh.contains("\n_git-ralph() {"),
        "zsh: no _git-ralph function"
    );
}

// ---------------------------------------------------------------------------
// The README

fn read(rel: &str) -> String {
    let path = source_path(rel);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

#[test]
fn readme_sections_come_in_order() {
    let readme = read("README.md");
    let headings: Vec<&str> = readme
        .lines()
        .filter(|line| line.starts_with("## "))
        .collect();
    let wanted = [
        "## Install",
        "## Quickstart",
        "## Your own agent command",
        "## How it works",
        "## Running the tests",
    ];
    let mut at = 0;
    for want in wanted {
        match headings[at..].iter().position(|h| h.starts_with(want)) {
            Some(found) => at += found + 1,
            None => panic!("README.md has no {want:?} after the sections before it: {headings:?}"),
        }
    }
    let install = section(&readme, "## Install");
    let commands = code_lines(&install);
    assert_eq!(
        commands,
        ["./install.sh", "git ralph demo"],
        "README's Install is not the two commands"
    );
}

/// A README a newcomer reads to the end: about 250 lines at most, the
/// rest in the guides.
#[test]
fn issue_36_the_readme_is_short() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move the detail into a guide in docs/"
    );
}

/// The headings of a markdown text as GitHub makes anchors of them.
fn anchors(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Every link of the README and the guides to a file of this repository
/// (and to a heading in it) leads somewhere.
#[test]
fn issue_36_links_between_the_readme_and_the_guides_resolve() {
    let mut files = vec![PathBuf::from("README.md")];
    let docs = source_path("docs");
    for entry in std::fs::read_dir(&docs).unwrap_or_else(|err| panic!("docs/: {err}")) {
        let name = entry
            .unwrap_or_else(|err| panic!("docs/: {err}"))
            .file_name();
        files.push(Path::new("docs").join(name));
    }
    let mut broken = Vec::new();
    for file in &files {
        let text = read(&file.to_string_lossy());
        for (at, _) in text.match_indices("](") {
            let rest = &text[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.starts_with("http") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let linked = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap_or(Path::new("")).join(path)
            };
            let Ok(linked_text) = std::fs::read_to_string(source_path(&linked)) else {
                broken.push(format!("{}: {target}", file.display()));
                continue;
            };
            if !anchor.is_empty() && !anchors(&linked_text).iter().any(|a| a == anchor) {
                broken.push(format!("{}: {target} (no such heading)", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n  {}",
        broken.join("\n  ")
    );
}

fn section(text: &str, heading: &str) -> String {
    let Some(start) = text.find(&format!("\n{heading}")) else {
        panic!("README.md has no {heading}");
    };
    let body = &text[start + 1 + heading.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end].to_owned()
}

/// The lines of the first fenced code block.
fn code_lines(text: &str) -> Vec<String> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with("```"));
    lines.next();
    lines
        .take_while(|line| !line.starts_with("```"))
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

#[test]
fn readme_test_command_is_the_one_ci_runs() {
    let readme = read("README.md");
    let commands = code_lines(&section(&readme, "## Running the tests"));
    assert_eq!(
        commands.len(),
        1,
        "README gives {commands:?}, not one command"
    );
    let ci = read(".ci/run");
    assert!(
        ci.lines().any(|line| line.trim() == commands[0]),
        ".ci/run does not run the README's test command {:?}",
        commands[0]
    );
    let (_, drift_check) = REFRESH
        .split_once("cargo test ")
        .expect("the refresh command runs cargo test");
    assert!(
        ci.lines()
            .any(|line| line.trim_start().starts_with("cargo test") && line.contains(drift_check)),
        ".ci/run does not run the drift check ({drift_check}) on its own"
    );
    assert!(
        readme.contains(REFRESH),
        "README.md does not give the refresh command {REFRESH:?}"
    );
}
