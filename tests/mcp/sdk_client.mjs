// `mates mcp` driven by the official MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk, installed by scripts/setup-mcp) over stdio,
// as an external agent would: initialize, list the tools, call every one,
// bad calls, a blocking read cancelled, and a message between two servers
// (two processes) waking a waiting read.
//
//   node tests/mcp/sdk_client.mjs --mates BIN --modules DIR
//
// Exit 0 passed, 1 failed, 77 skipped (no SDK in DIR).
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
let sdk;
try {
  const req = createRequire(path.resolve(args.modules) + "/");
  sdk = {
    ...req("@modelcontextprotocol/sdk/client/index.js"),
    ...req("@modelcontextprotocol/sdk/client/stdio.js"),
    ...req("@modelcontextprotocol/sdk/types.js"),
  };
} catch (e) {
  console.log("SKIPPED: @modelcontextprotocol/sdk is not in " + args.modules + " (scripts/setup-mcp): " + e.message);
  process.exit(77);
}

const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-mcp-"));
const team = "ext";
const mates = (...a) => {
  const r = spawnSync(args.mates, ["--workspace", ws, ...a], { encoding: "utf8", timeout: 60000 });
  return { code: r.status, out: r.stdout || "", err: r.stderr || "" };
};
let failures = 0;
function check(ok, what, detail) {
  console.log((ok ? "ok   " : "FAIL ") + what + (ok || detail === undefined ? "" : ": " + JSON.stringify(detail)));
  if (!ok) failures++;
}
const text = (r) => (r.content || []).map((c) => c.text).join("\n");

