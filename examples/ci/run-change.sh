#!/usr/bin/env bash
# One change, unattended, ending in a pull request: what a CI job runs once
# git-ralph and the agent CLI are installed and the repository is checked
# out (github-actions.yml's "Run the change", gitlab-ci.yml's script).
#
# Reads:
#   CHANGE       the change to run (required)
#   AGENT        the agent preset (empty: ralph.agent, else claude)
#   BASE         the branch the pull request asks to merge into
#   REMOTE       the remote to push to (empty: origin)
#   MAX_RUNTIME  git-ralph's limit on the loop (default: 150m), below the
#                job's own timeout so that the pull request is still opened
#   RALPH_START_ARGS  more options for 'git ralph start', split on spaces
# Exits with git ralph's status: 0 when every story is done; another
# status (3 for max_retries, …) when the run stopped, after the pull
# request was opened or updated with what was done.
set -euo pipefail
: "${CHANGE:?CHANGE names the change to run}"
remote="${REMOTE:-origin}"

# Checkpoints are commits: they need an author, which CI machines lack.
git config user.name >/dev/null || git config user.name "git-ralph"
git config user.email >/dev/null || git config user.email "git-ralph@users.noreply.github.com"
if [ -n "${BASE:-}" ]; then
  git config ralph.prBase "$BASE"
fi
if [ -n "${REMOTE:-}" ]; then
  git config ralph.remote "$REMOTE"
fi

# An earlier job pushed ralph/<change>: go on from there, so that the
# stories it finished stay finished and the push is a fast-forward.
if git fetch --quiet "$remote" "refs/heads/ralph/$CHANGE" 2>/dev/null; then
  echo "going on from ralph/$CHANGE as $remote has it"
  git switch --quiet --detach FETCH_HEAD
fi

set -- start "$CHANGE" --plain --on-finish pr --max-runtime "${MAX_RUNTIME:-150m}"
if [ -n "${AGENT:-}" ]; then
  set -- "$@" --agent "$AGENT"
fi
# shellcheck disable=SC2086 # options are split on spaces on purpose
set -- "$@" ${RALPH_START_ARGS:-}
exec git ralph "$@" </dev/null
