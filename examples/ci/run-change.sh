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

# The run pushes its branch with its record after each story (--push-each)
# and when it ends, so that a job cut short at its time limit loses at most
# the story under way. An earlier job pushed the run with its record: take
# it up, the same stories done, attempts counted and budget spent. A branch
# pushed without a record: go on from it as a new run on top, so that the
# stories it finished stay finished and the push is a fast-forward.
set -- start "$CHANGE" --plain --on-finish pr --push-each --max-runtime "${MAX_RUNTIME:-150m}"
if git ls-remote --exit-code "$remote" "refs/ralph/$CHANGE/record" >/dev/null 2>&1; then
  echo "going on from ralph/$CHANGE as $remote has it, with the run's record"
  set -- "$@" --from "$remote"
elif git fetch --quiet "$remote" "refs/heads/ralph/$CHANGE" 2>/dev/null; then
  echo "going on from ralph/$CHANGE as $remote has it"
  git switch --quiet --detach FETCH_HEAD
fi
if [ -n "${AGENT:-}" ]; then
  set -- "$@" --agent "$AGENT"
fi
# shellcheck disable=SC2086 # options are split on spaces on purpose
set -- "$@" ${RALPH_START_ARGS:-}
exec git ralph "$@" </dev/null
