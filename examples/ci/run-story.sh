#!/usr/bin/env bash
# One story of a change, in a CI job of its own: what the matrix job of
# github-actions-stories.yml (and a story job of the GitLab child pipeline
# gitlab-ci-stories.yml generates) runs once git-ralph and the agent CLI are
# installed and the repository is checked out.
#
# Reads:
#   CHANGE, STORY     the change and the story (required)
#   AGENT             the agent preset (empty: ralph.agent, else claude)
#   REMOTE            the remote (empty: origin)
#   MAX_RUNTIME       git-ralph's own limit (default: 150m): below the job's
#                     timeout, so that the run ends by itself and pushes
#   STOP_AFTER        the last resort (default: 165m, for a job of 180):
#                     git-ralph is interrupted as Ctrl-C would, stops the
#                     attempt under way, keeps it, and still pushes; killed
#                     10 minutes later if it has not ended
#   RALPH_START_ARGS  more options for 'git ralph start', split on spaces
#
# The story runs on top of ralph/<change> as the remote has it (its
# dependencies merged there by an earlier wave), and its own branch
# ralph/<change>.story-<ID> is pushed with its record when the run ends,
# whether the story was done or not: the attempts spent travel with it, and
# the next run of the workflow goes on from there.
set -euo pipefail
: "${CHANGE:?CHANGE names the change}"
: "${STORY:?STORY names the story to run}"
remote="${REMOTE:-origin}"

git config user.name >/dev/null || git config user.name "git-ralph"
git config user.email >/dev/null || git config user.email "git-ralph@users.noreply.github.com"
if [ -n "${REMOTE:-}" ]; then
  git config ralph.remote "$REMOTE"
fi

set -- start "$CHANGE" --from "$remote" --story "$STORY" --push --plain \
  --max-runtime "${MAX_RUNTIME:-150m}"
if [ -n "${AGENT:-}" ]; then
  set -- "$@" --agent "$AGENT"
fi
# shellcheck disable=SC2086 # options are split on spaces on purpose
set -- "$@" ${RALPH_START_ARGS:-}
exec timeout --signal=INT --kill-after=10m "${STOP_AFTER:-165m}" git ralph "$@" </dev/null
