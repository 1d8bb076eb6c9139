# fish: `git ralph <TAB>` completes as `git-ralph <TAB>` does.
# Generated from the clap definitions by `UPDATE_GENERATED=1 cargo test --test integration generated::`; do not edit.
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

complete -c git -n __git_ralph_git_needs_command -f -a ralph -d 'Drive an AI coding agent through the stories of a change until each one is verifiably done'
complete -c git -n '__git_ralph_git_words >/dev/null' -f -a '(__git_ralph_git_complete)'
