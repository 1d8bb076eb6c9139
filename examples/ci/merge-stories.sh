#!/usr/bin/env bash
# The stories' branches merged onto the change's branch, and the pull
# request opened or updated: what the merge job of github-actions-stories.yml
# (and of the GitLab child pipeline) runs after every story job, also when
# some failed or hit their time limit.
#
# Reads:
#   CHANGE   the change (required)
#   BASE     the branch the pull request asks to merge into
#   REMOTE   the remote (empty: origin)
#
# `git ralph merge --from <remote> --push` merges each finished story's
# branch ralph/<change>.story-<ID> onto ralph/<change> by the parallel
# rules (dependencies first, the checks run on the merged tree, stories
# whose work conflicts sent back to run again) and pushes the branch with
# its record. `git ralph finish --pr` then opens the pull request, or
# rewrites the description of the one already open. Exits with the merge's
# status once the pull request is seen to.
set -euo pipefail
: "${CHANGE:?CHANGE names the change}"
remote="${REMOTE:-origin}"

git config user.name >/dev/null || git config user.name "git-ralph"
git config user.email >/dev/null || git config user.email "git-ralph@users.noreply.github.com"
if [ -n "${BASE:-}" ]; then
  git config ralph.prBase "$BASE"
fi
if [ -n "${REMOTE:-}" ]; then
  git config ralph.remote "$REMOTE"
fi

status=0
git ralph merge "$CHANGE" --from "$remote" --push </dev/null || status=$?
if git rev-parse --verify --quiet "refs/heads/ralph/$CHANGE" >/dev/null; then
  git ralph finish "$CHANGE" --pr </dev/null || status=$?
else
  echo "no story of $CHANGE is finished yet: no pull request" >&2
fi
exit "$status"
