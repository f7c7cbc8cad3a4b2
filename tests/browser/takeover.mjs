// A teammate taken over by another host, on the page (DESIGN §32): a team
// kept in a private PostgreSQL server; its host is frozen (SIGSTOP) past
// the lease, and a second host (`mates up --teammates` in a workspace of
// its own, as another machine would) takes the teammate over with the next
// fencing token. The page, from a third workspace, shows "taken over ·
// HOLDER" on the teammate's card, the old holder and the token in its title.
//
//   node tests/browser/takeover.mjs --mates BIN --pg-server BIN --scenario FILE
//        --modules DIR [--chromium PATH] [--screenshot OUT.png]
//
// Exit 0 passed, 1 failed, 77 skipped (no chromium, puppeteer-core or
// PostgreSQL).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Checks, browserParts, firstLine, launchBrowser, matesIn, options, startPgServer, until } from "./common.mjs";

const args = options();
const { chromium, puppeteer } = browserParts(args);
const pg = await startPgServer(args["pg-server"]);
const env = { ...process.env, MATES_STORE: pg.url };
const team = "dash";  // the scenario's lead makes its planner in team dash
const dirs = ["a", "b", "page"].map((n) => fs.mkdtempSync(path.join(os.tmpdir(), "mates-takeover-" + n + "-")));
const [a, b, elsewhere] = dirs.map((d) => matesIn(args.mates, d, env));
const checks = new Checks();
const check = (ok, what) => checks.check(ok, what);

// The planner's lease as `status --json` says it (any machine sees it).
function plannerLease() {
  const r = elsewhere("status", "--team", team, "--json");
  if (r.code !== 0) return null;
  const m = (JSON.parse(r.out).members || []).find((x) => x.name === "planner");
  return m && m.lease ? m.lease : null;
}

let browser = null, page = null, frozen = 0;
try {
  const up = a("up", "--team", team, "--provider", "scripted", "--scenario", args.scenario, "Start the team");
  if (up.code !== 0) throw new Error("mates up failed: " + up.out + up.err);
  await until("the planner held by the first host", () => { const l = plannerLease(); return l && l.live; }, 30000);
  const first = plannerLease();
  const info = JSON.parse(fs.readFileSync(path.join(dirs[0], ".teams", team, "host.json"), "utf8"));
  frozen = info.pid;
  process.kill(frozen, "SIGSTOP");
  // Another machine's host, for the teammates no live host holds.
  const upB = b("up", "--teammates", "--team", team, "--provider", "scripted", "--scenario", args.scenario);
  if (upB.code !== 0) throw new Error("mates up --teammates failed: " + upB.out + upB.err);
  await until("the planner taken over", () => {
    const l = plannerLease();
    return l && l.live && l.holder !== first.holder && l.taken_from === first.holder;
  }, 60000);
  const now = plannerLease();
  check(now.token === first.token + 1, "taken over with the next fencing token (" + first.token + " → " + now.token + ")");

  // The page, from a third workspace (read-only: the lead's host is frozen).
  const dash = spawn(args.mates, ["--workspace", dirs[2], "dashboard", "--team", team],
                     { stdio: ["ignore", "pipe", "inherit"], env });
  const line = await firstLine(dash, 20000);
  const url = ((line || "").match(/read-only: (http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]+)/) || [])[1];
  if (!url) throw new Error("no read-only dashboard URL in: " + line);
  browser = await launchBrowser(puppeteer, chromium);
  page = await browser.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.setViewport({ width: 1600, height: 900 });
  await page.goto(url, { waitUntil: "domcontentloaded" });
  const chip = '#roster .member[data-name="planner"] .taken-over';
  await page.waitForSelector(chip, { timeout: 10000 });
  const shown = await page.$eval(chip, (e) => ({ text: e.textContent, title: e.title }));
  check(shown.text === "taken over · " + now.holder, "the planner's card says who took it over (" + shown.text + ")");
  check(shown.title.includes("the lease of " + first.holder + " ended unrenewed") &&
        shown.title.includes("fencing token " + now.token), "its title names the old holder and the token (" + shown.title + ")");
  const lead = await page.$('#roster .member[data-name="lead"] .taken-over');
  check(lead === null, "the lead, not taken over, has no chip");
  if (args.screenshot) {
    await page.screenshot({ path: args.screenshot });
    console.log("screenshot: " + args.screenshot);
  }
  check(pageErrors.length === 0, "no script error on the page" + (pageErrors.length ? ": " + pageErrors.join("; ") : ""));
  dash.kill("SIGTERM");
} catch (e) {
  checks.fail(e);
  console.log("--- mates status\n" + elsewhere("status", "--team", team).out);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (frozen) process.kill(frozen, "SIGCONT");
  check(b("down", "--team", team, "--timeout", "10").code === 0, "mates down of the second host");
  check(a("down", "--team", team, "--timeout", "10").code === 0, "mates down of the first host");
  pg.child.stdin.end();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
}
console.log(checks.failures ? checks.failures + " check(s) failed" : "all checks passed");
process.exit(checks.failures ? 1 : 0);
