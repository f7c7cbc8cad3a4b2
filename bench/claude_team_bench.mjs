// A Claude Code team's page (DESIGN §24, §25): a message written into a
// member's inbox, as Claude Code's SendMessage writes one (under its lock,
// the inbox replaced by a rename) → its row on `mates dashboard --claude`,
// p50/p99, live (Server-Sent Events from inotify on Claude Code's folders)
// next to the naive variant in the same run (the page polling the API each
// second, `?live=poll`). Claude Code itself shows a teammate's mail nowhere
// but in that teammate's own view. The team is the fixture of a real run
// (tests/fixtures/claude_team/), copied.
//
//   node bench/claude_team_bench.mjs --mates BIN --modules DIR [--n 200]
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { measure, pct } from "./page_latency.mjs";

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const n = Number(args.n || 200);
const team = "session-5e55e55e";
const puppeteer = createRequire(path.resolve(args.modules) + "/")("puppeteer-core");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mates-cc-bench-"));
const home = path.join(dir, "home");
fs.cpSync(new URL("../tests/fixtures/claude_team", import.meta.url).pathname, home, { recursive: true });
const inbox = path.join(home, "teams", team, "inboxes", "alpha.json");

// Claude Code's writeToMailbox: the lock (a folder), the inbox read, the
// message appended, the file replaced.
function claudeCodeSends(text) {
  const lock = inbox + ".lock";
  for (;;) { try { fs.mkdirSync(lock); break; } catch { /* held: again */ } }
  try {
    let list = [];
    try { list = JSON.parse(fs.readFileSync(inbox, "utf8")); } catch { /* none yet */ }
    list.push({ from: "beta", text, summary: text, timestamp: new Date().toISOString(), color: "green", msgV: 1,
                msg_id: crypto.randomUUID(), type: "message", read: false });
    fs.writeFileSync(inbox + ".tmp", JSON.stringify(list, null, 2));
    fs.renameSync(inbox + ".tmp", inbox);
  } finally { fs.rmdirSync(lock); }
}

let browser, dashboard;
try {
  dashboard = spawn(args.mates, ["dashboard", "--claude", team, "--claude-home", home], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let text = "";
    dashboard.stdout.on("data", (d) => { text += d; const m = text.match(/(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/); if (m) resolve(m[1]); });
    dashboard.on("exit", (c) => reject(new Error("mates dashboard exited " + c)));
  });
  browser = await puppeteer.launch({ executablePath: args.chromium || "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });

  const live = await measure(browser, url, n, "live", claudeCodeSends);
  const poll = await measure(browser, url + "&live=poll", Math.max(20, Math.floor(n / 5)), "poll", claudeCodeSends);
  const f = (x) => x.toFixed(1).padStart(7);
  console.log("Claude Code inbox -> visible on the page (ms)     p50      p99      max   n");
  console.log(`  mates dashboard --claude (SSE, inotify)   ${f(pct(live, 50))}  ${f(pct(live, 99))}  ${f(Math.max(...live))}  ${live.length}`);
  console.log(`  naive: the page polls the API each 1 s    ${f(pct(poll, 50))}  ${f(pct(poll, 99))}  ${f(Math.max(...poll))}  ${poll.length}`);
  console.log("  (target p50 <= 200 ms; Claude Code shows a teammate's mail only in that teammate's view)");
} finally {
  if (browser) await browser.close().catch(() => {});
  if (dashboard) dashboard.kill("SIGTERM");
  fs.rmSync(dir, { recursive: true, force: true });
}
