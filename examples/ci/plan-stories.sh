#!/usr/bin/env bash
# Which stories of a change can run at once, as a JSON object on stdout:
# what the plan job of github-actions-stories.yml and gitlab-ci-stories.yml
# runs once git-ralph is installed and the repository checked out.
#
#   {"stories": ["1", "2"],       the stories that can start now, one job each
#    "waiting": ["3"],            open stories that wait for others: a later wave
#    "done": 1, "open": 3,        stories done on ralph/<change>, and not yet
#    "all_done": false}
#
# The stories are read as the remote's ralph/<change> has them when it
# exists (what earlier waves merged), else as the checkout has them, from
# the `matrix` of `git ralph start <change> --dry-run --json`: each open
# story, whether it may run now, and what it waits for (a prd.json's
# dependsOn, `after` in ralph.toml, a checklist's order unless it says its
# stories are independent), as `start --story` will judge it.
#
# Reads:
#   CHANGE            the change (required)
#   REMOTE            the remote (empty: origin)
#   RALPH_START_ARGS  more options for 'git ralph start' (--prd FILE, …),
#                     split on spaces
set -euo pipefail
: "${CHANGE:?CHANGE names the change to run}"
remote="${REMOTE:-origin}"
case "$CHANGE" in
  [A-Za-z0-9_]*[!A-Za-z0-9._-]* | [!A-Za-z0-9_]*)
    echo "'$CHANGE' is not the name of a change" >&2
    exit 1 ;;
esac

# What earlier waves merged, when there were any: the plan reads the
# stories from the change's own branch, so that those done are not run again.
if git fetch --quiet "$remote" "refs/heads/ralph/$CHANGE" 2>/dev/null; then
  echo "planning from ralph/$CHANGE as $remote has it" >&2
  git switch --quiet --detach FETCH_HEAD
fi

# shellcheck disable=SC2086 # options are split on spaces on purpose
plan="$(git ralph start "$CHANGE" --dry-run --json ${RALPH_START_ARGS:-} </dev/null)"
if jq -e '.matrix == null' <<<"$plan" >/dev/null; then
  echo "the stories of '$CHANGE' cannot run one per job (their marks are not in the worktree, or the change has roles): run it in one job (github-actions.yml, gitlab-ci.yml)" >&2
  exit 1
fi
jq -c '{
  stories: [.matrix.stories[] | select(.ready) | .story],
  waiting: [.matrix.stories[] | select(.ready | not) | .story],
  done: ([.stories[] | select(.status == "done")] | length),
  open: (.matrix.stories | length),
  all_done: .all_done
}' <<<"$plan"
