// An MCP server (stdio) whose tools change while it runs, built on the
// official TypeScript SDK's Server: tests/mcp_client_test.cc proves that an
// agent sees a tool added after it started, and stops seeing one removed.
//
//   node tests/mcp/changing_server.mjs MODULES_DIR
//
// Tools: `grow {name}` adds a tool NAME (it answers "NAME ran"), `shrink
// {name}` removes it; each tells the client (notifications/tools/
// list_changed) before it answers.
import { createRequire } from "node:module";
import path from "node:path";

const req = createRequire(path.resolve(process.argv[2]) + "/");
const { Server } = req("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = req("@modelcontextprotocol/sdk/server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = req("@modelcontextprotocol/sdk/types.js");

const named = {
  type: "object",
  properties: { name: { type: "string", pattern: "^[a-z]{1,20}$" } },
  required: ["name"],
};
const fixed = [
  { name: "grow", description: "Adds a tool of the given name.", inputSchema: named },
  { name: "shrink", description: "Removes a tool added by grow.", inputSchema: named },
];
const grown = new Set();

const server = new Server({ name: "changing", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    ...fixed,
    ...[...grown].map((n) => ({ name: n, description: `Grown at run time.`, inputSchema: { type: "object" } })),
  ],
}));
const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });
server.setRequestHandler(CallToolRequestSchema, async (r) => {
  const { name, arguments: args = {} } = r.params;
  const wanted = typeof args.name === "string" && /^[a-z]{1,20}$/.test(args.name) ? args.name : null;
  if (name === "grow" || name === "shrink") {
    if (wanted === null || fixed.some((t) => t.name === wanted)) return text(`no tool may be named that`, true);
    if (name === "grow") grown.add(wanted);
    else if (!grown.delete(wanted)) return text(`no tool '${wanted}' to remove`, true);
    await server.sendToolListChanged();
    return text(`${name === "grow" ? "added" : "removed"} ${wanted}`);
  }
  if (grown.has(name)) return text(`${name} ran`);
  return text(`no tool '${name}'`, true);
});
await server.connect(new StdioServerTransport());
