# fish completion for git-ralph
# Generated from the clap definitions by `UPDATE_GENERATED=1 cargo test --test integration generated::`; do not edit.
#
# Completes `git-ralph <TAB>`, and `git ralph <TAB>` through the hook that
# git-ralph.conf.fish (installed in vendor_conf.d) adds to git's completions.

# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_git_ralph_global_optspecs
    string join \n h/help V/version
end

function __fish_git_ralph_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_git_ralph_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_git_ralph_using_subcommand
    set -l cmd (__fish_git_ralph_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c git-ralph -n "__fish_git_ralph_needs_command" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "start" -d 'Start a run on a change, or resume a stopped one (or one kept before its stories were all done)'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "plan" -d 'Have the agent write a change\'s stories, held to the reader that will run them'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "status" -d 'Report a run, from any terminal'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "watch" -d 'Open the terminal UI on a run, live or finished, from any terminal'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "log" -d 'The audit trail of a run: stories, attempts, outcomes, where the work is'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "show" -d 'One attempt of a run: its prompt, transcript, diff and checks'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "serve" -d 'Serve the runs to a browser, live, behind a token'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "answer" -d 'Answer the question a story of a run waits on, from any terminal'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "abort" -d 'Stop a run and restore the exact pre-start state'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "finish" -d 'Finish a stopped run: keep its branch, or clean up to uncommitted changes; or keep it, push it and open a pull request'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "merge" -d 'Merge the stories of a change run one per machine (start --story ID --push) onto ralph/<change>'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "demo" -d 'Watch a real loop work on a throwaway repository, offline'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "agents" -d 'List the agent presets, which are on PATH, and the command each runs'
complete -c git-ralph -n "__fish_git_ralph_needs_command" -f -a "hook" -d 'Hooks for agent CLIs, e.g. the Claude Code Stop hook'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l agent -d 'Agent preset to run [default: claude; config: ralph.agent]' -r -f -a "claude\t''
codex\t''
gemini\t''
opencode\t''
amp\t''
cursor\t''
copilot\t''
aider\t''
qwen\t''
pi\t''
kilo\t''
droid\t''"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l agent-command -d 'Run this command through `sh -c` instead of a preset, with the prompt on stdin [config: ralph.agentCommand]' -r -f -a "(__fish_complete_command)"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l model -d 'Model passed to the agent\'s --model flag' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l max-retries -d 'Retries per story after its first attempt [default: 3; config: ralph.maxRetries]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l command-timeout -d 'Seconds any external command may run [default: 30; config: ralph.commandTimeout]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l agent-timeout -d 'Seconds one agent attempt may run [default: 3600; config: ralph.agentTimeout]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l idle-timeout -d 'How long an agent may print nothing before it is stopped like a timeout, e.g. 15m; 0 lets it be silent [default: 15m; config: ralph.idleTimeout]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l on-finish -d 'What to do when the loop ends [default: ask; config: ralph.onFinish]' -r -f -a "ask\t'Ask with a menu on a terminal; without one, keep and say how to finish'
keep\t'Stay on `ralph/<change>`'
cleanup\t'Back to the original branch with all the work uncommitted'
push\t'Keep, then push `ralph/<change>` to the remote (see `git ralph finish --push`)'
pr\t'Keep, push, and open or update a pull request (see `git ralph finish --pr`)'"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l serve -d 'Serve the run to a browser while it runs, as `git ralph serve` does, on 127.0.0.1:7574 or the address given (`--serve=ADDR:PORT`), and print the URL to open; the server ends when this command does' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l prompt-template -d 'Prompt template to use instead of `<git-dir>/ralph/prompt.md` or the built-in one' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l source -d 'Where the stories come from [default: detected]' -r -f -a "openspec\t'openspec/changes/<CHANGE>/tasks.md'
prd\t'a prd.json of user stories (--prd)'
markdown\t'a markdown checklist (--tasks)'
github\t'open GitHub issues with a label (--label), through `gh` or --issues'
beads\t'open issues of the beads tracker, .beads/issues.jsonl'
gitlab\t'open issues of a GitLab project (--project), GITLAB_TOKEN'
linear\t'open issues of Linear (--team, --project, --cycle), LINEAR_API_KEY'
jira\t'the issues a Jira query finds (--jql or --project), JIRA_API_TOKEN'"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l prd -d 'A prd.json file of user stories (implies --source prd)' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l tasks -d 'A markdown checklist file (implies --source markdown)' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l issues -d 'With --source github: the issues from a file that `gh issue list --json number,title,body,labels,state,url` wrote, instead of asking `gh` (all its open issues, or those with --label); with --source beads: the issues file instead of .beads/issues.jsonl' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l label -d 'With --source github: work on the open issues with this label [default: ralph]; gitlab, linear, jira: only the issues with it' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l project -d 'With --source gitlab: the project (`group/name` or its id); linear: the project\'s name; jira: the project\'s key (when --jql is not given)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l milestone -d 'With --source gitlab: only the issues of this milestone (its title)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l team -d 'With --source linear: only the issues of this team (its key, `ENG`)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l cycle -d 'With --source linear: only the issues of this cycle (its number)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l jql -d 'With --source jira: the issues this JQL query finds (its open ones)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l prompt -d 'Prompt mode: repeat this prompt, a fresh agent each time, until the contract passes; no stories' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l check -d 'A check every story must pass: a command run through `sh -c` in the worktree (repeatable) [config: ralph.check]' -r -f -a "(__fish_complete_command)"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l promise -d 'The promise token for string matching, or `none` to rely on checks alone [default: COMPLETE; config: ralph.promise]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l max-iterations -d 'Attempts across the whole run [config: ralph.maxIterations]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l no-progress-limit -d 'Consecutive attempts that change nothing before the run stops; 0 is no limit [default: 3; config: ralph.noProgressLimit]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l max-runtime -d 'Total time the run may take, e.g. 90m, 2h, 1h30m [config: ralph.maxRuntime]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l max-cost -d 'Money the agents may spend, in USD, summed from their reports [config: ralph.maxCost]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l max-tokens -d 'Tokens the agents may use, summed from their reports [config: ralph.maxTokens]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l max-rate-limit-wait -d 'The most the run waits out usage limits, in total [default: 6h; config: ralph.maxRateLimitWait]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l pace -d 'Start no attempt that would take the spend of the last window past its budget, e.g. \'$20/5h\' or \'2M tokens/5h\'; the run waits instead' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l answer-timeout -d 'When only stories waiting for an answer are left, wait this long for answers before the run stops [default: stop at once]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l from -d 'Take the run up from REMOTE first: fetch ralph/<CHANGE> and the run\'s record and refs a machine pushed (--push-each, finish --push), and go on from them with the same stories done, attempts counted and budget spent. Records gone apart are refused' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l story -d 'Run this one story of the change alone, in a run of its own on ralph/<CHANGE>.story-<ID>, on top of ralph/<CHANGE> as it is (as REMOTE has it, with --from); its dependencies must be done there. With --from, a lease on the remote keeps other machines off it' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l remote -d 'With --push: the remote to push to [default: the --from remote, else ralph.remote, else origin]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l fallback-agent -d 'An agent preset the story goes to when the agent hits a usage limit that resets later than --max-rate-limit-wait allows; the primary is tried again at the next story (repeatable, tried in order) [config: ralph.fallbackAgents]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l roles -d 'The role pipeline each story goes through, in this order: any of coder, reviewer, tester, qa [config: ralph.roles; roles in ralph.toml]. Without it, one agent does each story' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l worktree -d 'Work in a worktree of its own on ralph/<CHANGE>, beside yours, which the run never touches (HEAD, index, files, stashes): at PATH, or by default at <your worktree>.ralph/<CHANGE> [config: ralph.worktree]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l parallel -d 'Run up to N independent stories at once, each in a worktree of its own, merged into ralph/<CHANGE> one at a time in story order (implies --worktree) [config: ralph.parallel]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l role-agent -d 'The agent preset a role runs, e.g. reviewer=codex (repeatable)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l role-agent-command -d 'A command a role runs instead of a preset, prompt on stdin, e.g. \'reviewer=my-reviewer --strict\' (repeatable)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l role-model -d 'The model a role\'s agent uses, e.g. reviewer=gpt-5 (repeatable)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l json -d 'Print events as JSON lines on stdout'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l plain -d 'The one-line progress view instead of the loop screen, even on a terminal [config: ralph.ui = plain]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l comment -d 'With --source github, gitlab, linear or jira: post one comment on each issue whose story is finished, naming its checkpoint; without it, nothing is written to the tracker'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l close -d 'With --source github, gitlab, linear or jira: close each issue whose story is finished (Linear and Jira: move it to a done state)'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l once -d 'One attempt per story, no checks, no retries: the plain flow'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l dry-run -d 'Show the stories as read, any warnings, and the first prompt exactly as the agent would receive it; change nothing (with --json: one object)'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l revert-failed -d 'Prompt mode: revert an iteration the contract does not accept, instead of keeping it as an iteration checkpoint to build on'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l require-change -d 'Refuse a claim of completion whose only change is ticking boxes in the tracking file; by default it is accepted and flagged [config: ralph.requireChange; per story: require_change in ralph.toml]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l no-learnings -d 'No learnings file: prompts neither show nor ask for one [config: ralph.learnings = false]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l no-questions -d 'A story whose agent ends with a question fails that attempt, as for any other ending without a promise, instead of waiting for an answer [config: ralph.questions = false]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l full-scan -d 'Look at every file of the worktree after each attempt, as git does, instead of only at what the agent touched while it ran [config: ralph.fullScan]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l push-each -d 'After each checkpoint, push ralph/<CHANGE> with the run\'s record and refs (to ralph.remote, else the upstream remote, else origin), so that another machine can take the run up with --from'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l push -d 'With --story: when the story\'s run ends, push its branch ralph/<CHANGE>.story-<ID> with its record, in one atomic push'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l sandbox -d 'Run the agent under bubblewrap (Linux), with the git directory and your global git config read-only to it [config: ralph.sandbox]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -l notify -d 'When the run ends, done or stopped for you, or waits out a usage limit: a desktop notification (notify-send, osascript) and the bell [config: ralph.notify]. A webhook in [notify] of ralph.toml is told either way'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand start" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l from -d 'Read what to build from this file' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l issue -d 'Take what to build from the title and body of this GitHub issue (through gh)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l prd -d 'Write a prd.json at FILE, in the format `start --prd` reads, instead of an OpenSpec change' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l tasks -d 'Write a markdown checklist at FILE instead of an OpenSpec change' -r -F
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l agent -d 'Agent preset to run [default: claude; config: ralph.agent]' -r -f -a "claude\t''
codex\t''
gemini\t''
opencode\t''
amp\t''
cursor\t''
copilot\t''
aider\t''
qwen\t''
pi\t''
kilo\t''
droid\t''"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l agent-command -d 'Run this command through `sh -c` instead of a preset, with the prompt on stdin [config: ralph.agentCommand]' -r -f -a "(__fish_complete_command)"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l model -d 'Model passed to the agent\'s --model flag' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l max-retries -d 'Tries after the first, each told what the reader said of the last [default: 3; config: ralph.maxRetries]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l max-tasks -d 'The most tasks a story may have, or acceptance criteria in a prd.json [default: 12; config: ralph.planMaxTasks]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l agent-timeout -d 'Seconds one try\'s agent may run [default: 3600; config: ralph.agentTimeout]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l idle-timeout -d 'How long the agent may print nothing before it is stopped, e.g. 15m; 0 lets it be silent [default: 15m; config: ralph.idleTimeout]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l command-timeout -d 'Seconds gh and openspec may run [default: 30; config: ralph.commandTimeout]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -l refine -d 'Work on the change (or file) that exists instead of refusing it: the agent splits the stories that are too big and fills in what is missing, and every done mark must stay'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand plan" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand status" -l json -d 'Print the run as one JSON object (with several runs or --all: an object with "runs" and "earlier")'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand status" -l all -d 'List every run, the earlier ones kept in history included'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand status" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand status" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand watch" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand watch" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand log" -l json -d 'Print the trail as one JSON object'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand log" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand log" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -l prompt -d 'The prompt the agent was given'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -l transcript -d 'The agent\'s messages and tool calls'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -l diff -d 'The attempt against its checkpoint, as a patch (alone, the same as --patch)'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -l patch -d 'Only the patch, as `git diff` writes it, for `git apply`'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -l checks -d 'The checks and their output'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -l json -d 'Print the attempt as one JSON object'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand show" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand serve" -l bind -d 'Where to listen [default: 127.0.0.1:7574]; port 0 takes any free one. An address other machines can reach is only taken from here, with a warning: the token is all that guards it, over plain HTTP' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand serve" -l new-token -d 'Make a new token, which shuts out every page opened with the old one, on a server already running too'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand serve" -l companion -d 'Started by `start --serve`: end when standard input closes'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand serve" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand answer" -l file -d 'Read the answer from this file (\'-\' for standard input)' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand answer" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand answer" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand abort" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand abort" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l remote -d 'The remote to push to [default: the upstream remote of the branch the run started from, else origin; config: ralph.remote]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l base -d 'The branch the pull request asks to merge into [default: the branch the run started from; config: ralph.prBase]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l keep -d 'Stay on ralph/<change>, one commit per story'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l cleanup -d 'Back to the original branch with all the work uncommitted; the branch is deleted, its tip kept at refs/ralph/<change>/finished'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l push -d 'Keep, then push ralph/<change> to the remote. The push runs the git binary, never prompting; if it fails, the run is kept all the same (a remote that is not there is refused before anything is done)'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l pr -d 'Keep, push, then open a pull request with gh (glab for a GitLab remote), its description written from the run\'s record, or update the one already open for the branch; its address is printed on stdout'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -l draft -d 'Open the pull request as a draft [config: ralph.prDraft]'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand finish" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -l from -d 'The remote the stories\' branches were pushed to: the change\'s run is taken up from it (when it holds one), and each branch ralph/<CHANGE>.story-<ID> whose run finished its story is merged' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -l remote -d 'With --push: the remote to push to [default: the --from remote]' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -l agent -d 'Agent preset to run [default: claude; config: ralph.agent]' -r -f -a "claude\t''
codex\t''
gemini\t''
opencode\t''
amp\t''
cursor\t''
copilot\t''
aider\t''
qwen\t''
pi\t''
kilo\t''
droid\t''"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -l agent-command -d 'Run this command through `sh -c` instead of a preset, with the prompt on stdin [config: ralph.agentCommand]' -r -f -a "(__fish_complete_command)"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -l model -d 'Model passed to the agent\'s --model flag' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -l push -d 'Then push ralph/<CHANGE> with the run\'s record to the remote'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand merge" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand demo" -l on-finish -d 'What to do when the loop ends [default: ask]' -r -f -a "ask\t'Ask with a menu on a terminal; without one, keep and say how to finish'
keep\t'Stay on `ralph/<change>`'
cleanup\t'Back to the original branch with all the work uncommitted'
push\t'Keep, then push `ralph/<change>` to the remote (see `git ralph finish --push`)'
pr\t'Keep, push, and open or update a pull request (see `git ralph finish --pr`)'"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand demo" -l pace -d 'Milliseconds the scripted agent pauses between steps' -r -f
complete -c git-ralph -n "__fish_git_ralph_using_subcommand demo" -l json -d 'Print events as JSON lines on stdout'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand demo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand demo" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand agents" -l record -d 'With --verify: keep what each CLI printed in each scenario under DIR/<name>/: the transcript, its exit code and the conclusion expected (for a bug report, or as test fixtures)' -r -f -a "(__fish_complete_directories)"
complete -c git-ralph -n "__fish_git_ralph_using_subcommand agents" -l json -d 'Print the presets (with --verify, the verdicts) as one JSON array'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand agents" -l verify -d 'Run each installed agent CLI against a local scripted stand-in of its model API, offline, and check that git-ralph reads its completions, failures, echoed promises and rate limits right. Exits 1 unless every CLI checked is verified (one not understood, one that cannot be pointed at a local API, one named but not installed)'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand agents" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand agents" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand hook; and not __fish_seen_subcommand_from claude-stop" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand hook; and not __fish_seen_subcommand_from claude-stop" -s V -l version -d 'Print version'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand hook; and not __fish_seen_subcommand_from claude-stop" -f -a "claude-stop" -d 'The Claude Code Stop hook: block the stop while the run\'s checks fail'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand hook; and __fish_seen_subcommand_from claude-stop" -l max-blocks -d 'Blocks in a row (while stop_hook_active) before the agent may stop anyway' -r
complete -c git-ralph -n "__fish_git_ralph_using_subcommand hook; and __fish_seen_subcommand_from claude-stop" -s h -l help -d 'Print help'
complete -c git-ralph -n "__fish_git_ralph_using_subcommand hook; and __fish_seen_subcommand_from claude-stop" -s V -l version -d 'Print version'

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

complete -c git-ralph -n "__fish_git_ralph_using_subcommand start plan status watch log show serve answer abort finish merge" -f -a "(__git_ralph_changes | sort -u)" -d Change
