// The dashboard's figures (DESIGN §16): a change on disk → visible in the
// page, p50/p99, live (Server-Sent Events from the host's inotify) next to
// the naive variant in the same run (the page polling the API every second,
// `?live=poll`); and the host's CPU with the page open on an idle team.
//
//   node bench/dashboard_bench.mjs --mates BIN --modules DIR [--n 200] [--idle-seconds 30]
//
// A change is one line appended to the team's messages.jsonl by this
// process (t0 just before the write); "visible" is the moment a
// MutationObserver in the page sees its row in the timeline.
import { spawnSync } from "node:child_process";
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
const idleSeconds = Number(args["idle-seconds"] || 30);
const puppeteer = createRequire(path.resolve(args.modules) + "/")("puppeteer-core");
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mates-dash-bench-"));
const mates = (...a) => spawnSync(args.mates, ["--workspace", ws, ...a], { encoding: "utf8", timeout: 60000 });
const scenario = path.join(ws, "idle.yaml");
fs.writeFileSync(scenario, "rules:\n  - agent: \"*\"\n    once: false\n    reply:\n      - {type: text, text: \"Noted.\"}\n");

function cpuTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return Number(rest[11]) + Number(rest[12]);  // utime + stime
}

let browser;
try {
  const up = mates("up", "--team", "bench", "--provider", "scripted", "--scenario", scenario);
  const url = (up.stdout.match(/dashboard (http:\/\/\S+)/) || [])[1];
  if (!url) throw new Error("no dashboard: " + up.stdout + up.stderr);
  const host = JSON.parse(fs.readFileSync(path.join(ws, ".teams/bench/host.json"), "utf8"));
  const log = path.join(ws, ".teams/bench/messages.jsonl");
  browser = await puppeteer.launch({
    executablePath: args.chromium || "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });

  // A change: one line appended to the team's log by this process.
  const append = (label) => (key) => fs.appendFileSync(log, JSON.stringify({ id: `m-${label}-${key.split(" ")[2]}-${Date.now()}`,
    type: "message", sender: "user", recipient: "lead", content: key, timestamp: Date.now() / 1000 }) + "\n");
  const live = await measure(browser, url, n, "live", append("live"));
  const poll = await measure(browser, url + "&live=poll", Math.max(20, Math.floor(n / 5)), "poll", append("poll"));
  const f = (x) => x.toFixed(1).padStart(7);
  console.log("change on disk -> visible in the page (ms)      p50      p99      max   n");
  console.log(`  mates dashboard (SSE, inotify)          ${f(pct(live, 50))}  ${f(pct(live, 99))}  ${f(Math.max(...live))}  ${live.length}`);
  console.log(`  naive: the page polls the API each 1 s  ${f(pct(poll, 50))}  ${f(pct(poll, 99))}  ${f(Math.max(...poll))}  ${poll.length}`);

  // The host's CPU on an idle team: without a page, then with one open.
  const hz = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;
  async function cpuShare() {
    const c0 = cpuTicks(host.pid), w0 = Date.now();
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const c1 = cpuTicks(host.pid), w1 = Date.now();
    return ((c1 - c0) / hz) / ((w1 - w0) / 1000) * 100;
  }
  const closed = await cpuShare();
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector('body[data-ready="1"]');
  const open = await cpuShare();
  console.log(`host CPU, idle team, ${idleSeconds} s each (% of one core): no page ${closed.toFixed(3)}, dashboard open ${open.toFixed(3)}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  mates("down", "--team", "bench");
  fs.rmSync(ws, { recursive: true, force: true });
}