async function connect(as) {
  const transport = new sdk.StdioClientTransport({
    command: args.mates,
    args: ["--workspace", ws, "mcp", "--team", team, "--as", as],
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => { stderr += d; });
  const client = new sdk.Client({ name: "mates-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

const clients = [];
try {
  const created = mates("team", "create", team, "--members", "w1,w2");
  if (created.code !== 0) throw new Error("team create failed: " + created.out + created.err);

  // Bad starts: one clear error each, and nothing on stdout.
  // No --team: the team of DESIGN §21's rule, here the default one, not there.
  let bad = mates("mcp");
  check(bad.code === 1 && bad.err.includes("no team 'default'") && bad.out === "", "no team given: team default, which is not there: exit 1", bad);
  bad = mates("mcp", "--team", "nope");
  check(bad.code === 1 && bad.err.includes("no team 'nope'"), "an unknown team: exit 1", bad);
  bad = mates("mcp", "--team", team, "--as", "../w1");
  check(bad.code === 2 && bad.err.includes("invalid member name"), "a bad --as: exit 2", bad);
  // Raw frames: a line over the bound is answered once and skipped; the
  // server goes on, and a last line without its newline still counts.
  const raw = spawnSync(args.mates, ["--workspace", ws, "mcp", "--team", team, "--as", "w1"], {
    input: '{"jsonrpc":"2.0","id":1,"method":"ping"}\n' + "x".repeat(5 << 20) + '\n\n' +
           '{"jsonrpc":"2.0","id":2,"method":"ping"}\r\n{"jsonrpc":"2.0","id":3,"method":"ping"}',
    encoding: "utf8", timeout: 60000, maxBuffer: 1 << 20 });
  const lines = (raw.stdout || "").trim().split("\n").map((l) => JSON.parse(l));
  check(raw.status === 0 && lines.length === 4 && lines[1].error?.code === -32700 && lines[1].id === null &&
        lines[3].id === 3, "raw frames: too long is -32700, the rest are answered", raw.stdout);

  const w1 = await connect("w1");
  clients.push(w1);
  check(w1.client.getServerVersion()?.name === "mates", "initialize: the server is mates", w1.client.getServerVersion());
  check((w1.client.getInstructions() || "").includes("'w1'"), "initialize: instructions say who the agent is");
  check(w1.client.getServerCapabilities()?.tools !== undefined, "initialize: the tools capability");

  const { tools } = await w1.client.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ["claim_task", "create_task", "get_task", "list_tasks", "read_inbox", "send_message", "team_status",
                "update_task"];
  check(JSON.stringify(names) === JSON.stringify(want), "tools/list: the eight team tools", names);
  check(tools.every((t) => t.inputSchema?.type === "object" && t.description.length > 40),
        "every tool has an object schema and a description");

  // Every tool, called as w1.
  let r = await w1.client.callTool({ name: "send_message", arguments: { recipient: "lead", content: "hello lead" } });
  check(!r.isError && text(r).includes("lead"), "send_message", r);
  const leadBox = mates("inbox", "--team", team, "lead", "--json");
  check(leadBox.code === 0 && leadBox.out.includes("hello lead") && /"(from|sender)":"w1"/.test(leadBox.out),
        "the message is in the lead's inbox, from w1", leadBox);

  r = await w1.client.callTool({ name: "create_task", arguments: { subject: "write the parser" } });
  check(!r.isError && text(r).includes("#1"), "create_task", r);
  r = await w1.client.callTool({ name: "create_task", arguments: { subject: "test it", blockedBy: [1] } });
  check(!r.isError && text(r).includes("#2"), "create_task with blockedBy", r);
  r = await w1.client.callTool({ name: "list_tasks", arguments: {} });
  check(!r.isError && text(r).includes("ready to claim: #1"), "list_tasks", r);
  r = await w1.client.callTool({ name: "claim_task", arguments: {} });
  check(!r.isError && text(r).includes("Claimed task #1"), "claim_task (the next one)", r);
  r = await w1.client.callTool({ name: "get_task", arguments: { task_id: 1 } });
  check(!r.isError && text(r).includes("\"owner\": \"w1\""), "get_task", r);
  r = await w1.client.callTool({ name: "update_task", arguments: { task_id: "1", status: "completed" } });
  check(!r.isError, "update_task completes it", r);
  r = await w1.client.callTool({ name: "team_status", arguments: {} });
  check(!r.isError && text(r).includes("w2 (teammate)") && text(r).includes("1 completed"), "team_status", r);
  const sent = mates("send", "--team", team, "--from", "lead", "--to", "w1", "welcome aboard");
  check(sent.code === 0, "mates send to w1", sent);
  r = await w1.client.callTool({ name: "read_inbox", arguments: {} });
  check(!r.isError && text(r).includes("welcome aboard") && text(r).includes("teammate_id=\"lead\""), "read_inbox", r);

  // Bad calls: a tool failure is an isError result; an unknown tool a protocol error.
  r = await w1.client.callTool({ name: "update_task", arguments: { task_id: 99, status: "completed" } });
  check(r.isError === true, "a failing tool call is an isError result", r);
  r = await w1.client.callTool({ name: "claim_task", arguments: { task_id: "nine" } });
  check(r.isError === true, "a bad argument is an isError result", r);
  try {
    await w1.client.callTool({ name: "no_such_tool", arguments: {} });
    check(false, "an unknown tool is refused");
  } catch (e) {
    check(e instanceof sdk.McpError && e.code === sdk.ErrorCode.InvalidParams, "an unknown tool is -32602", String(e));
  }

  // A blocking read, cancelled: the promise rejects, the server goes on,
  // and the next message is not swallowed by the cancelled read.
  const abort = new AbortController();
  const blocked = w1.client.callTool({ name: "read_inbox", arguments: { wait_seconds: 60 } }, undefined,
                                     { signal: abort.signal, timeout: 120000 });
  await w1.client.ping();  // answered after the read started waiting: the reader is free
  abort.abort("no longer needed");
  let rejected = false;
  try { await blocked; } catch (e) { rejected = true; }
  check(rejected, "the cancelled read rejects on the client");
  await w1.client.ping();
  mates("send", "--team", team, "--from", "lead", "--to", "w1", "after the cancel");
  r = await w1.client.callTool({ name: "read_inbox", arguments: { wait_seconds: 20 } });
  check(!r.isError && text(r).includes("after the cancel"), "the next read gets the message the cancelled one did not take", r);

  // Two servers, two processes: w2 waits, w1's send wakes it at once.
  const w2 = await connect("w2");
  clients.push(w2);
  const waiting = w2.client.callTool({ name: "read_inbox", arguments: { wait_seconds: 60 } }, undefined, { timeout: 120000 });
  await w2.client.ping();
  const t0 = Date.now();
  r = await w1.client.callTool({ name: "send_message", arguments: { recipient: "w2", content: "your turn" } });
  check(!r.isError, "w1 sends to w2", r);
  r = await waiting;
  const ms = Date.now() - t0;
  check(!r.isError && text(r).includes("your turn"), "w2's waiting read wakes with w1's message (" + ms + " ms)", r);
  check(ms < 10000, "woken by the event, not a timeout", ms);

  // Closing stdin ends the server (the SDK would kill it after 2 s).
  for (const c of clients.splice(0)) {
    const pid = c.transport.pid;
    const start = Date.now();
    await c.client.close();
    let gone = false;
    try { process.kill(pid, 0); } catch { gone = true; }
    check(gone && Date.now() - start < 1500, "the server ends with its stdin", { pid, ms: Date.now() - start });
  }
} catch (e) {
  console.log("FAIL " + (e.stack || e));
  failures++;
} finally {
  for (const c of clients) {
    try { await c.client.close(); } catch {}
    if (c.stderr()) console.log("server stderr: " + c.stderr());
  }
  fs.rmSync(ws, { recursive: true, force: true });
}
console.log(failures === 0 ? "PASSED" : failures + " FAILED");
process.exit(failures === 0 ? 0 : 1);
