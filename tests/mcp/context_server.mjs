// An MCP server (stdio, on the official TypeScript SDK) that answers its one
// tool, `context`, with the W3C trace context it was given: the request's
// `_meta.traceparent` and its own TRACEPARENT at start
// (tests/telemetry_test.cc, DESIGN §29).
//
//   node tests/mcp/context_server.mjs MODULES_DIR
import { createRequire } from "node:module";
import path from "node:path";

const req = createRequire(path.resolve(process.argv[2]) + "/");
const { Server } = req("@modelcontextprotocol/sdk/server/index.js");
const { StdioServerTransport } = req("@modelcontextprotocol/sdk/server/stdio.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = req("@modelcontextprotocol/sdk/types.js");

const started = process.env.TRACEPARENT ?? "none";
const server = new Server({ name: "context", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: "context", description: "Says the trace context it was given.", inputSchema: { type: "object" } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (r) => ({
  content: [{ type: "text", text: `meta=${r.params._meta?.traceparent ?? "none"} env=${started}` }],
}));
await server.connect(new StdioServerTransport());
