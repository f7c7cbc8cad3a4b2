#!/bin/sh
# An agent uses a remote MCP server that wants OAuth, after `mates mcp
# login` (the client command of tests/mcp/conformance.sh for McpOAuth.*):
# before the login its server is down saying to log in; the login (the
# person's browser is curl, which the scenario's authorization server
# redirects to mates' listener at once) keeps a 0600 grant; the lead's call
# then reaches the server's tool, and no token is in anything mates wrote;
# after `mates mcp logout` the server is down again. $1: mates; $2: the
# server's URL (the suite appends it). Writes $MATES_CONFORMANCE_WORK/client-ok
# when every step held.
mates="$1" url="$2"
here="$(cd "$(dirname "$0")" && pwd)"
fail() { echo "oauth_agent.sh: $*" >&2; exit 1; }
ws="$(mktemp -d)"
XDG_CONFIG_HOME="$(mktemp -d)"
export XDG_CONFIG_HOME BROWSER="curl -fsSL -o /dev/null"
trap 'rm -rf "$ws" "$XDG_CONFIG_HOME"' EXIT
cd "$ws" || exit 1
printf '{"mcpServers": {"remote": {"type": "http", "url": "%s"}}}\n' "$url" >.mcp.json
"$mates" trust >/dev/null || fail "mates trust failed"

"$mates" mcp list >list.out 2>&1 && fail "mcp list passed before the login: $(cat list.out)"
grep -q "run \`mates mcp login remote\`" list.out || fail "mcp list did not say to log in: $(cat list.out)"

"$mates" mcp login remote >login.out 2>&1 || fail "mates mcp login failed: $(cat login.out)"
grant="$XDG_CONFIG_HOME/mates/mcp-auth.json"
[ "$(stat -c %a "$grant")" = 600 ] || fail "the grant is not 0600: $(stat -c %a "$grant")"
token=$(sed -n 's/.*"access_token": *"\([^"]*\)".*/\1/p' "$grant")
[ -n "$token" ] || fail "no access token kept"
grep -qF "$token" login.out && fail "mates mcp login printed the token"

"$mates" run --provider scripted --scenario "$here/../scenarios/lead_uses_remote.yaml" "use the remote" \
  >run.out 2>&1 || fail "the run failed: $(cat run.out)"
grep -q "The remote answered." run.out || fail "the lead did not get the tool's answer: $(cat run.out)"
grep -q '"content":"test"' .teams/default/agents/lead.jsonl || fail "no tool result 'test' in the lead's journal"
grep -rqF "$token" .teams .mates run.out && fail "the access token is in what mates wrote"

"$mates" mcp logout remote | grep -q "Logged out of $url" || fail "mates mcp logout did not say it logged out"
"$mates" mcp list >/dev/null 2>&1 && fail "mcp list passed after the logout"
touch "$MATES_CONFORMANCE_WORK/client-ok"
