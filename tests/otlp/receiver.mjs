// A stand-in OpenTelemetry collector for the tests (DESIGN §29): takes
// OTLP/HTTP export requests, decodes each with the official
// opentelemetry-proto definitions (opentelemetry-js's generated decoders,
// scripts/setup-otlp), and appends what it read to a JSON-lines file:
//   {"signal": "traces", "encoding": "protobuf", "request": {...}}
// with ids in hex and 64-bit numbers as strings. A body that does not
// decode is a 400 and a line {"signal": …, "error": "…"}.
//
//   node receiver.mjs --modules DIR --out FILE [--port N] [--status N]
//                     [--delay-ms N]
// --status: answer every request so (a collector refusing); --delay-ms:
// answer that late (a slow one). Prints "listening PORT" once it listens.
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import http from 'node:http';
import path from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
  if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
  return pairs;
}, []));
const require = createRequire(path.join(path.resolve(args.modules), 'node_modules', 'x.js'));
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const collector = root.opentelemetry.proto.collector;
const types = {
  '/v1/traces': ['traces', collector.trace.v1.ExportTraceServiceRequest],
  '/v1/metrics': ['metrics', collector.metrics.v1.ExportMetricsServiceRequest],
  '/v1/logs': ['logs', collector.logs.v1.ExportLogsServiceRequest],
};
const idKeys = new Set(['traceId', 'spanId', 'parentSpanId']);

// Ids from bytes (base64, as toObject gives them) to hex.
function hexIds(v) {
  if (Array.isArray(v)) return v.map(hexIds);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = idKeys.has(k) && typeof x === 'string' ? Buffer.from(x, 'base64').toString('hex') : hexIds(x);
  }
  return out;
}

// OTLP/JSON's ids are hex; protobufjs' fromObject reads bytes as base64.
function base64Ids(v) {
  if (Array.isArray(v)) return v.map(base64Ids);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (idKeys.has(k) && typeof x === 'string') {
      if (!/^([0-9a-f]{2})*$/.test(x)) throw new Error(`${k} is not lower-case hex: ${x}`);
      out[k] = Buffer.from(x, 'hex').toString('base64');
    } else {
      out[k] = base64Ids(x);
    }
  }
  return out;
}

const status = Number(args.status ?? 200);
const delay = Number(args['delay-ms'] ?? 0);
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const type = types[req.url];
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    let line;
    if (!type) {
      line = { path: req.url, error: 'no such signal' };
    } else {
      try {
        const message = json ? type[1].fromObject(base64Ids(JSON.parse(body.toString('utf8'))))
                             : type[1].decode(body);
        const problem = type[1].verify(message);
        if (problem) throw new Error(problem);
        line = {
          signal: type[0], encoding: json ? 'json' : 'protobuf', status,
          headers: { authorization: req.headers.authorization ?? '', 'x-team': req.headers['x-team'] ?? '' },
          request: hexIds(type[1].toObject(message, { longs: String, enums: Number, bytes: String, arrays: true })),
        };
      } catch (e) {
        line = { signal: type[0], error: String(e.message ?? e) };
      }
    }
    appendFileSync(args.out, JSON.stringify(line) + '\n');
    const answer = () => {
      if (line.error) {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(line.error);
      } else if (status !== 200) {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end('refused by the test');
      } else {
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
        res.end(json ? '{}' : '');
      }
    };
    if (delay > 0) setTimeout(answer, delay); else answer();
  });
});
server.listen(Number(args.port ?? 0), '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
