# bash completion for git-ralph                              -*- shell-script -*-
# Generated from the clap definitions by `UPDATE_GENERATED=1 cargo test --test integration generated::`; do not edit.
#
# Completes `git-ralph <TAB>` and, through git's own completion, which calls
# _git_ralph, `git ralph <TAB>`: subcommands, options, option values and the
# names of changes. bash-completion loads this file on demand from
# <prefix>/share/bash-completion/completions/git-ralph, both for git-ralph and
# (git's completion asks it to) for `git ralph`. Without bash-completion,
# source this file from ~/.bashrc after git's completion script.

# Subcommands, options and option values, as clap_complete writes them.
__git_ralph_clap() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="_git_ralph_clap"
                ;;
            _git_ralph_clap,abort)
                cmd="_git_ralph_clap__subcmd__abort"
                ;;
            _git_ralph_clap,agents)
                cmd="_git_ralph_clap__subcmd__agents"
                ;;
            _git_ralph_clap,answer)
                cmd="_git_ralph_clap__subcmd__answer"
                ;;
            _git_ralph_clap,demo)
                cmd="_git_ralph_clap__subcmd__demo"
                ;;
            _git_ralph_clap,finish)
                cmd="_git_ralph_clap__subcmd__finish"
                ;;
            _git_ralph_clap,hook)
                cmd="_git_ralph_clap__subcmd__hook"
                ;;
            _git_ralph_clap,log)
                cmd="_git_ralph_clap__subcmd__log"
                ;;
            _git_ralph_clap,merge)
                cmd="_git_ralph_clap__subcmd__merge"
                ;;
            _git_ralph_clap,plan)
                cmd="_git_ralph_clap__subcmd__plan"
                ;;
            _git_ralph_clap,serve)
                cmd="_git_ralph_clap__subcmd__serve"
                ;;
            _git_ralph_clap,show)
                cmd="_git_ralph_clap__subcmd__show"
                ;;
            _git_ralph_clap,start)
                cmd="_git_ralph_clap__subcmd__start"
                ;;
            _git_ralph_clap,status)
                cmd="_git_ralph_clap__subcmd__status"
                ;;
            _git_ralph_clap,watch)
                cmd="_git_ralph_clap__subcmd__watch"
                ;;
            _git_ralph_clap__subcmd__hook,claude-stop)
                cmd="_git_ralph_clap__subcmd__hook__subcmd__claude__subcmd__stop"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        _git_ralph_clap)
            opts="-h -V --help --version start plan status watch log show serve answer abort finish merge demo agents hook"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__abort)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__agents)
            opts="-h -V --json --verify --record --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --record)
                    COMPREPLY=()
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o plusdirs
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__answer)
            opts="-h -V --file --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --file)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__demo)
            opts="-h -V --on-finish --json --pace --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --on-finish)
                    COMPREPLY=($(compgen -W "ask keep cleanup push pr" -- "${cur}"))
                    return 0
                    ;;
                --pace)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__finish)
            opts="-h -V --keep --cleanup --push --pr --remote --draft --base --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --remote)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --base)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__hook)
            opts="-h -V --help --version claude-stop"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__hook__subcmd__claude__subcmd__stop)
            opts="-h -V --max-blocks --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --max-blocks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__log)
            opts="-h -V --json --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__merge)
            opts="-h -V --from --push --remote --agent --agent-command --model --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --remote)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --agent)
                    COMPREPLY=($(compgen -W "claude codex gemini opencode amp cursor copilot aider qwen pi kilo droid" -- "${cur}"))
                    return 0
                    ;;
                --agent-command)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__plan)
            opts="-h -V --from --issue --prd --tasks --refine --agent --agent-command --model --max-retries --max-tasks --agent-timeout --idle-timeout --command-timeout --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --from)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --issue)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --prd)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --tasks)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --agent)
                    COMPREPLY=($(compgen -W "claude codex gemini opencode amp cursor copilot aider qwen pi kilo droid" -- "${cur}"))
                    return 0
                    ;;
                --agent-command)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-tasks)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --agent-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --command-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__serve)
            opts="-h -V --bind --new-token --companion --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --bind)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__show)
            opts="-h -V --prompt --transcript --diff --patch --checks --json --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__start)
            opts="-h -V --agent --agent-command --model --max-retries --command-timeout --agent-timeout --idle-timeout --on-finish --json --plain --serve --prompt-template --source --prd --tasks --issues --label --comment --close --project --milestone --team --cycle --jql --prompt --once --dry-run --revert-failed --check --promise --max-iterations --no-progress-limit --max-runtime --max-cost --max-tokens --max-rate-limit-wait --pace --require-change --no-learnings --no-questions --answer-timeout --full-scan --from --push-each --story --push --remote --sandbox --notify --fallback-agent --roles --worktree --parallel --role-agent --role-agent-command --role-model --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --agent)
                    COMPREPLY=($(compgen -W "claude codex gemini opencode amp cursor copilot aider qwen pi kilo droid" -- "${cur}"))
                    return 0
                    ;;
                --agent-command)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-retries)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --command-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --agent-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --idle-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --on-finish)
                    COMPREPLY=($(compgen -W "ask keep cleanup push pr" -- "${cur}"))
                    return 0
                    ;;
                --serve)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --prompt-template)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --source)
                    COMPREPLY=($(compgen -W "openspec prd markdown github beads gitlab linear jira" -- "${cur}"))
                    return 0
                    ;;
                --prd)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --tasks)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --issues)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --label)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --project)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --milestone)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --team)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --cycle)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --jql)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --prompt)
                    local oldifs
                    if [ -n "${IFS+x}" ]; then
                        oldifs="$IFS"
                    fi
                    IFS=$'\n'
                    COMPREPLY=($(compgen -f "${cur}"))
                    if [ -n "${oldifs+x}" ]; then
                        IFS="$oldifs"
                    fi
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o filenames
                    fi
                    return 0
                    ;;
                --check)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --promise)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-iterations)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --no-progress-limit)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-runtime)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-cost)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-tokens)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --max-rate-limit-wait)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --pace)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --answer-timeout)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --from)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --story)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --remote)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --fallback-agent)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --roles)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --worktree)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --parallel)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --role-agent)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --role-agent-command)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                --role-model)
                    COMPREPLY=("${cur}")
                    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
                        compopt -o nospace
                    fi
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__status)
            opts="-h -V --json --all --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        _git_ralph_clap__subcmd__watch)
            opts="-h -V --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

