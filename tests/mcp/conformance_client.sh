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
  *) echo "conformance_client.sh: no client step for scenario '$MCP_CONFORMANCE_SCENARIO'" >&2; exit 2 ;;
esac
