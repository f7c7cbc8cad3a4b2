#!/usr/bin/env bash
# A tour of mates, offline, in a scratch folder (nothing is written where
# you run it): a team is hosted in the background with a scripted model,
# you talk to its lead, look at it, take a picture of its page, and stop it.
#   examples/tour.sh               with `mates` on PATH, else build/src/mates
#   MATES=/path/to/mates examples/tour.sh
# The folder is kept for you to look at; its path is printed at the end.
set -euo pipefail
examples=$(cd "$(dirname "$0")" && pwd)
mates=${MATES:-$(command -v mates || echo "$examples/../build/src/mates")}
case "$mates" in /*) ;; */*) mates="$PWD/$mates" ;; esac
[ -x "$mates" ] || { echo "tour: no mates (./scripts/install, or MATES=…)" >&2; exit 1; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mates-tour.XXXXXX")
cd "$scratch"
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }
git init -q .

step "$mates" init
step "$mates" team use tour
# The lead puts two chained tasks on the board and spawns two teammates.
up=$(step "$mates" up --provider scripted --scenario "$examples/scenarios/team.yaml" "write the notes")
echo "$up"
url=$(sed -n 's/.* — dashboard \(http[^ ]*\).*/\1/p' <<<"$up" | head -1)
trap '"$mates" down >/dev/null 2>&1 || true' EXIT

# The lead tells you when the notes are written and reviewed.
step "$mates" inbox user --wait 60
step "$mates" send --to lead "ping"
step "$mates" inbox user --wait 30
step "$mates" tasks list
step "$mates" status

chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -n "$url" ] && [ -n "$chromium" ]; then
  printf '\n\033[1m$ %s\033[0m\n' "chromium --headless --virtual-time-budget=10000 --screenshot=dashboard.png '<URL>&live=still'"
  # `live=still`: the page loads once and does not stream, so the browser
  # sees its network go quiet and takes the picture once the page is drawn;
  # the DOM dumped with it says whether the page had set its ready flag.
  case "$url" in *\?*) still="$url&live=still" ;; *) still="$url?live=still" ;; esac
  dom=$(timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
    --virtual-time-budget=10000 --screenshot="$scratch/dashboard.png" --dump-dom "$still" 2>/dev/null || true)
  if [ -s "$scratch/dashboard.png" ] && grep -q 'data-ready="1"' <<<"$dom"; then
    echo "dashboard.png: the team's page, taken once it was drawn"
  elif [ -s "$scratch/dashboard.png" ]; then
    echo "dashboard.png: taken before the page was ready (a slow machine?)"
  else
    echo "no screenshot (chromium failed)"
  fi
else
  echo "(no Chromium: the dashboard is at ${url:-the URL up printed})"
fi

step "$mates" down
trap - EXIT
printf '\nthe tour ran in %s (NOTES.md is what the team wrote)\n' "$scratch"