# The changes a command can name, one per line: the OpenSpec changes of this
# worktree (openspec/changes/*/, not the archive) and the runs recorded in
# the git directory.
__git_ralph_changes ()
{
    local top gitdir dir
    top=$(git rev-parse --show-toplevel 2>/dev/null) || return 0
    for dir in "$top"/openspec/changes/*/; do
        [[ -d $dir ]] || continue
        dir=${dir%/}
        dir=${dir##*/}
        [[ $dir == archive ]] || printf '%s\n' "$dir"
    done
    gitdir=$(git rev-parse --absolute-git-dir 2>/dev/null) || return 0
    for dir in "$gitdir"/ralph/*/; do
        [[ -f ${dir}state.json ]] || continue
        dir=${dir%/}
        printf '%s\n' "${dir##*/}"
    done
}

# Does option $2 of subcommand $1 take a value (in the next word)?
__git_ralph_takes_value ()
{
    case $1 in
        start) case $2 in --agent|--agent-command|--model|--max-retries|--command-timeout|--agent-timeout|--idle-timeout|--on-finish|--serve|--prompt-template|--source|--prd|--tasks|--issues|--label|--project|--milestone|--team|--cycle|--jql|--prompt|--check|--promise|--max-iterations|--no-progress-limit|--max-runtime|--max-cost|--max-tokens|--max-rate-limit-wait|--pace|--answer-timeout|--from|--story|--remote|--fallback-agent|--roles|--worktree|--parallel|--role-agent|--role-agent-command|--role-model) return 0 ;; esac ;;
        plan) case $2 in --from|--issue|--prd|--tasks|--agent|--agent-command|--model|--max-retries|--max-tasks|--agent-timeout|--idle-timeout|--command-timeout) return 0 ;; esac ;;
        serve) case $2 in --bind) return 0 ;; esac ;;
        answer) case $2 in --file) return 0 ;; esac ;;
        finish) case $2 in --remote|--base) return 0 ;; esac ;;
        merge) case $2 in --from|--remote|--agent|--agent-command|--model) return 0 ;; esac ;;
        demo) case $2 in --on-finish|--pace) return 0 ;; esac ;;
        agents) case $2 in --record) return 0 ;; esac ;;
    esac
    return 1
}

# Completes the words that follow it, "git-ralph ARG...", with the cursor on
# word $1.
__git_ralph_complete ()
{
    local cword=$1
    shift
    local -a argv=("$@")
    local cur=${argv[cword]} prev=${argv[cword-1]}
    local sub= word i positionals=0 value_next=
    for ((i = 1; i < cword; i++)); do
        word=${argv[i]}
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
            start|plan|status|watch|log|show|serve|answer|abort|finish|merge)
                COMPREPLY=($(compgen -W "$(__git_ralph_changes | sort -u)" -- "$cur"))
                ((${#COMPREPLY[@]})) && return 0
                ;;
        esac
    fi
    local -a COMP_WORDS=("${argv[@]}")
    local COMP_CWORD=$cword
    __git_ralph_clap "${argv[0]}" "$cur" "$prev"
}

# `git-ralph ...`
__git_ralph_main ()
{
    COMPREPLY=()
    __git_ralph_complete "$COMP_CWORD" "${COMP_WORDS[@]}"
}

# `git ralph ...`: git's completion has split the line into words and set
# cword, and since git 2.31 __git_cmd_idx, the index of `ralph`.
_git_ralph ()
{
    local idx=${__git_cmd_idx-}
    if [[ -z $idx ]]; then
        for ((idx = 1; idx < cword; idx++)); do
            [[ ${words[idx]} == ralph ]] && break
        done
    fi
    # git's completion adds its own trailing spaces; these words need bash's.
    compopt +o nospace 2>/dev/null
    COMPREPLY=()
    __git_ralph_complete "$((cword - idx))" git-ralph "${words[@]:idx+1}"
}

if [[ ${BASH_VERSINFO[0]} -gt 4 || ${BASH_VERSINFO[0]} -eq 4 && ${BASH_VERSINFO[1]} -ge 4 ]]; then
    complete -F __git_ralph_main -o nosort -o bashdefault -o default git-ralph
else
    complete -F __git_ralph_main -o bashdefault -o default git-ralph
fi
