#!/bin/sh
# The client command the MCP conformance suite runs for each client
# scenario (tests/mcp/conformance.sh): mates' own client, `mates mcp call`,
# doing what the scenario's server waits for. $1: mates; $2: the server's
# URL (the suite appends it); MCP_CONFORMANCE_SCENARIO names the scenario.
mates="$1"
url="$2"
case "$MCP_CONFORMANCE_SCENARIO" in
  initialize) exec "$mates" mcp call "$url" ;;
  tools_call) exec "$mates" mcp call "$url" add_numbers '{"a": 2, "b": 3}' ;;
  sse-retry) exec "$mates" mcp call "$url" test_reconnection ;;
  elicitation-sep1034-client-defaults)
    exec "$mates" mcp call --elicitation accept_defaults "$url" test_client_elicitation_defaults ;;
  auth/*)
    # The person's browser is curl: the scenario's authorization server
    # approves at once and redirects to mates' listener on 127.0.0.1. The
    # grants go to a folder of this run's, not the person's.
    export BROWSER="curl -fsSL -o /dev/null"
    XDG_CONFIG_HOME="$(mktemp -d)"
    export XDG_CONFIG_HOME
    context="${MCP_CONFORMANCE_CONTEXT:-}"
    field() { printf '%s' "$context" | sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p"; }
    set -- --login --login-timeout 20
    [ -n "$(field client_id)" ] && set -- "$@" --client-id "$(field client_id)"
    [ -n "$(field client_secret)" ] && set -- "$@" --client-secret "$(field client_secret)"
    if [ -n "$(field private_key_pem)" ]; then
      printf '%b' "$(field private_key_pem)" >"$XDG_CONFIG_HOME/client-key.pem"
      set -- "$@" --client-key "$XDG_CONFIG_HOME/client-key.pem"
    fi
    [ "$MCP_CONFORMANCE_SCENARIO" = auth/basic-cimd ] &&
      set -- "$@" --client-metadata-url https://conformance-test.local/client-metadata.json
    "$mates" mcp call "$@" "$url" test-tool
    rc=$?
    rm -rf "$XDG_CONFIG_HOME"
    exit $rc ;;
  *) echo "conformance_client.sh: no client step for scenario '$MCP_CONFORMANCE_SCENARIO'" >&2; exit 2 ;;
esac
